#!/usr/bin/env bash
# cli_cpu_cache.sh: the cpu backend keeps its object files in the kernel
# cache, so a new process links the code an earlier one compiled: the first
# run compiles, the next loads from disk, with the same output bit for bit;
# `rnnc cache list` names the entries' arch `cpu`; a damaged entry is
# compiled again and replaced; a cache directory other users can write is
# not loaded from (with a warning); RNNC_CACHE=0 keeps nothing.
# Usage: cli_cpu_cache.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
usable cpu || { echo "skipped: this rnnc has no usable cpu backend"; exit 77; }
export RNNC_CACHE_DIR="$T/cache" RNNC_LOG=info

# run N ARGS...: `rnnc run` on the cpu backend into yN.safetensors; its log in logN.txt
run() {
    local n=$1
    shift
    "$RNNC" run --backend cpu --weights w.safetensors --input x.safetensors \
        --out "y$n.safetensors" "$@" > "out$n.txt" 2> "log$n.txt" ||
        { fail "run $n -> $?"; cat "out$n.txt" "log$n.txt" >&2; }
}
# origins N: the origins of run N's cpu code, one a line, in order
origins() { sed -n 's/^rnnc: cpu [^(]*([^)]*): \([a-z]*\), .*/\1/p' "log$1.txt" | tr '\n' ' '; }
# same A B: runs A and B wrote the same bytes
same() { cmp -s "y$1.safetensors" "y$2.safetensors" || fail "runs $1 and $2 differ"; }

# 1. an LSTM of two layers, bidirectional: two modules (the layers' input widths differ)
ok "$RNNC" random --cell lstm --layers 2 --bidirectional --seq 7 --batch 3 --input-size 20 \
   --hidden 24 --weights w.safetensors --input x.safetensors
run 1 --cell lstm --layers 2 --bidirectional
[ "$(origins 1)" = "compile compile " ] || { fail "first run: '$(origins 1)'"; cat log1.txt >&2; }
run 2 --cell lstm --layers 2 --bidirectional
[ "$(origins 2)" = "disk disk " ] || { fail "second run: '$(origins 2)'"; cat log2.txt >&2; }
same 1 2
"$RNNC" cache list > list.txt 2>&1 || fail "cache list -> $?"
[ "$(grep -c '^[0-9a-f]\{32\}  cpu  .* cpu lstm$' list.txt)" -eq 2 ] ||
    { fail "cache list does not show two cpu entries"; cat list.txt >&2; }

# 2. a damaged entry (a byte of its payload flipped) is compiled again and replaced
e=$(ls cache/kernels/*.cubin | head -1)
printf '\xff' | dd of="$e" bs=1 seek=200 conv=notrunc 2> /dev/null
run 3 --cell lstm --layers 2 --bidirectional
[ "$(origins 3)" = "compile disk " ] || [ "$(origins 3)" = "disk compile " ] ||
    { fail "damaged entry: '$(origins 3)'"; cat log3.txt >&2; }
grep -q "is bad (payload checksum mismatch): recompiling" log3.txt ||
    { fail "no word of the damaged entry"; cat log3.txt >&2; }
run 4 --cell lstm --layers 2 --bidirectional
[ "$(origins 4)" = "disk disk " ] || { fail "after the repair: '$(origins 4)'"; cat log4.txt >&2; }
same 1 3
same 1 4

# 3. a directory other users can write: its entries are not run as code
chmod o+w cache/kernels
run 5 --cell lstm --layers 2 --bidirectional
chmod o-w cache/kernels
[ "$(origins 5)" = "compile compile " ] || { fail "shared directory: '$(origins 5)'"; cat log5.txt >&2; }
[ "$(grep -c "warning: the cpu backend compiles its code rather than load it from the kernel cache: .*/cache/kernels is writable by other users" log5.txt)" -eq 1 ] ||
    { fail "one warning wanted for the shared directory"; cat log5.txt >&2; }
same 1 5

# 4. another cell and shape is another entry; the cache off keeps nothing
ok "$RNNC" random --cell gru --seq 5 --batch 2 --input-size 8 --hidden 16 --weights w.safetensors \
   --input x.safetensors
RNNC_CACHE=0 run 6 --cell gru
RNNC_CACHE=0 run 7 --cell gru
[ "$(origins 6)$(origins 7)" = "compile compile " ] ||
    { fail "RNNC_CACHE=0: '$(origins 6)$(origins 7)'"; cat log6.txt log7.txt >&2; }
[ "$(ls cache/kernels/*.cubin | wc -l)" -eq 2 ] || fail "RNNC_CACHE=0 wrote an entry"
run 8 --cell gru
run 9 --cell gru
[ "$(origins 8)$(origins 9)" = "compile disk " ] ||
    { fail "gru: '$(origins 8)$(origins 9)'"; cat log8.txt log9.txt >&2; }
same 6 9
exit $((fails > 0))
