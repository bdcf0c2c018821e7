#!/usr/bin/env bash
# test.sh: set up on a fresh machine, build with -Werror under ASan and
# UBSan, and run every test (GPU tests skip themselves where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
rnnc_install_deps
san=(-DRNNC_WERROR=ON -DRNNC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
echo "== build-test: every optional dependency found here"
rnnc_build build-test "${san[@]}"
(cd build-test && ctest --output-on-failure -j "$(nproc)" "$@")
# A second tree with every optional dependency off proves that a machine
# without CUDA, cuDNN, LLVM and oneDNN builds (under -Werror) and passes.
# Such a machine has no NVRTC either, so its tests run with NVRTC out of
# reach: those that need it skip (the code-generation tests among them,
# whose NVRTC compiles build-test has just run).
echo "== build-minimal: every optional dependency off, no NVRTC"
RNNC_WITH_LLVM=OFF rnnc_build build-minimal "${san[@]}" -DRNNC_WITH_CUDA=OFF \
    -DRNNC_WITH_CUDNN=OFF -DRNNC_WITH_DNNL=OFF
(cd build-minimal && RNNC_NVRTC_PATH=/nonexistent/libnvrtc.so \
    ctest --output-on-failure -j "$(nproc)" "$@")
# libFuzzer targets (tests/fuzz) under clang's ASan and UBSan (with the
# float-cast-overflow check GCC lacks), each for a bounded time; skipped
# where clang is not installed.
echo "== build-fuzz: fuzz targets, RNNC_FUZZ_SECONDS=${RNNC_FUZZ_SECONDS:-20} s each"
bash scripts/fuzz.sh
