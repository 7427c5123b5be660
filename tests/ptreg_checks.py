#!/usr/bin/env python3
"""The test suite's numeric checks in Python, and the shell's through it.

Every number a test compares goes through here (C has tests/check.h). A check
fails when the value is missing, is JSON's null (cJSON writes NaN and the
infinities as null), is not a number, or is not finite, and a comparison
passes only when it is true: NaN makes every comparison false, so `not (a > b)`
or awk's `"" < 0.5` would pass what is not there. Python's max() and min()
drop a NaN that does not come first; worst() never does.

As a module (inline Python in tests/cli/*.sh, and python/tests):
    from ptreg_checks import finite, compare, near, worst, worst_abs_diff, field

As a command (tests/cli/lib.sh's `checks`), exit 1 with the reason on stderr:
    ptreg_checks.py value VALUE OP BOUND [--what TEXT] [--tol T]
    ptreg_checks.py json FILE KEY OP BOUND [--what TEXT] [--tol T]
    ptreg_checks.py json-all FILE KEY OP BOUND [--count N] [--what TEXT]
    ptreg_checks.py json-get FILE KEY           prints the finite value
    ptreg_checks.py text FILE REGEX OP BOUND [--what TEXT] [--tol T]
    ptreg_checks.py tables A B TOL [--skip N] [--cols N] [--what TEXT]
OP is one of < <= > >= == near (near: |value - BOUND| <= --tol). KEY is a
dotted path from the top (scans.0.rotation_error_deg) or a bare key that
must occur exactly once anywhere in the document (json-all: every place it
occurs, at least once or exactly --count times). REGEX has one group, the
number, and must match exactly once. `tables` compares two numeric tables
entry by entry (entries split at commas and blanks): the same rows (lines
starting with # and then the first --skip lines, headers, left out) and
columns (--cols each, when given), every entry finite.
"""
import argparse
import json
import math
import re
import sys


class CheckFailed(AssertionError):
    """A check that did not hold, with the reason."""


def finite(value, what="value"):
    """value as a finite float; missing, null, text, NaN and the infinities fail."""
    if value is None:
        raise CheckFailed(f"{what}: missing or null (cJSON writes NaN and infinities as null)")
    if isinstance(value, bool):
        raise CheckFailed(f"{what}: {value!r} is a truth value, not a number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what}: not a number: {value!r}") from None
    if not math.isfinite(x):
        raise CheckFailed(f"{what}: not finite: {x!r}")
    return x


_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
}


def compare(value, op, bound, what="value", tol=None):
    """value (finite) OP bound, else CheckFailed; returns the value."""
    a = finite(value, what)
    b = finite(bound, f"{what}'s bound")
    if op == "near":
        return near(a, b, tol, what)
    if op not in _OPS:
        raise CheckFailed(f"{what}: unknown comparison {op!r}")
    if not _OPS[op](a, b):
        raise CheckFailed(f"{what} = {a!r}, want {op} {b!r}")
    return a


def near(value, want, tol, what="value"):
    """|value - want| <= tol with all three finite; returns the value."""
    a, b = finite(value, what), finite(want, f"{what}'s expected value")
    t = finite(tol, f"{what}'s tolerance")
    if not abs(a - b) <= t:
        raise CheckFailed(f"{what} = {a!r}, want {b!r} within {t!r} (off by {abs(a - b)!r})")
    return a


def _flat(values, what):
    """The entries of a number, a sequence (nested) or an array, and its shape."""
    if hasattr(values, "shape") and hasattr(values, "ravel"):  # a NumPy array
        return [x for x in values.ravel().tolist()], tuple(values.shape)
    if isinstance(values, (list, tuple)):
        flat, shapes = [], set()
        for v in values:
            f, s = _flat(v, what)
            flat.extend(f)
            shapes.add(s)
        if len(shapes) > 1:
            raise CheckFailed(f"{what}: ragged rows {sorted(shapes)}")
        return flat, (len(values),) + (shapes.pop() if shapes else ())
    if isinstance(values, (str, bytes, dict)):
        raise CheckFailed(f"{what}: {type(values).__name__} is not numbers")
    if hasattr(values, "__iter__"):
        return _flat(list(values), what)
    return [values], ()


def worst(values, what="values"):
    """The largest entry, every one finite: a max a NaN cannot drop out of.
    No entries at all fails too."""
    flat, _ = _flat(values, what)
    if not flat:
        raise CheckFailed(f"{what}: no values")
    return max(finite(x, f"{what}[{i}]") for i, x in enumerate(flat))


def worst_abs_diff(a, b, what="values"):
    """max |a - b| over two arrays of the same shape, every entry finite."""
    fa, sa = _flat(a, what)
    fb, sb = _flat(b, what)
    if sa != sb:
        raise CheckFailed(f"{what}: shapes {sa} and {sb} differ")
    if not fa:
        raise CheckFailed(f"{what}: no values")
    return max(abs(finite(x, f"{what}: first[{i}]") - finite(y, f"{what}: second[{i}]"))
               for i, (x, y) in enumerate(zip(fa, fb)))


