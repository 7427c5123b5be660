/* FPFH on GPUs against ptreg's CPU path on all cores, in one run (issue 16;
 * bench/gpu/run.sh can run it on the GPU machine).
 *
 *   features_gpu --devices cuda:0[,opencl:0] [--points 1000000] [--k 50] [--repeat 3]
 *                [--no-cpu] [--md FILE] [--json FILE]
 *
 * The cloud: ptreg_synth_model's blob (radius about 1) of --points points,
 * normals estimated on the CPU (k = 30, not timed). Two neighborhoods of
 * about --k points: k-NN with k, and a radius picked so that the median
 * point has k neighbors (the k-th neighbor's distance of 1000 sampled
 * points, their median). Each call is the whole ptreg_fpfh: the k-d tree
 * (on the CPU), the upload, neighborhoods, SPFH, FPFH and the rows back;
 * median of --repeat calls (the first device call, which compiles the
 * kernels, is a warm-up outside the count). Then the resident cloud
 * (ptreg_features_model: tree and cloud uploaded before the clock starts):
 * its first call (neighborhoods, SPFH, FPFH, rows back) and a repeated one
 * (FPFH alone: lists and SPFH are kept), each with its launches and bytes.
 * The target: >= 20x the CPU path on one H100; each device's rows are
 * compared with the CPU's (rows with a bin off by more than 0.01). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ptreg/ptreg.h"

typedef struct options {
    list devices;
    size_t points, k;
    int repeat, cpu;
    const char *md, *json;
} options;

static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->points = 1000000, o->k = 50, o->repeat = 3, o->cpu = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-cpu")) {
            o->cpu = 0;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        char *v = argv[++i];
        if (!strcmp(a, "--devices"))
            split(v, &o->devices);
        else if (!strcmp(a, "--points"))
            o->points = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--k"))
            o->k = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--repeat"))
            o->repeat = atoi(v);
        else if (!strcmp(a, "--md"))
            o->md = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else
            return -1;
    }
    return o->devices.n && o->points > 0 && o->k > 0 && o->repeat > 0 && o->repeat <= 16 ? 0 : -1;
}


/* The radius at which the median point has k neighbors (itself included). */
static double radius_for(const float *xyz, size_t n, size_t k)
{
    ptreg_kdtree *tree;
    if (ptreg_kdtree_create(xyz, n, NULL, &tree, NULL))
        return 0;
    enum { SAMPLES = 1001 };
    double far[SAMPLES];
    uint32_t *index = malloc(k * sizeof *index);
    float *dist2 = malloc(k * sizeof *dist2);
    int got = 0;
    for (size_t s = 0; s < SAMPLES && index && dist2; s++) {
        size_t c = ptreg_kdtree_knn(tree, xyz + 3 * (s * (n / SAMPLES)), k, index, dist2);
        far[got++] = c ? sqrt((double)dist2[c - 1]) : 0;
    }
    free(index);
    free(dist2);
    ptreg_kdtree_destroy(tree);
    /* a hair beyond the k-th distance: the strict test keeps it */
    return got ? median_of(far, got) * (1 + 1e-6) : 0;
}

typedef struct timing {
    double ms;
    ptreg_device_stats work; /* one call's (the last) */
    size_t missing;
    int ok;
    char error[PTREG_ERROR_MESSAGE_MAX];
} timing;

static timing time_fpfh(const ptreg_cloud *c, const ptreg_device *device, const ptreg_neighborhood *nb,
                        const options *o, float *rows)
{
    timing t = {0};
    double ms[16];
    ptreg_features_options fo;
    ptreg_features_options_default(&fo);
    fo.neighbors = *nb;
    fo.device = *device;
    const int warm = device->backend != PTREG_BACKEND_CPU; /* the kernels' compile */
    for (int r = 0; r < o->repeat + warm; r++) {
        ptreg_error err;
        ptreg_device_stats before;
        ptreg_device_stats_get(&before);
        double t0 = ptreg_time_ms();
        if (ptreg_fpfh(c->xyz, c->normals, c->n, &fo, rows, &t.missing, &err)) {
            snprintf(t.error, sizeof t.error, "%s", err.message);
            return t;
        }
        if (r >= warm)
            ms[r - warm] = ptreg_time_ms() - t0;
        ptreg_device_stats_since(&before, &t.work);
    }
    t.ms = median_of(ms, o->repeat);
    t.ok = 1;
    return t;
}

