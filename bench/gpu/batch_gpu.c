/* Batched EM-ICP on GPUs against ptreg's CPU path, in one run (bench/gpu/run.sh
 * runs it on the GPU machine; bench/NOTES.md, issue 14, has the predictions).
 *
 *   batch_gpu --devices cuda:0[,opencl:0] [--sizes 10000,100000,1000000] [--points 12,32]
 *             [--targets shared,pairs] [--cpu-pairs 20000] [--repeat 3]
 *             [--layouts 32x4,16x8,...] [--layout-pairs 100000] [--md FILE] [--json FILE]
 *
 * The atom-probe case: every pair's source is the motif (fcc's first shell,
 * or its first 32 lattice neighbors) turned at random up to 30 degrees with
 * noise, registered rotation only onto the motif (shared: one target for all;
 * pairs: the same motif as a per-pair target). Two schedules: 10 iterations
 * (tol 0, max_iter 10) and the whole default schedule (66 iterations, tol 0).
 * Each size is timed on each device (ptreg_batch_register from host memory to
 * host memory: packing, copies and the launch; the kernel's own time from the
 * device's events), best of --repeat; the CPU path runs the first --cpu-pairs
 * pairs on all cores, and its answers are compared with the device's (the
 * largest quaternion component difference, translation, iterations). With
 * --layouts, the 32-point 10-iteration case of --layout-pairs pairs is timed
 * in each work-group layout (PTREG_BATCH_LAYOUT=PAIRSxTHREADS). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_OWN_REPORT /* its report keeps a parity table too */
#include "bench_common.h"
#include "ptreg/ptreg.h"
#include "core/testing.h"
#include "core/numeric.h"

#define TARGET_PAIRS 1000000
#define TARGET_POINTS 32
#define TARGET_SECONDS 0.25

typedef struct options {
    list devices, sizes, points, targets, layouts;
    size_t cpu_pairs, layout_pairs;
    int repeat;
    const char *md, *json;
} options;

static int parse(int argc, char **argv, options *o)
{
    static char sizes[] = "10000,100000,1000000", points[] = "12,32", targets[] = "shared";
    memset(o, 0, sizeof *o);
    split(sizes, &o->sizes);
    split(points, &o->points);
    split(targets, &o->targets);
    o->cpu_pairs = 20000, o->layout_pairs = 100000, o->repeat = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--devices"))
            split(argv[i], &o->devices);
        else if (!strcmp(a, "--sizes"))
            split(argv[i], &o->sizes);
        else if (!strcmp(a, "--points"))
            split(argv[i], &o->points);
        else if (!strcmp(a, "--targets"))
            split(argv[i], &o->targets);
        else if (!strcmp(a, "--layouts"))
            split(argv[i], &o->layouts);
        else if (!strcmp(a, "--cpu-pairs"))
            o->cpu_pairs = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--layout-pairs"))
            o->layout_pairs = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--repeat"))
            o->repeat = atoi(v);
        else if (!strcmp(a, "--md"))
            o->md = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else
            return -1;
    }
    return o->devices.n && o->repeat > 0 ? 0 : -1;
}

/* ---- the pairs ---- */

typedef struct pairs {
    size_t k, count;
    float *source, *target, motif[3 * 64];
    size_t *offset, *target_offset;
    double radius;
} pairs;

static void pairs_free(pairs *p)
{
    free(p->source), free(p->target), free(p->offset), free(p->target_offset);
}

/* Pair i from its own random stream (the same pairs for any thread count). */
static void make_pair(const pairs *p, size_t i)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 0x9e3779b97f4a7c15ull ^ (uint64_t)i);
    double axis[3] = {ptreg_rng_normal(&rng), ptreg_rng_normal(&rng), ptreg_rng_normal(&rng)}, T[16];
    ptreg_transform_from_axis_angle(axis, 30.0 * (2.0 * ptreg_rng_uniform(&rng) - 1.0), NULL, T);
    float *s = p->source + 3 * p->k * i;
    for (size_t j = 0; j < p->k; j++) {
        const float *m = p->motif + 3 * j;
        for (int r = 0; r < 3; r++)
            s[3 * j + (size_t)r] = (float)(T[4 * r] * m[0] + T[4 * r + 1] * m[1] + T[4 * r + 2] * m[2] +
                                           0.01 * ptreg_rng_normal(&rng));
    }
    memcpy(p->target + 3 * p->k * i, p->motif, 3 * p->k * sizeof(float));
}

