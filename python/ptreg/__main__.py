"""``python -m ptreg ARGS...``: the ptreg CLI's commands (``ptreg --help``).

It runs the CLI the package carries (``ptreg/bin/ptreg``, put there by ``pip
install`` of the repository's root). A package without one (built by
scripts/install-python.sh against an installed library) runs the ``ptreg``
on PATH, the one ``make install`` put beside that library; with neither it
says so and exits 127, as a shell does for a missing command.
"""

import os
import shutil
import sys

CARRIED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ptreg")


def cli_path():
    """The CLI ``python -m ptreg`` runs, or None."""
    if os.access(CARRIED, os.X_OK):
        return CARRIED
    return shutil.which("ptreg")


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    path = cli_path()
    if path is None:
        sys.stderr.write("python -m ptreg: this package carries no ptreg CLI and none is on PATH: "
                         "install the CLI (make install) or the package from the repository's root "
                         "(pip install .), which carries one\n")
        return 127
    sys.stdout.flush()
    # the CLI in this process's place: its exit code, signals and output are the command's own
    os.execv(path, [path] + args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
