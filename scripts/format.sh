#!/usr/bin/env bash
# The C sources in the style of .clang-format, by Debian 12's clang-format 14
# (another version breaks some lines differently, so this one is named).
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   change nothing: clang-format --dry-run --Werror,
#                               each line that would change named; exit 1 if any
# The files: the *.c and *.h of src, include, tests and python (the OpenCL
# kernels, *.cl, are left as written: clang-format takes them for C++).
# Exits 77 (a skip) when clang-format-14 is missing: make test-deps installs it,
# and make check fails on a skip (scripts/ctest-check.sh, tests/skips.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
tool=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$tool" >/dev/null; then
    echo "format: $tool is not installed (make test-deps installs clang-format-14)"
    exit 77
fi

# the tracked files in a checkout; every such file in a tree without git
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- 'src/*.[ch]' 'include/*.[ch]' 'tests/*.[ch]' 'python/*.[ch]')
else
    mapfile -t files < <(find src include tests python -name build -prune -o -type f -name '*.[ch]' -print | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "format: no C files found under $root" >&2; exit 1; }

if [ "$check" = 0 ]; then
    "$tool" -i --style=file "${files[@]}"
    exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if "$tool" --dry-run --Werror --style=file "${files[@]}" 2>"$log"; then
    echo "format: ${#files[@]} files in the style of .clang-format"
    exit 0
fi
grep -m 40 -E '^[^ ].*: (error|warning): ' "$log" || true
echo "format: $(grep -cE ': (error|warning): ' "$log") places in $(grep -E ': (error|warning): ' "$log" | cut -d: -f1 | sort -u | wc -l) of ${#files[@]} files differ from .clang-format's style: run scripts/format.sh" >&2
exit 1
