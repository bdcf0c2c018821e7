#!/usr/bin/env bash
# deps.sh: installs the Debian packages rnnc builds with, only those missing.
# Sourced by demo.sh and test.sh.  Needs root (or sudo) only when something is missing.
rnnc_install_deps() {
    local pkgs=(cmake make gcc pkg-config ccache libcjson-dev libxxhash-dev libcmocka-dev python3 python3-numpy python3-pytest)
    if [ "${RNNC_WITH_LLVM:-ON}" = ON ]; then pkgs+=(llvm-14-dev); fi
    if [ "${RNNC_WITH_BENCH_DEPS:-OFF}" = ON ]; then pkgs+=(libdnnl-dev); fi
    # PyTorch (CPU) for the Python package's torch tests off the GPU machine; optional.
    if [ "${RNNC_WITH_TORCH:-OFF}" = ON ]; then pkgs+=(python3-torch); fi
    # libFuzzer for scripts/fuzz.sh, only where clang is already installed.
    if command -v clang > /dev/null; then
        pkgs+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
    fi
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

# True when clang can link a libFuzzer target here (scripts/fuzz.sh).
rnnc_have_libfuzzer() {
    command -v clang > /dev/null || return 1
    local d
    d=$(mktemp -d)
    printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$d/f.c"
    clang -fsanitize=fuzzer,address,undefined "$d/f.c" -o "$d/f" > /dev/null 2>&1
    local rc=$?
    rm -rf "$d"
    return $rc
}
