#!/usr/bin/env bash
# cli_crnn.sh (label gpu): runs examples/crnn.c (two conv + bias + ReLU
# layers, then a 2-layer bidirectional LSTM, on the GPU) and checks what it
# reports: the output shape, each conv's algorithm, a finite output.
# Exits 77 where the example does (no GPU or no cuDNN).
set -u
exe=$(dirname "$1")/examples/example_crnn
[ -x "$exe" ] || { echo "FAIL: $exe is not built" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$exe" > "$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "FAIL: example_crnn exit $rc" >&2; exit 1; }
for want in "^output  \[8, 256, 512\]" "^conv1 .* ms  (fused|fwd|unfused)" \
            "^conv2 .* ms  (fused|fwd|unfused)" "^lstm .* on (fused|cudnn)"; do
    grep -Eq -- "$want" "$out" || { echo "FAIL: '$want' not in the output" >&2; exit 1; }
done
grep -Eq "mean -?[0-9]" "$out" || { echo "FAIL: the output is not finite" >&2; exit 1; }
echo "cli_crnn: ok"
