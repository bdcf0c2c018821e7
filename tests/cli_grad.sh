#!/usr/bin/env bash
# cli_grad.sh: `rnnc grad` end to end: the output holds the gradient of
# every weight under its state_dict name, of x and of the initial states the
# input gave, with their shapes; the same files give the same gradients; a
# half model's are near the fp32 one's; backends without a backward and
# malformed gradient files are refused by name.  (Against PyTorch autograd:
# test_torch_reference; against central differences: test_model_grad.)
# Usage: cli_grad.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
has() { "$RNNC" show "$1" > show.txt || fail "show $1"; grep -Eq "$2" show.txt || { fail "$1 lacks /$2/"; cat show.txt >&2; }; }

# 1. two layers, bidirectional, projection, lengths; DY is another run's output
ok "$RNNC" random --cell lstm --seq 5 --batch 3 --input-size 4 --hidden-size 6 --proj-size 3 \
   --layers 2 --bidirectional --lengths random --seed 21 --weights w.st --input x.st
ok "$RNNC" random --cell lstm --seq 5 --batch 3 --input-size 4 --hidden-size 6 --proj-size 3 \
   --layers 2 --bidirectional --seed 22 --weights w2.st --input x2.st
ok "$RNNC" run --cell lstm --weights w2.st --input x2.st --out dy.st --backend interp
ok "$RNNC" grad --cell lstm --weights w.st --input x.st --grad-output dy.st --out g.st \
   --backend interp
grep -q "on backend interp" out.txt || fail "grad does not say which backend ran"
for t in 'weight_ih_l0 F32 \[24, 4\]' 'weight_hh_l1_reverse F32 \[24, 3\]' \
         'bias_hh_l1 F32 \[24\]' 'weight_hr_l0_reverse F32 \[3, 6\]' \
         'weight_ih_l1 F32 \[24, 6\]' '^x F32 \[5, 3, 4\]' '^h0 F32 \[4, 3, 3\]' \
         '^c0 F32 \[4, 3, 6\]'; do
    has g.st "$t"
done
[ "$("$RNNC" show g.st | grep -c F32)" -eq 23 ] || fail "g.st should hold 20 weights, x, h0, c0"
"$RNNC" show g.st | grep -Eiq 'nan|inf' && fail "g.st has NaN/Inf"
"$RNNC" show g.st | grep -q '^x F32 \[5, 3, 4\] min 0 max 0' && fail "dx is all zeros"
ok "$RNNC" grad --cell lstm --weights w.st --input x.st --grad-output dy.st --out g2.st \
   --backend interp
ok "$RNNC" diff g2.st g.st --tol 0

# 2. a custom cell, one layer, no initial states in the input: no h0/c0 out
ok "$RNNC" random --cell layernorm_lstm --seq 4 --batch 2 --input-size 3 --hidden-size 5 \
   --states zero --seed 23 --weights wl.st --input xl.st
ok "$RNNC" run --cell layernorm_lstm --weights wl.st --input xl.st --out dyl.st --backend interp
ok "$RNNC" grad --cell layernorm_lstm --weights wl.st --input xl.st --grad-output dyl.st \
   --out gl.st
grep -q "on backend interp" out.txt || fail "the default backend for a custom cell is interp"
has gl.st '^layernorm_c_weight_l0 F32 \[5\]'
"$RNNC" show gl.st | grep -q '^h0 ' && fail "h0 written though the input gave none"

# 3. half models: the files rounded to the dtype, every gradient written as F32,
#    near the fp32 model's (1, 2) and not equal to them
for dt in f16 bf16; do
    ok "$RNNC" grad --cell lstm --weights w.st --input x.st --grad-output dy.st \
       --out g_$dt.st --backend interp --dtype $dt
    [ "$("$RNNC" show g_$dt.st | grep -c F32)" -eq 23 ] || fail "g_$dt.st: 23 F32 tensors"
    ok "$RNNC" diff g_$dt.st g.st --tol 0.05
    expect 1 "differs" "$RNNC" diff g_$dt.st g.st --tol 0
done
ok "$RNNC" grad --cell layernorm_lstm --weights wl.st --input xl.st --grad-output dyl.st \
   --out gl16.st --backend interp --dtype bf16
ok "$RNNC" diff gl16.st gl.st --tol 0.05

# 4. on a GPU, the fused backward gives the interpreter's gradients, in fp32 and
#    bf16 (two layers, bidirectional, lengths), and with a projection
if usable fused; then
    ok "$RNNC" random --cell lstm --seq 6 --batch 4 --input-size 5 --hidden-size 8 \
       --layers 2 --bidirectional --lengths random --seed 24 --weights wf.st --input xf.st
    ok "$RNNC" run --cell lstm --weights wf.st --input xf.st --out dyf.st --backend interp
    for dt in f32 bf16; do
        for be in interp fused; do
            ok "$RNNC" grad --cell lstm --weights wf.st --input xf.st --grad-output dyf.st \
               --out g_${be}_$dt.st --backend $be --dtype $dt
            grep -q "on backend $be" out.txt || fail "grad --backend $be ran elsewhere"
        done
    done
    ok "$RNNC" diff g_fused_f32.st g_interp_f32.st --tol 1e-5
    ok "$RNNC" diff g_fused_bf16.st g_interp_bf16.st --tol 0.02
    # with a projection
    ok "$RNNC" random --cell lstm --seq 6 --batch 4 --input-size 5 --hidden-size 8 \
       --proj-size 4 --layers 2 --bidirectional --seed 25 --weights wp.st --input xp.st
    ok "$RNNC" run --cell lstm --weights wp.st --input xp.st --out dyp.st --backend interp
    for be in interp fused; do
        ok "$RNNC" grad --cell lstm --weights wp.st --input xp.st --grad-output dyp.st \
           --out gp_$be.st --backend $be
        grep -q "on backend $be" out.txt || fail "grad --backend $be ran elsewhere"
    done
    ok "$RNNC" diff gp_fused.st gp_interp.st --tol 1e-5
fi

# 5. refusals
if usable cpu; then
    expect 1 "no backward" "$RNNC" grad --cell lstm --weights w.st --input x.st \
        --grad-output dy.st --out g3.st --backend cpu
fi
expect 1 "other than y" "$RNNC" grad --cell lstm --weights w.st --input x.st \
    --grad-output x.st --out g3.st --backend interp
expect 1 "y" "$RNNC" grad --cell layernorm_lstm --weights wl.st --input xl.st \
    --grad-output dy.st --out g3.st --backend interp
expect 2 "needed" "$RNNC" grad --cell lstm --weights w.st --input x.st --out g3.st
[ -e g3.st ] && fail "a refused grad wrote its output"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_grad: all checks passed"
