/* EM-ICP and LDDMM on GPUs against ptreg's CPU path, in one run (bench/gpu/run.sh
 * runs it on the GPU machine; bench/NOTES.md, issue 15, has the predictions).
 *
 *   pairs_gpu --devices cuda:0[,opencl:0] [--emicp-sizes 10000,100000,1000000]
 *             [--precisions fp32,fp16,fp64] [--iters 4] [--cpu-emicp-max 100000]
 *             [--fp64-max 100000] [--cpu-fp64-max 10000]
 *             [--lddmm-sizes 20000,100000] [--cpu-lddmm-max 20000] [--study 1847] [--no-cpu-study]
 *             [--steps 40] [--repeat 3] [--md FILE] [--json FILE]
 *
 * EM-ICP: n = m points, the target uniform in a unit cube, the source the
 * target turned by 5 degrees with noise; --iters iterations (tol 0, the
 * schedule from sigma^2 = 0.01 r^2 down without end), so each run makes
 * n m iters pair terms. Reported: the E-steps' rate (pair terms over the
 * time of the E-steps: the launches and the moments' copy back) and the
 * whole call's (upload and Horn included), median of --repeat (one run
 * above --cpu-emicp-max, where the program is already built); the CPU path
 * on all cores for n <= --cpu-emicp-max, whose transform is compared with
 * the device's. fp64 (double pair terms and exp: a fraction of fp32's rate
 * on any GPU) runs to --fp64-max on the devices, --cpu-fp64-max on the CPU.
 *
 * LDDMM: the lddmm_bench.py shape (a blob surface scaled by 10, sigma 1.5,
 * the target moved by a smooth deformation of amplitude 1). One evaluation
 * (objective and gradient: 2 (T - 1) pair passes of N^2, Euler, fp32 pair
 * terms) per size, median of --repeat, on each device and on the CPU for
 * N <= --cpu-lddmm-max; then the study configuration end to end (--study N
 * landmarks, ptreg_lddmm_options_mtl: T 40, 400 L-BFGS iterations, fp32)
 * on each device and (unless --no-cpu-study) on the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"
#include "reg/lddmm/lddmm_impl.h"

typedef struct options {
    list devices, emicp_sizes, precisions, lddmm_sizes;
    int iters, repeat, steps, cpu_study;
    size_t cpu_emicp_max, cpu_lddmm_max, study, fp64_max, cpu_fp64_max;
    const char *md, *json;
} options;

static int parse(int argc, char **argv, options *o)
{
    static char sizes[] = "10000,100000,1000000", precisions[] = "fp32,fp16,fp64", lsizes[] = "20000,100000";
    memset(o, 0, sizeof *o);
    split(sizes, &o->emicp_sizes);
    split(precisions, &o->precisions);
    split(lsizes, &o->lddmm_sizes);
    o->iters = 4, o->repeat = 3, o->steps = 40, o->cpu_study = 1;
    o->cpu_emicp_max = 100000, o->cpu_lddmm_max = 20000, o->study = 1847;
    o->fp64_max = 100000, o->cpu_fp64_max = 10000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-cpu-study")) {
            o->cpu_study = 0;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        char *v = argv[++i];
        if (!strcmp(a, "--devices"))
            split(v, &o->devices);
        else if (!strcmp(a, "--emicp-sizes"))
            split(v, &o->emicp_sizes);
        else if (!strcmp(a, "--precisions"))
            split(v, &o->precisions);
        else if (!strcmp(a, "--lddmm-sizes"))
            split(v, &o->lddmm_sizes);
        else if (!strcmp(a, "--iters"))
            o->iters = atoi(v);
        else if (!strcmp(a, "--repeat"))
            o->repeat = atoi(v);
        else if (!strcmp(a, "--steps"))
            o->steps = atoi(v);
        else if (!strcmp(a, "--cpu-emicp-max"))
            o->cpu_emicp_max = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--fp64-max"))
            o->fp64_max = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--cpu-fp64-max"))
            o->cpu_fp64_max = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--cpu-lddmm-max"))
            o->cpu_lddmm_max = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--study"))
            o->study = strtoul(v, NULL, 10);
        else if (!strcmp(a, "--md"))
            o->md = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else
            return -1;
    }
    return o->devices.n && o->repeat > 0 && o->iters > 0 && o->steps >= 2 ? 0 : -1;
}

/* ---- EM-ICP ---- */

