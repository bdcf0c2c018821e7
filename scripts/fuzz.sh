#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang (ASan, and
# UBSan with float-cast-overflow: the checks GCC's UBSan lacks) into
# build-fuzz/ and runs each for a bounded time from its committed seeds and
# dictionary.  Any crash, leak, UB report or failed harness check fails the
# run and prints the input that caused it.
#   bash scripts/fuzz.sh                 each target RNNC_FUZZ_SECONDS (20) s, one per core at a time
#   bash scripts/fuzz.sh --long SECONDS  all at once at nice 19, logs and corpora in
#                                        build-fuzz/long/ (docs/reliability.md)
# Without clang (or its libFuzzer runtime) it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

long=0
if [ "${1:-}" = --long ]; then long=${2:?--long wants seconds}; fi
if ! rnnc_have_libfuzzer; then
    echo "fuzz: skipped: no clang with libFuzzer here (Debian: clang, libclang-rt-dev)"
    exit 0
fi
targets=(fuzz_cell fuzz_safetensors fuzz_bundle fuzz_cache fuzz_tuning fuzz_cli)
cuda_opts=()
[ -d /usr/local/cuda ] && cuda_opts+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
command -v ccache > /dev/null && cuda_opts+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang cmake -S . -B build-fuzz -DRNNC_FUZZ=ON -DRNNC_SANITIZE=ON -DRNNC_WERROR=ON \
    -DCMAKE_BUILD_TYPE=Debug -DRNNC_WITH_LLVM=OFF -DRNNC_WITH_CUDNN=OFF -DRNNC_WITH_DNNL=OFF \
    -DRNNC_BUILD_TESTS=OFF -DRNNC_BUILD_BENCH=OFF "${cuda_opts[@]}" | { grep '^-- rnnc:' || true; }
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}" > build-fuzz/build.log 2>&1 ||
    { tail -40 build-fuzz/build.log; exit 1; }

# The options every run shares: the committed dictionary, no output of the
# target's own (usage messages), ASan's leak check, UBSan fatal.
export ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
opts() { echo "-dict=tests/fuzz/dict/$1.dict -close_fd_mask=3 -rss_limit_mb=3072 -timeout=30 -print_final_stats=1"; }

# report T DIR: the crash inputs of a failed run, printed
report() {
    local f
    for f in "$2"/crash-* "$2"/leak-* "$2"/timeout-* "$2"/oom-*; do
        [ -e "$f" ] || continue
        echo "fuzz: $1: input $f (base64):"
        base64 "$f"
    done
}

if [ "$long" -gt 0 ]; then
    out=build-fuzz/long
    mkdir -p "$out/bin"
    for t in "${targets[@]}"; do
        [ -x "build-fuzz/tests/fuzz/$t" ] || continue
        # A copy: -fork runs the binary again and again; a rebuild must not change it.
        cp "build-fuzz/tests/fuzz/$t" "$out/bin/"
        mkdir -p "$out/$t.corpus" "$out/$t.artifacts"
        # -fork: a crash is saved and the run goes on, so one bug does not end the hour.
        nice -n 19 "$out/bin/$t" $(opts "$t") -max_total_time="$long" \
            -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
            -artifact_prefix="$out/$t.artifacts/" "$out/$t.corpus" "tests/fuzz/corpus/$t" \
            > "$out/$t.log" 2>&1 &
    done
    echo "fuzz: ${#targets[@]} targets running for $long s; logs in $out/"
    wait
    exit 0
fi

secs=${RNNC_FUZZ_SECONDS:-20}
# run_one T WORK: one bounded run; its summary line in WORK/summary, crash inputs printed
run_one() {
    local t=$1 work=$2
    if "build-fuzz/tests/fuzz/$t" $(opts "$t") -max_total_time="$secs" \
        -artifact_prefix="$work/" "$work" "tests/fuzz/corpus/$t" > "$work/log" 2>&1; then
        echo "fuzz: $t: $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/log" |
            grep -Eo '[0-9]+$') inputs in $secs s, $(grep -Eo 'cov: [0-9]+' "$work/log" | tail -1)" \
            > "$work/summary"
    else
        { echo "fuzz: $t FAILED:"
          grep -E 'ERROR|SUMMARY|runtime error|fuzz check|Test unit' "$work/log" | head -20
          report "$t" "$work"; } > "$work/summary"
        touch "$work/failed"
    fi
}
# As many at once as there are cores: each is one process.
failed=0
jobs=$(nproc)
works=()
for t in "${targets[@]}"; do
    [ -x "build-fuzz/tests/fuzz/$t" ] || continue
    work=$(mktemp -d)
    works+=("$work")
    run_one "$t" "$work" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
for work in "${works[@]}"; do
    cat "$work/summary"
    [ ! -e "$work/failed" ] || failed=1
    rm -rf "$work"
done
exit $failed
