/* ptreg synth --shape apt-polycrystal: a synthetic atom-probe polycrystal
 * and, per atom, its grain's true orientation. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/apt.h"
#include "ptreg/io.h"
#include "ptreg/synth_apt.h"

static int has_suffix(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    if (n < e)
        return 0;
    for (size_t i = 0; i < e; i++)
        if (tolower((unsigned char)path[n - e + i]) != ext[i])
            return 0;
    return 1;
}

/* "X" (a cube) or "X,Y,Z". */
static int read_box(const cli_args *a, double box[3])
{
    const char *v = cli_string(a, "box", NULL);
    if (!v)
        return EXIT_OK;
    double t[3];
    const char *p = v;
    int k = 0;
    for (; k < 3; k++) {
        char *end;
        t[k] = strtod(p, &end);
        if (end == p || !isfinite(t[k]) || !(t[k] > 0))
            break;
        if (*end == '\0') {
            k++;
            break;
        }
        if (*end != ',' || k == 2) {
            k = -1;
            break;
        }
        p = end + 1;
    }
    if (k == 1)
        t[1] = t[2] = t[0];
    else if (k != 3) {
        cli_error("synth", "--box: '%s' is not X or X,Y,Z (nm, each > 0)", v);
        return EXIT_USAGE;
    }
    memcpy(box, t, sizeof t);
    return EXIT_OK;
}

