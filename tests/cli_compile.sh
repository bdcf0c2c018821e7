#!/usr/bin/env bash
# cli_compile.sh: `rnnc compile` writes a bundle for two archs and two batch
# sizes without a GPU: the header, one kernel set and one tuning record per
# (arch, batch) in the manifest, and the options' errors.  The entries'
# round trip through the runtime is test_bundle_model.c.
# Usage: cli_compile.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
export RNNC_CACHE_DIR="$T/cache"
built fused || { echo "skipped: this rnnc is built without CUDA, so it has no bundles"; exit 77; }

# manifest FILE: the JSON manifest of a bundle (its length is at byte 16)
manifest() {
    local m
    m=$(od -An -t u8 -j 16 -N 8 "$1" | tr -d ' ')
    tail -c +33 "$1" | head -c "$m"
}
# count REGEX FILE: how many times REGEX occurs
count() { grep -Eo -- "$1" "$2" | wc -l | tr -d ' '; }

"$RNNC" --help | grep -q "^  compile " || fail "--help does not list compile"
"$RNNC" compile --help | grep -q "^Usage: rnnc compile" || fail "compile --help"

# 1. two archs x two batch sizes in one file
ok "$RNNC" compile --cell lstm --input-size 24 --hidden 32 --batch 1,8 --arch sm_80,sm_90 \
   -o m.rnncpkg
grep -q "wrote m.rnncpkg: lstm (I=24 H=32), 4 kernel sets: batch 1,8 x sm_80,sm_90" out.txt ||
    { fail "compile does not say what it wrote"; cat out.txt >&2; }
[ "$(head -c 7 m.rnncpkg)" = "RNNCPKG" ] || fail "no bundle magic"
manifest m.rnncpkg > manifest.json
grep -q '"codegen_version":' manifest.json || fail "manifest without codegen_version"
[ "$(count '"sm":80' manifest.json)" -eq 2 ] || fail "want 2 kernel sets for sm_80"
[ "$(count '"sm":90' manifest.json)" -eq 2 ] || fail "want 2 kernel sets for sm_90"
[ "$(count '"name":"fused_lstm_b8"' manifest.json)" -eq 2 ] || fail "want B=8 for each arch"
[ "$(count '"shape":"fused lstm#[0-9a-f]{16} I=24 H=32 [^"]* sm_90 sms=132 B=1"' manifest.json)" -eq 1 ] ||
    { fail "no tuning record for sm_90, 132 SMs, B=1"; cat manifest.json >&2; }
[ "$(count '"tuning":"ut=[0-9]+ bt=[0-9]+ nt=[0-9]+"' manifest.json)" -eq 4 ] ||
    fail "want 4 tuning records"
# the same request again comes from the disk cache, and gives the same file
ok "$RNNC" compile --cell lstm --input-size 24 --hidden 32 --batch 1,8 --arch sm_80,sm_90 \
   -o again.rnncpkg
cmp -s m.rnncpkg again.rnncpkg || fail "compiling twice gives different bundles"

# 2. the SM count is part of the kernels, and a tuning record is used
ok "$RNNC" compile --cell gru --input-size 16 --hidden 16 --batch 4 --arch 90 --sm-count 114 \
   -o g.rnncpkg
manifest g.rnncpkg | grep -q 'sm_90 sms=114 B=4' || fail "--sm-count not in the record"

# 3. a stack runs two kernels at once on half the SMs where a step is bound by its latency
#    (B = 8) and one at a time on every SM where its multiply-adds dominate (B = 2048): the
#    info log says which (rt_fused_share_at), and both tuning records name the model's share=2
RNNC_LOG=info ok "$RNNC" compile --cell lstm --input-size 128 --hidden 128 --layers 2 --batch 8,2048 \
   --arch sm_90 -o s.rnncpkg
grep -q "tuning of lstm B=8 (sm_90; two kernels at once)" err.txt ||
    { fail "B = 8 of a stack: not two kernels at once"; cat err.txt >&2; }
grep -q "tuning of lstm B=2048 (sm_90; one kernel at a time)" err.txt ||
    { fail "B = 2048 of a stack: not one kernel at a time"; cat err.txt >&2; }
[ "$(manifest s.rnncpkg | grep -Eo 'share=2 sm_90 sms=132 B=(8|2048)"' | wc -l)" -eq 2 ] ||
    fail "want both tuning records keyed share=2"

# 4. errors
expect 2 "--arch wants archs like" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 \
    --batch 1 --arch hopper -o x.rnncpkg
expect 2 "--batch wants an integer" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 \
    --batch 1,zero --arch sm_90 -o x.rnncpkg
expect 2 "are all needed" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 --batch 1 \
    -o x.rnncpkg
expect 1 "sm-count" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 --batch 1 \
    --arch sm_75 -o x.rnncpkg
expect 1 "proj_size" "$RNNC" compile --cell lstm --input-size 4 --hidden 64 --proj-size 63 \
    --batch 1 --arch sm_90 -o x.rnncpkg
[ -e x.rnncpkg ] && fail "a failed compile left a file"
# a file that is not a bundle, and a bundle of another format, are refused by run
echo "not a bundle" > bad.rnncpkg
ok "$RNNC" random --cell lstm --seq 2 --batch 1 --input-size 4 --hidden-size 4 \
   --weights w.st --input x.st
expect 1 "not an rnnc bundle" "$RNNC" run --cell lstm --weights w.st --input x.st --out y.st \
    --bundle bad.rnncpkg
cp m.rnncpkg old.rnncpkg
printf '\x07' | dd of=old.rnncpkg bs=1 seek=8 conv=notrunc 2> /dev/null
expect 1 "bundle format 7.*rnnc compile" "$RNNC" run --cell lstm --weights w.st --input x.st \
    --out y.st --bundle old.rnncpkg
# a good bundle does not stop a run on another backend
ok "$RNNC" run --cell lstm --weights w.st --input x.st --out y.st --bundle m.rnncpkg \
   --backend interp

# 5. the user's kernel cache is read, not written, unless --cache asks
count_kernels() { find "$1" -name '*.cubin' 2>/dev/null | wc -l; }
RNNC_CACHE_DIR=$PWD/own_cache ok "$RNNC" compile --cell lstm --input-size 6 --hidden 6 \
    --batch 2 --arch sm_90 -o c.rnncpkg
[ "$(count_kernels own_cache)" -eq 0 ] || fail "compile wrote into the kernel cache"
RNNC_CACHE_DIR=$PWD/own_cache ok "$RNNC" compile --cell lstm --input-size 6 --hidden 6 \
    --batch 2 --arch sm_90 -o c.rnncpkg --cache
[ "$(count_kernels own_cache)" -eq 1 ] || fail "compile --cache did not fill the kernel cache"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_compile: all checks passed"
