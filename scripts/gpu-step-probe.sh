#!/usr/bin/env bash
# gpu-step-probe.sh: one GPU machine call that times dumped step kernels
# phase by phase (bench/step_probe.cu, marks and variants by
# bench/step_probe.py).  Dump the kernels here first (no GPU needed), e.g.
#   build/rnnc dump --cell lstm --stage cuda --input-size 1024 \
#     --hidden-size 1024 --batch 256 --tuning 'ut=0 bt=0 nt=0 rr=8 bb=4' > DIR/k.cu
# then, on the GPU machine:
#   DIR=bench/results/h200/step-probe JOBS="k:marks k:pure" scripts/gpu-step-probe.sh
# Each job (KERNEL:VARIANT, KERNEL.cu in DIR) is built with nvcc for sm_90a
# and run twice; the lines and ptxas's register counts go to $OUT/probe.txt.
set -u
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
: "${DIR:?}" "${JOBS:?}" "${OUT:=/tmp/rnnc-gpu-out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee -a "$OUT/probe.txt"
for j in $JOBS; do
  k=${j%%:*} v=${j#*:}
  python3 bench/step_probe.py "$DIR/$k.cu" "$v" > "$work/p_${k}_$v.cu" &&
    (cd "$work" && nvcc -O3 -gencode arch=compute_90a,code=sm_90a -I. -Xptxas -v \
      -DSTEP_SRC="\"p_${k}_$v.cu\"" -o "p_${k}_$v" "$root/bench/step_probe.cu" > "p_${k}_$v.log" 2>&1) &
done
wait
for r in 1 2; do
  for j in $JOBS; do
    k=${j%%:*} v=${j#*:}
    # a variant that breaks the copies' protocol could hang: bounded
    timeout 30 "$work/p_${k}_$v" "${k}_$v" 2>&1 | tee -a "$OUT/probe.txt"
  done
done
for j in $JOBS; do
  k=${j%%:*} v=${j#*:}
  echo "$j $(grep -A3 "entry function 'rnnc_step'" "$work/p_${k}_$v.log" | tail -2 | tr '\n' ' ')"
done | tee -a "$OUT/probe.txt"
