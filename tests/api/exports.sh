#!/bin/bash
# libptreg.so's exported functions (docs/API.md, "Tiers"): at most LIMIT of
# them (issue 49: 280), none used by the tests alone, and each one either
# called outside the file that defines it (src/, python/ptreg, bench/) or
# named in docs/API.md. A test or fuzz hook belongs in src/core/testing.h
# (not installed, not exported); a helper of the library's own modules in
# their private headers.
# usage: exports.sh LIBPTREG.so BUILD_DIR SOURCE_DIR [LIMIT]
set -euo pipefail
lib=$1 build=$2 root=$3 limit=${4:-280}
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^ptreg_/ {print $3}' | sort -u >"$tmp/exports"
count=$(wc -l <"$tmp/exports")
bad=0
if [ "$count" -gt "$limit" ]; then
    echo "libptreg.so exports $count ptreg_ functions, more than $limit (docs/API.md, \"Tiers\")" >&2
    bad=1
fi
[ "$count" -gt 0 ] || { echo "no exported function found in $lib" >&2; exit 1; }

# symbol -> the source file that defines it, from the library's objects
find "$build/CMakeFiles/ptreg_obj.dir" -name '*.o' | while read -r o; do
    nm --defined-only "$o" | awk -v f="${o#"$build"/CMakeFiles/ptreg_obj.dir/}" '$2 == "T" {sub(/\.o$/, "", f); print $3, f}'
done | sort -u >"$tmp/defs"
# every file:word of ptreg_ names (headers declare, they do not call)
grep -rowE --include='*.c' --include='*.py' 'ptreg_[A-Za-z0-9_]+' src python bench tests 2>/dev/null |
    sort -u >"$tmp/uses"
grep -owE 'ptreg_[A-Za-z0-9_]+' docs/API.md | sort -u >"$tmp/documented"

# one pass: for each export, its callers outside its defining file
awk -v defs="$tmp/defs" -v docs="$tmp/documented" -v uses="$tmp/uses" '
    BEGIN {
        while ((getline line < defs) > 0) { split(line, f, " "); def[f[1]] = f[2] }
        while ((getline line < docs) > 0) documented[line] = 1
        while ((getline line < uses) > 0) {
            n = index(line, ":"); file = substr(line, 1, n - 1); sym = substr(line, n + 1)
            if (file == def[sym]) continue
            if (file ~ /^(tests|python\/tests)\//) in_tests[sym]++; else outside[sym]++
        }
    }
    {
        sym = $1; where = (sym in def) ? def[sym] : "?"
        if (!outside[sym] && in_tests[sym])
            printf "%s (%s): exported but called by the tests alone: move it to src/core/testing.h\n", sym, where
        else if (!outside[sym] && !documented[sym])
            printf "%s (%s): exported with no caller outside its file and not in docs/API.md\n", sym, where
    }' "$tmp/exports" >"$tmp/problems"
if [ -s "$tmp/problems" ]; then
    cat "$tmp/problems" >&2
    bad=1
fi
[ "$bad" = 0 ] && echo "libptreg.so: $count exported functions (at most $limit), each called or documented"
exit "$bad"
