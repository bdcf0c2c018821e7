#!/usr/bin/env bash
# deps.sh: installs the Debian packages rnnc builds with, only those missing.
# Sourced by demo.sh and test.sh.  Needs root (or sudo) only when something is missing.
rnnc_install_deps() {
    local pkgs=(cmake make gcc pkg-config ccache libcjson-dev libxxhash-dev libcmocka-dev)
    if [ "${RNNC_WITH_LLVM:-ON}" = ON ]; then pkgs+=(llvm-14-dev); fi
    if [ "${RNNC_WITH_BENCH_DEPS:-OFF}" = ON ]; then pkgs+=(libdnnl-dev); fi
    local missing=()
    for p in "${pkgs[@]}"; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures and builds into $1 (default build/) with extra CMake options
# after it; RNNC_TARGET names one target to build (default: everything).
rnnc_build() {
    local dir=${1:-build}; shift || true
    local cuda_opts=()
    [ -d /usr/local/cuda ] && cuda_opts+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
    local launcher=()
    command -v ccache >/dev/null && launcher+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
    # Only the status lines of the optional dependencies: what this build has and why.
    cmake -S . -B "$dir" -DRNNC_WITH_LLVM="${RNNC_WITH_LLVM:-ON}" "${cuda_opts[@]}" "${launcher[@]}" "$@" |
        { grep '^-- rnnc:' || true; }
    cmake --build "$dir" -j "$(nproc)" ${RNNC_TARGET:+--target "$RNNC_TARGET"}
}
