/* ptreg batch's atoms (batch_cli.h): the input read, the ions selected,
 * the motif made, and the run's summary printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/apt.h"
#include "ptreg/device.h"
#include "ptreg/io.h"
#include "ptreg/motif.h"

int batch_load_atoms(const char *path, batch_atoms *atoms)
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

void batch_atoms_free(batch_atoms *atoms)
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
            cli_error("batch", "--ion %s: %s names no such ion (it has %zu ranges; see its Name: entries)", name, path,
                      ranges->n);
            return EXIT_USAGE;
        }
        p += n + (end != NULL);
    }
    return EXIT_OK;
}

int batch_read_ranges(const cli_args *a, const char *input, ptreg_ranges *ranges)
{
    const char *path = cli_string(a, "ranges", NULL), *names = cli_string(a, "ion", NULL);
    if (ptreg_apt_format_from_path(input) == PTREG_APT_AUTO) {
        cli_error("batch", "--ranges: %s has no mass-to-charge: give a .pos or .epos reconstruction", input);
        return EXIT_USAGE;
    }
    ptreg_error err;
    ptreg_status st = ptreg_ranges_read(path, ranges, &err);
    if (st) {
        cli_error("batch", "%s", err.message);
        return cli_exit_code(st, 1);
    }
    int rc = check_ion_names(path, names, ranges);
    if (rc)
        ptreg_ranges_free(ranges);
    return rc;
}

size_t batch_select_piece(const cli_args *a, const ptreg_ranges *ranges, const float *mq, size_t n, uint8_t *selected)
{
    const char *names = cli_string(a, "ion", NULL);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const long r = ptreg_ranges_find(ranges, mq[i]);
        selected[i] = r >= 0 && ion_wanted(names, ranges->range[r].ion);
        count += selected[i];
    }
    return count;
}

int batch_select_ions(const cli_args *a, batch_atoms *atoms)
{
    if (!cli_has(a, "ranges"))
        return EXIT_OK;
    ptreg_ranges ranges;
    int rc = batch_read_ranges(a, atoms->path, &ranges);
    if (rc)
        return rc;
    if (!(atoms->selected = malloc(atoms->n + 1))) {
        cli_error("batch", "out of memory");
        rc = EXIT_RUNTIME;
    } else {
        atoms->selected_count = batch_select_piece(a, &ranges, atoms->mq, atoms->n, atoms->selected);
        atoms->by_ion = 1;
    }
    ptreg_ranges_free(&ranges);
    return rc;
}

int batch_make_motif(const batch_request *r, ptreg_cloud *motif)
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
    cli_json_string(hist, "note",
                    "residual (nm) in bins of the motif's shortest distance / 20; the last "
                    "count is everything beyond");
    cJSON *o_json = cJSON_CreateObject();
    cli_json_put(o_json, "flags", flags);
    const double reg = t->registered ? (double)t->registered : 1.0;
    cli_json_number(o_json, "residual_mean", (double)t->residual_sum / 4294967296.0 / reg);
    cli_json_number(o_json, "matched_mean", (double)t->matched_sum / 4294967296.0 / reg);
    cli_json_put(o_json, "residual_histogram", hist);
    return o_json;
}

int batch_print_atoms_json(const atoms_report *rep)
{
    const batch_request *r = rep->r;
    const ptreg_orientations *o = rep->o;
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "batch");
    cli_json_string(j, "mode", "atoms");
    cli_json_string(j, "input", rep->atoms->path);
    cli_json_number(j, "atoms", (double)rep->atoms->n);
    cli_json_number(j, "selected", (double)(rep->atoms->by_ion ? rep->atoms->selected_count : rep->atoms->n));
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
    if (r->orient.grain_radius > 0)
        cli_json_number(j, "grain_ms", rep->s.grain_ms);
    /* the orientations' registrations, over every rank's atoms */
    const double s = rep->s.register_ms * 1e-3;
    const ptreg_batch_stats all = {.pairs = rep->s.tally.registered,
                                   .pair_terms = rep->s.tally.pair_terms,
                                   .time_ms = rep->s.register_ms,
                                   .pairs_per_s = s > 0 ? (double)rep->s.tally.registered / s : 0.0,
                                   .gpts = s > 0 ? rep->s.tally.pair_terms / s / 1e9 : 0.0,
                                   .isa = o->stats.isa,
                                   .kernel_ms = o->stats.kernel_ms};
    cli_json_result(j, ptreg_result_table_find("batch_stats"), &all);
    cli_json_number(j, "total_ms", rep->total_ms);
    char device[32];
    cli_json_string(j, "device", batch_resolved_device(r, device, sizeof device));
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_number(j, "ranks", rep->ranks);
    if (rep->slabs)
        cli_json_number(j, "slabs", (double)rep->slabs);
    if (rep->ranks > 1 || rep->slabs) {
        cli_json_number(j, "halo", rep->s.halo);
        cli_json_number(j, "halo_rounds", rep->s.halo_rounds);
    }
    if (rep->grains.computed) {
        const batch_grain_summary *g = &rep->grains;
        cJSON *gm = cli_json_object(j, "grain_map");
        cli_json_number(gm, "grains", (double)g->grains);
        cli_json_number(gm, "grained_atoms", (double)g->grained);
        cli_json_number(gm, "boundaries", (double)g->boundaries);
        cli_json_number(gm, "threshold_deg", g->threshold_deg);
        if (isfinite(g->chi2)) { /* cubic motifs */
            cli_json_number(gm, "mackenzie_chi2", g->chi2);
            cli_json_number(gm, "mackenzie_dof", (double)g->dof);
        }
        cli_json_number(gm, "time_ms", g->time_ms);
        if (r->grains_out)
            cli_json_string(gm, "dir", r->grains_out);
    }
    if (r->output)
        cli_json_string(j, "output", r->output);
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

void batch_print_atoms_human(const atoms_report *rep)
{
    const ptreg_orientations *o = rep->o;
    const batch_tally *t = &rep->s.tally;
    printf("ptreg batch: %s, %zu atoms, %zu selected, %llu registered (%d threads, %d ranks, %s)\n", rep->atoms->path,
           rep->atoms->n, rep->atoms->by_ion ? rep->atoms->selected_count : rep->atoms->n,
           (unsigned long long)t->registered, ptreg_get_num_threads(), rep->ranks, o->stats.isa ? o->stats.isa : "");
    if (rep->slabs)
        printf("  read and registered in %zu slabs (more than --max-memory), halos up to %.3g nm\n", rep->slabs,
               rep->s.halo);
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
    printf("  time: read %.1f ms, neighbors %.1f ms, registration %.1f ms (%.0f pairs/s, %.3f Gpts/s)\n", rep->read_ms,
           rep->s.neighbor_ms, rep->s.register_ms, s > 0 ? (double)t->registered / s : 0.0,
           s > 0 ? t->pair_terms / s / 1e9 : 0.0);
    if (rep->grains.computed)
        printf("  grains: %zu (%zu atoms in one), %zu boundaries; threshold %g deg\n", rep->grains.grains,
               rep->grains.grained, rep->grains.boundaries, rep->grains.threshold_deg);
    if (rep->r->output)
        printf("  wrote %s\n", rep->r->output);
    if (rep->r->grains_out)
        printf("  wrote %s/ (grain_map.npy, grains.csv, boundaries.csv, figures)\n", rep->r->grains_out);
}
