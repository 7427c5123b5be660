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
    {"output", 'o', "FILE", "atoms: .npy (atoms x 6 float32: qw qx qy qz residual matched), .ply (the atoms with "
                            "their results and an orientation colour) or .csv; pairs: .npy (pairs x 9 float64: "
                            "qw qx qy qz tx ty tz rms iterations) or .csv", "npy ply csv txt"},
    {"pairs", 0, NULL, "INPUT is a ptreg pairs file (docs/FORMATS.md): register each pair"},
    {"motif", 0, "NAME", "the reference: fcc (default), bcc, hcp or sc, the first shells of the lattice"},
    {"lattice", 0, "A", "lattice constant of --motif in nm (default 0.405, aluminium)"},
    {"motif-points", 0, "N", "points of the built-in motif (default: --k)"},
    {"motif-file", 0, "FILE", "the motif's points about the origin (any cloud format), instead of --motif"},
    {"estimate-motif", 0, "N", "rounds of motif estimation: the motif becomes the mean of the registered "
                               "neighborhoods (default 0)"},
    {"motif-out", 0, "FILE", "write the motif used (the estimate, with --estimate-motif) as a cloud", CLI_WRITES_CLOUD},
    {"k", 'k', "N", "neighbors per atom, 3..256 (default 12)"},
    {"radius", 0, "R", "only neighbors nearer than R nm (still at most --k; default: the k nearest)"},
    {"ranges", 0, "FILE", "range file (.rrng or .rng) naming ions by mass-to-charge; needs a .pos/.epos INPUT"},
    {"ion", 0, "NAMES", "with --ranges: the ions taken, comma-separated (e.g. Al or Al,Mg); the others are "
                        "neither registered nor anyone's neighbors"},
    {"grain-radius", 0, "R", "report each atom's grain orientation, from pooled neighborhoods within R nm "
                             "(for noisy data, e.g. 1; default: each atom's own neighborhood's)"},
    {"pool-points", 0, "N", "with --grain-radius: the most points a pool takes (default 384)"},
    {"start-spacing", 0, "DEG", "rotation only: start from rotations covering the motif's orientations this "
                                "closely and keep the best (default 35, with --grain-radius 25; 180: the "
                                "identity alone)"},
    {"assignment", 0, "FILE", "write each neighbor's motif point: .npy, atoms x k int32 (-1: none), "
                              "neighbors nearest first", "npy"},
    {"min-matched", 0, "F", "flag an atom poor below this matched fraction (default 0.5)"},
    {"translation", 0, NULL, "free the translation too (the default with --pairs)"},
    {"rotation-only", 0, NULL, "rotation about the origin only (the default for atoms)"},
    {"engine", 0, "NAME", "lanes (default: many pairs in the CPU's vector lanes), plain (one pair at a time, "
                          "plain arithmetic: the reference) or loop (one ptreg_emicp call per pair; needs "
                          "--translation)"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_ASCII,
    CLI_OPT_HTML,
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
};

const cli_command cli_cmd_batch = CLI_COMMAND_LIBRARY("batch",
    "INPUT -o OUT [options]",
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
    "process (.npy and binary .ply only).\n\n"
    "--html FILE (atoms, one process): the atoms in the orientation colours of the PLY, with\n"
    "the colour key (the inverse pole figure's standard triangle for cubic motifs), and the\n"
    "JSON's numbers. Not with --pairs: their neighborhoods share no frame to draw.",
    batch_options, 1, 1, ptreg_batch_option_table);

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
    static const char *const atom_only[] = {"motif", "lattice", "motif-points", "motif-file", "estimate-motif",
                                            "motif-out", "k", "radius", "ranges", "ion", "assignment",
                                            "min-matched", "grain-radius", "pool-points", "start-spacing",
                                            "html"};
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
    if (!r->output && !r->json && !cli_has(a, "html")) {
        cli_error("batch", "nothing to do: give -o OUT, --json, --html FILE or more");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* ---- atoms ---- */

static int load_atoms(const char *path, batch_atoms *atoms)
{
    memset(atoms, 0, sizeof *atoms);
    atoms->path = path;
    ptreg_error err;
    if (ptreg_apt_format_from_path(path) != PTREG_APT_AUTO) {
        ptreg_apt apt;
        ptreg_status st = ptreg_apt_read(path, PTREG_APT_AUTO, &apt, &err);
        if (st) {
            cli_error("batch", "%s", err.message);
            return cli_exit_code(st, 1);
        }
        atoms->n = apt.n, atoms->xyz = apt.xyz, atoms->mq = apt.mq;
        apt.xyz = apt.mq = NULL;
        ptreg_apt_free(&apt);
        return EXIT_OK;
    }
    ptreg_cloud cloud;
    int rc = cli_load_cloud("batch", path, &cloud, 0);
    if (rc)
        return rc;
    atoms->n = cloud.n, atoms->xyz = cloud.xyz;
    cloud.xyz = NULL;
    ptreg_cloud_free(&cloud);
    return EXIT_OK;
}

static void atoms_free(batch_atoms *atoms)
{
    free(atoms->xyz);
    free(atoms->mq);
    free(atoms->selected);
}

/* Is the ion of this range one of the comma-separated names? */
static int ion_wanted(const char *names, const char *ion)
{
    const size_t len = strlen(ion);
    for (const char *p = names; *p;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, ion, n))
            return 1;
        p += n + (end != NULL);
    }
    return 0;
}

