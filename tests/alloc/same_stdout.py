"""Whether two runs of one command printed the same on stdout, but for what
differs between any two runs: times and the rates drawn from them.

    same_stdout.py REF RUN [REF_DIR RUN_DIR]

REF_DIR and RUN_DIR, when given, are each run's own output folder: a path
under it is the same path in both (tests/cuda_standin/sweep.sh gives every
run its own folder). Exit 0 when the two say the same, else 1 with the
first difference on stdout.

A --json result is compared as JSON: a number under a key ending in "_ms"
or "_per_s", or "gpts" (the measured rate), is a time; every other value
(counts, errors, poses, keypoints, paths) must be equal. Text is compared
line by line, with the numbers of times masked: "N ms", "N s", "N unit/s",
"N per s", the parts of a time in brackets after it ("time T ms (scores A,
keypoints B)") and a speed-up "is Nx".
"""
import itertools
import json
import re
import sys

TIME_KEY = re.compile(r"(_ms|_per_s)$|^gpts$")
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
TEXT_TIMES = [
    (re.compile(NUMBER + r"( ms\b)"), r"<t>\1"),
    (re.compile(NUMBER + r"( s\b)"), r"<t>\1"),
    (re.compile(NUMBER + r"( [A-Za-z]+/s\b)"), r"<t>\1"),
    (re.compile(NUMBER + r"( per s\b)"), r"<t>\1"),
    (re.compile(r"\bis " + NUMBER + r"x\b"), "is <t>x"),
]
AFTER_TIME = re.compile(r"(<t> ms,? \()([^()]*)\)")


def mask_json(value, key=""):
    if TIME_KEY.search(key):
        return "<time>"
    if isinstance(value, dict):
        return {k: mask_json(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v, key) for v in value]
    return value


def mask_line(line):
    for pattern, repl in TEXT_TIMES:
        line = pattern.sub(repl, line)
    return AFTER_TIME.sub(lambda m: m.group(1) + re.sub(NUMBER, "<t>", m.group(2)) + ")", line)


def first_json_difference(a, b, path="$"):
    if type(a) is not type(b):
        return "%s: %s / %s" % (path, json.dumps(a), json.dumps(b))
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return "%s.%s: only in the %s" % (path, k, "reference" if k in a else "run compared")
            d = first_json_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items / %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_json_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %s / %s" % (path, json.dumps(a), json.dumps(b))


def read(path, own_dir):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text.replace(own_dir, "@OUT@") if own_dir else text


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    dirs = sys.argv[3:5] if len(sys.argv) == 5 else (None, None)
    ref, run = read(sys.argv[1], dirs[0]), read(sys.argv[2], dirs[1])
    try:
        a, b = json.loads(ref), json.loads(run)
    except ValueError:
        a = b = None
    if a is not None:
        difference = first_json_difference(mask_json(a), mask_json(b))
    else:
        difference = None
        lines = itertools.zip_longest(ref.splitlines(), run.splitlines(), fillvalue="(no line)")
        for i, (x, y) in enumerate(lines):
            x, y = mask_line(x), mask_line(y)
            if x != y:
                difference = "line %d: %r / %r" % (i + 1, x, y)
                break
    if difference:
        print(difference)
        sys.exit(1)


if __name__ == "__main__":
    main()
