#!/usr/bin/env bash
# layering.sh: calls and includes between the library's stages follow
# cmake/layers.txt: a stage uses only the stages it names (and what those
# may use), so no call goes up a layer and no circle joins two folders.
# Usage: layering.sh <layers.txt> <objects list> <source dir>
# The objects list has one line per stage: "<stage> <object>;<object>;...".
set -u
layers=$1 objects=$2 src=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# The declared graph: "a b" for each stage b that stage a may use
# (transitively, and itself), then "! a b" for the known exceptions.
awk '
    /^[ \t]*(#|$)/ { next }
    /^!/ { sub(/^![ \t]*/, ""); split($0, p, /[ \t]*->[ \t]*|:/); ex[p[1] " " p[2]] = 1; next }
    { st = $1; sub(/:$/, "", st); stage[st] = 1
      for (i = 2; i <= NF; i++) dep[st, ++nd[st]] = $i }
    END {
        for (s in stage) { reach[s, s] = 1; n = 0; q[++n] = s
            for (h = 1; h <= n; h++)
                for (i = 1; i <= nd[q[h]]; i++) {
                    d = dep[q[h], i]
                    if (d == s) { print "circle " s; continue }
                    if (!((s, d) in reach)) { reach[s, d] = 1; q[++n] = d }
                }
            for (k in reach) { split(k, p, SUBSEP); if (p[1] == s) print "ok " s " " p[2] } }
        for (e in ex) print "ex " e
    }' "$layers" | sort -u > "$T/allowed"
fails=0
if grep '^circle ' "$T/allowed" >&2; then
    echo "FAIL: $layers declares a circle through the stages above" >&2
    fails=1
fi

# Every object's defined (global) and undefined symbols, by stage.
while read -r stage list; do
    tr ';' '\n' <<< "$list" | while read -r obj; do
        [ -n "$obj" ] || continue
        nm -P "$obj" | awk -v s="$stage" -v o="${obj#*.dir/}" '
            $2 == "U" { print "use", s, o, $1 }
            $2 ~ /^[TDBRVWGS]$/ { print "def", s, o, $1 }'
    done
done < "$objects" > "$T/symbols"
[ -s "$T/symbols" ] || { echo "FAIL: no symbols read from $objects" >&2; exit 1; }

# Calls: a use of a symbol another stage defines.
awk 'FNR == 1 { pass++ }
     pass == 1 { if ($1 == "ok") ok[$2 " " $3] = 1; else if ($1 == "ex") ex[$2 " " $3] = 1; next }
     pass == 2 { if ($1 == "def") def[$4] = $2; next }
     $1 == "use" && ($4 in def) && def[$4] != $2 {
         pair = $2 " " def[$4]
         if (pair in ok) next
         if (pair in ex) { seen[pair] = 1; next }
         printf "FAIL: %s (%s) calls %s in %s, which %s may not use\n", $3, $2, $4, def[$4], $2
         bad = 1 }
     END { for (e in ex) if (!(e in seen)) { split(e, p, " ")
               printf "note: the exception %s -> %s is not needed in this build\n", p[1], p[2] }
           exit bad }' "$T/allowed" "$T/symbols" "$T/symbols" >&2 || fails=1

# Includes: "<folder>/<file>" between the stages' folders.
awk '$1 == "ok" || $1 == "ex" { print $2 }' "$T/allowed" | sort -u > "$T/stages"
while read -r stage; do
    for f in "$src/$stage"/*.c "$src/$stage"/*.h; do
        [ -f "$f" ] || continue
        sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)\/[^"/]*".*/\1/p' "$f" |
            while read -r dir; do echo "$stage ${f#"$src"/} $dir"; done
    done
done < "$T/stages" > "$T/includes"
awk 'FNR == NR { if ($1 == "ok" || $1 == "ex") ok[$2 " " $3] = 1; st[$2] = 1; next }
     ($3 in st) && !(($1 " " $3) in ok) {
         printf "FAIL: %s (%s) includes a header of %s, which %s may not use\n", $2, $1, $3, $1
         bad = 1 }
     END { exit bad }' "$T/allowed" "$T/includes" >&2 || fails=1

echo "$(grep -c '^use' "$T/symbols") undefined references in $(awk '{print $3}' "$T/symbols" | sort -u | wc -l) objects checked"
exit $fails