static int make_pairs(size_t k, size_t count, pairs *p)
{
    memset(p, 0, sizeof *p);
    p->k = k, p->count = count;
    if (k > 64 || ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, k, p->motif, NULL))
        return -1;
    p->source = malloc(3 * k * count * sizeof(float));
    p->target = malloc(3 * k * count * sizeof(float));
    p->offset = malloc((count + 1) * sizeof(size_t));
    p->target_offset = malloc((count + 1) * sizeof(size_t));
    if (!p->source || !p->target || !p->offset || !p->target_offset)
        return -1;
    for (size_t i = 0; i <= count; i++)
        p->offset[i] = p->target_offset[i] = k * i;
    const long n = (long)count;
#pragma omp parallel for schedule(static, 4096)
    for (long i = 0; i < n; i++)
        make_pair(p, (size_t)i);
    double s = 0.0;
    for (size_t i = 0; i < 3 * k; i++)
        s += (double)p->motif[i] * p->motif[i];
    p->radius = sqrt(s / (double)k);
    return 0;
}

static ptreg_pair_set set_of(const pairs *p, size_t count, int shared)
{
    return (ptreg_pair_set){count, p->source, p->offset, shared ? p->motif : p->target,
                            shared ? NULL : p->target_offset, p->k};
}

/* ---- runs ---- */

typedef struct answer {
    double *T;
    int *iterations;
    ptreg_batch_stats stats;
} answer;

static int answer_alloc(answer *a, size_t n)
{
    a->T = malloc(16 * n * sizeof *a->T);
    a->iterations = malloc(n * sizeof *a->iterations);
    return a->T && a->iterations ? 0 : -1;
}

static void answer_free(answer *a) { free(a->T), free(a->iterations); }

static void schedule(int full, const ptreg_device *device, ptreg_batch_options *o)
{
    ptreg_batch_options_default(o);
    o->translation = 0;
    o->tol = 0.0;
    o->max_iter = full ? 1000 : 10;
    o->device = *device;
}

/* The best of `repeat` calls (the first call on a device compiles: the
 * caller warms up). */
static int timed(const ptreg_pair_set *set, const ptreg_batch_options *o, int repeat, answer *a)
{
    ptreg_error err;
    ptreg_batch_stats best = {0};
    for (int r = 0; r < repeat; r++) {
        if (ptreg_batch_register(set, o, a->T, a->iterations, NULL, &a->stats, &err)) {
            fprintf(stderr, "batch_gpu: %s\n", err.message);
            return -1;
        }
        if (r == 0 || a->stats.time_ms < best.time_ms)
            best = a->stats;
    }
    a->stats = best;
    return 0;
}

typedef struct parity {
    size_t pairs, beyond, iterations_differ;
    double dq, dt;
} parity;

static parity compare(const answer *cpu, const answer *dev, size_t n, double radius)
{
    parity p = {n, 0, 0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        const double dq = ptreg_transform_quaternion_difference(cpu->T + 16 * i, dev->T + 16 * i);
        double dt = 0.0;
        for (int r = 0; r < 3; r++)
            dt = fmax(dt, fabs(cpu->T[16 * i + 4 * (size_t)r + 3] - dev->T[16 * i + 4 * (size_t)r + 3]) / radius);
        p.dq = fmax(p.dq, dq), p.dt = fmax(p.dt, dt);
        p.beyond += dq > 1e-5;
        p.iterations_differ += cpu->iterations[i] != dev->iterations[i];
    }
    return p;
}

/* ---- the report ---- */

#define MAX_PARITY 64

typedef struct bench_report {
    FILE *md, *json;
    int first_json;
    double target_s; /* the 10^6 x 32-point 10-iteration time (the last device's) */
    char parity[MAX_PARITY][256]; /* rows of the parity table, printed after the timings */
    size_t parity_rows;
} bench_report;