typedef struct clouds {
    float *source, *target;
    size_t n;
} clouds;

static int make_clouds(size_t n, clouds *c)
{
    c->n = n;
    c->source = malloc(3 * n * sizeof(float));
    c->target = malloc(3 * n * sizeof(float));
    if (!c->source || !c->target)
        return -1;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 15);
    double axis[3] = {1, 2, 3}, T[16];
    ptreg_transform_from_axis_angle(axis, 5.0, NULL, T);
    for (size_t i = 0; i < n; i++) {
        float *t = c->target + 3 * i, *s = c->source + 3 * i;
        for (int k = 0; k < 3; k++)
            t[k] = (float)ptreg_rng_uniform(&rng);
        for (int r = 0; r < 3; r++)
            s[r] = (float)(T[4 * r] * t[0] + T[4 * r + 1] * t[1] + T[4 * r + 2] * t[2] + 0.002 * ptreg_rng_normal(&rng));
    }
    return 0;
}

typedef struct emicp_run {
    double e_gpts, gpts, ms;
    double T[16];
    int ok;
    char error[PTREG_ERROR_MESSAGE_MAX];
} emicp_run;

static emicp_run run_emicp(const clouds *c, const ptreg_device *device, ptreg_precision prec, const options *o)
{
    emicp_run run = {0};
    double e_rates[16], rates[16], ms[16];
    const int reps = c->n > o->cpu_emicp_max ? 1 : o->repeat < 16 ? o->repeat : 16;
    for (int rep = 0; rep < reps; rep++) {
        ptreg_emicp_options eo;
        ptreg_emicp_options_default(&eo);
        eo.device = *device;
        eo.pair.precision = prec;
        eo.max_iter = o->iters;
        eo.tol = 0.0;
        eo.sigma2_init = 0.01 * 0.25; /* r^2 of a unit cube is 1/4 */
        eo.sigma2_final = 1e-30;
        ptreg_emicp_result r;
        ptreg_error err;
        if (ptreg_emicp(c->source, c->n, c->target, c->n, &eo, &r, &err)) {
            snprintf(run.error, sizeof run.error, "%s", err.message);
            return run;
        }
        e_rates[rep] = r.pair_ms > 0 ? r.pair_terms / (r.pair_ms * 1e6) : 0.0;
        rates[rep] = r.gpts;
        ms[rep] = r.time_ms;
        memcpy(run.T, r.transformation, sizeof run.T);
    }
    run.e_gpts = median_of(e_rates, reps);
    run.gpts = median_of(rates, reps);
    run.ms = median_of(ms, reps);
    run.ok = 1;
    return run;
}

static double pose_diff(const double *a, const double *b)
{
    double d = 0.0;
    for (int k = 0; k < 12; k++)
        d = fmax(d, fabs(a[k] - b[k]));
    return d;
}

