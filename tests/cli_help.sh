#!/usr/bin/env bash
# cli_help.sh: `rnnc --help`, `rnnc --version`, and --help for every command.
# Usage: cli_help.sh path/to/rnnc
set -u
RNNC=${1:?usage: cli_help.sh path/to/rnnc}
RNNC=$(cd "$(dirname "$RNNC")" && pwd)/$(basename "$RNNC") # the tests cd elsewhere
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
out=$(mktemp)
top=$(mktemp)
trap 'rm -f "$out" "$top"' EXIT

"$RNNC" --help > "$top" || fail "--help exit $?"
for cmd in run grad random compare conv dump demo show diff cache compile; do
    grep -q "^  $cmd " "$top" || fail "--help does not list $cmd"
    "$RNNC" "$cmd" --help > "$out" 2>&1 || fail "$cmd --help exit $?"
    grep -q "^Usage: rnnc $cmd" "$out" || fail "$cmd --help has no usage line"
    "$RNNC" help "$cmd" | grep -q "^Usage: rnnc $cmd" || fail "help $cmd"
done
"$RNNC" run --help | grep -q -- "--backend B" || fail "run --help lacks the model options"
# --help names the documentation, which is there, and docs/cli.md covers every command
doc=$(sed -n 's/^Documentation: \([^ ]*\) .*/\1/p' "$top")
[ -n "$doc" ] && [ -f "$doc" ] || fail "--help names no documentation that exists ('$doc')"
cmds=$(sed -n 's/^  \([a-z]*\) .*/\1/p' "$top")
for cmd in $cmds; do
    [ -z "$doc" ] || grep -q "^| \`$cmd\` " "$doc" || fail "$doc does not list $cmd"
done
"$RNNC" --version | head -1 | grep -Eq '^rnnc [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
"$RNNC" --version | grep -Eq '^backends built: interp' || fail "--version does not list the backends built"
"$RNNC" > /dev/null 2> "$out"
[ $? -eq 2 ] && grep -q "^Usage: rnnc COMMAND" "$out" || fail "no command: want usage, exit 2"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "cli_help: all checks passed"
