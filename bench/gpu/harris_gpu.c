/* 3-D Harris on GPUs against ptreg's CPU path, in one run (bench/gpu/run.sh
 * can run it on the GPU machine).
 *
 *   harris_gpu --devices cuda:0[,opencl:0] [--dims 256,256,128] [--window 5]
 *              [--methods direct,tile,separable,zchunk] [--repeat 3] [--md FILE] [--json FILE]
 *
 * The volume: uint8, random boxes of random levels with noise (fixed seed).
 * The CPU path (all cores): ptreg_harris3d, scores and keypoints (default
 * options: relative threshold 0.01), median of --repeat. Each device and
 * method, through the device path's handle (src/feat/harris3d_impl.h):
 *   - resident: the volume already on the device; scores, the keypoints'
 *     max, peaks and sort on the device, the keypoints back (the score
 *     volume stays there);
 *   - with upload: the volume's upload first;
 * each the median of --repeat wall times after a warm-up run (the program
 * built), with the scores' kernels alone beside them, and whether they meet
 * the targets (<= 1 ms resident, <= 3 ms with upload); keypoints are
 * compared with the CPU's. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "feat/harris3d_impl.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"

typedef struct options {
    list devices, methods;
    size_t dims[3];
    int window, repeat;
    const char *md, *json;
} options;

static int parse_dims(char *v, size_t dims[3])
{
    list l;
    split(v, &l);
    if (l.n != 3)
        return -1;
    for (int k = 0; k < 3; k++)
        if (!(dims[k] = strtoul(l.item[k], NULL, 10)))
            return -1;
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    static char methods[] = "direct,tile,separable,zchunk";
    memset(o, 0, sizeof *o);
    split(methods, &o->methods);
    o->dims[0] = 256, o->dims[1] = 256, o->dims[2] = 128;
    o->window = 5, o->repeat = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            return -1;
        char *v = argv[++i];
        if (!strcmp(a, "--devices"))
            split(v, &o->devices);
        else if (!strcmp(a, "--methods"))
            split(v, &o->methods);
        else if (!strcmp(a, "--dims")) {
            if (parse_dims(v, o->dims))
                return -1;
        } else if (!strcmp(a, "--window"))
            o->window = atoi(v);
        else if (!strcmp(a, "--repeat"))
            o->repeat = atoi(v);
        else if (!strcmp(a, "--md"))
            o->md = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else
            return -1;
    }
    return o->devices.n && o->repeat > 0 && o->window >= 3 && o->window % 2 ? 0 : -1;
}

/* ---- the volume and the CPU ---- */

static int make_volume(const size_t dims[3], ptreg_volume *vol)
{
    if (ptreg_volume_alloc(vol, dims[0], dims[1], dims[2], PTREG_VOXEL_U8, NULL))
        return -1;
    size_t n = ptreg_volume_count(vol);
    uint8_t *v = vol->data;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 2024);
    for (size_t i = 0; i < n; i++)
        v[i] = (uint8_t)(10 + 6 * ptreg_rng_uniform(&rng));
    for (int b = 0; b < 200; b++) {
        size_t lo[3], hi[3];
        for (int d = 0; d < 3; d++) {
            lo[d] = (size_t)(ptreg_rng_uniform(&rng) * (double)dims[d]);
            hi[d] = lo[d] + 4 + (size_t)(ptreg_rng_uniform(&rng) * (double)dims[d] / 6);
        }
        uint8_t level = (uint8_t)(60 + 180 * ptreg_rng_uniform(&rng));
        for (size_t z = lo[2]; z < hi[2] && z < dims[2]; z++)
            for (size_t y = lo[1]; y < hi[1] && y < dims[1]; y++)
                for (size_t x = lo[0]; x < hi[0] && x < dims[0]; x++)
                    v[x + dims[0] * (y + dims[1] * z)] = level;
    }
    return 0;
}

