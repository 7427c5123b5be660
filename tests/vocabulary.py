"""One name per idea, in every command and in Python (issue 47).

Reads each command's options from `ptreg help CMD` and checks them against
the rules below; prints the table of each idea's names per command, so a
reader sees at a glance what the rules hold. Python's keywords are checked
by python/tests/test_vocabulary.py through python_keyword_problems().

  python3 tests/vocabulary.py PTREG      # exit 1 and each breach on stderr
"""
import inspect
import re
import subprocess
import sys

# Commands that compute take --device and -q/--quiet; the others only read,
# write or list.
NOT_COMPUTING = {"synth", "convert", "info", "view", "devices", "help", "version"}

# An input's output twin is NAME-out; an input is never written.
INPUTS = {"truth", "transform", "init", "pose-graph", "motif", "frames", "pairs", "ranges"}

OPTION_LINE = re.compile(r"^\s+(?:-(\w), )?--([a-z0-9][a-z0-9-]*)(?: (\S+))?\s+(.*)$")


def commands(ptreg):
    text = subprocess.run([ptreg, "help"], capture_output=True, text=True, check=True).stdout
    block = text.split("commands:", 1)[1]
    names = re.findall(r"^  ([a-z0-9]+)\s", block, re.M)
    return [n for n in names if n not in ("help", "version")]


def options(ptreg, command):
    """{name: (short, placeholder, help)} of `ptreg help command`."""
    text = subprocess.run([ptreg, "help", command], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in text.split("options:", 1)[1].splitlines():
        m = OPTION_LINE.match(line)
        if m and m.group(2) != "help":
            found[m.group(2)] = (m.group(1), m.group(3), m.group(4))
    return found


def writes(help_text):
    return help_text.startswith("write")


# Each idea: how its options are recognised (by name), and the rule their
# names keep. A breach is (command, option, why).
def neighbour_counts(name, help_text):
    if name == "k" or name.endswith("-k"):
        if not re.search(r"neighbo|nearest", help_text):
            return "--%s is not a neighbour count: --k and --X-k count neighbours everywhere" % name
    elif re.search(r"(^|-)(knn|neighbors?-count|nn-k)$", name):
        return "a neighbour count is --k (or --X-k)"
    return None


def iterations(name, help_text):
    if "iteration" in name or re.search(r"(^|-)iters?$", name) or name.endswith("-max-iter"):
        if not re.fullmatch(r"max-iter|[a-z]+-iter", name) or name.endswith("-max-iter"):
            return "iterations are --max-iter, or --STAGE-iter for a stage's own"
    return None


def page_caps(name, help_text):
    if name.endswith("max-points") and name != "html-max-points":
        return "the page's point cap is --html-max-points"
    return None


def inputs_and_outputs(name, help_text):
    if name in INPUTS and writes(help_text):
        return "--%s reads; what is written is --%s-out" % (name, name)
    if name.endswith("-out") and not writes(help_text):
        return "--X-out writes (its help starts with 'write')"
    return None


RULES = {
    "neighbour count": neighbour_counts,
    "iterations": iterations,
    "page point cap": page_caps,
    "input / output": inputs_and_outputs,
}

# what the table prints per idea: the names of each command's options in it
IDEA_NAMES = {
    "neighbour count": lambda n: n == "k" or n.endswith("-k"),
    "iterations": lambda n: n.endswith("-iter"),
    "page point cap": lambda n: n.endswith("max-points"),
    "truth": lambda n: n.startswith("truth"),
    "transform in/out": lambda n: n in ("transform", "init", "transform-out"),
}


def cli_problems(table):
    problems = []
    for command, opts in table.items():
        for name, (short, _, help_text) in opts.items():
            for rule in RULES.values():
                why = rule(name, help_text)
                if why:
                    problems.append((command, "--" + name, why))
            if name == "quiet" and short != "q":
                problems.append((command, "--quiet", "-q is its short name everywhere"))
        if command not in NOT_COMPUTING:
            for needed in ("device", "quiet"):
                if needed not in opts:
                    problems.append((command, "--" + needed, "every command that computes takes it"))
    return problems


def print_ideas(table):
    for idea, member in IDEA_NAMES.items():
        print("%s:" % idea)
        for command, opts in table.items():
            names = sorted(n for n in opts if member(n))
            if names:
                print("  %-10s %s" % (command, " ".join("--" + n for n in names)))


# Python's keywords are the CLI's names with underscores. A function twins a
# command; keywords of neither the command nor this list are breaches.
PYTHON_TWINS = {
    "icp": "icp", "emicp": "emicp", "register": "register", "harris3d": "harris3d", "normals": "normals",
    "pfh": "pfh", "fpfh": "fpfh", "lddmm": "lddmm", "warp": "warp",
}
# the data a function takes where the command takes files, and Python's own
PYTHON_ONLY = {"source", "target", "points", "cloud", "volume", "normals", "source_normals", "target_normals",
               "template", "result", "spacing", "index", "model", "progress", "tune", "device", "threads",
               "precision"}


def python_keyword_problems(module, table):
    problems = []
    for function, command in PYTHON_TWINS.items():
        fn = getattr(module, function, None)
        if fn is None or command not in table:
            continue
        known = {n.replace("-", "_") for n in table[command]}
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in PYTHON_ONLY or name in known:
                continue
            problems.append(("ptreg.%s" % function, name, "not an option of 'ptreg %s' (%s)" % (command, ", ".join(
                sorted(known)))))
    return problems


def cli_table(ptreg):
    return {c: options(ptreg, c) for c in commands(ptreg)}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    table = cli_table(argv[1])
    if len(table) < 15:
        sys.exit("FAIL: only %d commands read from 'ptreg help'" % len(table))
    print_ideas(table)
    problems = cli_problems(table)
    for command, option, why in problems:
        print("FAIL: ptreg %s %s: %s" % (command, option, why), file=sys.stderr)
    print("%d commands, %d options: %d breaches" % (len(table), sum(len(o) for o in table.values()), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