static int check_ion_names(const char *path, const char *names, const ptreg_ranges *ranges)
{
    char name[PTREG_ION_NAME_MAX];
    for (const char *p = names; *p;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 0 || n >= sizeof name) {
            cli_error("batch", "--ion '%s': give ion names separated by commas", names);
            return EXIT_USAGE;
        }
        memcpy(name, p, n), name[n] = 0;
        if (!ptreg_ranges_has_ion(ranges, name)) {
            cli_error("batch", "--ion %s: %s names no such ion (it has %zu ranges; see its Name: entries)", name,
                      path, ranges->n);
            return EXIT_USAGE;
        }
        p += n + (end != NULL);
    }
    return EXIT_OK;
}

/* --ranges / --ion: the atoms whose mass-to-charge falls in a range of the
 * ions asked for. */
static int select_ions(const cli_args *a, batch_atoms *atoms)
{
    const char *path = cli_string(a, "ranges", NULL), *names = cli_string(a, "ion", NULL);
    if (!path)
        return EXIT_OK;
    if (!atoms->mq) {
        cli_error("batch", "--ranges: %s has no mass-to-charge: give a .pos or .epos reconstruction", atoms->path);
        return EXIT_USAGE;
    }
    ptreg_ranges ranges;
    ptreg_error err;
    ptreg_status st = ptreg_ranges_read(path, &ranges, &err);
    if (st) {
        cli_error("batch", "%s", err.message);
        return cli_exit_code(st, 1);
    }
    int rc = check_ion_names(path, names, &ranges);
    if (!rc && !(atoms->selected = malloc(atoms->n + 1))) {
        cli_error("batch", "out of memory");
        rc = EXIT_RUNTIME;
    }
    for (size_t i = 0; !rc && i < atoms->n; i++) {
        const long r = ptreg_ranges_find(&ranges, atoms->mq[i]);
        atoms->selected[i] = r >= 0 && ion_wanted(names, ranges.range[r].ion);
        atoms->selected_count += atoms->selected[i];
    }
    ptreg_ranges_free(&ranges);
    return rc;
}

