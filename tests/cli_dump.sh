#!/usr/bin/env bash
# cli_dump.sh: `rnnc dump` prints every built-in cell at each stage; the
# cuda stage generates source (compiles nothing); bad stages and missing
# sizes are refused clearly.  Usage: cli_dump.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
sizes=(--input-size 16 --hidden-size 32 --batch 4)

for cell in lstm gru rnn_tanh rnn_relu layernorm_lstm milstm peephole_lstm dropout_lstm; do
    for stage in ir opt schedule; do
        if ! "$RNNC" dump --cell "$cell" --stage "$stage" "${sizes[@]}" > out.txt 2> err.txt; then
            fail "dump $cell $stage"; cat err.txt >&2; continue
        fi
        case $stage in
            ir | opt) grep -q "^cell $cell {" out.txt || fail "$cell $stage: no 'cell $cell {'" ;;
            schedule) grep -q "^schedule $cell" out.txt || fail "$cell schedule: no header" ;;
        esac
    done
done
# the optimised lstm has no projection weight unless a proj size is given
"$RNNC" dump --cell lstm --stage ir > ir.txt && grep -q "weight_hr" ir.txt || fail "ir lacks weight_hr"
"$RNNC" dump --cell lstm --stage opt > opt.txt && ! grep -q "weight_hr" opt.txt ||
    fail "opt without --proj-size keeps weight_hr"
"$RNNC" dump --cell lstm --stage opt --proj-size 8 --hidden-size 32 > optp.txt &&
    grep -q "weight_hr" optp.txt || fail "opt with --proj-size lost weight_hr"
# the hoist setting shows in the schedule
"$RNNC" dump --cell premul --stage schedule "${sizes[@]}" | grep -q "hoist=matmul" ||
    fail "premul's schedule is not hoist=matmul"
"$RNNC" dump --cell lstm --stage schedule --hoist none "${sizes[@]}" | grep -q "hoist=none" ||
    fail "--hoist none not in the schedule"

