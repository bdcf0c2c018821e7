# lib_cli.sh: what the cli_*.sh tests share; sourced with the rnnc path as $1.
# Sets RNNC (absolute: the tests cd into a private temporary directory),
# counts failures in $fails, and defines the checks below.
set -u
RNNC=${1:?usage: $0 path/to/rnnc}
RNNC=$(cd "$(dirname "$RNNC")" && pwd)/$(basename "$RNNC")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# ok CMD...: must exit 0
ok() { "$@" > out.txt 2> err.txt || { fail "$* -> $?"; cat out.txt err.txt >&2; }; }
# expect CODE REGEX CMD...: exits CODE and says something matching REGEX on stderr
expect() {
    local code=$1 re=$2
    shift 2
    "$@" > out.txt 2> err.txt
    local got=$?
    [ "$got" -eq "$code" ] || { fail "$* -> exit $got, want $code"; cat out.txt err.txt >&2; }
    grep -Eq -- "$re" err.txt || { fail "$*: stderr lacks /$re/"; cat err.txt >&2; }
    ! grep -q "runtime error\|AddressSanitizer" err.txt || fail "$*: sanitizer report"
}
# built BACKEND: this rnnc was built with the backend (CMake's RNNC_WITH_*)
built() { "$RNNC" --version | grep -q "^backends built:.* $1\b"; }
# usable BACKEND: the backend can run on this machine now
usable() { "$RNNC" --help | grep -q "usable here:.* $1\b"; }