static void bench_emicp(const options *o, bench_report *rep)
{
    report_line(rep, "\n### EM-ICP, n = m, %d iterations: E-step Gpts/s (whole call Gpts/s, ms)\n\n", o->iters);
    report_line(rep, "| n = m | precision | device | E-step Gpts/s | call Gpts/s | ms | vs CPU (E-step) | transform vs CPU |\n");
    report_line(rep, "|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < o->emicp_sizes.n; s++) {
        const size_t n = strtoul(o->emicp_sizes.item[s], NULL, 10);
        clouds c = {0};
        if (make_clouds(n, &c)) {
            report_line(rep, "| %zu | out of memory |\n", n);
            free(c.source), free(c.target);
            continue;
        }
        for (size_t p = 0; p < o->precisions.n; p++) {
            ptreg_precision prec;
            if (ptreg_precision_parse(o->precisions.item[p], &prec))
                continue;
            const int fp64 = prec == PTREG_PRECISION_FP64;
            if (fp64 && n > o->fp64_max)
                continue;
            const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
            emicp_run ref = {0};
            if (n <= o->cpu_emicp_max && (!fp64 || n <= o->cpu_fp64_max)) {
                ref = run_emicp(&c, &cpu, prec, o);
                report_line(rep, "| %zu | %s | cpu (%d threads) | %.2f | %.2f | %.1f | 1 | |\n", n, o->precisions.item[p],
                    ptreg_get_num_threads(), ref.e_gpts, ref.gpts, ref.ms);
                json_row(rep, "\"kind\": \"emicp\", \"n\": %zu, \"precision\": \"%s\", \"device\": \"cpu\", "
                              "\"e_gpts\": %.6g, \"gpts\": %.6g, \"ms\": %.6g",
                         n, o->precisions.item[p], ref.e_gpts, ref.gpts, ref.ms);
            }
            for (size_t d = 0; d < o->devices.n; d++) {
                ptreg_device dev;
                if (ptreg_device_parse(o->devices.item[d], &dev))
                    continue;
                const emicp_run got = run_emicp(&c, &dev, prec, o);
                if (!got.ok) {
                    report_line(rep, "| %zu | %s | %s | failed: %s |\n", n, o->precisions.item[p], o->devices.item[d], got.error);
                    continue;
                }
                char vs[32] = "", diff[32] = "";
                if (ref.ok) {
                    snprintf(vs, sizeof vs, "%.1f", ref.e_gpts > 0 ? got.e_gpts / ref.e_gpts : 0.0);
                    snprintf(diff, sizeof diff, "%.2g", pose_diff(ref.T, got.T));
                }
                report_line(rep, "| %zu | %s | %s | %.1f | %.1f | %.1f | %s | %s |\n", n, o->precisions.item[p],
                    o->devices.item[d], got.e_gpts, got.gpts, got.ms, vs, diff);
                json_row(rep, "\"kind\": \"emicp\", \"n\": %zu, \"precision\": \"%s\", \"device\": \"%s\", "
                              "\"e_gpts\": %.6g, \"gpts\": %.6g, \"ms\": %.6g, \"cpu_e_gpts\": %.6g",
                         n, o->precisions.item[p], o->devices.item[d], got.e_gpts, got.gpts, got.ms, ref.e_gpts);
            }
        }
        free(c.source), free(c.target);
    }
}

/* ---- LDDMM ---- */

typedef struct landmarks {
    double *q0, *target, *p0;
    size_t n;
} landmarks;

static void landmarks_free(landmarks *l) { free(l->q0), free(l->target), free(l->p0); }

/* lddmm_bench.py's shape: a blob scaled by 10, the target moved by a
 * smooth deformation of amplitude 1; momenta from the displacement. */
static int make_landmarks(size_t n, landmarks *l)
{
    memset(l, 0, sizeof *l);
    ptreg_cloud blob;
    if (ptreg_synth_model(PTREG_SHAPE_BLOB, n, 5, &blob, NULL))
        return -1;
    l->n = blob.n;
    l->q0 = malloc(3 * l->n * sizeof(double));
    l->target = malloc(3 * l->n * sizeof(double));
    l->p0 = malloc(3 * l->n * sizeof(double));
    if (!l->q0 || !l->target || !l->p0) {
        ptreg_cloud_free(&blob);
        return -1;
    }
    for (size_t i = 0; i < l->n; i++) {
        const double x = 10.0 * blob.xyz[3 * i], y = 10.0 * blob.xyz[3 * i + 1], z = 10.0 * blob.xyz[3 * i + 2];
        const double d[3] = {sin(0.3 * y + 0.2 * z), sin(0.25 * z + 0.1 * x), sin(0.2 * x + 0.3 * y)};
        const double q[3] = {x, y, z};
        for (int k = 0; k < 3; k++) {
            l->q0[3 * i + (size_t)k] = q[k];
            l->target[3 * i + (size_t)k] = q[k] + d[k];
            l->p0[3 * i + (size_t)k] = 0.01 * d[k];
        }
    }
    ptreg_cloud_free(&blob);
    return 0;
}

