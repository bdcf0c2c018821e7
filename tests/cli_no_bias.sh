#!/usr/bin/env bash
# cli_no_bias.sh: --no-bias (PyTorch's bias=False) and --cudnn-algo on the
# command line: bias-free weights are written and read by name, every
# backend usable here agrees with the interpreter on them, and what cannot
# be done is refused with the reason.  Usage: cli_no_bias.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"

for cell in lstm gru rnn_tanh rnn_relu; do
    "$RNNC" random --cell "$cell" --no-bias --seq 7 --batch 3 --input-size 5 --hidden-size 6 \
        --layers 2 --bidirectional --seed 11 --weights "w_$cell.st" --input "x_$cell.st" \
        > /dev/null || fail "rnnc random --no-bias --cell $cell failed"
    "$RNNC" show "w_$cell.st" > "names_$cell.txt" || fail "rnnc show failed"
    grep -q '^weight_ih_l1_reverse ' "names_$cell.txt" || fail "$cell: no weight_ih_l1_reverse"
    ! grep -q '^bias' "names_$cell.txt" || fail "$cell --no-bias wrote biases: $(cat "names_$cell.txt")"
    run() { "$RNNC" run --cell "$cell" --no-bias --layers 2 --bidirectional \
        --weights "w_$cell.st" --input "x_$cell.st" "$@"; }
    run --backend interp --out "yi_$cell.st" > /dev/null || fail "$cell --no-bias on interp failed"
    for b in cpu cudnn fused; do
        usable "$b" || continue
        # fused refuses layers and directions it does not run yet: skip it then
        run --backend "$b" --out "y_${b}_$cell.st" > "out_$b.txt" 2>&1 || {
            [ "$b" = fused ] && grep -q 'unsupported' "out_$b.txt" && continue
            fail "$cell --no-bias on $b failed: $(cat "out_$b.txt")"; }
        "$RNNC" diff "y_${b}_$cell.st" "yi_$cell.st" --tol 1e-5 > /dev/null ||
            fail "$cell --no-bias: $b differs from the interpreter: $("$RNNC" diff "y_${b}_$cell.st" "yi_$cell.st")"
    done
done

# weights with biases are not a bias-free model's, and the other way round
"$RNNC" random --seq 4 --batch 2 --input-size 3 --hidden-size 5 --weights wb.st --input xb.st \
    > /dev/null || fail "rnnc random failed"
expect 1 "hold 'bias_ih_l0'" "$RNNC" run --cell lstm --no-bias --weights wb.st --input xb.st \
    --backend interp --out y.st --hidden-size 5
expect 1 "bias_ih_l0" "$RNNC" run --cell lstm --weights w_lstm.st --input x_lstm.st \
    --backend interp --out y.st --hidden-size 6 --layers 2 --bidirectional
# a cell whose biases are not optional cannot drop them
expect 1 "no optional bias parameter" "$RNNC" random --cell layernorm_lstm --no-bias --seq 4 \
    --batch 2 --input-size 3 --hidden-size 5 --weights wl.st --input xl.st

# --cudnn-algo
expect 2 "--cudnn-algo wants auto, standard, .*not 'bogus'" "$RNNC" run --cell lstm \
    --weights wb.st --input xb.st --out y.st --cudnn-algo bogus
"$RNNC" run --cell lstm --weights wb.st --input xb.st --out y.st --backend interp \
    --cudnn-algo persist_static > /dev/null || fail "--cudnn-algo is ignored off cudnn"
if usable cudnn; then
    "$RNNC" random --seq 4 --batch 2 --input-size 3 --hidden-size 6 --proj-size 3 \
        --weights wp.st --input xp.st > /dev/null || fail "rnnc random --proj-size failed"
    expect 1 "persist_static: a projection" "$RNNC" run --cell lstm --weights wp.st \
        --input xp.st --out y.st --backend cudnn --cudnn-algo persist_static --proj-size 3
fi
exit $((fails > 0))
