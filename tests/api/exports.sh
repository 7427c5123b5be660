#!/bin/bash
# libptreg.so's exported functions (docs/API.md, "Tiers"): at most LIMIT of
# them (issue 49: 280), none used by the tests alone, and each one either
# called outside the file that defines it (src/, python/ptreg, bench/) or
# named in docs/API.md. A test or fuzz hook belongs in its layer's testing.h (src/LAYER/testing.h)
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
    f=${o#"$build"/CMakeFiles/ptreg_obj.dir/}
    nm --defined-only "$o" | awk -v f="${f%.o}" '$2 == "T" {print $3, f}'
done | sort -u >"$tmp/defs"
# every file:word of ptreg_ names (headers declare, they do not call)
grep -rowE --include='*.c' --include='*.py' 'ptreg_[A-Za-z0-9_]+' src python bench tests 2>/dev/null |
    sort -u >"$tmp/uses"
grep -owE 'ptreg_[A-Za-z0-9_]+' docs/API.md | sort -u >"$tmp/documented"

# one pass: for each export, its callers outside its defining file
python3 - "$tmp" <<'PY' >"$tmp/problems"
import sys
tmp = sys.argv[1]
define = dict(line.split() for line in open(tmp + "/defs") if len(line.split()) == 2)
documented = set(open(tmp + "/documented").read().split())
outside, in_tests = set(), set()
for line in open(tmp + "/uses"):
    path, _, sym = line.strip().partition(":")
    if path == define.get(sym):
        continue
    (in_tests if path.startswith(("tests/", "python/tests/")) else outside).add(sym)
for sym in open(tmp + "/exports").read().split():
    where = define.get(sym, "?")
    if sym not in outside and sym in in_tests:
        print(f"{sym} ({where}): exported but called by the tests alone: move it to its layer's testing.h (src/LAYER/testing.h)")
    elif sym not in outside and sym not in documented:
        print(f"{sym} ({where}): exported with no caller outside its file and not in docs/API.md")
PY
if [ -s "$tmp/problems" ]; then
    cat "$tmp/problems" >&2
    bad=1
fi
[ "$bad" = 0 ] && echo "libptreg.so: $count exported functions (at most $limit), each called or documented"
exit "$bad"
