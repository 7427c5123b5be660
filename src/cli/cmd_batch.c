/* ptreg batch: many small registrations in one run. Atoms (an APT
 * reconstruction or any cloud): every atom's neighborhood onto a motif,
 * as orientations; or pairs (a ptreg pairs file): every pair. Under mpirun
 * the work is divided among the ranks (mpi.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "ptreg/apt.h"
#include "ptreg/batch.h"
#include "ptreg/device.h"
#include "ptreg/emicp.h"
#include "ptreg/icp.h"
#include "ptreg/io.h"
#include "ptreg/motif.h"
#include "ptreg/tune.h"

static const cli_option batch_options[] = {
    {"output", 'o', "FILE",
     "atoms: .npy (atoms x 6 float32: qw qx qy qz residual matched), .ply (the atoms with "
     "their results and an orientation colour) or .csv; pairs: .npy (pairs x 9 float64: "
     "qw qx qy qz tx ty tz rms iterations) or .csv",
     "npy ply csv txt"},
    {"pairs", 0, NULL, "INPUT is a ptreg pairs file (docs/FORMATS.md): register each pair"},
    {"motif", 0, "NAME", "the reference: fcc (default), bcc, hcp or sc, the first shells of the lattice"},
    {"lattice", 0, "A", "lattice constant of --motif in nm (default 0.405, aluminium)"},
    {"motif-points", 0, "N", "points of the built-in motif (default: --k)"},
    {"motif-file", 0, "FILE", "the motif's points about the origin (any cloud format), instead of --motif"},
    {"estimate-motif", 0, "N",
     "rounds of motif estimation: the motif becomes the mean of the registered "
     "neighborhoods (default 0)"},
    {"motif-out", 0, "FILE", "write the motif used (the estimate, with --estimate-motif) as a cloud", CLI_WRITES_CLOUD},
    {"k", 'k', "N", "neighbors per atom, 3..256 (default 12)"},
    {"radius", 0, "R", "only neighbors nearer than R nm (still at most --k; default: the k nearest)"},
    {"ranges", 0, "FILE", "range file (.rrng or .rng) naming ions by mass-to-charge; needs a .pos/.epos INPUT"},
    {"ion", 0, "NAMES",
     "with --ranges: the ions taken, comma-separated (e.g. Al or Al,Mg); the others are "
     "neither registered nor anyone's neighbors"},
    {"grain-radius", 0, "R",
     "report each atom's grain orientation, from pooled neighborhoods within R nm "
     "(for noisy data, e.g. 1; default: each atom's own neighborhood's)"},
    {"pool-points", 0, "N", "with --grain-radius: the most points a pool takes (default 384)"},
    {"start-spacing", 0, "DEG",
     "rotation only: start from rotations covering the motif's orientations this "
     "closely and keep the best (default 35, with --grain-radius 25; 180: the "
     "identity alone)"},
    {"assignment", 0, "FILE",
     "write each neighbor's motif point: .npy, atoms x k int32 (-1: none), "
     "neighbors nearest first",
     "npy"},
    {"min-matched", 0, "F", "flag an atom poor below this matched fraction (default 0.5)"},
    {"grains-out", 0, "DIR",
     "write the grain map into DIR (made if missing): grain_map.npy (a grain per atom, int32, -1: none), "
     "grains.csv (each grain's atoms, mean orientation, spread, centroid), boundaries.csv, "
     "misorientation.svg (the boundaries' histogram against Mackenzie's random cubic one) and, "
     "for cubic motifs, pole_100.svg, pole_110.svg, pole_111.svg; --html draws them too",
     CLI_WRITES_FOLDER},
    {"grain-threshold", 0, "DEG",
     "grain map: atoms join neighbors misoriented by less than half of it, and pieces whose mean "
     "orientations are within it join (default 5)"},
    {"grain-min-atoms", 0, "N",
     "grain map: smaller grains join the grain most of their atoms' neighbors are in (default 100)"},
    {"max-memory", 0, "MIB",
     "atoms: the memory a run may take, MiB (default 1536, about 1 KiB an atom); a .pos/.epos needing "
     "more is read and registered in slabs along its longest axis, one after another (one process; the "
     "same bits; not with --html, --grains-out or --estimate-motif)"},
    {"translation", 0, NULL, "free the translation too (the default with --pairs)"},
    {"rotation-only", 0, NULL, "rotation about the origin only (the default for atoms)"},
    {"engine", 0, "NAME",
     "lanes (default: many pairs in the CPU's vector lanes), plain (one pair at a time, "
     "plain arithmetic: the reference) or loop (one ptreg_emicp call per pair; needs "
     "--translation)"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_ASCII,
    CLI_OPT_HTML,
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
};

const cli_command cli_cmd_batch = CLI_COMMAND_LIBRARY(
    "batch", "INPUT -o OUT [options]",
    "Register many small neighborhoods (atom-probe orientation maps) or pairs in one run.",
    "Atoms (INPUT a .pos/.epos reconstruction or any cloud, coordinates in nm): each atom's\n"
    "--k nearest neighbors, relative to the atom, are registered onto the motif by\n"
    "EM-ICP (soft assignment: no correspondences needed), rotation only by default; sigma^2\n"
    "anneals from 3 r^2 to 3e-3 r^2, r the motif's RMS radius (for fcc's 12 neighbors, the\n"
    "nearest-neighbor distance). The rotation q takes the neighborhood onto the motif\n"
    "(motif ~ R(q) * neighborhood); rotations that differ by a symmetry of the motif are\n"
    "the same answer, and q is reported in the fundamental zone (the equivalent of smallest\n"
    "angle, w >= 0). residual is the RMS distance from each rotated neighbor to its nearest\n"
    "motif point; matched the fraction of neighbors within half the motif's shortest\n"
    "distance of one. One output row per atom of INPUT, in its order; NaN rows for atoms\n"
    "not registered (flag: not_selected, too_few_neighbors, not_finite). PLY colours are the\n"
    "inverse pole figure of the sample's z axis for cubic motifs ([001] red, [101] green,\n"
    "[111] blue), grey for atoms without an orientation.\n\n"
    "EM-ICP finds the right equivalent only within ~40 degrees of where it starts, so each\n"
    "neighborhood starts from rotations covering the motif's orientations (8 for cubic\n"
    "motifs) and keeps the best. Noisy, thinned data (atom probes: 0.05 nm, 60% detection)\n"
    "leaves one atom's neighbors too few to say: --grain-radius 1 reports each atom's grain\n"
    "orientation from pooled neighborhoods (with --motif-points 18, as 12 neighbors then\n"
    "reach the second shell: median error 2.6 degrees on the synthetic polycrystal).\n\n"
    "Pairs (--pairs INPUT): each pair's source onto its target, with translation by default;\n"
    "T takes source onto target (target ~ R(q) source + t); rms is the RMS distance from\n"
    "each moved source point to its nearest target point.\n\n"
    "A pair's answer is ptreg emicp's on the same schedule, the same bits on the same\n"
    "instruction set, and the same bits for any thread count. Under mpirun (when ptreg is\n"
    "built with MPI) the atoms are divided into slabs with halos, each rank registers its\n"
    "own, and one output is written in atom order with MPI-IO: the same bits as one\n"
    "process (.npy and binary .ply only). A .pos/.epos needing more than --max-memory\n"
    "(about 1 KiB an atom) is read and registered the same way in slabs one after another,\n"
    "holding one slab and its halo at a time: the same bits.\n\n"
    "--html FILE (atoms, one process): the atoms in the orientation colours of the PLY, with\n"
    "the colour key (the inverse pole figure's standard triangle for cubic motifs), and the\n"
    "JSON's numbers. Not with --pairs: their neighborhoods share no frame to draw.",
    batch_options, 1, 1, "batch");

static int read_engine(const cli_args *a, batch_engine *engine)
{
    static const char *const names[] = {"lanes", "plain", "loop"};
    const char *name = cli_string(a, "engine", "lanes");
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) {
            *engine = (batch_engine)i;
            return EXIT_OK;
        }
    cli_error("batch", "--engine: '%s' is not lanes, plain or loop", name);
    return EXIT_USAGE;
}

static int read_schedule(const cli_args *a, int pairs, ptreg_batch_options *o)
{
    ptreg_batch_options_default(o);
    if (cli_has(a, "translation") && cli_has(a, "rotation-only")) {
        cli_error("batch", "--translation and --rotation-only: give one");
        return EXIT_USAGE;
    }
    o->translation = cli_has(a, "translation") || (pairs && !cli_has(a, "rotation-only"));
    return cli_read_library(a, o);
}

/* Options that make sense for atoms only. */
static int refuse_atom_options(const cli_args *a)
{
    static const char *const atom_only[] = {
        "motif",         "lattice", "motif-points", "motif-file",      "estimate-motif",  "motif-out",    "k",
        "radius",        "ranges",  "ion",          "assignment",      "min-matched",     "grain-radius", "pool-points",
        "start-spacing", "html",    "grains-out",   "grain-threshold", "grain-min-atoms", "max-memory"};
    for (size_t i = 0; i < sizeof atom_only / sizeof atom_only[0]; i++)
        if (cli_has(a, atom_only[i])) {
            cli_error("batch", "--%s is for atoms, not --pairs", atom_only[i]);
            return EXIT_USAGE;
        }
    return EXIT_OK;
}

