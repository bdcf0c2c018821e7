#!/usr/bin/env bash
# gpu-check.sh [tests-regex] : everything a GPU machine call does, in one go.
# Builds (no LLVM there) against the packages carried in .deps/ (scripts/gpu-deps.sh),
# runs the `gpu`-labelled tests (matching the regex, default all) and the
# benchmarks, and leaves logs and JSON under $OUT.
#   BENCH=0     skip benchmarks      BENCH_ONLY=1  skip tests
#   COMPARE=0   skip the rnnc compare runs     BENCHES=regex  only those bench_* programs
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env results.tgz json
gpu_machine

t0=$(date +%s)
gpu_configure &&
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
  # B 1/8/64/256, H 256/512/1024, fp32 and fp16 (cuDNN only), on its own
  # (72 s on an H100 with --iters 30; its JSON is rewritten after each shape).
  if [ -x build-gpu/bench/bench_cudnn_algo_bench ] && [[ bench_cudnn_algo_bench =~ ${BENCHES:-.} ]]; then
    RNNC_AUTOTUNE=1 timeout 300 build-gpu/bench/bench_cudnn_algo_bench --iters 30 \
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
  # What the Python package adds per call (needs a Python with PyTorch).
  if [[ python_overhead =~ ${BENCHES:-.} ]]; then
    PYTHONPATH=build-gpu/python timeout 300 python3 bench/python_overhead.py \
      --json "$OUT/python_overhead.json" > "$OUT/python_overhead.txt" 2>&1
    echo "== python_overhead rc=$?"; tail -5 "$OUT/python_overhead.txt"
  fi
  # Where one call's device time goes, kernel by kernel (torch.profiler over the package).
  if [[ profile_kernels =~ ${BENCHES:-.} ]]; then
    mkdir -p "$OUT/traces"
    PYTHONPATH=build-gpu/python timeout 300 python3 bench/profile_kernels.py --trace "$OUT/traces" \
      ${PROFILE_CASES:+--cases $PROFILE_CASES} ${PROFILE_MATH:+--math $PROFILE_MATH} \
      ${PROFILE_BACKEND:+--backend $PROFILE_BACKEND} \
      > "$OUT/profile_kernels.txt" 2>&1
    echo "== profile_kernels rc=$?"; cat "$OUT/profile_kernels.txt"
  fi
fi

# ---- convolution (issue 13): its gpu tests (library, `rnnc conv`, the CRNN example), the
#   example's output, rnnc's benchmark and PyTorch's on the same shapes.
#   CONV=0 skips this block; CONV_BENCH=0 (or BENCH=0) its benchmarks.
if [ "${CONV:-1}" != 0 ]; then
  if [ "${BENCH_ONLY:-0}" != 1 ]; then
    (cd build-gpu && ctest -R 'gpu_cudnn_conv|cli_conv|cli_crnn' --output-on-failure --timeout 400) \
      > "$OUT/conv-test.log" 2>&1
    echo "== conv tests rc=$?"
    grep -E '^(FAIL|SKIP|cuDNN|grid|plans|heuristic|benchmark)|tests passed|\[  (FAILED|PASSED)|Passed|Failed' \
      "$OUT/conv-test.log" | head -60
    timeout 120 build-gpu/examples/example_crnn > "$OUT/crnn.txt" 2>&1
    echo "== crnn rc=$?"; cat "$OUT/crnn.txt"
  fi
  if [ "${CONV_BENCH:-${BENCH:-1}}" != 0 ]; then
    # PyTorch brings its own cuDNN: rnnc's benchmark also runs on that one, so that the
    # comparison is of one library (the system's cuDNN first, for the record).
    timeout 300 build-gpu/bench/bench_conv_bench --json "$OUT/conv_bench_system.json" \
      > "$OUT/conv_bench_system.txt" 2>&1
    echo "== conv bench (system cuDNN) rc=$?"; grep -E "^total|^ResNet" "$OUT/conv_bench_system.txt"
    tcudnn=$(python3 -c "import os, nvidia.cudnn as m; print(os.path.join(list(m.__path__)[0], 'lib', 'libcudnn.so.9'))" 2>/dev/null)
    [ -f "$tcudnn" ] || tcudnn=$(find /opt -path '*nvidia/cudnn/lib/libcudnn.so.9' 2>/dev/null | head -1)
    echo "== PyTorch's cuDNN: ${tcudnn:-none found}"; ls "$(dirname "${tcudnn:-/x}")" 2>/dev/null | grep -E 'so\.9\.' | head -2
    if [ -f "$tcudnn" ]; then
      LD_LIBRARY_PATH=$(dirname "$tcudnn"):$LD_LIBRARY_PATH RNNC_CUDNN_PATH=$tcudnn timeout 300 \
        build-gpu/bench/bench_conv_bench --json "$OUT/conv_bench.json" > "$OUT/conv_bench.txt" 2>&1
    else
      cp "$OUT/conv_bench_system.json" "$OUT/conv_bench.json"; cp "$OUT/conv_bench_system.txt" "$OUT/conv_bench.txt"
    fi
    echo "== conv bench rc=$?"; grep -E "^total|^ResNet" "$OUT/conv_bench.txt"
    sed -n '/fused ms/,$p' "$OUT/conv_bench.txt"
    timeout 300 python3 bench/conv_torch.py --json "$OUT/conv_torch.json" --rnnc "$OUT/conv_bench.json" \
      > "$OUT/conv_torch.txt" 2>&1
    echo "== conv torch rc=$?"; tail -50 "$OUT/conv_torch.txt"
    timeout 120 build-gpu/rnnc conv --x-shape 32,64,56,56 --w-shape 64,64,3,3 --padding 1 \
      --algo benchmark --bench > "$OUT/conv_cli_bench.txt" 2>&1
    echo "== rnnc conv --bench rc=$?"; cat "$OUT/conv_cli_bench.txt"
  fi
fi
