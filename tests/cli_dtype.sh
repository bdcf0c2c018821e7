#!/usr/bin/env bash
# cli_dtype.sh: --dtype and --math on the model commands.  `random --dtype`
# writes its files in that dtype; `run --dtype` reads them and gives the
# fp32 result of the rounded data, rounded (the same with f32 files read by
# a half model); `compare --dtype` runs the host backends on the same
# data; bad values are usage errors.  Usage: cli_dtype.sh path/to/rnnc
. "$(dirname "$0")/lib_cli.sh"
has() { "$RNNC" show "$1" > show.txt || fail "show $1"; grep -Eq "$2" show.txt || { fail "$1 lacks /$2/"; cat show.txt >&2; }; }

for dt in f16 bf16; do
    DT=$(echo "$dt" | tr a-z A-Z)
    ok "$RNNC" random --cell lstm --seq 6 --batch 3 --input-size 5 --hidden-size 7 --seed 21 \
       --dtype $dt --weights w_$dt.st --input x_$dt.st
    has w_$dt.st "^weight_ih_l0 $DT \[28, 5\]"
    has x_$dt.st "^x $DT \[6, 3, 5\]"
    ok "$RNNC" run --cell lstm --weights w_$dt.st --input x_$dt.st --out y_$dt.st --backend interp --dtype $dt
    has y_$dt.st '^y F32 \[6, 3, 7\]'
    # the same numbers as fp32 files read by a half model (rounded on the way in)
    ok "$RNNC" random --cell lstm --seq 6 --batch 3 --input-size 5 --hidden-size 7 --seed 21 \
       --weights w32.st --input x32.st
    ok "$RNNC" run --cell lstm --weights w32.st --input x32.st --out y32_$dt.st --backend interp --dtype $dt
    ok "$RNNC" diff y32_$dt.st y_$dt.st --tol 0
done
# half precision differs from fp32 by about its rounding, not more
ok "$RNNC" run --cell lstm --weights w32.st --input x32.st --out y32.st --backend interp
ok "$RNNC" diff y32_bf16.st y32.st --tol 5e-2
"$RNNC" diff y32_bf16.st y32.st --tol 0 > /dev/null 2>&1 && fail "bf16 equals f32 bit for bit"
# compare on the host backends in f16
backends=interp
built cpu && backends=cpu,interp
ok "$RNNC" compare --cell gru --seq 5 --batch 2 --input-size 4 --hidden 6 --dtype f16 \
   --backends $backends --json c.json
grep -Eq '"dtype":[[:space:]]*"f16"' c.json || fail "compare JSON does not say f16"
# math modes parse (the host backends compute in fp64/fp32 whatever the mode)
ok "$RNNC" run --cell lstm --weights w32.st --input x32.st --out y3.st --backend interp --math 3xtf32
ok "$RNNC" diff y3.st y32.st --tol 0
expect 2 "--dtype wants f32, f16 or bf16" "$RNNC" run --cell lstm --weights w32.st --input x32.st --out z.st --dtype f64
expect 2 "--math wants ffma, tf32 or 3xtf32" "$RNNC" run --cell lstm --weights w32.st --input x32.st --out z.st --math fp64
expect 1 "math modes are for f32 models" "$RNNC" run --cell lstm --weights w32.st --input x32.st --out z.st --backend interp --dtype bf16 --math tf32 --input-size 5 --hidden-size 7
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_dtype: all checks passed"
