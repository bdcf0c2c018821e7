#!/usr/bin/env bash
# cli_cpu_bundle.sh: `rnnc compile --arch cpu...` puts the cpu backend's code
# in a bundle, and a process that loads it links that code and compiles
# none (the disk cache off): the same output bit for bit as compiled code
# for this CPU; an x86-64 level's code within 1e-5 of the interpreter; of
# several targets, the one with the widest vectors this CPU runs; a target
# this CPU lacks, or a model the bundle lacks, compiled as before; a damaged
# object refused when the bundle loads; the options' errors; `rnnc show`
# lists a bundle's entries and says whether this CPU runs each; RNNC_BUNDLE
# loads bundles into every process, warning of one it cannot load.
# Usage: cli_cpu_bundle.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
usable cpu || { echo "skipped: this rnnc has no usable cpu backend"; exit 77; }
export RNNC_CACHE=0 RNNC_LOG=info
x86=false
uname -m | grep -q '^x86_64$' && x86=true

model=(--cell lstm --layers 2 --bidirectional)
ok "$RNNC" random "${model[@]}" --seq 7 --batch 3 --input-size 20 --hidden 24 \
   --weights w.st --input x.st
# run N BUNDLE ARGS...: `rnnc run` on the cpu backend into yN.st; its log in logN.txt
run() {
    local n=$1 b=$2
    shift 2
    "$RNNC" run --backend cpu ${b:+--bundle "$b"} --weights w.st --input x.st \
        --out "y$n.st" "$@" > "out$n.txt" 2> "log$n.txt" ||
        { fail "run $n -> $?"; cat "out$n.txt" "log$n.txt" >&2; }
}
# origins N: where run N's cpu code came from and for which CPU, one a line
origins() { sed -n 's/^rnnc: cpu [^(]*(\([^)]*\)): \([a-z]*\), .*/\2:\1/p' "log$1.txt" | tr '\n' ' '; }

# 1. this machine's CPU: two cells (layer 0, layers above), both from the bundle
ok "$RNNC" compile "${model[@]}" --input-size 20 --hidden 24 --arch cpu -o native.rnncpkg
grep -q "wrote native.rnncpkg: lstm (I=20 H=24), cpu code for native" out.txt ||
    { fail "compile does not say what it wrote"; cat out.txt >&2; }
run 1 "" "${model[@]}"
host=$(origins 1 | sed 's/^compile:\([^ ]*\) .*/\1/')
[ "$(origins 1)" = "compile:$host compile:$host " ] || { fail "run 1: '$(origins 1)'"; cat log1.txt >&2; }
run 2 native.rnncpkg "${model[@]}"
[ "$(origins 2)" = "bundle:$host bundle:$host " ] || { fail "run 2: '$(origins 2)'"; cat log2.txt >&2; }
cmp -s y1.st y2.st || fail "the bundle's code gives other bytes than compiled code"
grep -q "was not used\|does not hold" log2.txt && { fail "run 2 says the bundle was not used"; cat log2.txt >&2; }

# `rnnc show` lists both cells' objects, which this CPU runs
ok "$RNNC" show native.rnncpkg
grep -q "^bundle native.rnncpkg: 2 entries, 0 tuning records$" out.txt ||
    { fail "show: no summary line"; cat out.txt >&2; }
[ "$(grep -c '^  cpu     cpu lstm  *cpu:native  *[0-9]* bytes  [0-9]* floats a vector; this CPU runs it$' out.txt)" -eq 2 ] ||
    { fail "show: want two cpu:native lines this CPU runs"; cat out.txt >&2; }
ok "$RNNC" show --json native.rnncpkg
[ "$(grep -c '"runs_here":.*true' out.txt)" -eq 2 ] && grep -q '"kind":.*"cpu"' out.txt ||
    { fail "show --json"; cat out.txt >&2; }

# 2. the model the bundle lacks is compiled, and run says so
ok "$RNNC" random --cell gru --seq 5 --batch 2 --input-size 8 --hidden 16 \
   --weights wg.st --input xg.st
"$RNNC" run --backend cpu --bundle native.rnncpkg --cell gru --weights wg.st --input xg.st \
    --out yg.st > outg.txt 2> logg.txt || fail "gru run -> $?"
grep -q "^rnnc: cpu gru ([^)]*): compile" logg.txt || { fail "gru not compiled"; cat logg.txt >&2; }
grep -q "does not hold this model's cpu code" logg.txt ||
    { fail "run does not say the bundle lacks the gru"; cat logg.txt >&2; }

