#!/usr/bin/env bash
# cli_install.sh: `cmake --install` of this build into a temporary prefix,
# then a program outside the tree (tests/install_consumer) built against it
# three ways: find_package(rnnc) with rnnc::rnnc, the same with
# rnnc::rnnc_static (whose dependencies must come with the exported target),
# plain `cc $(pkg-config --cflags --libs rnnc)` and a static link from
# `pkg-config --static` (Requires.private: libcjson libxxhash), and both
# packages again after the prefix is moved (each finds its prefix from
# where it lies); the package names no path of the build machine.
# $1 is the rnnc binary; its folder is the build folder.
set -euo pipefail
build=$(cd "$(dirname "$1")" && pwd)
consumer=$(cd "$(dirname "$0")/install_consumer" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() { echo "FAIL: $*" >&2; exit 1; }

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
libdir=$(cache CMAKE_INSTALL_LIBDIR)
cc=$(cache CMAKE_C_COMPILER)
if [ -z "$libdir" ] || [ -z "$cc" ]; then fail "cannot read $build/CMakeCache.txt"; fi

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

for f in bin/rnnc include/rnnc.h "$libdir/librnnc.a" share/rnnc/cells/lstm.cell \
    share/rnnc/cells/gru.cell "$libdir/cmake/rnnc/rnncConfig.cmake" \
    "$libdir/cmake/rnnc/rnncConfigVersion.cmake" "$libdir/pkgconfig/rnnc.pc"; do
    [ -f "$prefix/$f" ] || fail "$f is not installed"
done
compgen -G "$prefix/$libdir/librnnc.so*" >/dev/null || fail "librnnc.so is not installed"
[ -x "$prefix/bin/rnnc" ] || fail "bin/rnnc is not executable"

# The installed command works and needs no build tree.
"$prefix/bin/rnnc" --help >"$tmp/help.out" 2>&1 || fail "installed rnnc --help failed"
# --help names the installed docs, and they are there (README too)
grep -q "^Documentation: $prefix/share/doc/rnnc/cli.md" "$tmp/help.out" ||
    { cat "$tmp/help.out" >&2; fail "installed rnnc --help does not name share/doc/rnnc/cli.md"; }
for d in cli.md c-api.md cell-format.md tensors.md README.md; do
    [ -f "$prefix/share/doc/rnnc/$d" ] || fail "share/doc/rnnc/$d is not installed"
done
"$prefix/bin/rnnc" dump --cell lstm --stage ir >"$tmp/dump.out" 2>&1 ||
    { cat "$tmp/dump.out" >&2; fail "installed rnnc dump failed"; }
grep -q '^cell lstm {$' "$tmp/dump.out" || fail "installed rnnc dump printed no lstm"

# The CMake package names no path of this machine's build: the dependencies
# of the static library are targets found by find_dependency.
targets=$(cat "$prefix/$libdir"/cmake/rnnc/rnncTargets*.cmake)
src=$(cd "$(dirname "$0")/.." && pwd)
for p in "$build" "$src" "libcjson.so" "libxxhash.so" "libLLVM"; do
    case $targets in *"$p"*) fail "the installed CMake package names $p";; esac
done
grep -q 'find_dependency(cJSON)' "$prefix/$libdir/cmake/rnnc/rnncConfig.cmake" ||
    fail "rnncConfig.cmake does not find cJSON with find_dependency"
[ -f "$prefix/$libdir/cmake/rnnc/FindxxHash.cmake" ] || fail "FindxxHash.cmake is not installed"
# pkg-config: cJSON and xxHash by their own .pc files, no library path of this machine
grep -q '^Requires.private: libcjson libxxhash$' "$prefix/$libdir/pkgconfig/rnnc.pc" ||
    fail "rnnc.pc lacks Requires.private: libcjson libxxhash"
grep -q '\.so' "$prefix/$libdir/pkgconfig/rnnc.pc" && fail "rnnc.pc names a .so file"

