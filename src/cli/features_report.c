/* What ptreg normals, pfh and fpfh report: the JSON, the human lines and
 * the --html layers. */
#include "cli/features_report.h"

#include <stdio.h>
#include <string.h>

#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "ptreg/device.h"

static void print_neighborhood(const ptreg_neighborhood *nb)
{
    if (nb->k && nb->radius > 0)
        printf("the %zu nearest within radius %g", nb->k, nb->radius);
    else if (nb->k)
        printf("k = %zu", nb->k);
    else
        printf("radius %g", nb->radius);
}

static cJSON *feature_json(const feature_report *f, double t, const char *device, const char *isa)
{
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", f->name);
    cli_json_string(j, "cloud", f->cloud);
    cli_json_number(j, "points", (double)f->points);
    if (f->bins)
        cli_json_number(j, "bins", f->bins);
    cJSON *nb = cli_json_object(j, "neighbors");
    if (f->nb->k)
        cli_json_number(nb, "k", (double)f->nb->k);
    if (f->nb->radius > 0)
        cli_json_number(nb, "radius", f->nb->radius);
    if (f->viewpoint)
        cli_json_put(j, "viewpoint", cJSON_CreateDoubleArray(f->viewpoint, 3));
    if (f->convention)
        cli_json_string(j, "convention", f->convention);
    if (f->normals)
        cli_json_string(j, "normals", f->normals);
    cli_json_number(j, "missing", (double)f->missing);
    cli_json_string(j, "device", device);
    if (f->variant)
        cli_json_put(j, "variant", cJSON_Duplicate(f->variant, 1));
    cli_json_number(j, "time_ms", t);
    if (f->repeat > 1)
        cli_json_put(j, "times_ms", cJSON_CreateDoubleArray(f->times, f->repeat));
    cli_json_number(j, "points_per_s", t > 0 ? (double)f->points / (t * 1e-3) : 0);
    cli_json_string(j, "isa", isa);
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_string(j, "version", ptreg_version());
    return j;
}

/* The JSON (with --html the page holds it), then the human lines unless --json. */
int cli_feature_print_report(const cli_args *a, const feature_report *f)
{
    const double t = cli_median(f->times, f->repeat);
    char device[32];
    ptreg_device_format(f->on, device, sizeof device);
    const char *isa = f->on->backend != PTREG_BACKEND_CPU ? device : f->reference ? "reference" : ptreg_cpu_isa_name();
    int rc = cli_has(a, "json") || cli_report() ? cli_json_print(feature_json(f, t, device, isa)) : EXIT_OK;
    if (rc || cli_has(a, "json"))
        return rc;
    printf("ptreg %s: %s, %zu points, ", f->name, f->cloud, f->points);
    print_neighborhood(f->nb);
    if (!f->bins) {
        printf("\n  %zu without a normal (fewer than 3 neighbors, or all in one place), time %.2f ms, %d threads\n",
               f->missing, t, ptreg_get_num_threads());
        return EXIT_OK;
    }
    if (f->convention)
        printf(", convention %s", f->convention);
    printf(", normals from the %s\n  %zu without a descriptor, time %.2f ms, %s, %d threads\n",
           strcmp(f->normals, "file") ? "estimate" : "file", f->missing, t, isa, ptreg_get_num_threads());
    return EXIT_OK;
}

/* With --html: the cloud coloured by curvature and some of its normals. */
int cli_feature_report_normals(const ptreg_cloud *c, const float *normals, const float *curvature)
{
    ptreg_report *r = cli_report();
    if (!r)
        return EXIT_OK;
    ptreg_error err;
    return cli_report_check(ptreg_report_add_normals(r, c->xyz, c->n, normals, curvature, &err), &err);
}

/* With --html: the points coloured by distinctiveness; those without a descriptor in grey. */
int cli_feature_report_descriptors(int bins, const ptreg_cloud *c, const float *rows)
{
    ptreg_report *r = cli_report();
    if (!r)
        return EXIT_OK;
    ptreg_error err;
    char name[64];
    snprintf(name, sizeof name, "%s distance to the mean", bins == PTREG_FPFH_BINS ? "FPFH" : "PFH");
    return cli_report_check(ptreg_report_add_descriptors(r, c->xyz, c->n, rows, bins, name, &err), &err);
}
