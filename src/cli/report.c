/* --html: the run's report (report.h). */
#include "cli/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/files.h"
#include "ptreg/nn.h"

/* Target grey, where SOURCE began orange: drawn under the distance colours. */
#define COLOR_TARGET 0x8c8c8cu
#define COLOR_SOURCE_BEFORE 0xf28e2bu

/* The page this process will write: one command runs per process. */
static struct {
    ptreg_report *report;
    const char *command, *path;
    int json_stdout;
    char *json; /* --json's text, printed after the page */
} pending = {NULL, NULL, NULL, 1, NULL};

static void title_of(const cli_args *a, const char *command, char *title, size_t size)
{
    int used = snprintf(title, size, "ptreg %s", command);
    for (int i = 0; i < a->positional_count && used > 0 && (size_t)used < size; i++)
        used += snprintf(title + used, size - (size_t)used, " %s", a->positional[i]);
}

/* cli_json_print's sink while a report is open. */
static int take_json(const char *text)
{
    ptreg_error err;
    if (ptreg_report_set_json(pending.report, text, &err))
        cli_set_out_of_memory();
    if (pending.json_stdout) {
        free(pending.json);
        const size_t n = strlen(text) + 1;
        if ((pending.json = malloc(n)))
            memcpy(pending.json, text, n);
        else
            cli_set_out_of_memory();
    }
    return EXIT_OK;
}

/* --json's text, kept until the page was written. */
static int print_json_now(void)
{
    if (!pending.json)
        return EXIT_OK;
    if (puts(pending.json) >= 0 && fflush(stdout) == 0)
        return EXIT_OK;
    fprintf(stderr, "ptreg: cannot write the JSON result to stdout: %s\n", strerror(errno));
    return EXIT_RUNTIME;
}

/* The page's folder must take a file: told before the run, not after it. */
static int folder_writable(const char *command, const char *path)
{
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else
        slash[slash == folder] = '\0'; /* "/x.html": the root */
    struct stat sb; /* a file's "folder" (x.ply/r.html) passes access(): told here, not after the run */
    if (stat(folder, &sb) == 0 && !S_ISDIR(sb.st_mode))
        errno = ENOTDIR;
    else if (access(folder, W_OK) == 0)
        return EXIT_OK;
    cli_error(command, "%s: cannot write into %s: %s", path, folder, strerror(errno));
    return EXIT_RUNTIME;
}

int cli_report_open(const cli_args *a, const char *command, const char *path, const char *cap_option)
{
    size_t max_points = PTREG_REPORT_MAX_POINTS;
    int rc = cli_size(a, cap_option, 1, (size_t)1 << 40, &max_points);
    if (rc)
        return rc;
    if ((rc = folder_writable(command, path)))
        return rc;
    if (!ptreg_report_available()) {
        cli_error(command, "this ptreg was built without the report viewer (three.js): run `make deps` "
                           "(web/'s npm packages) and build again");
        return EXIT_USAGE;
    }
    char title[512];
    title_of(a, command, title, sizeof title);
    pending.command = command;
    pending.path = path;
    ptreg_error err;
    ptreg_status st = ptreg_report_create(title, &pending.report, &err);
    if (st)
        return cli_report_check(st, &err);
    ptreg_report_set_max_points(pending.report, max_points);
    cli_json_set_sink(take_json);
    pending.json_stdout = cli_given(a, "json");
    return EXIT_OK;
}

int cli_report_begin(const cli_args *a, const char *command)
{
    pending.json_stdout = 1;
    return cli_given(a, "html") ? cli_report_open(a, command, cli_string(a, "html", NULL), "html-max-points") : EXIT_OK;
}

ptreg_report *cli_report(void) { return pending.report; }

int cli_report_check(ptreg_status st, const ptreg_error *err)
{
    if (!st)
        return EXIT_OK;
    cli_error(pending.command, "%s: %s", pending.path, err->message);
    return cli_exit_code(st, 0);
}

int cli_report_finish(int rc)
{
    if (pending.report && rc == EXIT_OK) {
        ptreg_error err;
        ptreg_status st = ptreg_report_write(pending.report, pending.path, &err);
        rc = st ? cli_report_check(st, &err) : print_json_now();
    }
    ptreg_report_destroy(pending.report);
    pending.report = NULL;
    cli_json_set_sink(NULL);
    free(pending.json);
    pending.json = NULL;
    return rc;
}

