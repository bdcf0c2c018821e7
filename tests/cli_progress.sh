#!/usr/bin/env bash
# cli_progress.sh: `rnnc compare` says what it is doing while a step takes
# more than a second, on stderr and only on a terminal (a pty from
# script(1)), never with --quiet or into a file; the table's rows come in
# the order asked, each printed once it and the references have run.
# Usage: cli_progress.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
# an interpreter run of several seconds on one thread (about 4 s idle in the CI build;
# at 1000 steps it took 0.96 s on a quiet machine, under the one-second mark)
slow_seq() { slow=(compare --cell lstm --seq "$1" --batch 16 --input-size 32 --hidden 32 --backends interp); }
slow_seq 4000
export RNNC_THREADS=1

# 1. stderr a file: no progress line, the table on stdout
t0=$(date +%s%N)
ok "$RNNC" "${slow[@]}"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -q '^interp ' out.txt || fail "no interp row"
[ -s err.txt ] && { fail "compare wrote to stderr when it is not a terminal"; cat -A err.txt >&2; }
# A faster build or machine (a Release build ran it in 0.7 s) gets a sequence long enough
# for about 2.5 s, well past the one-second mark.
[ "$ms" -lt 2000 ] && slow_seq $(( 4000 * 2500 / (ms > 100 ? ms : 100) ))

# 2. a terminal: the line appears (and is erased); --quiet keeps it off
if command -v script >/dev/null; then
    script -qefc "'$RNNC' ${slow[*]}" /dev/null > tty.txt 2>&1 || fail "compare on a pty"
    grep -q 'rnnc compare: interp (1 of 1) \.\.\. [0-9.]* s' tty.txt ||
        { fail "no progress line on a terminal"; cat -A tty.txt >&2; }
    grep -Eq 'interp +[0-9.]+\*' tty.txt || fail "no interp row on a terminal"
    script -qefc "'$RNNC' ${slow[*]} --quiet" /dev/null > tty_quiet.txt 2>&1 ||
        fail "compare --quiet on a pty"
    grep -q '\.\.\. [0-9.]* s' tty_quiet.txt && fail "--quiet still shows progress"
    grep -Eq '^interp +[0-9.]+\*' tty_quiet.txt || fail "no interp row with --quiet"
else
    echo "script(1) is not installed: the terminal part was not tested"
fi

# 3. rows in the order asked although the references run first
ok "$RNNC" compare --cell gru --seq 4 --batch 2 --input-size 3 --hidden 4 \
   --backends cpu,interp,fused --iters 2 --warmup 1 --quiet
sed -n 's/^\(cpu\|interp\|fused\) .*/\1/p' out.txt | tr '\n' ' ' > order.txt
[ "$(cat order.txt)" = "cpu interp fused " ] || { fail "rows out of order: $(cat order.txt)"; cat out.txt >&2; }
if built cpu; then
    grep -Eq '^cpu +[0-9.]+ +- +[0-9.]+e-[0-9]+ ' out.txt || { fail "cpu row lacks its error vs interp"; cat out.txt >&2; }
fi

exit $((fails > 0))