/* On a resident cloud: the first call and a repeated one (*again). */
static timing time_model(const ptreg_cloud *c, const ptreg_device *device, const ptreg_neighborhood *nb,
                         const options *o, float *rows, timing *again)
{
    timing t = {0};
    double first_ms[16], again_ms[16];
    ptreg_features_options fo;
    ptreg_features_options_default(&fo);
    fo.neighbors = *nb;
    fo.device = *device;
    memset(again, 0, sizeof *again);
    for (int r = 0; r < o->repeat + 1; r++) {
        ptreg_error err;
        ptreg_features_model *m = NULL;
        ptreg_device_stats before;
        ptreg_status st = ptreg_features_model_create(c->xyz, c->normals, c->n, &fo, &m, &err);
        double t0 = ptreg_time_ms();
        ptreg_device_stats_get(&before);
        st = st ? st : ptreg_features_model_fpfh(m, &fo, NULL, 0, rows, &t.missing, &err);
        ptreg_device_stats_since(&before, &t.work);
        double t1 = ptreg_time_ms();
        ptreg_device_stats_get(&before);
        st = st ? st : ptreg_features_model_fpfh(m, &fo, NULL, 0, rows, &again->missing, &err);
        ptreg_device_stats_since(&before, &again->work);
        double t2 = ptreg_time_ms();
        ptreg_features_model_destroy(m);
        if (st) {
            snprintf(t.error, sizeof t.error, "%s", err.message);
            return t;
        }
        if (r >= 1) /* the first: the kernels' compile */
            first_ms[r - 1] = t1 - t0, again_ms[r - 1] = t2 - t1;
    }
    t.ms = median_of(first_ms, o->repeat);
    again->ms = median_of(again_ms, o->repeat);
    t.ok = again->ok = 1;
    return t;
}

static size_t rows_off(const float *a, const float *b, size_t n)
{
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        int bad = 0;
        for (int k = 0; k < PTREG_FPFH_BINS; k++) {
            float x = a[PTREG_FPFH_BINS * i + (size_t)k], y = b[PTREG_FPFH_BINS * i + (size_t)k];
            bad |= isnan(x) != isnan(y) || fabs((double)x - (double)y) > 0.01;
        }
        off += bad;
    }
    return off;
}

/* The resident cloud's rows: its first call and a repeated one. */
static void bench_model(const options *o, bench_report *rep, const ptreg_cloud *c, const ptreg_neighborhood *nb,
                        const char *label, const char *name, const ptreg_device *dev, const timing *base,
                        const float *cpu_rows, float *dev_rows)
{
    timing again, first = time_model(c, dev, nb, o, dev_rows, &again);
    if (!first.ok) {
        report_line(rep, "| %s | %s resident | %s | | |\n", label, name, first.error);
        return;
    }
    const size_t off = base ? rows_off(cpu_rows, dev_rows, c->n) : 0;
    const timing *both[] = {&first, &again};
    static const char *const which[] = {"first call", "repeated"};
    for (int i = 0; i < 2; i++) {
        const timing *t = both[i];
        const double speedup = base ? base->ms / t->ms : 0;
        report_line(rep, "| %s | %s resident, %s | %.1f | %.1fx | %zu | %llu, %.1f / %.1f MB |\n", label, name,
                    which[i], t->ms, speedup, off, (unsigned long long)t->work.launches, t->work.bytes_to / 1e6,
                    t->work.bytes_from / 1e6);
        json_row(rep,
                 "\"neighborhood\": \"%s\", \"device\": \"%s\", \"resident\": \"%s\", \"ms\": %.3f, "
                 "\"speedup\": %.2f, \"rows_off\": %zu, \"launches\": %llu, \"bytes_to\": %llu, "
                 "\"bytes_from\": %llu",
                 label, name, which[i], t->ms, speedup, off, (unsigned long long)t->work.launches,
                 (unsigned long long)t->work.bytes_to, (unsigned long long)t->work.bytes_from);
    }
}

