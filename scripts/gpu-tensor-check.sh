#!/usr/bin/env bash
# gpu-tensor-check.sh: the tensor-core math modes and fast single steps on a
# GPU machine in one go (issue 10): builds the CLI and the gpu_fused_math
# test (Release, no LLVM), runs it (accuracy against the interpreter, CUDA
# graph capture), gpu_fused and gpu_fused_model (single steps, the K-split
# GEMM, states read and written in the caller's buffers), then `rnnc
# compare` fused against cuDNN in the matching math mode.  Logs and JSON
# go to $OUT/tensor.tgz.
#   TESTS=0 skip the tests   BENCH=0 skip the comparisons
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env tensor.tgz
gpu_machine
cat "$OUT/machine.txt"
t0=$(date +%s)
gpu_configure &&
cmake --build build-gpu -j 16 --target rnnc_cli gpu_fused_math gpu_fused gpu_fused_model >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
if [ $rc -ne 0 ]; then grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; fi
if [ "${TESTS:-1}" != 0 ]; then
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 200 tests/gpu_fused_math) > "$OUT/gpu_fused_math.log" 2>&1
  echo "gpu_fused_math rc=$?"; grep -vE "^\s*$" "$OUT/gpu_fused_math.log" | tail -45
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 300 tests/gpu_fused) > "$OUT/gpu_fused.log" 2>&1
  echo "gpu_fused rc=$?"; grep -E "OK|FAIL|PASS|T=1 |T=3 .*in-place|error" "$OUT/gpu_fused.log" | tail -24
  (cd build-gpu && RNNC_SOURCE_DIR=$PWD/.. timeout 300 tests/gpu_fused_model) > "$OUT/gpu_fused_model.log" 2>&1
  echo "gpu_fused_model rc=$?"; grep -E "OK|FAIL|PASS|dev=[12]|error" "$OUT/gpu_fused_model.log" | tail -20
fi
if [ "${BENCH:-1}" != 0 ]; then
  cmp() { local name=$1; shift
    timeout 90 build-gpu/rnnc compare --warmup 10 --iters 50 --backends fused,cudnn \
      --json "$OUT/compare_$name.json" "$@" > "$OUT/compare_$name.txt" 2>&1
    echo "== $name rc=$?"; grep -E "fused|cudnn|tuning|error" "$OUT/compare_$name.txt" | head -6; }
  S="--seq 100 --input-size 512 --hidden 512 --cell lstm"
  cmp lstm_b64_ffma $S --batch 64
  cmp lstm_b64_tf32 $S --batch 64 --math tf32
  cmp lstm_b64_3xtf32 $S --batch 64 --math 3xtf32
  L="--seq 100 --input-size 1024 --hidden 1024 --cell lstm"
  cmp lstm_h1024_b64_tf32 $L --batch 64 --math tf32
  cmp lstm_h1024_b64_3xtf32 $L --batch 64 --math 3xtf32
  cmp lstm_h1024_b256_tf32 $L --batch 256 --math tf32
  cmp gru_h1024_b256_tf32 --seq 100 --input-size 1024 --hidden 1024 --cell gru --batch 256 --math tf32
  cmp lstm_t1_b64_ffma --seq 1 --input-size 512 --hidden 512 --cell lstm --batch 64
  cmp lstm_t1_b64_tf32 --seq 1 --input-size 512 --hidden 512 --cell lstm --batch 64 --math tf32
  cmp lstm_b1_ffma $S --batch 1
  cmp gru_b64_3xtf32 $S --batch 64 --math 3xtf32 --cell gru
fi
