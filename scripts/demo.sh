#!/usr/bin/env bash
# demo.sh: set up on a fresh machine, build the library and the command
# (all that `cmake --install build` needs), and run an LSTM over a random
# sequence on the best backend this machine has.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
rnnc_install_deps
RNNC_TARGET=rnnc_installable rnnc_build build
exec build/rnnc demo "$@"