static void bench_one(const options *o, bench_report *rep, const ptreg_cloud *c, const ptreg_neighborhood *nb,
                      const char *label, float *cpu_rows, float *dev_rows)
{
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    timing base = {0};
    if (o->cpu) {
        base = time_fpfh(c, &cpu, nb, o, cpu_rows);
        if (!base.ok)
            report_line(rep, "| %s | cpu | %s | | |\n", label, base.error);
        if (base.ok) {
            report_line(rep, "| %s | cpu (%d threads) | %.1f | 1.0x | |\n", label, ptreg_get_num_threads(), base.ms);
            json_row(rep, "\"neighborhood\": \"%s\", \"device\": \"cpu\", \"ms\": %.3f, \"threads\": %d", label,
                     base.ms, ptreg_get_num_threads());
        }
    }
    for (size_t d = 0; d < o->devices.n; d++) {
        ptreg_device dev;
        if (ptreg_device_parse(o->devices.item[d], &dev)) {
            report_line(rep, "| %s | %s | not a device | | |\n", label, o->devices.item[d]);
            continue;
        }
        timing t = time_fpfh(c, &dev, nb, o, dev_rows);
        if (!t.ok) {
            report_line(rep, "| %s | %s | %s | | |\n", label, o->devices.item[d], t.error);
            continue;
        }
        double speedup = base.ok ? base.ms / t.ms : 0;
        size_t off = base.ok ? rows_off(cpu_rows, dev_rows, c->n) : 0;
        report_line(rep, "| %s | %s | %.1f | %.1fx%s | %zu | %llu, %.1f / %.1f MB |\n", label, o->devices.item[d],
            t.ms, speedup, base.ok ? (speedup >= 20 ? " (>= 20x)" : " (< 20x)") : "", off,
            (unsigned long long)t.work.launches, t.work.bytes_to / 1e6, t.work.bytes_from / 1e6);
        json_row(rep,
                 "\"neighborhood\": \"%s\", \"device\": \"%s\", \"ms\": %.3f, \"speedup\": %.2f, "
                 "\"rows_off\": %zu, \"missing\": %zu, \"launches\": %llu, \"bytes_to\": %llu, "
                 "\"bytes_from\": %llu",
                 label, o->devices.item[d], t.ms, speedup, off, t.missing, (unsigned long long)t.work.launches,
                 (unsigned long long)t.work.bytes_to, (unsigned long long)t.work.bytes_from);
        bench_model(o, rep, c, nb, label, o->devices.item[d], &dev, base.ok ? &base : NULL, cpu_rows, dev_rows);
    }
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: features_gpu --devices cuda:0[,opencl:0] [--points N] [--k K] [--repeat R] "
                        "[--no-cpu] [--md FILE] [--json FILE]\n");
        return 2;
    }
    ptreg_cloud c;
    ptreg_error err;
    if (ptreg_synth_model(PTREG_SHAPE_BLOB, o.points, 16, &c, &err)) {
        fprintf(stderr, "features_gpu: %s\n", err.message);
        return 1;
    }
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    if (!c.normals && !(c.normals = malloc(3 * c.n * sizeof *c.normals)))
        return 1;
    if (ptreg_normals(c.xyz, c.n, &no, c.normals, NULL, NULL, &err)) {
        fprintf(stderr, "features_gpu: normals: %s\n", err.message);
        return 1;
    }
    float *cpu_rows = malloc(c.n * PTREG_FPFH_BINS * sizeof(float)),
          *dev_rows = malloc(c.n * PTREG_FPFH_BINS * sizeof(float));
    if (!cpu_rows || !dev_rows)
        return 1;
    bench_report rep = {o.md ? fopen(o.md, "w") : NULL, o.json ? fopen(o.json, "w") : NULL, 1};
    if (rep.json)
        fprintf(rep.json, "[");
    const double radius = radius_for(c.xyz, c.n, o.k);
    report_line(&rep, "FPFH (PCL convention): ptreg %s, a blob of %zu points, CPU path on %d threads, median of %d calls. "
              "Target on one H100: >= 20x the CPU path.\n\n",
        ptreg_version(), c.n, ptreg_get_num_threads(), o.repeat);
    report_line(&rep, "| neighborhood | device | ms per call | vs CPU | rows off by > 0.01 | launches, MB to / from |\n"
                      "|---|---|---|---|---|---|\n");
    char label[64];
    ptreg_neighborhood knn = {o.k, 0}, ball = {0, radius};
    snprintf(label, sizeof label, "k = %zu", o.k);
    bench_one(&o, &rep, &c, &knn, label, cpu_rows, dev_rows);
    snprintf(label, sizeof label, "r = %.5f", radius);
    bench_one(&o, &rep, &c, &ball, label, cpu_rows, dev_rows);
    if (rep.json) {
        fprintf(rep.json, "\n]\n");
        fclose(rep.json);
    }
    if (rep.md)
        fclose(rep.md);
    free(cpu_rows);
    free(dev_rows);
    ptreg_cloud_free(&c);
    ptreg_devices_release();
    return 0;
}
