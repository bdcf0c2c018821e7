#!/usr/bin/env bash
# cli_examples.sh: runs the example programs (examples/*.c) as a user would
# and checks what they report: the builder's LSTM is the built-in one and
# agrees with the interpreter; a custom .cell file loads, prints, schedules
# and runs, given by default, by path, or by cell name; a missing or
# malformed file fails with the library's message; training the custom cell
# with SGD makes its loss fall.
# $1 is the rnnc binary; its folder is the build folder.
set -euo pipefail
build=$(dirname "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# run NAME OUTFILE ARGS...: runs example_NAME, which must succeed.
run() {
    local exe=$build/examples/example_$1 out=$2
    shift 2
    [ -x "$exe" ] || fail "$exe is not built"
    "$exe" "$@" >"$out" 2>&1 || { cat "$out" >&2; fail "example_$(basename "$exe") $* failed"; }
}

# expect FILE TEXT...: each TEXT (an extended regex) occurs in FILE.
expect() {
    local file=$1
    shift
    for want in "$@"; do
        grep -Eq -- "$want" "$file" || { cat "$file" >&2; fail "'$want' not in $(basename "$file")"; }
    done
}

backend='backend: (fused|cudnn|cpu|interp)$'
close='max \|y - y_interp\| / max \|y_interp\| = [0-9.e+-]+$'

run builder_lstm "$tmp/builder.out"
expect "$tmp/builder.out" '^built cell equals the built-in lstm \(2 states, 5 parameters\)$' \
    "$backend" '^y checksum: -?[0-9]+\.[0-9]+$' "$close"
# Fixed seeds: two runs print the same numbers.
run builder_lstm "$tmp/builder2.out"
cmp -s "$tmp/builder.out" "$tmp/builder2.out" || fail "builder_lstm is not reproducible"

run custom_cell "$tmp/custom.out"
expect "$tmp/custom.out" '^cell layernorm_gru \{$' 'layernorm\(' '^schedule layernorm_gru' \
    '^weight ln_weight_l0$' '^weight weight_hh_l0$' "$backend" "$close"
# The layernorm depends on h: it must stay in the step, not be hoisted.
grep -Eq '^  step[^ ]* +%[0-9]+ layernorm' "$tmp/custom.out" || fail "layernorm is not in the step"

# A file of the user's, holding two cells; the second picked by name.
cat >"$tmp/two.cell" <<'EOF'
cell first {
    input x[I]
    state h[H]
    param w[H, I]
    next h = tanh(linear(x, w))
    output h
}
# A minimal gated cell: h' = z * h + (1 - z) * tanh(W x + U h)
cell gated {
    input x[I]
    state h[H]
    param weight_ih[2H, I]
    param weight_hh[2H, H]
    param bias[2H]
    z_pre, c_pre = chunk(linear(x, weight_ih) + bias + linear(h, weight_hh), 2)
    z = sigmoid(z_pre)
    h_next = z * h + (1 - z) * tanh(c_pre)
    next h = h_next
    output h_next
}
EOF
run custom_cell "$tmp/first.out" "$tmp/two.cell"
expect "$tmp/first.out" '^cell first \{$' '^weight w_l0$' "$backend" "$close"
run custom_cell "$tmp/gated.out" "$tmp/two.cell" gated
expect "$tmp/gated.out" '^cell gated \{$' '^weight bias_l0$' "$backend" "$close"

# Errors: the failing call, its status and the library's detail.
exe=$build/examples/example_custom_cell
if "$exe" "$tmp/absent.cell" >"$tmp/absent.out" 2>&1; then fail "a missing file succeeded"; fi
expect "$tmp/absent.out" 'rnnc_cell_load_file.* failed' 'absent\.cell'
printf 'cell bad {\n    input x[I]\n    state h[H]\n    next h = frobnicate(x)\n    output h\n}\n' \
    >"$tmp/bad.cell"
if "$exe" "$tmp/bad.cell" >"$tmp/bad.out" 2>&1; then fail "a malformed file succeeded"; fi
expect "$tmp/bad.out" 'failed: ' 'bad\.cell:4:' 'frobnicate'
# Training: the loss of the last report is under a fifth of the first.
run train_cell "$tmp/train.out"
expect "$tmp/train.out" '^backend: (fused|cudnn|interp)$' '^step +400 +loss [0-9.]+$'
awk '/^step/ { if (!first) first = $4; last = $4 }
     END { exit !(last > 0 && last < first / 5) }' "$tmp/train.out" ||
    { cat "$tmp/train.out" >&2; fail "the training loss did not fall"; }

echo "examples ok"
