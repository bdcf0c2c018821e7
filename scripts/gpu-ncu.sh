#!/usr/bin/env bash
# gpu-ncu.sh: one GPU machine call that profiles the fused step kernel with
# Nsight Compute (ncu --clock-control none, as the device notes ask) at the
# shapes whose figures are missed.  Builds rnnc (Release, no LLVM) against
# .deps/ (scripts/gpu-deps.sh); for each case runs one `rnnc compare` of the
# fused backend and profiles the second launch of rnnc_step (or $KERNEL).  Reports (the
# details page as text, the SASS source page as CSV with bench/ncu_phases.py's
# summary of it, the .ncu-rep) go to $OUT/ncu.tgz.
#   KERNEL=regex  the kernel to profile (default rnnc_step; rnnc_gemm: the
#         hoisted GEMM)
#   CASES="name:tile:args;..."  cases to run (default below): a name, the
#         RNNC_FUSED_TILE value (ut,bt,nt[,rr,bb]; 0 = the heuristic) and
#         `rnnc compare` arguments
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env ncu.tgz
export RNNC_AUTOTUNE=0
gpu_configure &&
  cmake --build build-gpu -j 16 --target rnnc_cli >> "$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
DEF="lstm_b128:0,0,512:--batch 128 --input-size 512 --hidden 512;\
lstm_h1024_b64:0,0,0:--batch 64 --input-size 1024 --hidden 1024;\
lstm_b64:0,0,0:--batch 64 --input-size 512 --hidden 512;\
bf16_b64:0,0,0:--batch 64 --input-size 512 --hidden 512 --dtype bf16;\
x3tf32_b64:0,0,0:--batch 64 --input-size 512 --hidden 512 --math 3xtf32"
IFS=';' read -ra cases <<< "${CASES:-$DEF}"
for c in "${cases[@]}"; do
  name=${c%%:*}; rest=${c#*:}; tile=${rest%%:*}; args=${rest#*:}
  # shellcheck disable=SC2086
  RNNC_FUSED_TILE=$tile timeout 300 "$NCU" --clock-control none --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
    --section SourceCounters -k "regex:${KERNEL:-rnnc_step}" --launch-skip 1 --launch-count 1 -f \
    -o "$OUT/$name" build-gpu/rnnc compare --cell lstm --seq 100 --warmup 1 --iters 1 \
    --backends fused $args > "$OUT/$name.run.txt" 2>&1
  echo "== $name rc=$?"
  "$NCU" -i "$OUT/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
  "$NCU" -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/$name.sass.csv" 2>&1
  grep -E "^ +(Duration|L1/TEX Cache Throughput|Issue Slots Busy|Registers Per Thread) " \
    "$OUT/$name.details.txt"
  python3 bench/ncu_phases.py "$OUT/$name.sass.csv" | tee "$OUT/$name.phases.txt"
done