static int make_motif(const batch_request *r, ptreg_cloud *motif)
{
    ptreg_cloud_init(motif);
    const char *file = cli_string(r->a, "motif-file", NULL);
    if (file) {
        int rc = cli_load_cloud("batch", file, motif, 0);
        if (!rc && (motif->n < 3 || motif->n > 256)) {
            cli_error("batch", "--motif-file %s: a motif has 3 to 256 points, this one %zu", file, motif->n);
            rc = EXIT_BAD_INPUT;
        }
        return rc;
    }
    ptreg_error err;
    ptreg_status st = ptreg_cloud_alloc(motif, r->motif_points, 0, &err);
    st = st ? st : ptreg_motif_lattice(r->lattice, r->lattice_constant, r->motif_points, motif->xyz, &err);
    if (st) {
        cli_error("batch", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

static cJSON *json_tally(const batch_tally *t, const ptreg_orientations *o)
{
    cJSON *flags = cJSON_CreateObject();
    for (int f = 0; f <= PTREG_ORIENT_NOT_FINITE; f++)
        cli_json_number(flags, ptreg_orientation_flag_name((ptreg_orientation_flag)f), (double)t->flags[f]);
    double edges[BATCH_HIST_BINS + 1], counts[BATCH_HIST_BINS + 1];
    const double shortest = ptreg_motif_shortest_distance(o->motif, o->motif_points);
    for (int b = 0; b <= BATCH_HIST_BINS; b++) {
        edges[b] = shortest * b / BATCH_HIST_BINS;
        counts[b] = (double)t->hist[b];
    }
    cJSON *hist = cJSON_CreateObject();
    cli_json_put(hist, "edges", cJSON_CreateDoubleArray(edges, BATCH_HIST_BINS + 1));
    cli_json_put(hist, "counts", cJSON_CreateDoubleArray(counts, BATCH_HIST_BINS + 1));
    cli_json_string(hist, "note", "residual (nm) in bins of the motif's shortest distance / 20; the last "
                                          "count is everything beyond");
    cJSON *o_json = cJSON_CreateObject();
    cli_json_put(o_json, "flags", flags);
    const double reg = t->registered ? (double)t->registered : 1.0;
    cli_json_number(o_json, "residual_mean", (double)t->residual_sum / 4294967296.0 / reg);
    cli_json_number(o_json, "matched_mean", (double)t->matched_sum / 4294967296.0 / reg);
    cli_json_put(o_json, "residual_histogram", hist);
    return o_json;
}

/* The timings and counts of an atoms run, summed over ranks where they
 * are counts, the slowest rank's where they are times. */
typedef struct atoms_report {
    const batch_request *r;
    const batch_atoms *atoms;
    const ptreg_orientations *o; /* any rank's: motif, symmetry, stats' isa */
    batch_atom_stats s;
    double read_ms, total_ms;
    int ranks;
} atoms_report;

static int print_atoms_json(const atoms_report *rep)
{
    const batch_request *r = rep->r;
    const ptreg_orientations *o = rep->o;
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "batch");
    cli_json_string(j, "mode", "atoms");
    cli_json_string(j, "input", rep->atoms->path);
    cli_json_number(j, "atoms", (double)rep->atoms->n);
    cli_json_number(j, "selected", (double)(rep->atoms->selected ? rep->atoms->selected_count
                                                                         : rep->atoms->n));
    cli_json_number(j, "registered", (double)rep->s.tally.registered);
    cli_json_put(j, "orientations", json_tally(&rep->s.tally, o));
    cJSON *m = cJSON_CreateObject();
    cli_json_string(m, "source", cli_string(r->a, "motif-file", ptreg_lattice_name(r->lattice)));
    if (!cli_has(r->a, "motif-file"))
        cli_json_number(m, "lattice", r->lattice_constant);
    cli_json_number(m, "points", (double)o->motif_points);
    cli_json_number(m, "symmetry", (double)o->symmetry_count);
    cli_json_number(j, "starts", (double)o->starts);
    cli_json_number(j, "grain_radius", r->orient.grain_radius);
    if (r->orient.grain_radius > 0)
        cli_json_number(j, "pools", (double)o->pools);
    cli_json_number(m, "estimate_rounds", r->orient.estimate_motif);
    cli_json_put(j, "motif", m);
    cli_json_number(j, "k", (double)r->orient.k);
    cli_json_number(j, "radius", r->orient.radius);
    cli_json_bool(j, "translation", r->batch.translation);
    cli_json_number(j, "read_ms", rep->read_ms);
    cli_json_number(j, "neighbor_ms", rep->s.neighbor_ms);
    cli_json_number(j, "register_ms", rep->s.register_ms);
    cli_json_number(j, "total_ms", rep->total_ms);
    const double s = rep->s.register_ms * 1e-3;
    cli_json_number(j, "pairs_per_s", s > 0 ? (double)rep->s.tally.registered / s : 0.0);
    cli_json_number(j, "gpts", s > 0 ? rep->s.tally.pair_terms / s / 1e9 : 0.0);
    cli_json_number(j, "pair_terms", rep->s.tally.pair_terms);
    cli_json_string(j, "isa", o->stats.isa ? o->stats.isa : "");
    char device[32];
    cli_json_string(j, "device", batch_resolved_device(r, device, sizeof device));
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_number(j, "ranks", rep->ranks);
    if (rep->ranks > 1) {
        cli_json_number(j, "halo", rep->s.halo);
        cli_json_number(j, "halo_rounds", rep->s.halo_rounds);
    }
    if (r->output)
        cli_json_string(j, "output", r->output);
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

static void print_atoms_human(const atoms_report *rep)
{
    const ptreg_orientations *o = rep->o;
    const batch_tally *t = &rep->s.tally;
    printf("ptreg batch: %s, %zu atoms, %zu selected, %llu registered (%d threads, %d ranks, %s)\n",
           rep->atoms->path, rep->atoms->n, rep->atoms->selected ? rep->atoms->selected_count : rep->atoms->n,
           (unsigned long long)t->registered, ptreg_get_num_threads(), rep->ranks, o->stats.isa ? o->stats.isa : "");
    printf("  motif: %zu points, %zu symmetries; k %zu%s\n", o->motif_points, o->symmetry_count, rep->r->orient.k,
           rep->r->batch.translation ? ", with translation" : ", rotation only");
    for (int f = 0; f <= PTREG_ORIENT_NOT_FINITE; f++)
        if (t->flags[f])
            printf("  %-20s %llu\n", ptreg_orientation_flag_name((ptreg_orientation_flag)f),
                   (unsigned long long)t->flags[f]);
    const double reg = t->registered ? (double)t->registered : 1.0;
    printf("  residual mean %.4g nm, matched mean %.3f\n", (double)t->residual_sum / 4294967296.0 / reg,
           (double)t->matched_sum / 4294967296.0 / reg);
    const double s = rep->s.register_ms * 1e-3;
    printf("  time: read %.1f ms, neighbors %.1f ms, registration %.1f ms (%.0f pairs/s, %.3f Gpts/s)\n",
           rep->read_ms, rep->s.neighbor_ms, rep->s.register_ms, s > 0 ? (double)t->registered / s : 0.0,
           s > 0 ? t->pair_terms / s / 1e9 : 0.0);
    if (rep->r->output)
        printf("  wrote %s\n", rep->r->output);
}

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
    rep->s.tally.pair_terms = o->stats.pair_terms;
    batch_tally_rows(o, NULL, &rep->s.tally);
    int rc = r->output ? batch_write_orientations(r->output, format, atoms, o) : EXIT_OK;
    const char *assignment = cli_string(r->a, "assignment", NULL);
    rc = rc ? rc : assignment ? batch_write_assignment(assignment, o) : EXIT_OK;
    return rc ? rc : batch_report_orientations(atoms, o);
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

static int run_atoms(const batch_request *r, const cli_comm *comm)
{
    batch_format format = BATCH_NPY;
    int rc = check_atom_outputs(r->a, r->output, &format);
    if (rc)
        return rc;
    const double t0 = ptreg_time_ms();
    batch_atoms atoms;
    rc = load_atoms(r->input, &atoms);
    if (!rc && atoms.n <= r->orient.k) { /* no atom has k neighbors */
        cli_error("batch", "--k %zu: %s has %zu atom%s, fewer than k + 1", r->orient.k, r->input, atoms.n,
                  atoms.n == 1 ? "" : "s");
        rc = EXIT_USAGE;
    }
    rc = rc ? rc : select_ions(r->a, &atoms);
    ptreg_cloud motif;
    ptreg_cloud_init(&motif);
    rc = rc ? rc : make_motif(r, &motif);
    atoms_report rep = {.r = r, .atoms = &atoms, .ranks = comm->size, .read_ms = ptreg_time_ms() - t0};
    ptreg_orientations o;
    memset(&o, 0, sizeof o);
    if (!rc) {
        ptreg_orientation_options opt = r->orient;
        opt.batch = r->batch;
        opt.motif = motif.xyz;
        opt.motif_points = motif.n;
        rc = comm->size > 1 ? batch_mpi_atoms(comm, r->output, format, cli_string(r->a, "assignment", NULL),
                                              &atoms, &opt, &o, &rep.s)
                            : atoms_here(r, &atoms, &opt, format, &rep, &o);
        rep.o = &o;
    }
    const char *motif_out = cli_string(r->a, "motif-out", NULL);
    if (!rc && motif_out && comm->rank == 0)
        rc = write_motif(motif_out, &o);
    rep.total_ms = ptreg_time_ms() - t0;
    if (!rc && comm->rank == 0 && (r->json || cli_report())) /* with --html the page holds the JSON */
        rc = print_atoms_json(&rep);
    if (!rc && comm->rank == 0 && !r->json)
        print_atoms_human(&rep);
    ptreg_orientations_free(&o);
    ptreg_cloud_free(&motif);
    atoms_free(&atoms);
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
    if (comm.size > 1 && cli_has(&a, "html")) { /* each rank holds only its slab's orientations */
        cli_error("batch", "--html draws one process's atoms: run it without mpirun");
        rc = EXIT_USAGE;
    }
    rc = rc ? rc : cli_report_begin(&a, "batch");
    rc = rc ? rc : cli_has(&a, "pairs") ? batch_run_pairs(&r, &comm) : run_atoms(&r, &comm);
    return cli_comm_close(&comm, rc);
}
