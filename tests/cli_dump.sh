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
else
    grep -q "^rnnc: " err.txt || { fail "cuda stage failed without a message"; cat err.txt >&2; }
fi

# refusals
"$RNNC" dump --cell lstm --stage schedule > out.txt 2> err.txt
[ $? -eq 1 ] && grep -q "needs the input size" err.txt || fail "schedule without sizes"
"$RNNC" dump --cell lstm --stage foo > out.txt 2> err.txt
[ $? -eq 2 ] && grep -q "not 'foo'" err.txt || fail "unknown stage"
"$RNNC" dump --stage ir > out.txt 2> err.txt
[ $? -eq 2 ] || fail "dump without --cell"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_dump: all checks passed"
