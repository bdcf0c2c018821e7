#!/usr/bin/env bash
# build-matrix.sh: configures and builds (-Werror, every target) each
# combination of the optional dependencies that this machine can honour,
# in build-matrix/<combination>.  A developer's check after touching the
# CMake options or an #ifdef RNNC_HAVE_*; CI builds the two ends (all found,
# all off) through test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
fails=0
for cuda in ON OFF; do
  for cudnn in ON OFF; do
    [ $cuda = OFF ] && [ $cudnn = ON ] && continue # cuDNN needs CUDA's headers
    for llvm in ON OFF; do
      for dnnl in AUTO OFF; do
        [ $llvm = OFF ] && [ $dnnl = AUTO ] && continue # oneDNN serves the LLVM benchmark
        name=cuda$cuda-cudnn$cudnn-llvm$llvm-dnnl$dnnl
        echo "== $name"
        if ! RNNC_WITH_LLVM=$llvm rnnc_build "build-matrix/$name" -DRNNC_WERROR=ON \
             -DRNNC_WITH_CUDA=$cuda -DRNNC_WITH_CUDNN=$cudnn -DRNNC_WITH_DNNL=$dnnl >/dev/null; then
          echo "FAILED: $name"; fails=$((fails + 1))
        fi
      done
    done
  done
done
echo "$fails combination(s) failed"
[ $fails -eq 0 ]