static int same_keypoints(const ptreg_keypoint *a, size_t na, const ptreg_keypoint *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].x != b[i].x || a[i].y != b[i].y || a[i].z != b[i].z || a[i].score != b[i].score)
            return 0;
    return 1;
}

/* ---- one device, one method ---- */

typedef struct timings {
    double resident, upload, scores;
    ptreg_device_stats resident_work; /* a call with the volume resident */
    size_t keypoints;
    int same;
} timings;

static ptreg_status run_once(harris3d_device_state *hd, const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                             int method, int upload, double *total_ms, double *scores_ms, ptreg_keypoint **kp,
                             size_t *count, ptreg_device_stats *work, ptreg_error *err)
{
    ptreg_device_stats before;
    ptreg_device_stats_get(&before);
    double t0 = ptreg_time_ms();
    ptreg_status st = upload ? harris3d_device_upload(hd, vol, err) : PTREG_OK;
    double t1 = ptreg_time_ms();
    st = st ? st : harris3d_device_scores(hd, opt, method, NULL, err);
    double t2 = ptreg_time_ms();
    free(*kp);
    *kp = NULL;
    st = st ? st : harris3d_device_keypoints(hd, opt, kp, count, NULL, NULL, NULL, err);
    *total_ms = ptreg_time_ms() - t0;
    *scores_ms = t2 - t1;
    ptreg_device_stats_since(&before, work);
    return st;
}

static ptreg_status bench_method(const options *o, harris3d_device_state *hd, const ptreg_volume *vol,
                                 const ptreg_harris3d_options *opt, int method, const ptreg_harris3d_result *cpu,
                                 timings *t, ptreg_error *err)
{
    double res[64], up[64], sc[64], scratch;
    ptreg_device_stats work;
    int reps = o->repeat < 64 ? o->repeat : 64;
    ptreg_keypoint *kp = NULL;
    size_t count = 0;
    ptreg_status st = run_once(hd, vol, opt, method, 1, &scratch, &scratch, &kp, &count, &work, err); /* builds */
    for (int i = 0; !st && i < reps; i++)
        st = run_once(hd, vol, opt, method, 0, &res[i], &sc[i], &kp, &count, &t->resident_work, err);
    for (int i = 0; !st && i < reps; i++)
        st = run_once(hd, vol, opt, method, 1, &up[i], &scratch, &kp, &count, &work, err);
    if (!st) {
        t->resident = median_of(res, reps);
        t->upload = median_of(up, reps);
        t->scores = median_of(sc, reps);
        t->keypoints = count;
        t->same = same_keypoints(cpu->keypoints, cpu->keypoint_count, kp, count);
    }
    free(kp);
    return st;
}

static int method_of(const char *name)
{
    for (int m = 0; m < PTREG_HARRIS_METHODS; m++)
        if (!strcmp(name, harris3d_method_name(m)))
            return m;
    return -1;
}