# cuda: generated, not compiled; where the generator is not built it says so
if "$RNNC" dump --cell lstm --stage cuda "${sizes[@]}" > cu.txt 2> err.txt; then
    grep -q "__global__" cu.txt || fail "cuda stage printed no kernel"
    grep -q "sm_90, f32 ffma," cu.txt || fail "cuda stage does not say sm_90 fp32 FFMA by default"
    # the kernels of each math mode, dtype and architecture (tensor cores: mma.sync)
    for opt in "--math tf32:f32 tf32" "--math 3xtf32:f32 3xtf32" "--dtype f16:f16" "--dtype bf16:bf16"; do
        "$RNNC" dump --cell lstm --stage cuda --input-size 64 --hidden-size 64 --batch 16 \
            ${opt%%:*} > cu2.txt || { fail "cuda ${opt%%:*}"; continue; }
        grep -q "sm_90, ${opt#*:}," cu2.txt || fail "cuda ${opt%%:*}: header does not name it"
        grep -q "mma.sync" cu2.txt || fail "cuda ${opt%%:*}: no tensor-core code"
    done
    "$RNNC" dump --cell gru --stage cuda "${sizes[@]}" --sm 80 | grep -q "sm_80, f32 ffma," ||
        fail "--sm 80 not in the cuda stage"
    # one tiling's kernels, as the autotuner names it; a malformed text is refused
    "$RNNC" dump --cell lstm --stage cuda --input-size 64 --hidden-size 64 --batch 16 \
        --tuning "ut=0 bt=8 nt=128" | head -1 | grep -q " bt=8 nt=128 " ||
        fail "--tuning not in the cuda stage"
    # any fields in any order, the rest the generator's: the same kernels as in full
    "$RNNC" dump --cell lstm --stage cuda --input-size 64 --hidden-size 64 --batch 16 \
        --tuning "nt=128 bt=8" > part.txt && cmp -s part.txt <("$RNNC" dump --cell lstm \
        --stage cuda --input-size 64 --hidden-size 64 --batch 16 --tuning "ut=0 bt=8 nt=128") ||
        fail "--tuning with fields left out or reordered"
    for bad in "bt=8 bt=16" "nt=100" "zz=8" "bt=8  nt=128" ""; do
        "$RNNC" dump --cell lstm --stage cuda "${sizes[@]}" --tuning "$bad" > out.txt 2> err.txt
        [ $? -eq 1 ] && grep -q "tuning '$bad' is not" err.txt || fail "a malformed --tuning '$bad'"
    done
    # train: the fused backward's split and both of its kernels, for every built-in cell
    # it takes, with a projection too; a cell it refuses says why
    for cell in lstm gru layernorm_lstm dropout_lstm; do
        "$RNNC" dump --cell $cell --stage train "${sizes[@]}" > tr.txt 2> err.txt ||
            { fail "train $cell"; cat err.txt >&2; continue; }
        [ "$(grep -c "__global__ .* rnnc_step(" tr.txt)" -eq 2 ] ||
            fail "train $cell: not two step kernels"
        grep -q "^# post ops" tr.txt && grep -q "^#   dx += " tr.txt ||
            fail "train $cell: no post ops"
    done
    "$RNNC" dump --cell lstm --stage train "${sizes[@]}" --proj-size 16 > tr.txt &&
        grep -q "dweight_hr += " tr.txt && grep -q "weight_hr_T" tr.txt ||
        fail "train with a projection: no W_hr gradient or W_hr^T in the recurrence"
    # preln's layernorm before W_ih: a row cell after the post GEMMs makes dx
    # and the gain's and bias's rows; twice (x read dropped and not) is refused
    "$RNNC" dump --cell "$(dirname "$0")/data/cells/preln.cell" --stage train "${sizes[@]}" \
        > tr.txt 2> err.txt || { fail "train of preln"; cat err.txt >&2; }
    grep -q "rnnc_row_cell(" tr.txt && grep -q "^#   dx += R\[" tr.txt &&
        grep -q "^#   dln_g += colsum(R\[" tr.txt && grep -q "^#   D\[0:\] = DG" tr.txt ||
        fail "train of preln: no row cell, its dx term or the products into D"
    "$RNNC" dump --cell "$(dirname "$0")/data/cells/twice.cell" --stage train "${sizes[@]}" \
        > out.txt 2> err.txt
    [ $? -eq 1 ] && grep -q "read both dropped and otherwise" err.txt ||
        fail "train of twice: not refused with its reason"
else
    grep -q "^rnnc: " err.txt || { fail "cuda stage failed without a message"; cat err.txt >&2; }
fi

# the cell's own names stay in the dumps; only unnamed values are numbered
"$RNNC" dump --cell lstm --stage opt > opt.txt
grep -q '^    gates = add(' opt.txt || fail "opt lost the name 'gates'"
grep -q '^    c_next = add(' opt.txt || fail "opt lost the name 'c_next'"
grep -q '^    next c = c_next$' opt.txt || fail "next c is not c_next"
grep -q '^    i = chunk(gates, 4, 0)$' opt.txt || fail "chunk pieces lost their names"
grep -Eq '^    t[0-9]+ = sigmoid\(f\)$' opt.txt || fail "unnamed values are not numbered"
"$RNNC" dump --cell lstm --stage backward | grep -q 'input saved_gates\[4H\]' ||
    fail "the backward does not name what it saves after the forward's names"
"$RNNC" dump --cell lstm --stage schedule "${sizes[@]}" | grep -Eq '%[0-9]+ gates = add' ||
    fail "the schedule lost the name 'gates'"
# a name that looks like a number of the printer's is numbered instead, and
# the printed text parses back to the same text
cat > named.cell <<'CELL'
cell named {
    input x[I]
    state h[H]
    param w[H, I]
    t1 = linear(x, w)
    pre = t1 + h
    h_next = tanh(pre)
    next h = h_next
    output h_next
}
CELL
"$RNNC" dump --cell named.cell --stage ir > named1.txt || fail "dump of named.cell"
grep -q '^    pre = add(' named1.txt || fail "named.cell lost 'pre'"
if grep -q '^    t1 = ' named1.txt || ! grep -q '^    t3 = linear(x, w)$' named1.txt; then
    fail "t1 was not renumbered"; cat named1.txt >&2
fi
cp named1.txt named2.cell
"$RNNC" dump --cell named2.cell --stage ir > named2.txt || fail "the dump does not parse back"
cmp -s named1.txt named2.txt || { fail "print -> parse -> print changed the text"; diff named1.txt named2.txt >&2; }

# refusals
"$RNNC" dump --cell lstm --stage schedule > out.txt 2> err.txt
[ $? -eq 1 ] && grep -q "needs the input size" err.txt || fail "schedule without sizes"
"$RNNC" dump --cell lstm --stage foo > out.txt 2> err.txt
[ $? -eq 2 ] && grep -q "not 'foo'" err.txt || fail "unknown stage"
"$RNNC" dump --stage ir > out.txt 2> err.txt
[ $? -eq 2 ] || fail "dump without --cell"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_dump: all checks passed"