/* Median ms of one objective + gradient evaluation; < 0 on failure. */
static double time_evaluation(const landmarks *l, const ptreg_device *device, const options *o, char *error,
                              size_t size)
{
    ptreg_lddmm_options lo;
    ptreg_lddmm_options_mtl(&lo);
    lo.time_points = o->steps;
    lo.device = *device;
    double *grad = malloc(3 * l->n * sizeof *grad), ms[16];
    const int reps = o->repeat < 16 ? o->repeat : 16;
    for (int rep = 0; grad && rep < reps; rep++) {
        double f;
        ptreg_error err;
        const double t0 = ptreg_time_ms();
        if (ptreg_lddmm_objective(l->q0, l->target, l->n, l->p0, &lo, &f, grad, NULL, &err)) {
            snprintf(error, size, "%s", err.message);
            free(grad);
            return -1.0;
        }
        ms[rep] = ptreg_time_ms() - t0;
    }
    if (!grad) {
        snprintf(error, size, "out of memory");
        return -1.0;
    }
    free(grad);
    return median_of(ms, reps);
}

static void bench_lddmm_evaluations(const options *o, bench_report *rep)
{
    report_line(rep, "\n### LDDMM, one evaluation (objective and gradient), T = %d, Euler, fp32 pair terms\n\n", o->steps);
    report_line(rep, "| N | device | ms | pair terms/s | vs CPU | dense N x N float32 would take |\n|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < o->lddmm_sizes.n; s++) {
        landmarks l;
        if (make_landmarks(strtoul(o->lddmm_sizes.item[s], NULL, 10), &l)) {
            report_line(rep, "| %s | set-up failed |\n", o->lddmm_sizes.item[s]);
            continue;
        }
        const double terms = 2.0 * (o->steps - 1) * (double)l.n * (double)l.n;
        const double dense_gb = (double)l.n * (double)l.n * 4.0 / 1e9;
        char error[PTREG_ERROR_MESSAGE_MAX] = "";
        double cpu_ms = -1.0;
        if (l.n <= o->cpu_lddmm_max) {
            const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
            cpu_ms = time_evaluation(&l, &cpu, o, error, sizeof error);
            report_line(rep, "| %zu | cpu (%d threads) | %.1f | %.3g | 1 | %.1f GB |\n", l.n, ptreg_get_num_threads(), cpu_ms,
                terms / (cpu_ms * 1e-3), dense_gb);
            json_row(rep, "\"kind\": \"lddmm_eval\", \"n\": %zu, \"device\": \"cpu\", \"ms\": %.6g", l.n, cpu_ms);
        }
        for (size_t d = 0; d < o->devices.n; d++) {
            ptreg_device dev;
            if (ptreg_device_parse(o->devices.item[d], &dev))
                continue;
            const double ms = time_evaluation(&l, &dev, o, error, sizeof error);
            if (ms < 0) {
                report_line(rep, "| %zu | %s | failed: %s |\n", l.n, o->devices.item[d], error);
                continue;
            }
            char vs[32] = "";
            if (cpu_ms > 0)
                snprintf(vs, sizeof vs, "%.1f", cpu_ms / ms);
            report_line(rep, "| %zu | %s | %.1f | %.3g | %s | %.1f GB |\n", l.n, o->devices.item[d], ms, terms / (ms * 1e-3), vs,
                dense_gb);
            json_row(rep, "\"kind\": \"lddmm_eval\", \"n\": %zu, \"device\": \"%s\", \"ms\": %.6g, \"cpu_ms\": %.6g",
                     l.n, o->devices.item[d], ms, cpu_ms);
        }
        landmarks_free(&l);
    }
}

