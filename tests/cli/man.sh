# The man page's option lists are the library's options tables
# (ptreg/options.h): scripts/man-options.sh remakes them; here they must
# match, and the check must catch a list that drifted.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

expect 0 -- bash "$root/scripts/man-options.sh" --check "$PTREG" "$root/docs/ptreg.1"
expect 0 -- "$PTREG" help --man emicp; out_has '.BI \\-\\-sigma\\-factor " F"'; out_has "default 0.9"
expect 0 -- "$PTREG" help --man warp
[ -s "$WORK/out" ] && fail "warp has no options table, but help --man printed a list"

sed 's/default 0\.9)/default 0.8)/' "$root/docs/ptreg.1" >"$WORK/drifted.1"
expect 1 -- bash "$root/scripts/man-options.sh" --check "$PTREG" "$WORK/drifted.1"; err_has "differ"
grep -v 'BEGIN options of batch' "$root/docs/ptreg.1" >"$WORK/no_block.1"
expect 1 -- bash "$root/scripts/man-options.sh" --check "$PTREG" "$WORK/no_block.1"; err_has "no block of batch"
finish