static void bench_device(const options *o, bench_report *rep, const char *name, const ptreg_volume *vol,
                         const ptreg_harris3d_options *opt, const ptreg_harris3d_result *cpu)
{
    ptreg_device dev;
    ptreg_error err;
    harris3d_device_state *hd = NULL;
    if (ptreg_device_parse(name, &dev) || harris3d_device_open(&dev, &hd, &err)) {
        report_line(rep, "| %s | - | not available | | | | | | |\n", name);
        return;
    }
    for (size_t i = 0; i < o->methods.n; i++) {
        int m = method_of(o->methods.item[i]);
        timings t = {0};
        if (m < 0 || bench_method(o, hd, vol, opt, m, cpu, &t, &err)) {
            report_line(rep, "| %s | %s | failed: %s | | | | | | |\n", name, o->methods.item[i],
                m < 0 ? "unknown method" : err.message);
            continue;
        }
        const ptreg_device_stats *w = &t.resident_work;
        report_line(rep, "| %s | %s | %.3f | %.3f | %.3f | %s / %s | %.1fx | %zu%s | %llu, %llu / %llu |\n", name,
            o->methods.item[i], t.scores, t.resident, t.upload, t.resident <= 1.0 ? "yes" : "no",
            t.upload <= 3.0 ? "yes" : "no", t.resident > 0 ? cpu->time_ms / t.resident : 0, t.keypoints,
            t.same ? "" : " (NOT AS THE CPU)", (unsigned long long)w->launches, (unsigned long long)w->bytes_to,
            (unsigned long long)w->bytes_from);
        json_row(rep,
                 "\"device\": \"%s\", \"method\": \"%s\", \"scores_ms\": %.4f, \"resident_ms\": %.4f, "
                 "\"upload_ms\": %.4f, \"cpu_ms\": %.4f, \"keypoints\": %zu, \"same_as_cpu\": %s, "
                 "\"resident_launches\": %llu, \"resident_bytes_to\": %llu, \"resident_bytes_from\": %llu",
                 name, o->methods.item[i], t.scores, t.resident, t.upload, cpu->time_ms, t.keypoints,
                 t.same ? "true" : "false", (unsigned long long)w->launches, (unsigned long long)w->bytes_to,
                 (unsigned long long)w->bytes_from);
    }
    harris3d_device_close(hd);
}

static double cpu_run(const options *o, const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                      ptreg_harris3d_result *keep)
{
    double times[64];
    int reps = o->repeat < 64 ? o->repeat : 64;
    for (int i = 0; i < reps; i++) {
        ptreg_harris3d_result_free(keep);
        if (ptreg_harris3d(vol, opt, keep, NULL))
            return -1;
        times[i] = keep->time_ms;
    }
    return median_of(times, reps);
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: harris_gpu --devices cuda:0[,opencl:0] [--dims X,Y,Z] [--window W] "
                        "[--methods direct,tile,separable,zchunk] [--repeat R] [--md FILE] [--json FILE]\n");
        return 2;
    }
    bench_report rep = {o.md ? fopen(o.md, "w") : NULL, o.json ? fopen(o.json, "w") : NULL, 1};
    if (rep.json)
        fprintf(rep.json, "[");
    ptreg_volume vol;
    ptreg_harris3d_options opt;
    ptreg_harris3d_options_default(&opt);
    opt.window = o.window;
    opt.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_harris3d_result cpu = {0};
    double cpu_ms = make_volume(o.dims, &vol) ? -1 : cpu_run(&o, &vol, &opt, &cpu);
    if (cpu_ms < 0) {
        fprintf(stderr, "harris_gpu: the CPU path failed\n");
        return 1;
    }
    cpu.time_ms = cpu_ms;
    report_line(&rep, "3-D Harris: ptreg %s, %zu x %zu x %zu uint8, W = %d; CPU path (%s, %d threads): %.2f ms, %zu keypoints "
              "(median of %d). Targets: <= 1 ms with the volume resident, <= 3 ms with its upload.\n\n",
        ptreg_version(), o.dims[0], o.dims[1], o.dims[2], o.window, cpu.isa, ptreg_get_num_threads(), cpu_ms,
        cpu.keypoint_count, o.repeat);
    report_line(&rep, "| device | method | scores ms | resident ms | with upload ms | <= 1 / <= 3 | vs CPU | keypoints "
                      "| resident: launches, bytes to / from |\n");
    report_line(&rep, "|---|---|---|---|---|---|---|---|---|\n");
    for (size_t d = 0; d < o.devices.n; d++)
        bench_device(&o, &rep, o.devices.item[d], &vol, &opt, &cpu);
    ptreg_harris3d_result_free(&cpu);
    ptreg_volume_free(&vol);
    if (rep.json) {
        fprintf(rep.json, "\n]\n");
        fclose(rep.json);
    }
    if (rep.md)
        fclose(rep.md);
    ptreg_devices_release();
    return 0;
}
