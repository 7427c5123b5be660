# `pip install .` at the repository's root, as README.md tells a user to:
# in a venv that sees Debian's numpy (Debian's own python3 is externally
# managed, PEP 668), offline, under pip's build isolation. PTREG_BUILD_DIR is
# this build, so nothing is rebuilt. The package must load its own libptreg,
# run the CLI it carries (python -m ptreg), leave nothing in the source tree,
# and `pip uninstall` must remove every file it installed.
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$PTREG")" && pwd)
TREE=$(cd "$(dirname "$0")/../.." && pwd)
V="$WORK/venv"
if ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "skip: no python3-venv (make test-deps installs it)"
    exit 77
fi
# pip's wheel cache and the backend's bytecode would be files outside the venv
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore PYTHONDONTWRITEBYTECODE=1
tree_state() { git -C "$TREE" status --porcelain --ignored 2>/dev/null; }
before=$(tree_state)

expect 0 -- /usr/bin/python3 -m venv --system-site-packages "$V"
expect 0 -- env PTREG_BUILD_DIR="$BUILD" "$V/bin/pip" install --no-index "$TREE"
[ "$(tree_state)" = "$before" ] || fail "pip install left files in the source tree"
pkg=$(realpath "$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/ptreg")
for f in __init__.py __main__.py libptreg.so.0 bin/ptreg; do
    has_file "$pkg/$f"
done

cd "$WORK" || exit 1
# the library beside the extension, even with another one on LD_LIBRARY_PATH
expect 0 -- env LD_LIBRARY_PATH="$BUILD" "$V/bin/python" -c "import ptreg
print(*sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libptreg' in l}))"
[ "$(cat "$WORK/out")" = "$pkg/libptreg.so.0" ] || fail "libptreg loaded from $(cat "$WORK/out"), not $pkg"
expect 0 -- "$V/bin/python" -c "import numpy as np, ptreg
a = np.random.default_rng(0).normal(size=(2000, 3)); r = ptreg.icp(a, a + [0.01, 0.0, 0.0])
print(ptreg.__version__, round(r.transformation[0, 3], 6))"
out_has "0.1.0 0.01"

# python -m ptreg: the carried CLI, with nothing on PATH
expect 0 -- env PATH=/nonexistent "$V/bin/python" -m ptreg --help
out_has "usage: ptreg <command>"
expect 0 -- env PATH=/nonexistent "$V/bin/python" -m ptreg synth --shape aircraft -o "$WORK/scan.ply" --points 500 \
    --seed 1
has_file "$WORK/scan.ply"
expect 0 -- "$V/bin/python" -m ptreg info "$WORK/scan.ply"
out_has "500"
expect 2 -- "$V/bin/python" -m ptreg icp  # the CLI's own exit code

expect 0 -- "$V/bin/pip" uninstall -y ptreg
left=$(find "$V" -path '*ptreg*' | head -n 5)
[ -z "$left" ] || fail "pip uninstall left: $left"
finish
