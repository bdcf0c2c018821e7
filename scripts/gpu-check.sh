#!/usr/bin/env bash
# gpu-check.sh [tests-regex] : everything a GPU machine call does, in one go.
# Builds (no LLVM there) against the packages carried in .deps/ (scripts/gpu-deps.sh),
# runs the `gpu`-labelled tests (matching the regex, default all) and the
# benchmarks, and leaves logs and JSON under $OUT.
#   BENCH=0     skip benchmarks      BENCH_ONLY=1  skip tests
#   COMPARE=0   skip the rnnc compare runs     BENCHES=regex  only those bench_* programs
set -u
cd "$(dirname "$0")/.."
FINAL=${OUT:-/tmp/rnnc-gpu-out}
# $OUT brings back at most 8 files: logs go to a folder that is packed at the end.
OUT=$(mktemp -d)
trap 'tar -C "$OUT" -czf "$FINAL/results.tgz" . ; cp "$OUT"/*.json "$FINAL"/ 2>/dev/null' EXIT
mkdir -p "$FINAL"
# CMake refuses include paths inside the source tree: use a copy of .deps.
deps=/tmp/rnnc-deps
rm -rf "$deps" && cp -r .deps "$deps"
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export RNNC_CACHE_DIR=${RNNC_CACHE_DIR:-/tmp/rnnc-cache}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; \
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'libcudnn\.so\.[0-9]+\.' ; \
  find / -name 'libcudnn.so.9*' -path '*lib*' 2>/dev/null | head -3; nvcc --version | tail -2; } > "$OUT/machine.txt" 2>&1

t0=$(date +%s)
cmake -S . -B build-gpu -DRNNC_WITH_LLVM=OFF -DRNNC_DEPS_PREFIX="$deps" -DCMAKE_BUILD_TYPE=Release \
      -DRNNC_WERROR=OFF > "$OUT/build.log" 2>&1 &&
cmake --build build-gpu -j 16 -- -k >> "$OUT/build.log" 2>&1
rc=$?
# A target that failed to build is reported; what did build still runs.
[ $rc -ne 0 ] && grep -E "error|Error" "$OUT/build.log" | head -20 && [ -x build-gpu/rnnc ] && rc=0
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
if [ $rc -ne 0 ]; then tail -40 "$OUT/build.log"; exit 1; fi

if [ "${BENCH_ONLY:-0}" != 1 ]; then
  (cd build-gpu && ctest -L gpu -R "${1:-.}" --output-on-failure --timeout 400) > "$OUT/gpu-tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "tests passed|Failed|Passed|\*\*\*|Skipped" "$OUT/gpu-tests.log" | tail -30
fi
if [ "${BENCH:-1}" != 0 ]; then
  # The headline comparisons: fused against cuDNN on the same weights, in one process.
  cmp() { local name=$1; shift
    timeout 300 build-gpu/rnnc compare --seq 100 --input-size 512 --hidden 512 --warmup 20 --iters 100 \
      --json "$OUT/compare_$name.json" "$@" > "$OUT/compare_$name.txt" 2>&1
    echo "== compare $name rc=$?"; cat "$OUT/compare_$name.txt"; }
  if [ "${COMPARE:-1}" != 0 ]; then
    cmp lstm_b64 --cell lstm --batch 64 --backends fused,cudnn,interp
    cmp lstm_b1 --cell lstm --batch 1 --backends fused,cudnn,interp
    cmp lnlstm_b64 --cell layernorm_lstm --batch 64 --backends fused,interp
    cmp gru_b64 --cell gru --batch 64 --backends fused,cudnn
  fi
  # Every cuDNN algorithm against the fused path (issue 14): LSTM T=100,
  # B 1/8/64/256, H 256/512/1024, fp32 and fp16 (cuDNN only), on its own.
  if [ -x build-gpu/bench/bench_cudnn_algo_bench ] && [[ bench_cudnn_algo_bench =~ ${BENCHES:-.} ]]; then
    RNNC_AUTOTUNE=1 timeout 580 build-gpu/bench/bench_cudnn_algo_bench --iters 30 \
      --json "$OUT/bench_cudnn_algo_bench.json" > "$OUT/bench_cudnn_algo_bench.txt" 2>&1
    echo "== bench_cudnn_algo_bench rc=$?"; cat "$OUT/bench_cudnn_algo_bench.txt"
  fi
  for b in build-gpu/bench/bench_*; do
    [ -x "$b" ] || continue
    n=$(basename "$b")
    [ "$n" = bench_cudnn_algo_bench ] && continue # run above
    [[ "$n" =~ ${BENCHES:-.} ]] || continue
    [ "$n" = bench_conv_bench ] && continue # run by the convolution block below
    timeout 300 "$b" --json "$OUT/$n.json" > "$OUT/$n.txt" 2>&1
    echo "== $n rc=$?"; tail -25 "$OUT/$n.txt"
  done
fi

# ---- convolution (issue 13): its gpu test, rnnc's benchmark, PyTorch's on the same shapes.
#   CONV=0 skips this block.
if [ "${CONV:-1}" != 0 ]; then
  if [ "${BENCH_ONLY:-0}" != 1 ]; then
    (cd build-gpu && ctest -R gpu_cudnn_conv --output-on-failure --timeout 400) > "$OUT/conv-test.log" 2>&1
    echo "== conv test rc=$?"
    grep -E '^(FAIL|SKIP|cuDNN|grid|plans|heuristic|benchmark)|tests passed|\[  (FAILED|PASSED)' \
      "$OUT/conv-test.log" | head -60
  fi
  if [ "${BENCH:-1}" != 0 ]; then
    timeout 400 build-gpu/bench/bench_conv_bench --json "$OUT/conv_bench.json" > "$OUT/conv_bench.txt" 2>&1
    echo "== conv bench rc=$?"; cat "$OUT/conv_bench.txt"
    timeout 300 python3 bench/conv_torch.py --json "$OUT/conv_torch.json" --rnnc "$OUT/conv_bench.json" \
      > "$OUT/conv_torch.txt" 2>&1
    echo "== conv torch rc=$?"; tail -32 "$OUT/conv_torch.txt"
  fi
fi