if $x86; then
    # 3. an x86-64 level: any CPU of that level runs it; within 1e-5 of the interpreter
    ok "$RNNC" compile "${model[@]}" --input-size 20 --hidden 24 --arch cpu:x86-64-v2 \
       -o v2.rnncpkg
    run 3 v2.rnncpkg "${model[@]}"
    [ "$(origins 3)" = "bundle:x86-64-v2 bundle:x86-64-v2 " ] ||
        { fail "run 3: '$(origins 3)'"; cat log3.txt >&2; }
    ok "$RNNC" run --backend interp "${model[@]}" --weights w.st --input x.st --out yi.st
    ok "$RNNC" diff y3.st yi.st --tol 1e-5

    # 4. of several targets the one with the widest vectors this CPU runs: native here
    #    (x86-64-v2 has 128-bit vectors, this CPU at least as wide)
    ok "$RNNC" compile "${model[@]}" --input-size 20 --hidden 24 --arch cpu:x86-64-v2,cpu \
       -o both.rnncpkg
    run 4 both.rnncpkg "${model[@]}"
    [ "$(origins 4)" = "bundle:$host bundle:$host " ] ||
        { fail "run 4: '$(origins 4)'"; cat log4.txt >&2; }
    cmp -s y1.st y4.st || fail "run 4 gives other bytes than compiled code"

    # 5. a level whose features this CPU lacks is not run: compiled instead
    if ! grep -qw avx512f /proc/cpuinfo; then
        ok "$RNNC" compile "${model[@]}" --input-size 20 --hidden 24 --arch cpu:x86-64-v4 \
           -o v4.rnncpkg
        run 5 v4.rnncpkg "${model[@]}"
        [ "$(origins 5)" = "compile:$host compile:$host " ] ||
            { fail "run 5 (no AVX-512 here): '$(origins 5)'"; cat log5.txt >&2; }
        cmp -s y1.st y5.st || fail "run 5 gives other bytes than compiled code"
    else
        echo "note: this CPU has AVX-512, so no level here lacks a feature (case 5 not run)"
    fi
fi

# 6. a damaged object is refused when the bundle loads
cp native.rnncpkg bad.rnncpkg
size=$(stat -c %s bad.rnncpkg)
printf '\xff' | dd of=bad.rnncpkg bs=1 seek=$((size - 100)) conv=notrunc 2> /dev/null
expect 1 "is damaged .kernel cpu lstm, cpu." "$RNNC" run --backend cpu --bundle bad.rnncpkg \
    "${model[@]}" --weights w.st --input x.st --out yb.st

# 7. errors
expect 1 "unknown cpu target 'pentium'" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 \
    --arch cpu:pentium -o x.rnncpkg
expect 2 "--batch is needed" "$RNNC" compile --cell lstm --input-size 4 --hidden 4 \
    --arch cpu,sm_90 -o x.rnncpkg
[ -e x.rnncpkg ] && fail "a failed compile left a file"

# 7b. RNNC_BUNDLE: the bundles a deployment names for every process
RNNC_BUNDLE=native.rnncpkg run 7 "" "${model[@]}"
[ "$(origins 7)" = "bundle:$host bundle:$host " ] || { fail "RNNC_BUNDLE: '$(origins 7)'"; cat log7.txt >&2; }
RNNC_BUNDLE=missing.rnncpkg:native.rnncpkg run 8 "" "${model[@]}"
[ "$(origins 8)" = "bundle:$host bundle:$host " ] || { fail "RNNC_BUNDLE with a missing one: '$(origins 8)'"; cat log8.txt >&2; }
[ "$(grep -c "warning: RNNC_BUNDLE: .*missing.rnncpkg" log8.txt)" -eq 1 ] ||
    { fail "want one warning of the missing bundle"; cat log8.txt >&2; }
cmp -s y1.st y8.st || fail "run 8 gives other bytes than compiled code"

# 8. kernels and cpu code in one file, where this rnnc has the fused backend
if built fused; then
    ok "$RNNC" compile "${model[@]}" --input-size 20 --hidden 24 --batch 3 --arch sm_90,cpu \
       -o mixed.rnncpkg
    grep -q "1 kernel set: batch 3 x sm_90, cpu code for native" out.txt ||
        { fail "mixed compile does not say what it wrote"; cat out.txt >&2; }
    run 6 mixed.rnncpkg "${model[@]}"
    [ "$(origins 6)" = "bundle:$host bundle:$host " ] ||
        { fail "run 6: '$(origins 6)'"; cat log6.txt >&2; }
    grep -q "kernel sets and objects for sm_90,cpu:native" log6.txt ||
        { fail "the load does not list sm_90 and cpu:native"; cat log6.txt >&2; }
    ok "$RNNC" show mixed.rnncpkg
    [ "$(grep -c '^  kernel  fused_lstm_b3  *sm_90 ' out.txt)" -ge 1 ] &&
        [ "$(grep -c '^  cpu     ' out.txt)" -eq 2 ] && grep -q "^  tuning  fused lstm" out.txt ||
        { fail "show of a mixed bundle"; cat out.txt >&2; }
fi
exit $((fails > 0))