static int read_options(const cli_args *a, ptreg_apt_synth_options *o)
{
    static const char *const scan_only[] = {"model",           "model-points", "points",  "max-angle",
                                            "max-translation", "outliers",     "overlap", "view"};
    for (size_t i = 0; i < sizeof scan_only / sizeof scan_only[0]; i++)
        if (cli_has(a, scan_only[i])) {
            cli_error("synth", "--%s is not an option of --shape apt-polycrystal", scan_only[i]);
            return EXIT_USAGE;
        }
    if (!cli_has(a, "output")) {
        cli_error("synth", "nothing to write: give --output FILE (the atoms)");
        return EXIT_USAGE;
    }
    const char *motif = cli_string(a, "motif", "fcc");
    if (ptreg_lattice_parse(motif, &o->lattice)) {
        cli_error("synth", "--motif: '%s' is not fcc, bcc, hcp or sc", motif);
        return EXIT_USAGE;
    }
    size_t grains = o->grains;
    int rc = 0;
    rc = rc ? rc : cli_double(a, "lattice", 1e-3, 1e3, &o->a);
    rc = rc ? rc : cli_size(a, "grains", 1, PTREG_APT_SYNTH_MAX_GRAINS, &grains);
    rc = rc ? rc : read_box(a, o->box);
    rc = rc ? rc : cli_double(a, "efficiency", 0.0, 1.0, &o->efficiency);
    rc = rc ? rc : cli_double(a, "noise", 0.0, 1e3, &o->noise);
    rc = rc ? rc : cli_double(a, "noise-depth", 0.0, 1e3, &o->noise_depth);
    rc = rc ? rc : cli_double(a, "solute", 0.0, 1.0, &o->solute);
    rc = rc ? rc : cli_u64(a, "seed", &o->seed);
    if (rc)
        return rc;
    o->grains = grains;
    if (!(o->efficiency > 0)) {
        cli_error("synth", "--efficiency: 0 detects nothing: take a value in (0, 1]");
        return EXIT_USAGE;
    }
    const char *out = cli_string(a, "output", NULL);
    ptreg_format f = ptreg_format_from_path(out);
    if (f == PTREG_FORMAT_EPOS || f == PTREG_FORMAT_VTK) {
        cli_error("synth", "-o %s: %s files are read, not written (use .pos, .ply, .pcd, .xyz, .csv)", out,
                  ptreg_format_name(f));
        return EXIT_USAGE;
    }
    const char *truth = cli_string(a, "truth-out", NULL);
    if (truth && !has_suffix(truth, ".npy") && !has_suffix(truth, ".csv")) {
        cli_error("synth", "--truth-out %s: the per-atom truth is written as .npy or .csv", truth);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static int write_outputs(const cli_args *a, const ptreg_apt_synth *s)
{
    const char *out = cli_string(a, "output", NULL);
    ptreg_error err;
    ptreg_status st;
    if (ptreg_format_from_path(out) == PTREG_FORMAT_POS) {
        st = ptreg_apt_write_pos(out, s->xyz, s->mq, s->n, &err);
    } else {
        ptreg_cloud c;
        ptreg_cloud_init(&c);
        c.n = s->n;
        c.xyz = s->xyz;
        int rc = cli_write_cloud("synth", out, &c, cli_has(a, "ascii"));
        if (rc)
            return rc;
        st = PTREG_OK;
    }
    if (st) {
        cli_error("synth", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    const char *truth = cli_string(a, "truth-out", NULL);
    if (!truth)
        return EXIT_OK;
    float *rows = malloc(5 * (s->n ? s->n : 1) * sizeof *rows);
    if (!rows) {
        cli_error("synth", "out of memory for the truth of %zu atoms", s->n);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < s->n; i++) {
        const double *q = s->orientation + 4 * s->grain[i];
        rows[5 * i] = (float)s->grain[i];
        for (int k = 0; k < 4; k++)
            rows[5 * i + 1 + (size_t)k] = (float)q[k];
    }
    st = ptreg_descriptors_write(truth, rows, s->n, 5, "truth", &err);
    free(rows);
    if (st) {
        cli_error("synth", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

static int print_json(const cli_args *a, const ptreg_apt_synth_options *o, const ptreg_apt_synth *s, double ms)
{
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "synth");
    cli_json_string(j, "shape", "apt-polycrystal");
    cli_json_string(j, "output", cli_string(a, "output", NULL));
    if (cli_has(a, "truth-out"))
        cli_json_string(j, "truth", cli_string(a, "truth-out", NULL));
    cli_json_number(j, "atoms", (double)s->n);
    cli_json_number(j, "sites", (double)s->sites);
    cli_json_number(j, "grains", (double)s->grains);
    cli_json_string(j, "motif", ptreg_lattice_name(o->lattice));
    cli_json_number(j, "lattice", o->a);
    cli_json_put(j, "box", cJSON_CreateDoubleArray(o->box, 3));
    cli_json_number(j, "efficiency", o->efficiency);
    cli_json_number(j, "noise", o->noise);
    cli_json_number(j, "noise_depth", o->noise_depth < 0 ? 0.5 * o->noise : o->noise_depth);
    cli_json_number(j, "solute", o->solute);
    cli_json_number(j, "solute_atoms", (double)s->solutes);
    cli_json_number(j, "mq", o->mq);
    cli_json_number(j, "mq_solute", o->mq_solute);
    cli_json_number(j, "seed", (double)o->seed);
    cJSON *atoms = cJSON_CreateArray(), *orient = cJSON_CreateArray(), *seeds = cJSON_CreateArray();
    for (size_t g = 0; g < s->grains; g++) {
        cli_json_push(atoms, cJSON_CreateNumber((double)s->grain_atoms[g]));
        cli_json_push(orient, cJSON_CreateDoubleArray(s->orientation + 4 * g, 4));
        cli_json_push(seeds, cJSON_CreateDoubleArray(s->seed + 3 * g, 3));
    }
    cli_json_put(j, "grain_atoms", atoms);
    cli_json_put(j, "orientations", orient);
    cli_json_put(j, "grain_seeds", seeds);
    cli_json_number(j, "time_ms", ms);
    return cli_json_print(j);
}

static void print_human(const cli_args *a, const ptreg_apt_synth_options *o, const ptreg_apt_synth *s)
{
    printf("apt-polycrystal: %s: %zu atoms (%zu %s sites, a = %g nm, efficiency %g; %zu solute) in a "
           "%g x %g x %g nm box, %zu grain%s\n",
           cli_string(a, "output", NULL), s->n, s->sites, ptreg_lattice_name(o->lattice), o->a, o->efficiency,
           s->solutes, o->box[0], o->box[1], o->box[2], s->grains, s->grains == 1 ? "" : "s");
    if (cli_has(a, "truth-out"))
        printf("truth: %s: per atom grain, qw, qx, qy, qz (taking the grain's atoms onto the crystal's axes)\n",
               cli_string(a, "truth-out", NULL));
    const size_t shown = s->grains < 16 ? s->grains : 16;
    for (size_t g = 0; g < shown; g++) {
        const double *q = s->orientation + 4 * g;
        printf("  grain %zu: %zu atoms, q = (%.6f, %.6f, %.6f, %.6f)\n", g, s->grain_atoms[g], q[0], q[1], q[2], q[3]);
    }
    if (shown < s->grains)
        printf("  ... (%zu more; --json lists all)\n", s->grains - shown);
}

int cli_synth_apt(const cli_args *a)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    int rc = read_options(a, &o);
    if (rc)
        return rc;
    ptreg_apt_synth s;
    ptreg_error err;
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_apt_synth_polycrystal(&o, &s, &err);
    const double ms = ptreg_time_ms() - t0;
    if (st) {
        cli_error("synth", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    rc = write_outputs(a, &s);
    if (!rc)
        rc = cli_has(a, "json") ? print_json(a, &o, &s, ms) : (print_human(a, &o, &s), EXIT_OK);
    ptreg_apt_synth_free(&s);
    return rc;
}
