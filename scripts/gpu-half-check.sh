#!/usr/bin/env bash
# gpu-half-check.sh: F16 and BF16 models on the fused path on a GPU machine
# in one go (issue 10, item 1): builds the CLI and the gpu_fused_half test
# (Release, no LLVM), runs it (every cell, 1 and 2 layers, bidirectional,
# lengths, device pointers, against the interpreter on the same rounded
# data), then `rnnc compare`: bf16 fused against the interpreter (cuDNN
# takes no bf16), f16 fused against cuDNN f16, and fp32 fused for scale, at
# T=100, I=H=512 and I=H=1024, B=64.  Logs and JSON go to $OUT/half.tgz.
#   TESTS=0 skip the tests   BENCH=0 skip the comparisons   FP32=0 skip gpu_fused
#   EXCHANGES="0 1 2"  run the tests and comparisons once per exchange (0: the
#       autotuner's choice; 1: barrier, 2: tagged words, both forced with
#       the heuristic's tiles through RNNC_FUSED_TILE=0,0,0,0,0,N); file
#       names get _x1, _x2 for the forced ones
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env half.tgz
# Time every autotuning candidate (the default 2 s budget leaves some
# untimed on a cold kernel cache, so the figures would depend on it).
export RNNC_AUTOTUNE_MS=${RNNC_AUTOTUNE_MS:-40000}
gpu_machine
cat "$OUT/machine.txt"
t0=$(date +%s)
gpu_configure &&
cmake --build build-gpu -j 16 --target rnnc_cli gpu_fused_half gpu_fused >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
if [ $rc -ne 0 ]; then grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; fi
for ex in ${EXCHANGES:-0}; do
sfx=""; [ "$ex" != 0 ] && sfx="_x$ex"
if [ "$ex" != 0 ]; then export RNNC_FUSED_TILE=0,0,0,0,0,$ex; else unset RNNC_FUSED_TILE; fi
if [ "${TESTS:-1}" != 0 ]; then
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 300 tests/gpu_fused_half) > "$OUT/gpu_fused_half$sfx.log" 2>&1
  echo "gpu_fused_half$sfx rc=$?"; grep -vE "^\s*$" "$OUT/gpu_fused_half$sfx.log" | grep -E "OK|FAIL|PASS|ERROR|error" | tail -12
fi
if [ "${BENCH:-1}" != 0 ]; then
  cmp() { local name=$1$sfx; shift
    RNNC_LOG=info timeout 240 build-gpu/rnnc compare --warmup 10 --iters 50 --quiet \
      --json "$OUT/compare_$name.json" "$@" > "$OUT/compare_$name.txt" 2>&1
    echo "== $name rc=$?"; grep -E "^(fused|cudnn|interp) |error" "$OUT/compare_$name.txt" | head -8; }
  S="--seq 100 --input-size 512 --hidden 512 --cell lstm --batch 64"
  L="--seq 100 --input-size 1024 --hidden 1024 --cell lstm --batch 64"
  cmp lstm_b64_bf16_interp $S --dtype bf16 --backends fused,interp
  cmp lstm_b64_f16_cudnn $S --dtype f16 --backends fused,cudnn
  cmp lstm_h1024_b64_bf16 $L --dtype bf16 --backends fused
  cmp lstm_h1024_b64_f16_cudnn $L --dtype f16 --backends fused,cudnn
  cmp gru_b64_bf16_interp --seq 100 --input-size 512 --hidden 512 --cell gru --batch 64 \
      --dtype bf16 --backends fused,interp
  [ "$ex" = 0 ] && cmp lstm_b64_f32_cudnn $S --backends fused,cudnn
  [ "$ex" = 0 ] && cmp lstm_h1024_b64_f32_cudnn $L --backends fused,cudnn
fi
done
unset RNNC_FUSED_TILE
if [ "${TESTS:-1}" != 0 ] && [ "${FP32:-1}" != 0 ]; then
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 400 tests/gpu_fused) > "$OUT/gpu_fused.log" 2>&1
  echo "gpu_fused (fp32) rc=$?"; grep -E "OK|FAIL|PASS|error" "$OUT/gpu_fused.log" | tail -8
fi
