# The checks every other test relies on (issue 46): tests/ptreg_checks.py
# through lib.sh's `checks` fails on a missing field, JSON's null, NaN, an
# infinity, text, a false comparison, ragged or short tables, an ambiguous
# key; the C harness (check.h) fails NaN through its folds, a program with no
# check, and a skip under PTREG_TEST_REQUIRE_DATA. Each case runs in a
# subshell with its own failure count: the case must fail, once.
. "$(dirname "$0")/lib.sh"

# must_fail WHAT -- CHECKS-ARGS...: `checks ARGS` must fail
must_fail() {
    local what=$1
    shift 2
    if (failures=0 && checks "$@" 2>/dev/null >/dev/null && [ "$failures" -eq 0 ]); then
        fail "checks passed $what: checks $*"
    fi
}
# must_pass WHAT -- CHECKS-ARGS...
must_pass() {
    local what=$1
    shift 2
    (failures=0 && checks "$@" >/dev/null 2>&1 && [ "$failures" -eq 0 ]) || fail "checks failed $what: checks $*"
}

printf '{"rotation_error_deg": 0.01, "translation_error": null, "fitness": NaN, "big": Infinity,
  "name": "x", "flag": true, "scans": [{"e": 0.1}, {"e": 0.2}, {"e": null}], "pair": [{"e": 1}]}\n' >"$WORK/r.json"
J=$WORK/r.json
must_pass "a finite value below its bound" -- json "$J" rotation_error_deg '<' 0.05
must_fail "a value above its bound" -- json "$J" rotation_error_deg '<' 0.005
must_fail "null (cJSON's NaN)" -- json "$J" translation_error '<' 1
must_fail "NaN" -- json "$J" fitness '>' 0
must_fail "NaN, compared with >" -- json "$J" fitness '<' 1
must_fail "an infinity" -- json "$J" big '>' 0
must_fail "a missing key" -- json "$J" rmse '<' 1
must_fail "text" -- json "$J" name '<' 1
must_fail "a truth value" -- json "$J" flag '==' 1
must_fail "a key in two places" -- json "$J" e '<' 5
must_pass "a path" -- json "$J" scans.1.e near 0.2 --tol 1e-12
must_fail "a path beyond the list" -- json "$J" scans.7.e '<' 5
must_fail "every place, one null" -- json-all "$J" e '<' 5
must_fail "a NaN bound" -- json "$J" rotation_error_deg '<' nan
must_fail "a NaN tolerance" -- json "$J" rotation_error_deg near 0.01 --tol nan
must_fail "not JSON" -- json "$0" rotation_error_deg '<' 1
must_pass "a value" -- value 3 '>=' 3
must_fail "an empty value (a missing field)" -- value "" '<' 0.5
must_fail "nan" -- value nan '<' 0.5
must_fail "-inf" -- value -inf '<' 0.5
[ "$(checks json-get "$J" scans.0.e)" = 0.1 ] || fail "json-get: not 0.1"

printf 'pose error vs truth: rotation 0.05 deg, translation 0.001\n' >"$WORK/t.txt"
printf 'pose error vs truth: rotation nan deg, translation 0.001\n' >"$WORK/nan.txt"
printf 'rotation 0.05 deg\nrotation 0.06 deg\n' >"$WORK/twice.txt"
must_pass "a number in text" -- text "$WORK/t.txt" 'rotation (\S+) deg' '<' 0.1
must_fail "nan in text" -- text "$WORK/nan.txt" 'rotation (\S+) deg' '<' 0.1
must_fail "no match" -- text "$WORK/t.txt" 'rmse (\S+)' '<' 0.1
must_fail "two matches" -- text "$WORK/twice.txt" 'rotation (\S+) deg' '<' 0.1

printf '# a comment\nx,y\n1,2\n3,4\n' >"$WORK/a.csv"
printf 'x,y\n1,2.000001\n3,4\n' >"$WORK/b.csv"
printf 'x,y\n1,nan\n3,4\n' >"$WORK/nan.csv"
printf 'x,y\n1,2\n' >"$WORK/short.csv"
printf 'x,y\n1,2\n3\n' >"$WORK/ragged.csv"
printf 'x,y\n' >"$WORK/empty.csv"
must_pass "close tables" -- tables "$WORK/a.csv" "$WORK/b.csv" 1e-5 --skip 1 --cols 2
must_fail "tables further apart than the tolerance" -- tables "$WORK/a.csv" "$WORK/b.csv" 1e-7 --skip 1
must_fail "a NaN entry" -- tables "$WORK/a.csv" "$WORK/nan.csv" 1 --skip 1
must_fail "NaN against NaN" -- tables "$WORK/nan.csv" "$WORK/nan.csv" 1 --skip 1
must_fail "a row missing" -- tables "$WORK/a.csv" "$WORK/short.csv" 1 --skip 1
must_fail "an entry missing" -- tables "$WORK/a.csv" "$WORK/ragged.csv" 1 --skip 1
must_fail "another column count" -- tables "$WORK/a.csv" "$WORK/b.csv" 1 --skip 1 --cols 3
must_fail "no rows" -- tables "$WORK/empty.csv" "$WORK/empty.csv" 1 --skip 1
must_fail "a missing file" -- tables "$WORK/a.csv" "$WORK/none.csv" 1

