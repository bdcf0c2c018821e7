#!/usr/bin/env bash
# cli_run.sh: `rnnc random` + `rnnc run` end to end on the interpreter: the
# output file holds y and the final states with nn.LSTM's shapes, sizes are
# inferred from the weights, every built-in cell and a .cell file run, and
# backends agree.  Usage: cli_run.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
# has FILE LINE-REGEX: `rnnc show FILE` must print a matching line
has() { "$RNNC" show "$1" > show.txt || fail "show $1"; grep -Eq "$2" show.txt || { fail "$1 lacks /$2/"; cat show.txt >&2; }; }
finite() { "$RNNC" show "$1" > show.txt; ! grep -Eiq 'nan|inf' show.txt || fail "$1 has NaN/Inf"; }

# 1. one layer: shapes, and values that are neither NaN nor all zero
ok "$RNNC" random --cell lstm --seq 5 --batch 3 --input-size 4 --hidden-size 6 --seed 11 \
   --weights w.st --input x.st
ok "$RNNC" run --cell lstm --weights w.st --input x.st --out y.st --backend interp
grep -q "on backend interp" out.txt || fail "run does not say which backend ran"
has y.st '^y F32 \[5, 3, 6\]'
has y.st '^hy F32 \[1, 3, 6\]'
has y.st '^cy F32 \[1, 3, 6\]'
finite y.st
"$RNNC" show y.st | grep -q '^y F32 \[5, 3, 6\] min 0 max 0' && fail "y is all zeros"
# deterministic: the same files give the same output, bit for bit
ok "$RNNC" run --cell lstm --weights w.st --input x.st --out y_again.st --backend interp
ok "$RNNC" diff y_again.st y.st --tol 0

# 2. two layers, bidirectional, projection, random lengths: all inferred from the files
ok "$RNNC" random --cell lstm --seq 7 --batch 3 --input-size 5 --hidden-size 8 --proj-size 3 \
   --layers 2 --bidirectional --lengths random --seed 12 --weights w2.st --input x2.st
has x2.st '^lengths I64 \[3\]'
ok "$RNNC" run --cell lstm --weights w2.st --input x2.st --out y2.st --backend interp
grep -q "H=8 P=3, 2 layers, bidirectional" out.txt || { fail "sizes not inferred"; cat out.txt >&2; }
has y2.st '^y F32 \[7, 3, 6\]'
has y2.st '^hy F32 \[4, 3, 3\]'
has y2.st '^cy F32 \[4, 3, 8\]'
finite y2.st
# the same run with everything given explicitly gives the same output
ok "$RNNC" run --cell lstm --weights w2.st --input x2.st --out y2b.st --backend interp \
   --layers 2 --bidirectional --hidden-size 8 --proj-size 3 --input-size 5
ok "$RNNC" diff y2b.st y2.st --tol 0

# 3. batch first: x and y are [B, T, *], the states are not
ok "$RNNC" random --seq 4 --batch 2 --input-size 3 --hidden-size 5 --batch-first \
   --weights wb.st --input xb.st
has xb.st '^x F32 \[2, 4, 3\]'
ok "$RNNC" run --cell lstm --batch-first --weights wb.st --input xb.st --out yb.st --backend interp
has yb.st '^y F32 \[2, 4, 5\]'
has yb.st '^hy F32 \[1, 2, 5\]'

# 4. every built-in cell, and zero initial states (none in the file)
for cell in lstm gru rnn_tanh rnn_relu layernorm_lstm milstm peephole_lstm dropout_lstm; do
    ok "$RNNC" random --cell "$cell" --seq 4 --batch 2 --input-size 3 --hidden-size 5 \
       --states zero --weights "w_$cell.st" --input "x_$cell.st"
    ok "$RNNC" run --cell "$cell" --weights "w_$cell.st" --input "x_$cell.st" \
       --out "y_$cell.st" --backend interp
    has "y_$cell.st" '^y F32 \[4, 2, 5\]'
    finite "y_$cell.st"
done
has y_gru.st '^hy F32 \[1, 2, 5\]'
"$RNNC" show y_gru.st | grep -q '^cy' && fail "gru has no cell state, yet cy was written"

# 5. premul and premul_bias are lstm with another hoist setting: the same numbers
for v in premul premul_bias; do
    ok "$RNNC" run --cell "$v" --weights w.st --input x.st --out "y_$v.st" --backend interp
    ok "$RNNC" diff "y_$v.st" y.st --tol 1e-6
done

# 6. a cell from a .cell file, two layers
cat > mine.cell <<'CELL'
# an Elman cell written by hand
cell mine {
    input x[I]
    state h[H]
    param w_in[H, I]
    param w_rec[H, H]
    param b[H]
    h_next = tanh(linear(x, w_in) + linear(h, w_rec) + b)
    next h = h_next
    output h_next
}
CELL
ok "$RNNC" random --cell mine.cell --seq 4 --batch 2 --input-size 3 --hidden-size 5 --layers 2 \
   --weights wm.st --input xm.st
has wm.st '^w_rec_l1 F32 \[5, 5\]'
ok "$RNNC" run --cell mine.cell --weights wm.st --input xm.st --out ym.st --backend interp
has ym.st '^hy F32 \[2, 2, 5\]'

# 7. dropout: training draws masks (reproducibly from --seed), inference does not
ok "$RNNC" random --cell dropout_lstm --layers 3 --seq 4 --batch 2 --input-size 3 \
   --hidden-size 5 --weights wd.st --input xd.st
run_d() { ok "$RNNC" run --cell dropout_lstm --weights wd.st --input xd.st --backend interp "$@"; }
run_d --out yd_eval.st
run_d --out yd_t1.st --dropout 0.5 --seed 3 --training
run_d --out yd_t2.st --dropout 0.5 --seed 3 --training
ok "$RNNC" diff yd_t1.st yd_t2.st --tol 0
"$RNNC" diff yd_t1.st yd_eval.st > /dev/null 2>&1 && fail "dropout in training changed nothing"

# 8. other backends agree with the interpreter (those usable here; a backend
#    may refuse a model it cannot run yet, saying so)
for b in cpu fused cudnn; do
    "$RNNC" --help | grep -q "usable here:.* $b\b" || continue
    if ! "$RNNC" run --cell lstm --weights w2.st --input x2.st --out "y2_$b.st" --backend "$b" \
        > out.txt 2> err.txt; then
        grep -q "^rnnc: unsupported: .*$b" err.txt || { fail "--backend $b"; cat err.txt >&2; }
        echo "note: $b: $(cat err.txt)"
        ok "$RNNC" run --cell lstm --weights w.st --input x.st --out "y_$b.st" --backend "$b"
        ok "$RNNC" diff "y_$b.st" y.st --tol 1e-5
        continue
    fi
    grep -q "on backend $b" out.txt || fail "--backend $b ran elsewhere"
    ok "$RNNC" diff "y2_$b.st" y2.st --tol 1e-5
done

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_run: all checks passed"
