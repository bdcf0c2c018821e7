#!/usr/bin/env bash
# cli_untrusted.sh: what rnnc does with files that are in the way or not
# what they claim (issue 18's defects D1-D5, D7, D8 and the stale temp
# files of `rnnc cache clear`; issue 16: an output naming its own input).
# Usage: cli_untrusted.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
export RNNC_CACHE_DIR="$T/cache"
TO="timeout 60" # a reader that opens a FIFO first would wait forever

"$RNNC" random --seq 4 --batch 2 --input-size 3 --hidden-size 5 --weights w.st --input x.st \
    > /dev/null || { echo "rnnc random failed" >&2; exit 1; }
run() { $TO "$RNNC" run --cell lstm --weights w.st --input x.st --backend interp "$@"; }
# no_temp DIR: no temp file of the writer is left in DIR
no_temp() { ! ls -A "${1:-.}" | grep -Eq '^\.tmp-.*-[A-Za-z0-9]{6}$' || fail "temp files left in ${1:-.}: $(ls -A "${1:-.}")"; }
sum() { md5sum "$@" | cut -d' ' -f1; }

# --- issue 16 (5): an output that is one of the command's inputs is refused
cp x.st x.orig; cp w.st w.orig
expect 1 "--out 'x.st' is the same file as --input 'x.st'" run --out x.st
expect 1 "--out './x.st' is the same file as --input 'x.st'" run --out ./x.st
expect 1 "--out 'w.st' is the same file as --weights 'w.st'" run --out w.st
ln x.st hard.st; ln -s x.st soft.st
expect 1 "same file as --input" run --out hard.st
expect 1 "same file as --input" run --out "$T/soft.st"
cmp -s x.st x.orig || fail "rnnc run --out x.st changed its input"
cmp -s w.st w.orig || fail "rnnc run --out w.st changed its weights"
expect 1 "--out 'w.st' is the same file as --weights" \
    $TO "$RNNC" grad --cell lstm --weights w.st --input x.st --backend interp --grad-output x.st --out w.st
expect 1 "--input './same.st' is the same file as --weights 'same.st'" \
    "$RNNC" random --seq 2 --batch 1 --input-size 3 --hidden-size 5 --weights same.st --input ./same.st
[ ! -e same.st ] || fail "random wrote a file named by both --weights and --input"
printf 'cell c(x[I]) { state h[H]; h = tanh(linear(x, W[H, I]) + linear(h, U[H, H])); }\n' > c.cell
cp c.cell c.orig
if built fused; then
    expect 1 "-o 'c.cell' is the same file as --cell" \
        "$RNNC" compile --cell c.cell --input-size 3 --hidden 5 --batch 1 --arch sm_90 -o c.cell
fi
expect 1 "--json 'c.cell' is the same file as --cell" \
    "$RNNC" compare --cell c.cell --input-size 3 --hidden 5 --seq 2 --batch 1 --backends interp \
    --json c.cell
cmp -s c.cell c.orig || fail "an output replaced the .cell file it read"
if "$RNNC" --help | grep -q "^  conv "; then # checked before any device is needed
    expect 1 "--out './x.st' is the same file as --in 'x.st'" "$RNNC" conv --in x.st --out ./x.st
    expect 1 "--save-inputs 's.st' is the same file as --out 's.st'" \
        "$RNNC" conv --x-shape 1,2,4,4 --w-shape 2,2,3,3 --save-inputs s.st --out s.st
    cmp -s x.st x.orig || fail "rnnc conv --out x.st changed its input"
fi

# --- D1: only a regular file is replaced; `-` and /dev/null discard
mkfifo fifo.out
expect 1 "'fifo.out': it is a FIFO" run --out fifo.out
[ -p fifo.out ] || fail "the FIFO at --out was replaced"
echo precious > victim; ln -s victim link.out
expect 1 "'link.out': it is a symbolic link" run --out link.out
[ -L link.out ] && [ "$(cat victim)" = precious ] || fail "the symbolic link at --out was followed or replaced"
mkdir dir.out
expect 1 "'dir.out': it is a directory" run --out dir.out
ok run --out /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
ok run --out -
[ ! -e ./- ] || fail "--out - wrote a file named '-'"
if [ "$(id -u)" = 0 ] && mknod zero.out c 1 5 2> /dev/null; then
    expect 1 "'zero.out': it is a character device" run --out zero.out
    [ -c zero.out ] || fail "a device node at --out became a regular file"
fi
no_temp

# --- D2: temp names are unique and never follow a planted link
echo precious > victim2
for p in y.st.tmp y.st.tmp.1 .tmp-y.st; do ln -sf victim2 "$p"; done
ok run --out y.st
[ "$(cat victim2)" = precious ] || fail "the writer followed a planted link"
[ -f y.st ] && [ ! -L y.st ] || fail "no output y.st"
rm y.st.tmp y.st.tmp.1 .tmp-y.st
echo precious > victim3
ok bash -c "ln -sf victim3 r.json.tmp.\$\$; exec $RNNC compare --cell lstm --input-size 3 --hidden 5 --seq 2 --batch 1 --backends interp --json r.json"
[ "$(cat victim3)" = precious ] || fail "compare --json followed a planted link"
grep -q '"results"' r.json || fail "compare --json wrote no report"