# check_app EXE: the consumer printed the lstm and ran its forward.
check_app() {
    local out
    out=$tmp/$(basename "$1").out
    LD_LIBRARY_PATH="$prefix/$libdir" "$1" >"$out" 2>&1 || { cat "$out" >&2; fail "$1 failed"; }
    grep -q '^rnnc 0\.' "$out" || fail "$1 printed no version"
    grep -q '^cell lstm {$' "$out" || fail "$1 printed no lstm"
    grep -q 'param weight_hr\[P, H\] optional' "$out" || fail "$1 printed an incomplete lstm"
    grep -Eq '^y = -?[0-9.]+ -?[0-9.]+$' "$out" || fail "$1 ran no forward"
}

# find_package: the shared and the static library.
cmake_build() { # PREFIX DIR
    cmake -S "$consumer" -B "$2" -DCMAKE_PREFIX_PATH="$1" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$tmp/configure.log" 2>&1 ||
        { cat "$tmp/configure.log" >&2; fail "the consumer does not configure"; }
    [ "$(sed -n 's/^rnnc_DIR:PATH=//p' "$2/CMakeCache.txt")" = "$1/$libdir/cmake/rnnc" ] ||
        fail "find_package(rnnc) did not find the package installed in $1"
    cmake --build "$2" -j 2 >"$tmp/build.log" 2>&1 ||
        { cat "$tmp/build.log" >&2; fail "the consumer does not build"; }
}
cmake_build "$prefix" "$tmp/consumer"
check_app "$tmp/consumer/app"
check_app "$tmp/consumer/app_static"
LD_LIBRARY_PATH="$prefix/$libdir" ldd "$tmp/consumer/app" >"$tmp/ldd.out" 2>&1
grep -q "$prefix/$libdir/librnnc.so" "$tmp/ldd.out" ||
    { cat "$tmp/ldd.out" >&2; fail "app does not use the installed librnnc.so"; }
# (ldd's output goes to a file first: under pipefail, grep -q closing the pipe
# early can kill ldd with SIGPIPE and fail the pipeline at random.)
ldd "$tmp/consumer/app_static" >"$tmp/ldd_static.out" 2>&1
if grep -q librnnc "$tmp/ldd_static.out"; then fail "app_static uses librnnc.so"; fi

# pkg-config, with the package where it was installed and after a move.
pc_build() {
    local pc=$1/$libdir/pkgconfig flags
    flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs rnnc) || fail "pkg-config rnnc failed"
    [ -f "$(PKG_CONFIG_PATH=$pc pkg-config --variable=includedir rnnc)/rnnc.h" ] ||
        fail "rnnc.pc's includedir has no rnnc.h"
    # shellcheck disable=SC2086 # the flags are words
    "$cc" -std=c11 -Wall -Wextra -Werror "$consumer/main.c" -o "$2" $flags ||
        fail "cc with pkg-config's flags failed"
}
if ! command -v pkg-config >/dev/null; then
    echo "install ok (pkg-config is not installed here: its part was not tested)"
    exit 0
fi
pc_build "$prefix" "$tmp/app_pc"
check_app "$tmp/app_pc"
# A static link from pkg-config's flags alone: librnnc.a, then what
# Requires.private and Libs.private bring (cJSON, xxHash through their .pc).
static=$(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --static --libs rnnc) ||
    fail "pkg-config --static rnnc failed"
case " $static " in *" -lcjson "*" -lxxhash "*) ;; *) fail "pkg-config --static lacks cJSON and xxHash: $static";; esac
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c11 "$consumer/main.c" -o "$tmp/app_pc_static" -I"$prefix/include" \
    ${static/-lrnnc/-l:librnnc.a} || fail "a static link with pkg-config --static failed"
check_app "$tmp/app_pc_static"
ldd "$tmp/app_pc_static" >"$tmp/ldd_pc.out" 2>&1
if grep -q librnnc "$tmp/ldd_pc.out"; then fail "app_pc_static uses librnnc.so"; fi
mv "$prefix" "$tmp/moved"
prefix=$tmp/moved
pc_build "$prefix" "$tmp/app_moved"
check_app "$tmp/app_moved"
"$prefix/bin/rnnc" --help | grep -q "^Documentation: $prefix/share/doc/rnnc/cli.md" ||
    fail "after a move, --help does not name the moved docs"
# the CMake package moves too
cmake_build "$prefix" "$tmp/consumer_moved"
check_app "$tmp/consumer_moved/app"
check_app "$tmp/consumer_moved/app_static"
echo "install ok"
