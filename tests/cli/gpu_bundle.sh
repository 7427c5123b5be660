# The GPU bundle's libraries (bench/gpu/prepare.sh makes .gpu/ with
# bench/gpu/bundle-libs.sh): the library copy of this build's bundle
# programs (ptreg, the device tests, the GPU benchmarks) resolves every one
# of them with the copied folder and the base system alone (glibc, libgcc_s),
# the loader's other folders ignored; and the check fails, naming the
# library, when one is taken away. The GPU machine is not Debian: a library
# left out there is a run that never starts.
. "$(dirname "$0")/lib.sh"
BUNDLE=$TESTS_DIR/../bench/gpu/bundle-libs.sh
BUILD=$(cd "$(dirname "$PTREG")" && pwd)
[ -x /lib64/ld-linux-x86-64.so.2 ] || { echo "skip: no x86-64 glibc loader"; exit 77; }

# the programs this build has (a build without CUDA or OpenCL lacks the
# GPU benchmarks; ptreg itself is always there)
programs=()
while read -r p; do
    [ -x "$p" ] && programs+=("$p")
done < <("$BUNDLE" programs "$BUILD")
[ "${#programs[@]}" -ge 1 ] && [ "${programs[0]}" = "$BUILD/ptreg" ] || fail "bundle-libs.sh programs: no ptreg in $BUILD"

expect 0 -- "$BUNDLE" copy "$WORK/lib" "${programs[@]}"
# what ptreg links beyond glibc is there, glibc's own is not
for lib in libgomp.so.1 libqhull_r.so.8.0; do has_file "$WORK/lib/$lib"; done
for lib in libc.so.6 libm.so.6 ld-linux-x86-64.so.2 libgcc_s.so.1; do no_file "$WORK/lib/$lib"; done
expect 0 -- "$BUNDLE" check "$WORK/lib" "${programs[@]}"

# the check can fail: a library taken away is found elsewhere, and named
# (for each program that needs it, and for the copied library that does)
rm -f "$WORK/lib/libgomp.so.1"
expect 1 -- "$BUNDLE" check "$WORK/lib" "${programs[@]}"
err_has "ptreg: libgomp.so.1: found at /"
err_has "not in $WORK/lib"
expect 0 -- "$BUNDLE" copy "$WORK/lib" "${programs[@]}"
# ... and a library found nowhere: a program that needs one the system lacks
if command -v cc >/dev/null; then
    printf 'int ptreg_bundle_probe(void) { return 1; }\n' >"$WORK/probe.c"
    printf 'int ptreg_bundle_probe(void);\nint main(void) { return !ptreg_bundle_probe(); }\n' >"$WORK/main.c"
    if cc -shared -fPIC -o "$WORK/libbundleprobe.so" "$WORK/probe.c" &&
        cc -o "$WORK/needs_probe" "$WORK/main.c" -L"$WORK" -lbundleprobe; then
        expect 1 -- "$BUNDLE" check "$WORK/lib" "$WORK/needs_probe"
        err_has "libbundleprobe.so: not found"
        expect 1 -- "$BUNDLE" copy "$WORK/lib" "$WORK/needs_probe"
        err_has "needs libbundleprobe.so, which is not found here"
        cp "$WORK/libbundleprobe.so" "$WORK/lib/"
        expect 0 -- "$BUNDLE" check "$WORK/lib" "$WORK/needs_probe"
    else
        fail "cc could not build the check's probe program"
    fi
fi
expect 2 -- "$BUNDLE" check "$WORK/lib"
finish