static void report_line(bench_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_line(bench_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_md(r->md, fmt, ap);
    va_end(ap);
}

static void json_row(bench_report *r, const char *kind, const char *device, size_t k, const char *targets, int full,
                     size_t n, const ptreg_batch_stats *s, double cpu_pairs_per_s, const char *layout)
{
    if (!r->json)
        return;
    fprintf(r->json,
            "%s\n  {\"kind\": \"%s\", \"device\": \"%s\", \"name\": \"%s\", \"points\": %zu, \"targets\": \"%s\", "
            "\"iterations\": \"%s\", \"pairs\": %zu, \"time_ms\": %.3f, \"kernel_ms\": %.3f, \"pairs_per_s\": %.1f, "
            "\"gpts\": %.4f, \"cpu_pairs_per_s\": %.1f, \"layout\": \"%s\"}",
            r->first_json ? "" : ",", kind, device, s->isa ? s->isa : "", k, targets, full ? "full" : "10", n,
            s->time_ms, s->kernel_ms, s->pairs_per_s, s->gpts, cpu_pairs_per_s, layout ? layout : "");
    r->first_json = 0;
}

/* ---- the cases ---- */

/* The CPU path on the first pairs, then every size on the device. */
static int run_case(const options *o, const char *device_name, const ptreg_device *device, const pairs *p,
                    int shared, int full, bench_report *r)
{
    const char *targets = shared ? "shared" : "pairs";
    ptreg_batch_options bo;
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    const size_t cpu_n = o->cpu_pairs < p->count ? o->cpu_pairs : p->count;
    answer ref = {0}, got = {0};
    int status = -1;
    if (answer_alloc(&ref, cpu_n) || answer_alloc(&got, p->count))
        goto done;
    ptreg_pair_set set = set_of(p, cpu_n < 64 ? cpu_n : 64, shared);
    schedule(full, &cpu, &bo);
    /* a first call starts the CPU's threads; then the best of two */
    if (cpu_n && (timed(&set, &bo, 1, &ref) || (set = set_of(p, cpu_n, shared), timed(&set, &bo, 2, &ref))))
        goto done;
    schedule(full, device, &bo);
    set = set_of(p, 64 < p->count ? 64 : p->count, shared);
    if (timed(&set, &bo, 1, &got)) /* compiles the kernel (or loads it from the cache) */
        goto done;
    size_t last = set.count; /* pairs in got */
    for (size_t s = 0; s < o->sizes.n; s++) {
        const size_t n = strtoul(o->sizes.item[s], NULL, 10);
        if (n > p->count)
            continue;
        set = set_of(p, n, shared);
        if (timed(&set, &bo, n >= 1000000 && o->repeat > 2 ? 2 : o->repeat, &got))
            goto done;
        last = n;
        const ptreg_batch_stats *st = &got.stats;
        const double speedup = ref.stats.pairs_per_s > 0 ? st->pairs_per_s / ref.stats.pairs_per_s : 0.0;
        report_line(r, "| %zu | %s | %s | %zu | %s | %.1f | %.1f | %.3g | %.3g | %.3g | %.1fx |\n", p->k, targets,
            full ? "full (66)" : "10", n, device_name, st->time_ms, st->kernel_ms, st->pairs_per_s, st->gpts,
            ref.stats.pairs_per_s, speedup);
        json_row(r, "size", device_name, p->k, targets, full, n, st, ref.stats.pairs_per_s, NULL);
        if (n == TARGET_PAIRS && p->k == TARGET_POINTS && !full && shared)
            r->target_s = st->time_ms * 1e-3;
    }
    /* got holds the last run's answers: its first pairs are the CPU's */
    const parity par = compare(&ref, &got, cpu_n < last ? cpu_n : last, p->radius);
    if (r->parity_rows < MAX_PARITY)
        snprintf(r->parity[r->parity_rows++], sizeof r->parity[0],
                 "| %zu | %s | %s | %s | %zu | %.2g | %.2g | %zu | %zu |\n", p->k, targets, full ? "full (66)" : "10",
                 device_name, par.pairs, par.dq, par.dt, par.beyond, par.iterations_differ);
    status = 0;
done:
    answer_free(&ref), answer_free(&got);
    return status;
}

/* The 32-point 10-iteration case in each work-group layout. */
static int run_layouts(const options *o, const char *device_name, const ptreg_device *device, const pairs *p,
                       bench_report *r)
{
    const size_t n = o->layout_pairs < p->count ? o->layout_pairs : p->count;
    answer a = {0};
    ptreg_batch_options bo;
    schedule(0, device, &bo);
    if (answer_alloc(&a, n))
        return -1;
    int status = 0;
    for (size_t l = 0; l < o->layouts.n && !status; l++) {
        setenv("PTREG_BATCH_LAYOUT", o->layouts.item[l], 1);
        for (int shared = 1; shared >= 0 && !status; shared--) {
            ptreg_pair_set warm = set_of(p, 64, shared), set = set_of(p, n, shared);
            status = timed(&warm, &bo, 1, &a) || timed(&set, &bo, o->repeat, &a);
            if (!status) {
                report_line(r, "| %s | %s | %zu | %s | %.1f | %.1f | %.3g |\n", o->layouts.item[l],
                    shared ? "shared" : "pairs", n, device_name, a.stats.time_ms, a.stats.kernel_ms,
                    a.stats.pairs_per_s);
                json_row(r, "layout", device_name, p->k, shared ? "shared" : "pairs", 0, n, &a.stats, 0.0,
                         o->layouts.item[l]);
            }
        }
    }
    unsetenv("PTREG_BATCH_LAYOUT");
    answer_free(&a);
    return status;
}

static size_t largest_size(const options *o)
{
    size_t n = o->cpu_pairs > o->layout_pairs ? o->cpu_pairs : o->layout_pairs;
    for (size_t s = 0; s < o->sizes.n; s++) {
        const size_t v = strtoul(o->sizes.item[s], NULL, 10);
        n = v > n ? v : n;
    }
    return n;
}

static int run_device(const options *o, const char *device_name, bench_report *r, pairs *data, size_t kinds)
{
    ptreg_device device;
    if (ptreg_device_parse(device_name, &device)) {
        fprintf(stderr, "batch_gpu: %s is not a device\n", device_name);
        return -1;
    }
    for (size_t k = 0; k < kinds; k++)
        for (size_t t = 0; t < o->targets.n; t++)
            for (int full = 0; full <= 1; full++)
                if (run_case(o, device_name, &device, &data[k], strcmp(o->targets.item[t], "pairs") != 0, full, r))
                    return -1;
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: batch_gpu --devices D[,D...] [--sizes N,...] [--points K,...] "
                        "[--targets shared,pairs] [--cpu-pairs N] [--repeat R] [--layouts PxT,...] "
                        "[--layout-pairs N] [--md FILE] [--json FILE]\n");
        return 2;
    }
    static bench_report r; /* zero: no rows yet */
    r.md = o.md ? fopen(o.md, "w") : NULL;
    r.json = o.json ? fopen(o.json, "w") : NULL;
    r.first_json = 1;
    if (r.json)
        fprintf(r.json, "[");
    const size_t count = largest_size(&o);
    pairs data[MAX_LIST];
    memset(data, 0, sizeof data);
    int status = 0;
    for (size_t k = 0; k < o.points.n && !status; k++) {
        const double t0 = ptreg_time_ms();
        status = make_pairs(strtoul(o.points.item[k], NULL, 10), count, &data[k]);
        printf("(%zu pairs of %s points made in %.0f ms)\n", count, o.points.item[k], ptreg_time_ms() - t0);
    }
    report_line(&r, "\nBatched EM-ICP, rotation only, fcc motif; CPU path on %d threads; best of %d (2 at 1M)\n\n",
        ptreg_get_num_threads(), o.repeat);
    report_line(&r, "| points | targets | iterations | pairs | device | ms | kernel ms | pairs/s | Gpts/s | CPU pairs/s | "
            "vs CPU |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t d = 0; d < o.devices.n && !status; d++)
        status = run_device(&o, o.devices.item[d], &r, data, o.points.n);
    report_line(&r, "\nParity: the device against the CPU path on the first pairs (quaternion components; translation over "
            "the motif's radius)\n\n| points | targets | iterations | device | pairs | max \\|dq\\| | max \\|dt\\|/r | "
            "beyond 1e-5 | iterations differ |\n|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < r.parity_rows; i++)
        report_line(&r, "%s", r.parity[i]);
    if (!status && o.layouts.n) {
        size_t k32 = 0;
        while (k32 + 1 < o.points.n && data[k32].k != TARGET_POINTS)
            k32++;
        report_line(&r, "\nWork-group layouts (PAIRSxTHREADS), %zu points, 10 iterations\n\n| layout | targets | pairs | "
                "device | ms | kernel ms | pairs/s |\n|---|---|---|---|---|---|---|\n",
            data[k32].k);
        for (size_t d = 0; d < o.devices.n && !status; d++) {
            ptreg_device device;
            status = ptreg_device_parse(o.devices.item[d], &device) ||
                     run_layouts(&o, o.devices.item[d], &device, &data[k32], &r);
        }
    }
    if (r.target_s > 0)
        report_line(&r, "\nTarget: 10^6 pairs of 32 points, 10 iterations, in <= %.2f s: %.3f s (%s)\n", TARGET_SECONDS,
            r.target_s, r.target_s <= TARGET_SECONDS ? "met" : "NOT met");
    for (size_t k = 0; k < o.points.n; k++)
        pairs_free(&data[k]);
    if (r.json) {
        fprintf(r.json, "\n]\n");
        fclose(r.json);
    }
    if (r.md)
        fclose(r.md);
    ptreg_devices_release();
    return status ? 1 : 0;
}
