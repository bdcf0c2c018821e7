#!/usr/bin/env bash
# gpu-variants.sh: one `rnnc compare` per case and per variant of the
# environment, fused backend only, in one GPU call: for an experiment
# that changes the generated code through an environment variable, or
# fixes a tiling with RNNC_FUSED_TILE.  Builds the CLI (Release, no LLVM);
# logs and a table (variants.txt) go to $OUT/variants.tgz.
#   CASES="name|compare options[|VAR=v ...];..."  e.g. "bf16_1k|--hidden 1024 ... --dtype bf16"
#                                          (a third field: that case's own environment)
#   VARIANTS="name|VAR=v VAR2=w;..."      "name|" for the environment as it is
#   BACKENDS=fused                         or fused,cudnn to time cuDNN beside
#   TESTS="gpu_fused_half ..."             test programs to build and run after
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env variants.tgz
gpu_machine
cat "$OUT/machine.txt"
# shellcheck disable=SC2086
gpu_configure && cmake --build build-gpu -j 16 --target rnnc_cli ${TESTS:-} >> "$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
IFS=';' read -ra cases <<< "${CASES:?}"
IFS=';' read -ra variants <<< "${VARIANTS:-plain|}"
for cs in "${cases[@]}"; do
  cname=${cs%%|*} rest=${cs#*|}
  copts=${rest%%|*} cenv=""
  [[ $rest == *"|"* ]] && cenv=${rest#*|}
  for vs in "${variants[@]}"; do
    vname=${vs%%|*} venv=${vs#*|}
    log="$OUT/${cname}_${vname}.txt"
    # shellcheck disable=SC2086
    env $cenv $venv RNNC_LOG=info timeout 240 build-gpu/rnnc compare --warmup 10 --iters 50 --quiet \
      --backends "${BACKENDS:-fused}" $copts > "$log" 2>&1
    rc=$?
    line=$(awk '$1 == "fused" { $1 = ""; print }' "$log")
    cu=$(awk '$1 == "cudnn" && $2 ~ /^[0-9.]+$/ { print $2 }' "$log")
    printf '%-24s %-16s rc=%d fused%s%s\n' "$cname" "$vname" "$rc" "${line:- -}" \
      "${cu:+ | cudnn $cu}" | tee -a "$OUT/variants.txt"
  done
done
# Through ctest, so the tests get their environment (RNNC_AUTOTUNE=0 among it:
# run bare, gpu_cudnn met cuDNN's persistent algorithms, tests/CMakeLists.txt).
for tp in ${TESTS:-}; do
  (cd build-gpu && ctest -R "^$tp\$" -V --timeout 400) > "$OUT/$tp.log" 2>&1
  echo "$tp rc=$?" | tee -a "$OUT/variants.txt"
done
