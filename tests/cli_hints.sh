#!/usr/bin/env bash
# cli_hints.sh: errors that say what to do, and options refused where they
# do nothing.  Shape errors that a missing --batch-first, --bidirectional or
# --proj-size explains say so; model options a command does not use are
# refused with its usage (and left out of its --help); `run --bundle` says
# when the bundle served nothing.  Usage: cli_hints.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
D=${RNNC_TEST_DATA:?RNNC_TEST_DATA names tests/data}

# 1. --batch-first forgotten: h0 (from `rnnc random`), and lengths (PyTorch's file)
ok "$RNNC" random --seq 4 --batch 3 --input-size 5 --hidden-size 6 --batch-first \
   --weights w.st --input x.st
expect 1 "'h0' in x.st must be \[1, 4, 6\].*x may be \[B, T, I\]: give --batch-first" \
    "$RNNC" run --cell lstm --weights w.st --input x.st --out y.st --backend interp
expect 1 "'lengths' .* must be \[7\]; x may be \[B, T, I\]: give --batch-first" \
    "$RNNC" run --cell lstm --weights "$D/lstm_bf_lengths.weights.safetensors" \
    --input "$D/lstm_bf_lengths.io.safetensors" --out y.st --backend interp
ok "$RNNC" run --cell lstm --batch-first --weights "$D/lstm_bf_lengths.weights.safetensors" \
   --input "$D/lstm_bf_lengths.io.safetensors" --out y.st --backend interp
rm -f y.st
# and given where x is [T, B, I]
ok "$RNNC" random --seq 4 --batch 3 --input-size 5 --hidden-size 6 --weights wt.st --input xt.st
expect 1 "x may be \[T, B, I\]: leave out --batch-first" \
    "$RNNC" run --cell lstm --batch-first --weights wt.st --input xt.st --out y.st

# 2. --bidirectional and --proj-size that the weights contradict
expect 1 "no weight ends in _reverse: leave out --bidirectional" \
    "$RNNC" run --cell lstm --bidirectional --weights "$D/lstm_1l.weights.safetensors" \
    --input "$D/lstm_1l.io.safetensors" --out y.st
expect 1 "projection 'weight_hr_l0' \[3, 6\]: give --proj-size 3" \
    "$RNNC" run --cell lstm --hidden-size 6 --proj-size 0 \
    --weights "$D/lstm_2l_bi_proj.weights.safetensors" \
    --input "$D/lstm_2l_bi_proj.io.safetensors" --out y.st
expect 1 "no 'weight_hr_l0': leave out --proj-size" \
    "$RNNC" run --cell lstm --proj-size 3 --weights "$D/lstm_1l.weights.safetensors" \
    --input "$D/lstm_1l.io.safetensors" --out y.st
[ -e y.st ] && fail "a failed run wrote its output"
# a state from a two-direction model given to a one-direction one
ok "$RNNC" random --seq 4 --batch 3 --input-size 5 --hidden-size 6 --bidirectional \
   --weights wb.st --input xb.st
expect 1 "'h0' in xb.st must be \[1, 3, 6\].*two directions' rows: give --bidirectional" \
    "$RNNC" run --cell lstm --weights wt.st --input xb.st --out y.st

# 3. options a command does not use: refused with its usage, and not in its --help
expect 2 "^rnnc dump: --device does not apply to .rnnc dump." \
    "$RNNC" dump --cell lstm --stage ir --device 3
grep -q "^Usage: rnnc dump" err.txt || fail "the refusal does not show dump's usage"
expect 2 "--layers does not apply" "$RNNC" dump --cell lstm --stage ir --layers 2
expect 2 "--backend does not apply" "$RNNC" random --seq 2 --batch 1 --input-size 2 \
    --hidden-size 2 --weights a.st --input b.st --backend cpu
expect 2 "--device does not apply" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 \
    --batch 1 --arch sm_90 -o x.rnncpkg --device 1
expect 2 "--cell does not apply" "$RNNC" demo --cell gru
expect 2 "^rnnc show: --tol does not apply to .rnnc show." "$RNNC" show a.st --tol 1
grep -q "^Usage: rnnc show" err.txt || fail "show --tol does not show show's usage"
"$RNNC" dump --help > help.txt
grep -q -- "--device" help.txt && fail "dump --help lists --device, which it refuses"
grep -q -- "--hoist" help.txt || fail "dump --help lost --hoist"
grep -q "milstm, peephole_lstm" help.txt || fail "dump --help lost --cell's continuation lines"
"$RNNC" run --help | grep -q -- "--device" || fail "run --help lost --device"

# 4. a bundle that serves nothing is reported (here: a run on the interpreter)
if built fused; then
    ok "$RNNC" compile --cell lstm --input-size 5 --hidden 6 --batch 3 --arch sm_90 \
       -o m.rnncpkg
    ok "$RNNC" run --cell lstm --weights wt.st --input xt.st --out y.st --backend interp \
       --bundle m.rnncpkg
    grep -q "bundle m.rnncpkg was not used: the model ran on backend interp" err.txt ||
        { fail "an unused bundle is not reported"; cat err.txt >&2; }
fi

exit $((fails > 0))
