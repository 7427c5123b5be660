# The man page's option lists are the library's options tables
# (ptreg/options.h), and its lists of --json fields the result tables
# (ptreg/results.h): scripts/man-options.sh remakes them; here they must
# match, and the check must catch a list that drifted, a field a table
# has and the page lacks, and a table no command's list shows.
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

# the JSON fields: each row of the command's result tables, nested ones under their key
expect 0 -- "$PTREG" help --man-json icp
out_has '^\.B rmse$'; out_has "of the pairs' distances at the final transform; in the clouds' units"
out_has '^\.B walk$'; out_has '^\.B mean_steps$'; out_has '^\.B index$'; out_has '^\.B duplicates_merged$'
expect 0 -- "$PTREG" help --man-json track; out_has '^\.B frames$'; out_has '^\.B latency_ms$'; out_has '^\.B p99$'
expect 0 -- "$PTREG" help --man-json warp
[ -s "$WORK/out" ] && fail "warp has no result table, but help --man-json printed a list"
expect 2 -- "$PTREG" help --man-json nosuch; err_has "unknown command 'nosuch'"
# a field the table has (ICP's fitness) that the page lacks
awk '/BEGIN json of icp/ {on = 1} /END json of icp/ {on = 0} on && /^\.B fitness$/ {getline; getline; next} {print}' \
    "$root/docs/ptreg.1" >"$WORK/no_field.1"
cmp -s "$root/docs/ptreg.1" "$WORK/no_field.1" && fail "the page has no fitness item in icp's JSON block"
expect 1 -- bash "$root/scripts/man-options.sh" --check "$PTREG" "$WORK/no_field.1"; err_has "differ"
grep -v 'BEGIN json of track' "$root/docs/ptreg.1" >"$WORK/no_json.1"
expect 1 -- bash "$root/scripts/man-options.sh" --check "$PTREG" "$WORK/no_json.1"; err_has "no block of track's json"
# every result table reaches the page (a new table needs a command's line in src/cli/man_results.c)
owners=$(grep -rhoE 'RESULT_TABLE\([a-z_0-9]+, "[^"]+"' "$root/src" | sed -E 's/.*, "(.*)"$/\1/')
[ "$(printf '%s\n' "$owners" | grep -c .)" -ge 10 ] || fail "too few result tables found in src: $owners"
while IFS= read -r owner; do
    grep -qF ".\\\" result table \"$owner\"" "$root/docs/ptreg.1" || fail "no command's JSON list shows the result table '$owner'"
done <<<"$owners"
finish
