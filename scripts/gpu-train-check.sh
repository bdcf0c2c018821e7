#!/usr/bin/env bash
# gpu-train-check.sh: one GPU machine call for training (issue 11): builds
# (Release, no LLVM) against the packages carried in .deps/ (scripts/gpu-deps.sh),
# runs the training tests (gpu_fused_grad, gpu_cudnn_grad, gpu_model_checks) and the
# fused forward's (gpu_fused, gpu_fused_model: the generator is shared),
# regenerates the PyTorch reference files (scripts/torch_reference.py: PyTorch
# exists only there) and times `rnnc compare --training` at the issue's shape.
# Logs, JSON and the reference files go to a folder packed into $OUT/results.tgz.
#   TESTS=0  skip the tests    REFS=0  skip the references    COMPARE=0  skip the timings
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env results.tgz
gpu_machine
t0=$(date +%s)
gpu_configure &&
cmake --build build-gpu -j 16 --target rnnc_cli gpu_fused_grad gpu_cudnn_grad gpu_model_checks gpu_fused gpu_fused_model \
      >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc -ne 0 ] && { grep -E "error" "$OUT/build.log" | head -20; exit 1; }

if [ "${REFS:-1}" != 0 ]; then
  mkdir -p "$OUT/refs"
  timeout 120 python3 scripts/torch_reference.py "$OUT/refs" > "$OUT/refs.log" 2>&1
  echo "== torch_reference rc=$? ($(ls "$OUT/refs" | wc -l) files)"
  python3 -c 'import torch; print("torch", torch.__version__)' >> "$OUT/machine.txt" 2>&1
fi

if [ "${TESTS:-1}" != 0 ]; then
  for t in gpu_fused_grad gpu_cudnn_grad gpu_model_checks gpu_fused gpu_fused_model; do
    t1=$(date +%s)
    timeout "${TEST_TIMEOUT:-150}" build-gpu/tests/$t > "$OUT/$t.log" 2>&1
    echo "== $t rc=$? in $(( $(date +%s) - t1 )) s"
    grep -E "FAILED|ERROR|PASSED|cases ran|error:" "$OUT/$t.log" | head -8
  done
  grep -E "max rel err|refused" "$OUT/gpu_fused_grad.log" | sort -k2 | awk '{print}' | head -200 \
    > "$OUT/fused_grad_cases.txt"
fi

cmp() { local name=$1; shift
  timeout 100 build-gpu/rnnc compare --training --seq 100 --warmup 5 --iters 20 \
    --json "$OUT/train_$name.json" "$@" > "$OUT/train_$name.txt" 2>&1
  echo "== compare --training $name rc=$?"; grep -E "^(fused|cudnn|interp) " "$OUT/train_$name.txt" | head -4
}
if [ "${COMPARE:-1}" != 0 ]; then
  cmp lstm_b64 --cell lstm --batch 64 --input-size 512 --hidden 512 --backends fused,cudnn
  cmp lnlstm_b64 --cell layernorm_lstm --batch 64 --input-size 512 --hidden 512 --backends fused
  cmp gru_b64 --cell gru --batch 64 --input-size 512 --hidden 512 --backends fused,cudnn
  cmp lstm_l2_bi_len --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 2 \
      --bidirectional --lengths random --backends fused,cudnn
fi
echo "total $(( $(date +%s) - t0 )) s"