def _walk(doc, key, path=""):
    """Every (path, value) in doc whose key is key, in document order."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else k
            if k == key:
                yield p, v
            yield from _walk(v, key, p)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _walk(v, key, f"{path}.{i}" if path else str(i))


def _at(doc, path):
    node = doc
    for part in path.split("."):
        if isinstance(node, list) and re.fullmatch(r"-?\d+", part):
            i = int(part)
            if not -len(node) <= i < len(node):
                raise CheckFailed(f"{path}: index {i} beyond {len(node)} entries")
            node = node[i]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise CheckFailed(f"{path}: no '{part}' in the document")
    return node


def field(doc, key):
    """The value at a dotted path, or of a bare key found exactly once."""
    if "." in key:
        return _at(doc, key)
    found = list(_walk(doc, key))
    if not found:
        raise CheckFailed(f"{key}: missing from the document")
    if len(found) > 1:
        raise CheckFailed(f"{key}: {len(found)} places ({', '.join(p for p, _ in found[:4])}...): give a path")
    return found[0][1]


def fields(doc, key, count=None):
    """The values of key everywhere it occurs: at least once, or exactly count times."""
    found = [v for _, v in _walk(doc, key)]
    if not found:
        raise CheckFailed(f"{key}: missing from the document")
    if count is not None and len(found) != count:
        raise CheckFailed(f"{key}: {len(found)} places, want {count}")
    return found


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise CheckFailed(f"{path}: not JSON: {e}") from None


def text_number(path, regex):
    """The one group of the one match of regex in the file, as text."""
    with open(path, errors="replace") as f:
        matches = re.findall(regex, f.read())
    if len(matches) != 1:
        raise CheckFailed(f"{path}: /{regex}/ matches {len(matches)} times, want once")
    return matches[0]


def read_table(path, skip, what):
    rows = []
    with open(path, errors="replace") as f:
        lines = [line for line in f if line.strip() and not line.startswith("#")]
    for n, line in enumerate(lines[skip:], skip + 1):
        cells = line.replace(",", " ").split()
        rows.append([finite(c.strip(), f"{what}: {path}: row {n}, column {j + 1}") for j, c in enumerate(cells)])
    return rows


def tables_close(a, b, tol, skip=0, cols=None, what="tables"):
    """Two numeric tables, entry by entry within tol; returns the largest difference."""
    ta, tb = read_table(a, skip, what), read_table(b, skip, what)
    if not ta:
        raise CheckFailed(f"{what}: {a} has no rows")
    if len(ta) != len(tb):
        raise CheckFailed(f"{what}: {len(ta)} rows in {a}, {len(tb)} in {b}")
    t = finite(tol, f"{what}'s tolerance")
    largest = 0.0
    for n, (ra, rb) in enumerate(zip(ta, tb), skip + 1):
        if len(ra) != len(rb) or (cols is not None and len(ra) != cols):
            raise CheckFailed(f"{what}: row {n}: {len(ra)} and {len(rb)} columns"
                              + (f", want {cols}" if cols is not None else ""))
        for j, (x, y) in enumerate(zip(ra, rb)):
            if not abs(x - y) <= t:
                raise CheckFailed(f"{what}: row {n}, column {j + 1}: {x!r} and {y!r} differ by {abs(x - y)!r} > {t!r}")
            largest = max(largest, abs(x - y))
    return largest


def _main(argv):
    p = argparse.ArgumentParser(prog="ptreg_checks.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="how", required=True)
    for name, args in (("value", ["value"]), ("json", ["file", "key"]), ("json-all", ["file", "key"]),
                       ("text", ["file", "regex"])):
        s = sub.add_parser(name)
        for a in args:
            s.add_argument(a)
        s.add_argument("op", choices=sorted(_OPS) + ["near"])
        s.add_argument("bound")
        s.add_argument("--what")
        s.add_argument("--tol")
        if name == "json-all":
            s.add_argument("--count", type=int)
    s = sub.add_parser("json-get")
    s.add_argument("file")
    s.add_argument("key")
    s = sub.add_parser("tables")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("tol")
    s.add_argument("--skip", type=int, default=0)
    s.add_argument("--cols", type=int)
    s.add_argument("--what", default="tables")
    o = p.parse_args(argv)
    try:
        if o.how == "value":
            compare(o.value, o.op, o.bound, o.what or "value", o.tol)
        elif o.how == "json":
            what = o.what or o.key
            try:
                value = field(load_json(o.file), o.key)
            except CheckFailed as e:
                raise CheckFailed(f"{what}: {e}") from None
            compare(value, o.op, o.bound, what, o.tol)
        elif o.how == "json-all":
            try:
                values = fields(load_json(o.file), o.key, o.count)
            except CheckFailed as e:
                raise CheckFailed(f"{o.what or o.key}: {e}") from None
            for i, v in enumerate(values):
                compare(v, o.op, o.bound, f"{o.what or o.key} (#{i + 1})", o.tol)
        elif o.how == "json-get":
            print(repr(finite(field(load_json(o.file), o.key), o.key)))
        elif o.how == "text":
            compare(text_number(o.file, o.regex), o.op, o.bound, o.what or f"/{o.regex}/", o.tol)
        else:
            tables_close(o.a, o.b, o.tol, o.skip, o.cols, o.what)
    except (CheckFailed, OSError) as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
