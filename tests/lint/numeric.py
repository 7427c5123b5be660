#!/usr/bin/env python3
"""No numeric check in the tests that a NaN passes (issue 46).

Every comparison goes through the helpers that fail on a missing or
non-finite value: tests/check.h in C (CHECK(a <= tol), check_worse,
check_least, check_max_abs_diff), tests/ptreg_checks.py in Python and, through
it, `checks` in tests/cli/lib.sh. This finds the forms that drop a NaN or a
missing value and pass:
  C       fmax/fmin (fmax(worst, NaN) is worst), a failure counted with a
          "greater than" (bad += d > tol is 0 for a NaN)
  shell   a number scraped with sed or grep and compared in awk (awk's
          "" < 0.5 is true: a missing field passes), awk comparing numbers
  Python  the builtins max() and min() (max([1, nan]) is 1)
A line that is none of these in truth (a scale kept from 0, an int, a
printed summary) says so with "nan-ok" and why, on it or on the comment
line just above. Prints each offence as FILE:LINE and exits 1.

usage: tests/lint/numeric.py [ROOT]
"""
import os
import re
import sys

RULES = {
    "c": [
        (re.compile(r"\bfm(ax|in)f?\s*\("), "fmax/fmin drop a NaN: check_worse / check_least"),
        (re.compile(r"(\+=|\|=)[^;]*[^-<>=]>[^>=]"), "a failure counted with '>' misses a NaN: count !(d <= tol)"),
        (re.compile(r"\bCHECK(_MSG)?\(\s*!\s*\([^)]*[<>]"), "CHECK(!(a > b)) passes a NaN: CHECK(a <= b)"),
    ],
    "sh": [
        (re.compile(r"\[0-9\.e|0-9\.e\]|\[-0-9\.e"), "a number scraped from text: checks json / checks text"),
    ],
    "py": [
        (re.compile(r"(?<![\w.])(max|min)\s*\("), "max()/min() drop a NaN: ptreg_checks.worst / worst_abs_diff"),
    ],
}
KINDS = {".c": "c", ".h": "c", ".sh": "sh", ".py": "py"}
# Python inside a shell script's here-document: checked as Python too.
HEREDOC = re.compile(r"<<\s*'?(PY|PYEOF|EOF)'?")


# an awk program (in single quotes, over as many lines as it takes) that compares
AWK_COMPARES = re.compile(r"\bawk\b[^'\n]*'([^']*)'")


def marked(lines, i):
    return "nan-ok" in lines[i] or (i > 0 and "nan-ok" in lines[i - 1])


def offences(path, kind):
    text = open(path, errors="replace").read()
    lines = text.split("\n")
    if kind == "sh":
        for m in AWK_COMPARES.finditer(text):
            i = text.count("\n", 0, m.start())
            if re.search(r"[<>]", m.group(1)) and not marked(lines, i):
                yield i + 1, "awk compares a missing field as \"\" and drops a NaN: checks"
    python_until = None
    for i, line in enumerate(lines):
        rules = RULES[kind]
        if kind == "sh":
            if python_until is not None:
                if line.strip() == python_until:
                    python_until = None
                    continue
                rules = RULES["py"]
            else:
                m = HEREDOC.search(line)
                if m and re.search(r"python|\$PY\b|\"\$PY\"", line):
                    python_until = m.group(1)
        # the code without its comment (a comment may name what it forbids)
        code = re.sub(r"/\*.*?\*/|//.*$", "", line) if kind == "c" else line.split("#")[0]
        for pattern, why in rules:
            if pattern.search(code) and not marked(lines, i):
                yield i + 1, why


def main(root):
    tests = os.path.join(root, "tests")
    found = 0
    for base in (tests, os.path.join(root, "python", "tests")):
        for folder, _, files in os.walk(base):
            for name in sorted(files):
                kind = KINDS.get(os.path.splitext(name)[1])
                path = os.path.join(folder, name)
                if not kind or path.endswith(os.path.join("tests", "lint", "numeric.py")) or \
                        os.path.basename(path) in ("check.h", "ptreg_checks.py"):
                    continue
                for line, why in offences(path, kind):
                    print(f"{os.path.relpath(path, root)}:{line}: {why}")
                    found += 1
    if found:
        print(f"{found} numeric checks a NaN or a missing value would pass (tests/lint/numeric.py)")
        return 1
    print("ok: every numeric check fails on NaN")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")))
