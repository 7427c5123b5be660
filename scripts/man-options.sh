#!/bin/bash
# The lists of docs/ptreg.1 that the library's tables make: each block
# between
#   .\" BEGIN options of CMD ...   and   .\" END options of CMD
# is what `ptreg help --man CMD` prints, the command's options from its
# options table (ptreg/options.h; a block "of CMD, CMD2:" serves commands of
# one table, from the first's), and each block between
#   .\" BEGIN json of CMD ...   and   .\" END json of CMD
# is what `ptreg help --man-json CMD` prints, the fields of its --json from
# the result tables (ptreg/results.h). Rewrites the blocks, or with --check
# says which block differs (exit 1) and which command with such options or
# fields has no block.
#   scripts/man-options.sh [--check] PTREG [MANPAGE]
set -euo pipefail
check=0
[[ ${1:-} == --check ]] && { check=1; shift; }
ptreg=${1:?usage: man-options.sh [--check] PTREG [MANPAGE]}
root=$(cd "$(dirname "$0")/.." && pwd)
page=${2:-$root/docs/ptreg.1}
made=$(mktemp)
trap 'rm -f "$made"' EXIT

# the page with every block made afresh
while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line =~ ^\.\\\"\ BEGIN\ (options|json)\ of\ ([a-z0-9]+) ]]; then
        kind=${BASH_REMATCH[1]} flag=--man
        [[ $kind == json ]] && flag=--man-json
        "$ptreg" help $flag "${BASH_REMATCH[2]}"
        while IFS= read -r line && ! [[ $line =~ ^\.\\\"\ END\ $kind\ of ]]; do :; done
        printf '%s\n' "$line"
    fi
done < "$page" > "$made"

bad=0
for cmd in $("$ptreg" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
    for kind in options json; do
        flag=--man
        [[ $kind == json ]] && flag=--man-json
        [[ -z $("$ptreg" help $flag "$cmd" 2>/dev/null) ]] && continue
        grep -Eq "^\.\\\\\" BEGIN $kind of ([a-z0-9]+, )*$cmd[:,]" "$page" ||
            { echo "$page: no block of $cmd's $kind (.\\\" BEGIN $kind of $cmd: ...)" >&2; bad=1; }
    done
done
if ((check)); then
    diff -u "$page" "$made" >&2 || { echo "$page: its option and JSON lists differ from the library's (run $0)" >&2; bad=1; }
    exit $bad
fi
cp "$made" "$page"
exit $bad
