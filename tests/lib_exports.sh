#!/usr/bin/env bash
# lib_exports.sh: librnnc.so exports exactly the functions rnnc.h declares.
# Usage: lib_exports.sh path/to/librnnc.so path/to/rnnc.h
set -u
lib=$1 header=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Defined dynamic symbols, less the linker's own and the sanitizers' markers.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' |
    grep -Ev '^(_init|_fini|_edata|_end|__bss_start|__odr_asan\..*)$' | sort -u > "$T/exported"
grep -Eo '\brnnc_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u > "$T/declared"
fails=0
if extra=$(comm -23 "$T/exported" "$T/declared") && [ -n "$extra" ]; then
    echo "FAIL: exported but not in rnnc.h:" $extra >&2; fails=1
fi
if missing=$(comm -13 "$T/exported" "$T/declared") && [ -n "$missing" ]; then
    echo "FAIL: declared in rnnc.h but not exported:" $missing >&2; fails=1
fi
echo "$(wc -l < "$T/exported") symbols exported"
exit $fails
