#!/usr/bin/env bash
# cli_weights.sh: whole-model state_dicts (the RNN under a prefix beside other
# layers) and files of inputs and outputs together, as PyTorch writes them:
# `--weights-prefix`, the prefix found by itself when one fits, the tensors
# outside it ignored and counted, two prefixes refused, and `rnnc diff`
# against a file that also holds the inputs.  The numbers are PyTorch's:
# model.state_dict.safetensors holds lstm_2l_bi_proj's weights under
# `encoder.lstm.` (scripts/state_dict_example.py).  Usage: cli_weights.sh rnnc
. "$(dirname "$0")/lib_cli.sh"
D=${RNNC_TEST_DATA:?RNNC_TEST_DATA names tests/data}
model=$D/model.state_dict.safetensors
io=$D/lstm_2l_bi_proj.io.safetensors # x, h0, c0 and PyTorch's y, hy, cy

# 1. one flag: the encoder's LSTM out of the whole model, checked against PyTorch
ok "$RNNC" run --cell lstm --weights "$model" --weights-prefix encoder.lstm. --input "$io" \
   --out y.st --backend interp
grep -q "H=6 P=3, 2 layers, bidirectional" out.txt || { fail "sizes not inferred under the prefix"; cat out.txt >&2; }
grep -q "3 tensors outside 'encoder.lstm.' ignored" err.txt || { fail "ignored tensors not counted"; cat err.txt >&2; }
ok "$RNNC" diff y.st "$io" --tol 1e-5
grep -q '^y max rel error' out.txt || fail "diff did not compare y"
grep -q '^x ' out.txt && fail "diff compared the input x"

# 2. no flag: the one prefix that fits is found and reported, same numbers
ok "$RNNC" run --cell lstm --weights "$model" --input "$io" --out y_auto.st --backend interp
grep -q "under 'encoder.lstm.'" err.txt || { fail "the prefix found is not reported"; cat err.txt >&2; }
ok "$RNNC" diff y_auto.st y.st --tol 0

# 3. two LSTMs: no prefix is refused with both named; either one runs when named
expect 1 "several prefixes \('decoder.lstm.', 'encoder.lstm.'\).*--weights-prefix" \
    "$RNNC" run --cell lstm --weights "$D/seq2seq.state_dict.safetensors" --input "$io" \
    --out y_s.st --backend interp
ok "$RNNC" run --cell lstm --weights "$D/seq2seq.state_dict.safetensors" \
   --weights-prefix decoder.lstm. --input "$io" --out y_dec.st --backend interp
grep -q "23 tensors outside 'decoder.lstm.' ignored" err.txt || { fail "decoder: ignored not counted"; cat err.txt >&2; }
ok "$RNNC" diff y_dec.st y.st --tol 0

# 4. a prefix that holds nothing, or the wrong sub-module, says what the file has
expect 1 "no tensor in .* starts with 'foo.'" "$RNNC" run --cell lstm --weights "$model" \
    --weights-prefix foo. --input "$io" --out y_bad.st
expect 1 "under 'encoder.'.*'encoder.lstm.weight_ih_l0': --weights-prefix picks one" \
    "$RNNC" run --cell lstm --weights "$model" --weights-prefix encoder. --input "$io" --out y_bad.st
[ -e y_bad.st ] && fail "a failed run wrote its output"

# 5. grad takes the same flag
ok "$RNNC" random --cell lstm --seq 5 --batch 2 --input-size 4 --hidden-size 6 --seed 3 \
   --weights unused.st --input x_only.st
"$RNNC" run --cell lstm --weights "$model" --input "$io" --out dy.st --backend interp >/dev/null 2>&1
ok "$RNNC" grad --cell lstm --weights "$model" --weights-prefix encoder.lstm. --input "$io" \
   --grad-output dy.st --out g.st --backend interp
"$RNNC" show g.st | grep -q '^weight_hr_l1_reverse F32 \[3, 6\]' || fail "grad under a prefix"

# 6. an input file with outputs of another cell is still refused (cy is no gru state)
expect 1 "holds 'cy'" "$RNNC" run --cell gru --weights "$D/gru_2l_bi.weights.safetensors" \
    --input "$io" --out y_g.st
# and diff still refuses an output missing from one side (x_only.st: x, h0, c0)
expect 1 "y.st has 'y', x_only.st does not" "$RNNC" diff y.st x_only.st

exit $((fails > 0))
