#!/usr/bin/env bash
# test.sh: set up on a fresh machine, build with -Werror under ASan and
# UBSan, and run every test (GPU tests skip themselves where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
rnnc_install_deps
rnnc_build build-test -DRNNC_WERROR=ON -DRNNC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
cd build-test
ctest --output-on-failure -j "$(nproc)" "$@"