# the module's folds, as the inline Python and python/tests use them
python3 - <<'PY' || fail "ptreg_checks' folds let a NaN or a short array through"
import math
from ptreg_checks import CheckFailed, worst, worst_abs_diff
def fails(f, *a):
    try:
        f(*a)
    except CheckFailed:
        return True
    return False
assert worst([1, 2, 3]) == 3 and worst_abs_diff([[1, 2]], [[1, 2.5]]) == 0.5
assert fails(worst, [1, math.nan, 3]) and fails(worst, [math.nan, 1]) and fails(worst, [])
assert fails(worst_abs_diff, [1, 2], [1, math.nan]) and fails(worst_abs_diff, [1, 2], [1, 2, 3])
assert fails(worst_abs_diff, [[1, 2]], [1, 2]) and fails(worst, [1, None]) and fails(worst, [1, "x"])
try:
    import numpy as np
    assert fails(worst_abs_diff, np.zeros((2, 3)), np.zeros((3, 2)))
    assert fails(worst, np.array([0.0, np.nan])) and worst(np.eye(3)) == 1.0
except ImportError:
    pass
PY

# the C harness, compiled here against tests/check.h
if command -v cc >/dev/null; then
    cat >"$WORK/harness.c" <<'C'
#include "check.h"
int main(int argc, char **argv)
{
    const double nan = NAN, a[3] = {1, 2, 3}, b[3] = {1, nan, 3};
    switch (argv[1][0]) {
    case 'w': /* a NaN fold compared with <= */
        CHECK(check_max_abs_diff(a, b, 3) <= 1.0);
        break;
    case 'l': /* the least, with a NaN */
        CHECK(check_least(check_least(5.0, nan), 1.0) >= 0.0);
        break;
    case 'n': /* a NaN CHECK_NEAR */
        CHECK_NEAR(nan, 1.0, 1e9);
        break;
    case 'z': /* no check at all */
        break;
    case 'd': /* a data folder that is not there */
        if (check_data_dir())
            CHECK(0);
        break;
    case 'p': /* every check passing */
        CHECK(check_max_abs_diff(a, a, 3) <= 0.0);
        CHECK(check_worse(check_worse(0.0, 2.0), 1.0) == 2.0);
        break;
    }
    (void)argc;
    return check_exit();
}
C
    if cc -std=c11 -I"$TESTS_DIR" -o "$WORK/harness" "$WORK/harness.c" -lm 2>"$WORK/cc.err"; then
        for c in w l n z; do
            "$WORK/harness" $c >/dev/null 2>&1
            [ $? -eq 1 ] || fail "check.h: case $c did not fail"
        done
        "$WORK/harness" p >/dev/null 2>&1 || fail "check.h: the passing case failed"
        PTREG_DATA_DIR=$WORK/none PTREG_TEST_REQUIRE_DATA=0 "$WORK/harness" d >/dev/null 2>&1
        [ $? -eq 77 ] || fail "check.h: a missing data folder is not a skip (77)"
        PTREG_DATA_DIR=$WORK/none PTREG_TEST_REQUIRE_DATA=1 "$WORK/harness" d >/dev/null 2>&1
        [ $? -eq 1 ] || fail "check.h: a missing data folder under PTREG_TEST_REQUIRE_DATA=1 is not a failure"
    else
        fail "check.h: the harness does not compile: $(head -3 "$WORK/cc.err")"
    fi
else
    skip_section "no C compiler: check.h's own cases"
fi

# lib.sh: a skipped section ends 77, or fails when required
(failures=0 skipped=0 && DATA=$WORK/none PTREG_TEST_REQUIRE_DATA=0 has_data; finish) >/dev/null 2>&1
[ $? -eq 77 ] || fail "lib.sh: a skipped data section does not end 77"
(failures=0 skipped=0 && DATA=$WORK/none PTREG_TEST_REQUIRE_DATA=1 has_data; finish) >/dev/null 2>&1
[ $? -eq 1 ] || fail "lib.sh: a missing data folder under PTREG_TEST_REQUIRE_DATA=1 does not fail"
finish