static int read_atom_options(const cli_args *a, batch_request *r)
{
    ptreg_orientation_options_default(&r->orient);
    const char *motif = cli_string(a, "motif", "fcc");
    if (ptreg_lattice_parse(motif, &r->lattice)) {
        cli_error("batch", "--motif: '%s' is not fcc, bcc, hcp or sc", motif);
        return EXIT_USAGE;
    }
    if (cli_has(a, "motif-file") && (cli_has(a, "motif") || cli_has(a, "lattice") || cli_has(a, "motif-points"))) {
        cli_error("batch", "--motif-file replaces --motif, --lattice and --motif-points: give one kind");
        return EXIT_USAGE;
    }
    if (cli_has(a, "ion") != cli_has(a, "ranges")) {
        cli_error("batch", "--ranges and --ion go together: the range file names the ions");
        return EXIT_USAGE;
    }
    r->lattice_constant = 0.405;
    int rc = cli_double(a, "lattice", 1e-6, 1e6, &r->lattice_constant);
    rc = rc ? rc : cli_size(a, "k", 3, 256, &r->orient.k);
    r->motif_points = r->orient.k;
    rc = rc ? rc : cli_size(a, "motif-points", 3, 256, &r->motif_points);
    rc = rc ? rc : cli_double(a, "radius", 1e-12, 1e6, &r->orient.radius);
    rc = rc ? rc : cli_int(a, "estimate-motif", 0, 100, &r->orient.estimate_motif);
    rc = rc ? rc : cli_double(a, "min-matched", 0.0, 1.0, &r->orient.min_matched);
    rc = rc ? rc : cli_double(a, "grain-radius", 1e-6, 1e6, &r->orient.grain_radius);
    rc = rc ? rc : cli_size(a, "pool-points", 3, 1 << 20, &r->orient.pool_points);
    rc = rc ? rc : cli_double(a, "start-spacing", 1.0, 180.0, &r->orient.start_spacing);
    r->orient.assignment = cli_has(a, "assignment");
    rc = rc ? rc : cli_double(a, "grain-threshold", 0.01, 90.0, &r->orient.grain_threshold_deg);
    rc = rc ? rc : cli_size(a, "grain-min-atoms", 1, (size_t)1 << 40, &r->orient.grain_min_atoms);
    r->max_memory_mib = 1536;
    rc = rc ? rc : cli_double(a, "max-memory", 0.01, 1e9, &r->max_memory_mib);
    r->grains_out = cli_string(a, "grains-out", NULL);
    r->orient.grain_map = r->grains_out || cli_has(a, "html");
    return rc;
}

