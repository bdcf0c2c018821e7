#!/usr/bin/env bash
# gpu-half-check.sh: F16 and BF16 models on the fused path on a GPU machine
# in one go (issue 10, item 1): builds the CLI and the gpu_fused_half test
# (Release, no LLVM), runs it (every cell, 1 and 2 layers, bidirectional,
# lengths, device pointers, against the interpreter on the same rounded
# data), then `rnnc compare`: bf16 fused against the interpreter (cuDNN
# takes no bf16), f16 fused against cuDNN f16, and fp32 fused for scale, at
# T=100, I=H=512 and I=H=1024, B=64.  Logs and JSON go to $OUT/half.tgz.
#   TESTS=0 skip the tests   BENCH=0 skip the comparisons
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env half.tgz
gpu_machine
cat "$OUT/machine.txt"
t0=$(date +%s)
gpu_configure &&
cmake --build build-gpu -j 16 --target rnnc_cli gpu_fused_half gpu_fused >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
if [ $rc -ne 0 ]; then grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; fi
if [ "${TESTS:-1}" != 0 ]; then
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 300 tests/gpu_fused_half) > "$OUT/gpu_fused_half.log" 2>&1
  echo "gpu_fused_half rc=$?"; grep -vE "^\s*$" "$OUT/gpu_fused_half.log" | tail -50
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 150 tests/gpu_fused) > "$OUT/gpu_fused.log" 2>&1
  echo "gpu_fused (fp32) rc=$?"; grep -E "OK|FAIL|PASS|error" "$OUT/gpu_fused.log" | tail -8
fi
if [ "${BENCH:-1}" != 0 ]; then
  cmp() { local name=$1; shift
    timeout 240 build-gpu/rnnc compare --warmup 10 --iters 50 --quiet \
      --json "$OUT/compare_$name.json" "$@" > "$OUT/compare_$name.txt" 2>&1
    echo "== $name rc=$?"; grep -E "fused|cudnn|interp|tuning|error" "$OUT/compare_$name.txt" | head -8; }
  S="--seq 100 --input-size 512 --hidden 512 --cell lstm --batch 64"
  L="--seq 100 --input-size 1024 --hidden 1024 --cell lstm --batch 64"
  cmp lstm_b64_bf16_interp $S --dtype bf16 --backends fused,interp
  cmp lstm_b64_f16_cudnn $S --dtype f16 --backends fused,cudnn
  cmp lstm_b64_f32_cudnn $S --backends fused,cudnn
  cmp lstm_h1024_b64_bf16 $L --dtype bf16 --backends fused
  cmp lstm_h1024_b64_f16_cudnn $L --dtype f16 --backends fused,cudnn
  cmp lstm_h1024_b64_f32_cudnn $L --backends fused,cudnn
  cmp gru_b64_bf16_interp --seq 100 --input-size 512 --hidden 512 --cell gru --batch 64 \
      --dtype bf16 --backends fused,interp
fi
