/* ptreg batch's grain map (ptreg_grain_map, orientation.h): with
 * --grains-out DIR its files, with --html its layer and figures, and its
 * figures in the JSON. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/batch_cli.h"
#include "cli/files.h"
#include "cli/report.h"
#include "ptreg/io.h"
#include "ptreg/report.h"

static int failed(ptreg_status st, const ptreg_error *err)
{
    if (st)
        cli_error("batch", "%s", err->message);
    return st ? cli_exit_code(st, 0) : EXIT_OK;
}

/* DIR/name written atomically, its content by body. */
static int write_file(const char *dir, const char *name, void (*body)(FILE *f, const void *what), const void *what)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ptreg_atomic_file af;
    ptreg_error err;
    ptreg_status st = ptreg_atomic_open(path, &af, &err);
    if (!st) {
        body(af.fp, what);
        st = ptreg_atomic_commit(&af, &err);
    }
    return failed(st, &err);
}

static void text_body(FILE *f, const void *what) { fputs(what, f); }

static void grains_body(FILE *f, const void *what)
{
    const ptreg_grain_map *map = what;
    fprintf(f, "grain,atoms,qw,qx,qy,qz,spread_deg,x,y,z\n");
    for (size_t g = 0; g < map->count; g++) {
        const ptreg_grain *gr = &map->grains[g];
        fprintf(f, "%zu,%zu,%.9f,%.9f,%.9f,%.9f,%.4f,%.6g,%.6g,%.6g\n", g, gr->atoms, gr->q[0], gr->q[1], gr->q[2],
                gr->q[3], gr->spread_deg, gr->centroid[0], gr->centroid[1], gr->centroid[2]);
    }
}

static void boundaries_body(FILE *f, const void *what)
{
    const ptreg_grain_map *map = what;
    fprintf(f, "grain_a,grain_b,links,misorientation_deg\n");
    for (size_t b = 0; b < map->boundary_count; b++) {
        const ptreg_grain_boundary *gb = &map->boundaries[b];
        fprintf(f, "%u,%u,%zu,%.4f\n", gb->a, gb->b, gb->links, gb->misorientation_deg);
    }
}

static int write_grain_ids(const char *dir, const ptreg_grain_map *map, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/grain_map.npy", dir);
    ptreg_error err;
    return failed(ptreg_npy_write(path, PTREG_NPY_I32, map->grain, n, 1, &err), &err);
}

static int write_files(const char *dir, const ptreg_grain_map *map, size_t n)
{
    if (mkdir(dir, 0777) && errno != EEXIST) {
        cli_error("batch", "--grains-out %s: %s", dir, strerror(errno));
        return EXIT_RUNTIME;
    }
    static const char *const names[4] = {"misorientation.svg", "pole_100.svg", "pole_110.svg", "pole_111.svg"};
    int rc = write_grain_ids(dir, map, n);
    rc = rc ? rc : write_file(dir, "grains.csv", grains_body, map);
    rc = rc ? rc : write_file(dir, "boundaries.csv", boundaries_body, map);
    for (size_t i = 0; !rc && i < 4; i++)
        rc = map->figure[i] ? write_file(dir, names[i], text_body, map->figure[i]) : EXIT_OK;
    return rc;
}

/* The atoms in a grain, each in its grain's colour, and the figures. */
static int add_to_report(const batch_atoms *atoms, size_t n, const ptreg_grain_map *map)
{
    ptreg_report *r = cli_report();
    if (!r)
        return EXIT_OK;
    float *xyz = malloc((map->grained + 1) * 3 * sizeof *xyz);
    uint8_t *rgb = malloc((map->grained + 1) * 3);
    ptreg_error err;
    ptreg_status st = xyz && rgb ? PTREG_OK : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for the grains");
    size_t m = 0;
    for (size_t i = 0; !st && i < n; i++) {
        if (map->grain[i] < 0)
            continue;
        const uint32_t c = cli_report_palette((size_t)map->grain[i]);
        memcpy(xyz + 3 * m, atoms->xyz + 3 * i, 3 * sizeof *xyz);
        rgb[3 * m] = (uint8_t)(c >> 16), rgb[3 * m + 1] = (uint8_t)(c >> 8), rgb[3 * m + 2] = (uint8_t)c;
        m++;
    }
    st = st ? st : ptreg_report_add_cloud_rgb(r, "grains", xyz, m, rgb, &err);
    static const char *const titles[4] = {"Grain boundaries' misorientation", "{100} pole figure", "{110} pole figure",
                                          "{111} pole figure"};
    for (size_t i = 0; !st && i < 4; i++)
        st = map->figure[i] ? ptreg_report_add_figure(r, titles[i], map->figure[i], &err) : PTREG_OK;
    free(xyz);
    free(rgb);
    return cli_report_check(st, &err);
}

int batch_grains(const batch_request *r, const batch_atoms *atoms, const ptreg_orientations *o,
                 batch_grain_summary *summary)
{
    memset(summary, 0, sizeof *summary);
    const ptreg_grain_map *map = o->grains;
    if (!map)
        return EXIT_OK;
    int rc = r->grains_out ? write_files(r->grains_out, map, o->n) : EXIT_OK;
    rc = rc ? rc : add_to_report(atoms, o->n, map);
    *summary = (batch_grain_summary){1,
                                     map->count,
                                     map->grained,
                                     map->boundary_count,
                                     map->threshold_deg,
                                     map->time_ms,
                                     map->bin_expected ? map->chi2 : NAN,
                                     map->dof};
    return rc;
}
