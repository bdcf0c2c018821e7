#!/usr/bin/env bash
# cli_install_demo.sh: `cmake --install` works after the build that
# scripts/demo.sh makes (its RNNC_TARGET only, not everything), into a
# temporary tree with the optional dependencies off to keep it short.
# $1 is the rnnc binary (unused: this test builds its own tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

target=$(sed -n 's/^RNNC_TARGET=\([a-z_]*\) rnnc_build build$/\1/p' "$src/scripts/demo.sh")
[ -n "$target" ] || fail "scripts/demo.sh has no 'RNNC_TARGET=... rnnc_build build' line"
cd "$src"
. scripts/deps.sh
RNNC_WITH_LLVM=OFF RNNC_TARGET=$target rnnc_build "$tmp/build" -DRNNC_WITH_CUDA=OFF \
    -DRNNC_WITH_CUDNN=OFF -DRNNC_BUILD_TESTS=OFF -DRNNC_BUILD_BENCH=OFF >"$tmp/build.log" 2>&1 ||
    { tail -30 "$tmp/build.log" >&2; fail "the demo's build failed"; }
cmake --install "$tmp/build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install after the demo's build failed"; }
"$tmp/prefix/bin/rnnc" --version | grep -q '^rnnc 0\.' || fail "the installed rnnc does not run"
compgen -G "$tmp/prefix/lib*/librnnc.so*" >/dev/null || compgen -G "$tmp/prefix/lib/*/librnnc.so*" \
    >/dev/null || fail "librnnc.so is not installed"
echo "install after the demo's build ok"