if built fused; then
    copt=(--cell lstm --input-size 3 --hidden 5 --batch 1 --arch sm_90 --cache)
    echo precious > victim4; ln -s victim4 m.rnncpkg.tmp
    ok $TO "$RNNC" compile "${copt[@]}" -o m.rnncpkg
    [ "$(cat victim4)" = precious ] || fail "compile -o followed a planted link at <out>.tmp"
    # --- D3: eight concurrent writers of one bundle all succeed, the result whole
    pids=()
    for i in 1 2 3 4 5 6 7 8; do
        $TO "$RNNC" compile "${copt[@]}" -o same.rnncpkg > "c$i.out" 2>&1 & pids+=($!)
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || { fail "concurrent compile $i failed"; cat "c$((i+1)).out" >&2; }; done
    cmp -s same.rnncpkg m.rnncpkg || fail "the bundle of 8 concurrent writers differs from one writer's"
    no_temp
    # --- D4: a FIFO in place of a cache entry is a miss, not a hang
    entry=$(ls cache/kernels/*.cubin | head -1)
    rm "$entry"; mkfifo "$entry"
    ok $TO "$RNNC" compile "${copt[@]}" -o m2.rnncpkg
    cmp -s m2.rnncpkg m.rnncpkg || fail "compile over a FIFO cache entry gave another bundle"
    [ -f "$entry" ] && [ ! -p "$entry" ] || fail "the FIFO in place of a cache entry was not replaced"
    ! grep -q "not writable" err.txt || fail "a FIFO cache entry was reported as an unwritable cache"
    # --- D5: a directory or a FIFO given as --bundle
    mkdir bdir; mkfifo bfifo
    expect 1 "'bdir' is a directory" run --out y.st --bundle bdir
    expect 1 "'bfifo' is a FIFO" run --out y.st --bundle bfifo
fi

# --- D4: a FIFO given as any input is refused at once
mkfifo f.st f.cell
expect 1 "'f.st' is a FIFO" $TO "$RNNC" show f.st
expect 1 "'f.st' is a FIFO" run --out y.st --weights f.st
expect 1 "'f.st' is a FIFO" $TO "$RNNC" run --cell lstm --weights w.st --input f.st --out y.st
expect 1 "'./f.cell' is a FIFO" $TO "$RNNC" run --cell ./f.cell --weights w.st --input x.st --out y.st
expect 1 "'.' is a directory" $TO "$RNNC" show .

# --- D7: outputs honour the umask
rm -f y.st
(umask 077 && run --out y.st > /dev/null) || fail "run under umask 077"
[ "$(stat -c %a y.st)" = 600 ] || fail "umask 077: y.st is $(stat -c %a y.st), want 600"
rm -f y.st
(umask 022 && run --out y.st > /dev/null) || fail "run under umask 022"
[ "$(stat -c %a y.st)" = 644 ] || fail "umask 022: y.st is $(stat -c %a y.st), want 644"
if built fused; then
    rm -rf cache
    (umask 027 && $TO "$RNNC" compile "${copt[@]}" -o m3.rnncpkg > /dev/null) || fail "compile under umask 027"
    modes=$(stat -c %a cache/kernels/*.cubin | sort -u)
    [ "$modes" = 640 ] || fail "umask 027: cache entries are $modes, want 640"
fi

# --- D8: `rnnc random` writes both files or neither
expect 1 "no/such/dir/x2.st" "$RNNC" random --seq 2 --batch 1 --input-size 3 --hidden-size 5 \
    --weights w2.st --input no/such/dir/x2.st
[ ! -e w2.st ] || fail "rnnc random left its weights behind when the input could not be written"
cp w.st w.keep
expect 1 "no/such/dir/x2.st" "$RNNC" random --seq 2 --batch 1 --input-size 3 --hidden-size 7 \
    --weights w.st --input no/such/dir/x2.st
cmp -s w.st w.keep || fail "rnnc random replaced the weights although the input failed"
no_temp

# --- NaN, infinity, and F64 past fp32's range in the inputs are refused, naming the element
# nanfile NAME DTYPE VALUE: x [4, 2, 3] of DTYPE (F32 or F64), element 5 = VALUE, the rest 0.25
nanfile() {
    python3 - "$@" <<'PY'
import json, struct, sys
name, dtype, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
fmt, size = ('<f', 4) if dtype == 'F32' else ('<d', 8)
vals = [0.25] * 24
vals[5] = value
data = b''.join(struct.pack(fmt, v) for v in vals)
hdr = json.dumps({'x': {'dtype': dtype, 'shape': [4, 2, 3], 'data_offsets': [0, len(data)]}}).encode()
hdr += b' ' * (-len(hdr) % 8)
open(name, 'wb').write(struct.pack('<Q', len(hdr)) + hdr + data)
PY
}
nanfile nan.st F32 nan; nanfile inf.st F64 -inf; nanfile big.st F64 1e300; nanfile fine.st F64 0.5
for f in nan.st inf.st big.st; do
    expect 1 "invalid argument: tensor 'x' holds .* at element 5" \
        $TO "$RNNC" run --cell lstm --weights w.st --input $f --backend interp --out y.st
done
ok $TO "$RNNC" run --cell lstm --weights w.st --input fine.st --backend interp --out y.st

# --- `rnnc cache clear` removes temp files left by a writer that died
mkdir -p cache/kernels cache/tuning
touch -d '1 hour ago' cache/kernels/.tmp-dead.cubin-abcdef cache/tuning/.tmp-dead.txt-abcdef
touch cache/kernels/.tmp-live.cubin-abcdef
ok "$RNNC" cache clear
[ ! -e cache/kernels/.tmp-dead.cubin-abcdef ] && [ ! -e cache/tuning/.tmp-dead.txt-abcdef ] ||
    fail "cache clear left stale temp files: $(ls -A cache/kernels cache/tuning)"
[ -e cache/kernels/.tmp-live.cubin-abcdef ] || fail "cache clear removed a fresh temp file"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "cli_untrusted: all passed"
