#!/usr/bin/env bash
# cli_compare.sh: `rnnc compare` runs every backend on one set of data and
# reports time and agreement (unusable backends get a row saying why);
# `rnnc demo` says what ran and, with no GPU, why the CPU; `rnnc cache`
# works on a private cache directory.  Usage: cli_compare.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"

# compare: a table with every backend asked for, the JSON beside it
"$RNNC" compare --cell lstm --seq 6 --batch 3 --input-size 8 --hidden-size 16 --layers 2 \
    --bidirectional --lengths random --backends fused,cudnn,cpu,interp --warmup 1 --iters 3 \
    --json c.json > out.txt 2> err.txt || { fail "compare exit $?"; cat out.txt err.txt >&2; }
grep -Eq '^interp +[0-9.]+\*' out.txt || { fail "no interp row"; cat out.txt >&2; }
for b in fused cudnn cpu; do
    line=$(grep -E "^$b " out.txt) || { fail "no $b row"; continue; }
    if echo "$line" | grep -Eq "^$b +[0-9]"; then
        # it ran, and agrees with the interpreter to fp32 precision
        err=$(echo "$line" | awk '{print $4}')
        awk -v e="$err" 'BEGIN { exit !(e + 0 <= 1e-5) }' || fail "$b differs from interp: $err"
    else
        # it did not: the row says why, naming the backend
        echo "$line" | grep -Eq "^$b +unavailable: .+" || fail "bad row: $line"
        if usable "$b" && echo "$line" | grep -q "none is usable here"; then
            fail "$b is usable, yet its row says there is no device"
        fi
    fi
done
for key in '"hostname"' '"rnnc_version"' '"results"' '"max_rel_err_vs_interp"' '"forward_ms"'; do
    grep -q "$key" c.json || fail "c.json lacks $key"
done
[ "$(grep -c '"backend":' c.json)" -eq 4 ] || fail "c.json does not hold 4 rows"
# auto: what a model made with AUTO picks, its row naming the backend that ran
"$RNNC" compare --cell gru --seq 4 --batch 2 --input-size 8 --hidden-size 16 \
    --backends auto,interp --warmup 1 --iters 2 --json a.json > out.txt 2> err.txt ||
    { fail "compare auto exit $?"; cat out.txt err.txt >&2; }
line=$(grep -E '^auto=(fused|cudnn|cpu|interp) +[0-9]' out.txt) || { fail "no auto row"; cat out.txt >&2; }
err=$(echo "$line" | awk '{print $4}')
awk -v e="$err" 'BEGIN { exit !(e + 0 <= 1e-5) }' || fail "auto differs from interp: $err"
grep -q '"ran_on":' a.json || fail "a.json does not say where auto ran"
"$RNNC" compare --seq 2 --batch 1 --input-size 2 --hidden-size 2 --backends interp,bogus \
    > /dev/null 2>&1
[ $? -eq 2 ] || fail "compare with an unknown backend: want exit 2"
"$RNNC" compare --seq 2 --batch 1 > /dev/null 2>&1
[ $? -eq 2 ] || fail "compare without sizes: want exit 2"

# compare --training: the training step of each backend with a backward,
# its gradients against the interpreter's; the others say they have none
"$RNNC" compare --training --cell lstm --seq 6 --batch 3 --input-size 8 --hidden-size 16 \
    --layers 2 --bidirectional --lengths random --backends cudnn,cpu,interp --warmup 1 \
    --iters 3 --json t.json > out.txt 2> err.txt || { fail "compare --training exit $?"; cat out.txt err.txt >&2; }
grep -q "train ms" out.txt || fail "compare --training does not say it timed training steps"
grep -Eq '^interp +[0-9.]+\*' out.txt || { fail "no interp training row"; cat out.txt >&2; }
if usable cpu; then
    grep -Eq '^cpu +unavailable: .*no backward' out.txt || fail "cpu training row: $(grep ^cpu out.txt)"
fi
if line=$(grep -E '^cudnn +[0-9]' out.txt); then
    gerr=$(echo "$line" | awk '{print $6}')
    awk -v e="$gerr" 'BEGIN { exit !(e + 0 <= 1e-4) }' || fail "cudnn gradients differ: $gerr"
fi
for key in '"train_ms"' '"max_rel_err_grad_vs_interp"' '"training":'; do
    grep -q "$key" t.json || fail "t.json lacks $key"
done

# demo: what ran, a checksum, agreement; on the CPU it says so and why
"$RNNC" demo > demo.txt 2> err.txt || { fail "demo exit $?"; cat demo.txt err.txt >&2; }
grep -q "^backend: " demo.txt || fail "demo does not name the backend"
grep -q "checksum" demo.txt || fail "demo prints no checksum"
if ! usable fused && ! usable cudnn; then
    grep -q "ran on the CPU" demo.txt || fail "demo does not say it ran on the CPU"
    grep -q "not fused .*fused" demo.txt || fail "demo does not say why not fused"
fi
if grep -q "^check:" demo.txt; then
    err=$(sed -n 's/.*interpreter \([0-9.e+-]*\).*/\1/p' demo.txt)
    awk -v e="$err" 'BEGIN { exit !(e + 0 <= 1e-5) }' || fail "demo disagrees: $err"
fi
"$RNNC" demo --backend interp > demo.txt 2>&1 && grep -q "^backend:  interp" demo.txt ||
    fail "demo --backend interp"

# cache, on a directory of its own
export RNNC_CACHE_DIR="$T/cache"
mkdir -p "$RNNC_CACHE_DIR"
"$RNNC" cache info > out.txt 2>&1 && grep -q "$T/cache" out.txt || { fail "cache info"; cat out.txt >&2; }
"$RNNC" cache list > out.txt 2>&1 || { fail "cache list exit $?"; cat out.txt >&2; }
"$RNNC" cache clear > out.txt 2>&1 || { fail "cache clear exit $?"; cat out.txt >&2; }
"$RNNC" cache frob > /dev/null 2>&1
[ $? -eq 2 ] || fail "cache frob: want exit 2"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_compare: all checks passed"
