#!/usr/bin/env bash
# cli_errors.sh: bad input to `rnnc run` gets a clear message and the right
# exit code (1: failed, 2: command line not understood), and never leaves a
# partial output file.  Usage: cli_errors.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"

"$RNNC" random --seq 5 --batch 3 --input-size 4 --hidden-size 6 --weights w.st --input x.st \
    > /dev/null || { echo "rnnc random failed" >&2; exit 1; }
"$RNNC" random --cell gru --seq 5 --batch 3 --input-size 4 --hidden-size 6 \
    --weights wg.st --input xg.st > /dev/null || exit 1
run() { "$RNNC" run --cell lstm --weights w.st --input x.st --backend interp "$@"; }

# output paths that cannot be written: exit 1, the reason, nothing left behind
mkdir -p outdir/isdir
expect 1 'I/O error: .*no/such/dir/y.st' run --out no/such/dir/y.st
expect 1 'I/O error: .*isdir' run --out outdir/isdir
[ "$(ls -A outdir)" = "isdir" ] || fail "a temporary file was left: $(ls -A outdir)"
[ -z "$(ls -A outdir/isdir)" ] || fail "something was written into outdir/isdir"
touch afile
expect 1 'I/O error' run --out afile/y.st
# a failed run does not replace an existing output
run --out keep.st > /dev/null || fail "first run failed"
cp keep.st keep.orig
expect 1 'not found|shape' "$RNNC" run --cell lstm --weights wg.st --input x.st --out keep.st \
    --hidden-size 6
cmp -s keep.st keep.orig || fail "a failed run changed the existing output"
[ "$(ls | grep -c 'keep.st.')" -eq 0 ] || fail "temporary files left: $(ls)"

# backends
expect 2 "--backend wants .*not 'bogus'" run --out y.st --backend bogus
for b in fused cudnn; do
    usable "$b" && continue
    expect 1 "(no device|not built): --backend $b: ." run --out "y_$b.st" --backend "$b"
    [ ! -e "y_$b.st" ] || fail "--backend $b wrote an output"
done
usable cpu || expect 1 "not built: --backend cpu: ." run --out y_cpu.st --backend cpu

# the command line
expect 2 'are all needed' "$RNNC" run --cell lstm --weights w.st --input x.st
expect 2 "unrecognized option '--frob'" run --out y.st --frob
expect 2 "--layers wants an integer" run --out y.st --layers 0
expect 2 "--hoist wants none, matmul or all" run --out y.st --hoist some
expect 2 "--dropout wants a number" run --out y.st --dropout 1.5
expect 2 "unexpected argument 'extra'" run --out y.st extra
expect 2 "unknown command 'frobnicate'" "$RNNC" frobnicate

# files that are not what they should be
expect 1 "no built-in cell 'nope'" "$RNNC" run --cell nope --weights w.st --input x.st --out y.st
expect 1 "cannot open" "$RNNC" run --cell lstm --weights missing.st --input x.st --out y.st
expect 1 "cannot open" "$RNNC" run --cell lstm --weights w.st --input missing.st --out y.st
head -c 100 w.st > truncated.st
expect 1 "truncated|bad file format|I/O error" \
    "$RNNC" run --cell lstm --weights truncated.st --input x.st --out y.st
expect 1 "holds 'weight_ih_l0'" "$RNNC" run --cell lstm --weights w.st --input w.st --out y.st
expect 1 "holds 'c0'" "$RNNC" run --cell gru --weights wg.st --input x.st --out y.st
# an input of a dtype rnnc does not read as numbers: named, with the dtypes it reads
# (x as I32 [1, 1, 4], written byte by byte: 8-byte header length, JSON, data)
hdr='{"x":{"dtype":"I32","shape":[1,1,4],"data_offsets":[0,16]}}'
while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
{ printf "\\x$(printf %02x ${#hdr})"'\x00\x00\x00\x00\x00\x00\x00'; printf '%s' "$hdr"
  printf '\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04\x00\x00\x00'; } > x16.st
expect 1 "'x' is I32; rnnc run reads F32, F64, F16 or BF16" "$RNNC" run --cell gru --weights wg.st \
    --input x16.st --out y16.st
[ ! -e y16.st ] || fail "a refused run left y16.st behind"
expect 1 "no hidden size fits" "$RNNC" run --cell lstm --weights wg.st --input x.st --out y.st
expect 1 "shape mismatch: .*weight_ih_l0" run --out y.st --hidden-size 7
expect 1 "has 4 features; --input-size says 5" run --out y.st --input-size 5
"$RNNC" random --seq 5 --batch 3 --input-size 4 --hidden-size 7 --weights w7.st --input x7.st \
    > /dev/null || fail "rnnc random H=7"
expect 1 "h0' in x7.st must be \[1, 3, 6\]" \
    "$RNNC" run --cell lstm --weights w.st --input x7.st --out y.st
[ ! -e y.st ] || fail "a failed run left y.st"
printf 'cell broken {\n    input x[I]\n    state h[H]\n    h2 = frob(h)\n}\n' > broken.cell
expect 1 "broken.cell:4" "$RNNC" run --cell broken.cell --weights w.st --input x.st --out y.st

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_errors: all checks passed"
