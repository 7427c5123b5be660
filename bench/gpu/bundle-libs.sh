#!/usr/bin/env bash
# The shared libraries the GPU bundle carries (.gpu/lib: bench/gpu/prepare.sh),
# and the proof that they are all there (tests/cli/gpu_bundle.sh in make check):
#
#   bench/gpu/bundle-libs.sh programs BUILD         the bundle's programs in a build folder, one a line
#   bench/gpu/bundle-libs.sh copy LIBDIR FILE...    copy into LIBDIR every library the programs or
#                                                   libraries FILE need beyond the base system's
#   bench/gpu/bundle-libs.sh check LIBDIR FILE...   resolve each FILE with LIBDIR and the base system's
#                                                   libraries alone; exit 1 naming each library found
#                                                   anywhere else, or not found
#
# The GPU machine is not Debian: it has glibc but none of the libraries ptreg
# links (CHOLMOD alone pulls in BLAS, LAPACK, METIS, gfortran's runtime ...),
# so every library is carried but the base system's: glibc's own (the
# loader, libc, libm, libpthread, libdl, librt) and GCC's libgcc_s, which
# every Linux has and which a carried older copy would shadow for the
# driver's libraries loaded beside ours. Dependencies are those the loader
# itself resolves (its trace, which ldd prints), with no environment and no
# ld.so.cache.
set -euo pipefail
usage() { sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1 dir=$2
shift 2
BASE='^(ld-linux[^ ]*\.so\.[0-9]+|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libgcc_s\.so\.1)$'

if [ "$mode" = programs ]; then
    for p in ptreg tests/test_device_parity tests/test_device tests/test_kernels_nvrtc bench/batch_gpu \
        bench/pairs_gpu bench/harris_gpu bench/features_gpu; do
        echo "$dir/$p"
    done
    exit 0
fi
[ "$mode" = copy ] || [ "$mode" = check ] || usage
[ $# -ge 1 ] || usage

loader=
for l in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
    [ -x "$l" ] && loader=$l && break
done
[ -n "$loader" ] || { echo "bundle-libs.sh: no dynamic loader found (ld-linux)" >&2; exit 1; }

# list FILE [PATH]: "NAME PATH" for each library FILE needs, as the loader
# resolves it (PATH searched first); PATH is "not" when it is not found
list() {
    local out
    # (as ldd does: --list stops at a library not found, the trace goes on)
    if ! out=$(env -i LD_TRACE_LOADED_OBJECTS=1 "$loader" ${2:+--library-path "$2"} --inhibit-cache "$1" 2>&1); then
        echo "bundle-libs.sh: $loader cannot list $1's libraries: $out" >&2
        return 1
    fi
    awk '$2 == "=>" {print $1, ($3 == "not" ? "not" : $3)}' <<<"$out"
}

if [ "$mode" = copy ]; then
    mkdir -p "$dir"
    for f in "$@"; do
        list "$f" | while read -r name path; do
            [[ $name =~ $BASE ]] && continue
            if [ "$path" = not ]; then
                echo "bundle-libs.sh: $f needs $name, which is not found here" >&2
                exit 1
            fi
            # under the name the loader looks for (a Debian alternative's
            # link, libblas.so.3, resolved to its file's bytes)
            cp -L "$path" "$dir/$name"
        done
    done
    exit 0
fi

# check: the base libraries from where this system's libc is, as links in a
# folder of their own, so that the loader's search path names exactly
# LIBDIR and them; anything it finds elsewhere (its built-in folders, a
# RUNPATH) or not at all is what the bundle lacks
libdir=$(cd "$dir" && pwd)
libc=$(list "$1" | awk '$1 == "libc.so.6" {print $2}')
[ -n "$libc" ] && [ -e "$libc" ] || { echo "bundle-libs.sh: $1 resolves no libc.so.6" >&2; exit 1; }
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
for lib in "$(dirname "$libc")"/*.so*; do
    name=${lib##*/}
    [[ $name =~ $BASE ]] && ln -s "$lib" "$base/$name"
done
bad=0
for f in "$@" "$libdir"/*.so*; do
    [ -e "$f" ] || continue
    found=$(list "$f" "$libdir:$base") || { bad=1; continue; }
    while read -r name path; do
        [ -n "$name" ] || continue
        case $path in
        "$libdir"/* | "$base"/*) ;;
        not) echo "$f: $name: not found in $dir or the base system" >&2; bad=1 ;;
        *) echo "$f: $name: found at $path, not in $dir" >&2; bad=1 ;;
        esac
    done <<<"$found"
done
exit $bad