static int read_request(const cli_args *a, batch_request *r)
{
    memset(r, 0, sizeof *r);
    r->a = a;
    r->input = a->positional[0];
    r->output = cli_string(a, "output", NULL);
    r->json = cli_has(a, "json");
    const int pairs = cli_has(a, "pairs");
    int rc = read_engine(a, &r->engine);
    rc = rc ? rc : read_schedule(a, pairs, &r->batch);
    rc = rc ? rc : pairs ? refuse_atom_options(a) : read_atom_options(a, r);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device(a, &r->batch.device);
    ptreg_device on;
    ptreg_error err;
    rc = rc ? rc : cli_device_usable(a, ptreg_batch_resolve_device(&r->batch, &on, &err), &err);
    if (rc)
        return rc;
    if (r->engine == ENGINE_LOOP && !r->batch.translation) {
        cli_error("batch", "--engine loop calls ptreg_emicp, which always frees the translation: add --translation");
        return EXIT_USAGE;
    }
    if (r->engine == ENGINE_LOOP && !pairs) {
        cli_error("batch", "--engine loop is for --pairs (a benchmark baseline)");
        return EXIT_USAGE;
    }
    r->batch.reference = r->engine == ENGINE_PLAIN;
    r->batch.loop = r->engine == ENGINE_LOOP;
    if (!r->output && !r->json && !cli_has(a, "html") && !cli_has(a, "grains-out")) {
        cli_error("batch", "nothing to do: give -o OUT, --json, --html FILE, --grains-out DIR or more");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* ---- atoms ---- */

static int write_motif(const char *path, const ptreg_orientations *o)
{
    ptreg_cloud c;
    ptreg_cloud_init(&c);
    c.n = o->motif_points;
    c.xyz = o->motif; /* borrowed: not freed */
    return cli_write_cloud("batch", path, &c, 0);
}

/* Every atom on this one process. */
static int atoms_here(const batch_request *r, const batch_atoms *atoms, const ptreg_orientation_options *opt,
                      batch_format format, atoms_report *rep, ptreg_orientations *o)
{
    ptreg_error err;
    cli_progress progress;
    cli_progress_begin(&progress, r->a, "batch", "stage", "neighborhoods");
    ptreg_orientation_options with_progress = *opt;
    with_progress.progress = cli_progress_hook(&progress);
    cli_device_call_start();
    ptreg_status st = ptreg_orientations_compute(atoms->xyz, atoms->n, atoms->selected, &with_progress, o, &err);
    cli_device_call_stop();
    cli_progress_end(&progress, r->a, 0);
    if (st) {
        cli_error("batch", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    rep->o = o;
    rep->s.neighbor_ms = o->neighbor_ms;
    rep->s.register_ms = o->stats.time_ms;
    rep->s.grain_ms = o->grain_ms;
    rep->s.tally.pair_terms = o->stats.pair_terms;
    batch_tally_rows(o, NULL, &rep->s.tally);
    int rc = r->output ? batch_write_orientations(r->output, format, atoms, o) : EXIT_OK;
    const char *assignment = cli_string(r->a, "assignment", NULL);
    rc = rc ? rc : assignment ? batch_write_assignment(assignment, o) : EXIT_OK;
    rc = rc ? rc : batch_report_orientations(atoms, o);
    return rc ? rc : batch_grains(r, atoms, o, &rep->grains);
}

static int check_atom_outputs(const cli_args *a, const char *output, batch_format *format)
{
    int rc = output ? batch_output_format(output, cli_has(a, "ascii"), format) : EXIT_OK;
    const char *assignment = cli_string(a, "assignment", NULL);
    if (!rc && assignment && !batch_has_extension(assignment, "npy")) {
        cli_error("batch", "--assignment %s: the assignment is written as .npy", assignment);
        rc = EXIT_USAGE;
    }
    return rc;
}

/* The atoms read whole, or (a reconstruction above --max-memory, one
 * process) only counted: batch_stream_atoms reads them in slabs. */
static int load_atoms(const batch_request *r, const cli_comm *comm, batch_atoms *atoms, size_t *slab_atoms)
{
    memset(atoms, 0, sizeof *atoms);
    const size_t ions = batch_reconstruction_ions(r->input);
    *slab_atoms = comm->size == 1 ? batch_slab_atoms(r, ions) : 0;
    int rc = EXIT_OK;
    if (*slab_atoms)
        atoms->path = r->input, atoms->n = ions;
    else
        rc = batch_load_atoms(r->input, atoms);
    if (!rc && atoms->n <= r->orient.k) { /* no atom has k neighbors */
        cli_error("batch", "--k %zu: %s has %zu atom%s, fewer than k + 1", r->orient.k, r->input, atoms->n,
                  atoms->n == 1 ? "" : "s");
        rc = EXIT_USAGE;
    }
    return rc || *slab_atoms ? rc : batch_select_ions(r->a, atoms);
}

static int run_atoms(const batch_request *r, const cli_comm *comm)
{
    batch_format format = BATCH_NPY;
    int rc = check_atom_outputs(r->a, r->output, &format);
    if (rc)
        return rc;
    const double t0 = ptreg_time_ms();
    batch_atoms atoms;
    size_t slab_atoms;
    rc = load_atoms(r, comm, &atoms, &slab_atoms);
    ptreg_cloud motif;
    ptreg_cloud_init(&motif);
    rc = rc ? rc : batch_make_motif(r, &motif);
    atoms_report rep = {.r = r, .atoms = &atoms, .ranks = comm->size, .read_ms = ptreg_time_ms() - t0};
    ptreg_orientations o;
    memset(&o, 0, sizeof o);
    if (!rc) {
        ptreg_orientation_options opt = r->orient;
        opt.batch = r->batch;
        opt.motif = motif.xyz;
        opt.motif_points = motif.n;
        const char *assignment = cli_string(r->a, "assignment", NULL);
        rc = slab_atoms       ? batch_stream_atoms(r, format, slab_atoms, &opt, &atoms, &rep, &o)
             : comm->size > 1 ? batch_mpi_atoms(comm, r->output, format, assignment, &atoms, &opt, &o, &rep.s)
                              : atoms_here(r, &atoms, &opt, format, &rep, &o);
        rep.o = &o;
    }
    const char *motif_out = cli_string(r->a, "motif-out", NULL);
    if (!rc && motif_out && comm->rank == 0)
        rc = write_motif(motif_out, &o);
    rep.total_ms = ptreg_time_ms() - t0;
    if (!rc && comm->rank == 0 && (r->json || cli_report())) /* with --html the page holds the JSON */
        rc = batch_print_atoms_json(&rep);
    if (!rc && comm->rank == 0 && !r->json)
        batch_print_atoms_human(&rep);
    ptreg_orientations_free(&o);
    ptreg_cloud_free(&motif);
    batch_atoms_free(&atoms);
    return rc;
}

int cli_run_batch(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_batch, argc, argv, &a, &rc))
        return rc;
    batch_request r;
    cli_comm comm;
    if ((rc = read_request(&a, &r)) || (rc = cli_comm_open(&comm)))
        return rc;
    if (comm.size > 1 && (cli_has(&a, "html") || cli_has(&a, "grains-out"))) { /* each rank holds its slab's */
        cli_error("batch", "--html and --grains-out take one process's atoms: run them without mpirun");
        rc = EXIT_USAGE;
    }
    rc = rc ? rc : cli_report_begin(&a, "batch");
    rc = rc ? rc : cli_has(&a, "pairs") ? batch_run_pairs(&r, &comm) : run_atoms(&r, &comm);
    return cli_comm_close(&comm, rc);
}