uint32_t cli_report_palette(size_t i)
{
    static const uint32_t colors[] = {0x1f77b4u, 0xff7f0eu, 0x2ca02cu, 0xd62728u, 0x9467bdu,
                                      0x8c564bu, 0xe377c2u, 0x17becfu, 0xbcbd22u, 0x7f7f7fu};
    return colors[i % (sizeof colors / sizeof colors[0])];
}

/* ---- registrations ---- */

float *cli_moved(const float *xyz, size_t n, const double T[16])
{
    float *out = malloc((n ? n : 1) * 3 * sizeof *out);
    if (out)
        ptreg_transform_points(T, xyz, out, n);
    return out;
}

/* The k-th smallest of v[0..n) (k < n), v reordered: Hoare's selection. */
static float kth_smallest(float *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const float pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                const float t = v[i];
                v[i] = v[j], v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

static int summarize_distances(cli_distances *d)
{
    float *copy = malloc((d->n ? d->n : 1) * sizeof *copy);
    if (!copy)
        return EXIT_RUNTIME;
    double sum = 0.0;
    d->min = INFINITY, d->max = 0.0;
    for (size_t i = 0; i < d->n; i++) {
        copy[i] = d->values[i];
        sum += d->values[i];
        d->min = fmin(d->min, d->values[i]), d->max = fmax(d->max, d->values[i]);
    }
    d->mean = d->n ? sum / (double)d->n : 0.0;
    d->median = d->n ? kth_smallest(copy, d->n, d->n / 2) : 0.0;
    d->min = d->n ? d->min : 0.0;
    free(copy);
    return EXIT_OK;
}

static int distances_to(const float *moved, size_t n, const float *target, size_t m, cli_distances *d)
{
    memset(d, 0, sizeof *d);
    ptreg_kdtree_options ko;
    ptreg_kdtree_options_default(&ko);
    ptreg_kdtree *tree = NULL;
    ptreg_error err;
    uint32_t *index = malloc((n ? n : 1) * sizeof *index);
    d->values = malloc((n ? n : 1) * sizeof *d->values);
    ptreg_status st = index && d->values ? ptreg_kdtree_create(target, m, &ko, &tree, &err) : PTREG_ERR_NOMEM;
    if (!st) {
        ptreg_kdtree_nearest(tree, moved, n, NULL, index, d->values);
        for (size_t i = 0; i < n; i++)
            d->values[i] = sqrtf(d->values[i]);
        d->n = n;
    }
    ptreg_kdtree_destroy(tree);
    free(index);
    if (st || summarize_distances(d)) {
        cli_distances_free(d);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

void cli_distances_free(cli_distances *d)
{
    free(d->values);
    memset(d, 0, sizeof *d);
}


/* The three clouds of a registration's page. */
static ptreg_status add_registration(ptreg_report *r, const float *before, size_t n, const float *target, size_t m,
                                     const float *after, const cli_distances *d, ptreg_error *err)
{
    ptreg_status st = ptreg_report_add_cloud(r, "target", target, m, COLOR_TARGET, err);
    st = st ? st : ptreg_report_add_cloud(r, "source before", before, n, COLOR_SOURCE_BEFORE, err);
    return st ? st : ptreg_report_add_cloud_values(r, "source after", after, n, d->values, "distance to target", err);
}

int cli_report_registration(const float *source, size_t n, const float *target, size_t m, const double init[16],
                            const double T[16], cli_distances *d)
{
    memset(d, 0, sizeof *d);
    if (!pending.report)
        return EXIT_OK;
    float *after = cli_moved(source, n, T), *before = init ? cli_moved(source, n, init) : NULL;
    int rc = !after || (init && !before) ? EXIT_RUNTIME : distances_to(after, n, target, m, d);
    if (!rc) {
        ptreg_error err;
        rc = cli_report_check(add_registration(pending.report, before ? before : source, n, target, m, after, d, &err),
                              &err);
    } else if (!d->values) {
        fprintf(stderr, "ptreg %s: --html: out of memory\n", pending.command);
    }
    free(after);
    free(before);
    return rc;
}
