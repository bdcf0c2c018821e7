#!/usr/bin/env bash
# cli_conv_gpu.sh (label gpu): `rnnc conv` runs convolutions on the GPU and
# --check compares each with its plain host convolution (fp32 FFMA, 1e-5):
# fused and unfused epilogues, NHWC, strides, dilation, groups, 1-D and 3-D,
# the transposed convolution; --bench's table and --json; files in and out.
# Exits 77 where there is no GPU or no cuDNN.
. "$(dirname "$0")/lib_cli.sh" "$1"

"$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 > out.txt 2> err.txt ||
    { grep -Eq "no device|not built|NO_DEVICE|NOT_BUILT" err.txt && echo "SKIP: $(cat err.txt)" &&
      exit 77; }

check() { ok "$RNNC" conv --check "$@"; grep -q "check: .*: ok" out.txt || fail "$*: $(cat out.txt)"; }
check --x-shape 2,3,9,8 --w-shape 4,3,3,3 --padding 1 --bias --z --relu --alpha1 0.75 --alpha2 0.5
check --x-shape 2,3,9,8 --w-shape 4,3,3,3 --padding 1 --bias --z --relu --unfused
check --x-shape 2,9,8,6 --w-shape 6,3,3,3 --layout nhwc --stride 2 --dilation 2 --groups 2
check --x-shape 2,4,13 --w-shape 8,1,3 --groups 4 --padding 1 --dilation 2
check --x-shape 2,4,6,5,7 --w-shape 6,4,3,3,3 --padding 1 --stride 2,1,2
check --x-shape 2,6,5,4 --w-shape 6,2,3,3 --transposed --stride 2 --padding 1 --output-padding 1
check --x-shape 2,8,7,7 --w-shape 16,8,3,3 --padding 1 --algo benchmark --deterministic

# --bench: every algorithm, timed, in a table and the JSON file.
ok "$RNNC" conv --x-shape 4,16,14,14 --w-shape 32,16,3,3 --padding 1 --bench --json b.json
grep -Eq "^IMPLICIT|^GEMM|^graph engine" out.txt || fail "--bench table: $(cat out.txt)"
grep -q '"algos"' b.json || fail "--bench JSON lacks the table"
grep -q '"algo"' b.json || fail "--bench JSON lacks what ran"

# Files in and out: the same inputs give the same y.
ok "$RNNC" conv --x-shape 2,3,8,8 --w-shape 4,3,3,3 --padding 1 --bias --save-inputs in.st \
    --out y1.st
ok "$RNNC" conv --in in.st --padding 1 --out y2.st
ok "$RNNC" diff y1.st y2.st --tol 1e-6

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_conv_gpu: all checks passed"