static void study_row(bench_report *rep, const landmarks *l, const ptreg_device *device, const char *name, double cpu_s,
                      double *seconds)
{
    ptreg_lddmm_options lo;
    ptreg_lddmm_options_mtl(&lo);
    lo.device = *device;
    ptreg_lddmm_result r;
    ptreg_error err;
    *seconds = -1.0;
    if (ptreg_lddmm_register(l->q0, l->target, l->n, NULL, &lo, &r, &err)) {
        report_line(rep, "| %zu | %s | failed: %s |\n", l->n, name, err.message);
        return;
    }
    *seconds = r.time_ms / 1000.0;
    char vs[32] = "";
    if (cpu_s > 0)
        snprintf(vs, sizeof vs, "%.1f", cpu_s / *seconds);
    report_line(rep, "| %zu | %s | %.2f | %d | %d | %.4g -> %.3g | %.6g | %s | %s |\n", l->n, name, *seconds, r.iterations,
        r.evaluations, r.avg_distance_before, r.avg_distance_after, r.objective, r.stop_detail, vs);
    json_row(rep, "\"kind\": \"lddmm_study\", \"n\": %zu, \"device\": \"%s\", \"seconds\": %.6g, \"iterations\": %d, "
                  "\"evaluations\": %d, \"objective\": %.9g",
             l->n, name, *seconds, r.iterations, r.evaluations, r.objective);
    ptreg_lddmm_result_free(&r);
}

static void bench_lddmm_study(const options *o, bench_report *rep)
{
    landmarks l;
    if (!o->study || make_landmarks(o->study, &l))
        return;
    report_line(rep, "\n### LDDMM, the study configuration end to end (N = %zu, T 40, 400 L-BFGS iterations, fp32; "
             "target <= 1 s on one H100; the study: 32 s on a GTX 980 Ti)\n\n", l.n);
    report_line(rep, "| N | device | s | iterations | evaluations | avg distance | objective | stop | vs CPU |\n");
    report_line(rep, "|---|---|---|---|---|---|---|---|---|\n");
    double cpu_s = -1.0, s;
    if (o->cpu_study) {
        const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
        char name[32];
        snprintf(name, sizeof name, "cpu (%d threads)", ptreg_get_num_threads());
        study_row(rep, &l, &cpu, name, -1.0, &cpu_s);
    }
    for (size_t d = 0; d < o->devices.n; d++) {
        ptreg_device dev;
        if (!ptreg_device_parse(o->devices.item[d], &dev))
            study_row(rep, &l, &dev, o->devices.item[d], cpu_s, &s);
    }
    landmarks_free(&l);
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: pairs_gpu --devices cuda:0[,opencl:0] [--emicp-sizes N,...] [--precisions fp32,...] "
                        "[--iters K] [--cpu-emicp-max N] [--fp64-max N] [--cpu-fp64-max N] [--lddmm-sizes N,...] [--cpu-lddmm-max N] [--study N] "
                        "[--no-cpu-study] [--steps T] [--repeat R] [--md FILE] [--json FILE]\n");
        return 2;
    }
    bench_report rep = {o.md ? fopen(o.md, "w") : NULL, o.json ? fopen(o.json, "w") : NULL, 1};
    if (rep.json)
        fprintf(rep.json, "[");
    report_line(&rep, "EM-ICP and LDDMM: ptreg %s, CPU path on %d threads. Targets on one H100: EM-ICP >= 1000 Gpts/s "
              "fp32 at n = m = 100k; the LDDMM study configuration <= 1 s; each >= 10x the CPU path on 16 cores.\n",
        ptreg_version(), ptreg_get_num_threads());
    if (o.emicp_sizes.n)
        bench_emicp(&o, &rep);
    if (o.lddmm_sizes.n)
        bench_lddmm_evaluations(&o, &rep);
    bench_lddmm_study(&o, &rep);
    if (rep.json) {
        fprintf(rep.json, "\n]\n");
        fclose(rep.json);
    }
    if (rep.md)
        fclose(rep.md);
    ptreg_devices_release();
    return 0;
}
