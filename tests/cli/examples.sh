# Every example of README.md, docs/*.md, the man page and `ptreg help CMD`, run and its
# outcome checked; an example neither run nor listed with a reason fails
# (tests/cli/examples.py has the table and how each runs).
. "$(dirname "$0")/lib.sh"

/usr/bin/python3 "$(dirname "$0")/examples.py" run "$PTREG" "${DATA:-}" "$WORK"
rc=$?
case $rc in
0) ;;
77) missing PTREG_TEST_REQUIRE_DATA "the shared data folder is not at '${DATA:-(none given)}': its examples did not run" ;;
*) fail "examples: $rc" ;;
esac
finish
