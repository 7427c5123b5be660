# `make install` works for users: the library, headers, ptreg.pc, the CMake
# package and the CLI land under a prefix, and a program builds against them
# both through pkg-config and through find_package(ptreg).
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$PTREG")" && pwd)
SRC=$(cd "$(dirname "$0")/../install" && pwd)
PREFIX="$WORK/prefix"

expect 0 -- cmake --install "$BUILD" --prefix "$PREFIX"
for f in include/ptreg/ptreg.h include/ptreg/icp.h bin/ptreg share/man/man1/ptreg.1; do
    has_file "$PREFIX/$f"
done
libdir=$(dirname "$(find "$PREFIX" -name ptreg.pc | head -n 1)")/..
has_file "$libdir/pkgconfig/ptreg.pc"
ls "$libdir"/libptreg.so* >/dev/null 2>&1 || fail "no shared library in $libdir"
has_file "$libdir/libptreg.a"
# the shared library exports its API and nothing else
if command -v nm >/dev/null; then
    foreign=$(nm -D --defined-only "$libdir/libptreg.so" | awk '{print $3}' | grep -v '^ptreg_' | head -n 5)
    [ -z "$foreign" ] || fail "libptreg.so exports non-API symbols: $foreign"
    [ "$(nm -D --defined-only "$libdir/libptreg.so" | grep -c ' ptreg_version$')" = 1 ] || fail "ptreg_version not exported"
fi
expect 0 -- "$PREFIX/bin/ptreg" --version

# the Python package, as `make install` puts it next to the library
TREE=$(cd "$(dirname "$0")/../.." && pwd)
expect 0 -- "$TREE/scripts/install-python.sh" --prefix "$PREFIX"
site=$(ls -d "$PREFIX"/lib/python3.*/dist-packages)
expect 0 -- env PYTHONPATH="$site" /usr/bin/python3 -c "import numpy as np, ptreg
rng = np.random.default_rng(0); a = rng.normal(size=(2000, 3)); b = a + [0.01, 0.0, 0.0]
r = ptreg.icp(a, b); print(ptreg.__version__, r.transformation[0, 3])"
out_has "0.1.0 0.01"

# pkg-config, shared library
export PKG_CONFIG_PATH="$libdir/pkgconfig"
expect 0 -- sh -c "cc -std=c11 \"$SRC/consumer.c\" \$(pkg-config --cflags --libs ptreg) -o \"$WORK/consumer_pc\""
expect 0 -- env LD_LIBRARY_PATH="$libdir" "$WORK/consumer_pc"; out_has "ptreg 0.1.0"
# pkg-config, static library
expect 0 -- sh -c "cc -std=c11 \"$SRC/consumer.c\" \$(pkg-config --static --cflags ptreg) \"$libdir/libptreg.a\" \$(pkg-config --static --libs-only-other --libs-only-l ptreg | sed 's/-lptreg//') -o \"$WORK/consumer_static\""
expect 0 -- "$WORK/consumer_static"
# CMake package
expect 0 -- cmake -S "$SRC" -B "$WORK/consumer_build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release
expect 0 -- cmake --build "$WORK/consumer_build"
expect 0 -- env LD_LIBRARY_PATH="$libdir" "$WORK/consumer_build/consumer"; out_has "deg"
finish
