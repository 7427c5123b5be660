# The command line itself: help, version, usage errors and their exit codes.
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" --version; out_has "ptreg 0.1.0"
expect 0 -- "$PTREG" version; out_has "ptreg"
expect 0 -- "$PTREG" help; out_has "icp"; out_has "Exit codes"
expect 0 -- "$PTREG" --help; out_has "synth"
# help on help: the list of commands, as plain `ptreg help` (issue 47)
expect 0 -- "$PTREG" help help; out_has "commands:"; out_has "icp"
# --radius alone is the whole ball: --k's help must not say it caps it (issue 47)
for cmd in normals pfh fpfh; do expect 0 -- "$PTREG" help $cmd; out_has "radius alone has no cap"; done
for cmd in icp emicp register correspond evaluate track index synth convert filter info normals pfh fpfh harris3d lddmm warp batch tune devices; do
    expect 0 -- "$PTREG" help $cmd; out_has "usage: ptreg $cmd"
    expect 0 -- "$PTREG" $cmd --help; out_has "options:"
    # defaults the library holds are printed from it: never written twice
    grep -E -- '--[a-z-]+ .*\(default [^)]*\) \(default' "$WORK/out" && fail "$cmd --help: a default given twice"
done
expect 2 -- "$PTREG"
expect 2 -- "$PTREG" frobnicate; err_has "unknown command"
expect 2 -- "$PTREG" help frobnicate
expect 2 -- "$PTREG" icp only_one.ply; err_has "missing arguments"
expect 2 -- "$PTREG" icp a.ply b.ply c.ply; err_has "unexpected argument"
expect 2 -- "$PTREG" icp a.ply b.ply --bogus; err_has "unknown option"
expect 2 -- "$PTREG" icp a.ply b.ply --max-iter; err_has "needs a value"
expect 2 -- "$PTREG" icp a.ply b.ply --max-iter ten; err_has "max-iter"
expect 2 -- "$PTREG" icp a.ply b.ply --max-iter -3
expect 2 -- "$PTREG" icp a.ply b.ply --trim 1.5; err_has "trim"
expect 2 -- "$PTREG" icp a.ply b.ply --max-dist 0
expect 2 -- "$PTREG" icp a.ply b.ply --nn octree; err_has "nn"
expect 2 -- "$PTREG" icp a.ply b.ply --device tpu
expect 2 -- "$PTREG" icp a.ply b.ply --json=yes; err_has "takes no value"
expect 2 -- "$PTREG" synth; err_has "nothing to write"
expect 2 -- "$PTREG" synth -o "$WORK/s.ply" --shape teapot
expect 2 -- "$PTREG" synth -o "$WORK/s.ply" --view 1,2
expect 2 -- "$PTREG" synth --model "$WORK/m.ply" --truth-out "$WORK/t.txt"
expect 2 -- "$PTREG" convert "$WORK/x.ply"; err_has "-o OUTPUT"
no_file "$WORK/s.ply"
# --help's defaults come from the library's *_options_default
expect 0 -- "$PTREG" icp --help; out_has "most transform updates (in .0, 1000000.; default 200)"; out_has "default 0.001)"
expect 0 -- "$PTREG" lddmm --help; out_has "L-BFGS iterations (in .0, 1000000.; default 400)"
expect 0 -- "$PTREG" emicp --help; out_has "each iteration (in (0, 1); default 0.9)"
finish
