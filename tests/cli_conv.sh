#!/usr/bin/env bash
# cli_conv.sh: `rnnc conv`'s command line on every machine: what it refuses,
# before any GPU is touched, with exit code 2 for the command line and 1 for
# inputs that do not fit.  (cli_conv_gpu.sh runs convolutions.)
. "$(dirname "$0")/lib_cli.sh" "$1"

ok "$RNNC" conv --help
grep -q "^Usage: rnnc conv" out.txt || fail "conv --help has no usage line"
"$RNNC" --help | grep -q "^  conv " || fail "--help does not list conv"

expect 2 "no input" "$RNNC" conv
expect 2 "not both" "$RNNC" conv --in a.st --x-shape 1,1,3,3 --w-shape 1,1,1,1
expect 2 "both --x-shape and --w-shape" "$RNNC" conv --x-shape 1,1,3,3
expect 2 "unknown value 'foo'" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --layout foo
expect 2 "unknown value" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --algo fast
expect 2 "stride" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --stride 0
expect 2 "padding" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --padding -1
expect 2 "at most 3" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --dilation 1,1,1,1
expect 2 "at most 5" "$RNNC" conv --x-shape 1,1,3,3,3,3 --w-shape 1,1,1,1
expect 2 "--transposed runs the plain" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 \
    --transposed --bias
expect 2 "for --transposed" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --output-padding 1
expect 2 "put them in a file" "$RNNC" conv --in a.st --bias
expect 2 "unrecognized|unknown" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 --frobnicate
expect 2 "unexpected argument" "$RNNC" conv --x-shape 1,1,3,3 --w-shape 1,1,1,1 extra

# Inputs that do not fit the convolution: exit 1, naming the numbers.
expect 1 "cannot open" "$RNNC" conv --in missing.safetensors
expect 1 "rank 2 and w rank 2" "$RNNC" conv --x-shape 2,3 --w-shape 4,3
expect 1 "x has 3 channels.*wants 6" "$RNNC" conv --x-shape 2,3,8,8 --w-shape 4,3,3,3 --groups 2
expect 1 "3 values for 2 spatial dims" "$RNNC" conv --x-shape 2,3,8,8 --w-shape 4,3,3,3 \
    --stride 1,2,3
expect 1 "kernel H 9 dilated 1 spans 9" "$RNNC" conv --x-shape 2,3,6,6 --w-shape 4,3,9,9
expect 1 "groups 3 does not divide" "$RNNC" conv --x-shape 2,3,8,8 --w-shape 4,1,3,3 --groups 3
expect 1 "transposed input has w's first dim" "$RNNC" conv --x-shape 2,3,8,8 \
    --w-shape 4,3,3,3 --transposed
expect 1 "below the stride" "$RNNC" conv --x-shape 2,4,8,8 --w-shape 4,3,3,3 --transposed \
    --output-padding 1

# Files: --save-inputs writes what it ran on (here even without a GPU: the
# inputs are saved before the device is touched); read back, they are checked.
"$RNNC" conv --x-shape 2,3,8,8 --w-shape 4,3,3,3 --padding 1 --bias --z \
    --save-inputs in.safetensors > out.txt 2> err.txt
[ -s in.safetensors ] || fail "--save-inputs wrote nothing"
ok "$RNNC" show in.safetensors
grep -q "^x F32 \[2, 3, 8, 8\]" out.txt || fail "saved x: $(cat out.txt)"
grep -q "^z F32 \[2, 4, 8, 8\]" out.txt || fail "saved z has y's shape: $(cat out.txt)"
expect 1 "z must have y's shape" "$RNNC" conv --in in.safetensors --stride 2
expect 1 "x has 8 channels" "$RNNC" conv --in in.safetensors --layout nhwc

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_conv: all checks passed"
