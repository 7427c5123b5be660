/* The device parity suite's 3-D Harris (included by test_device_parity.c):
 * volumes of odd sizes (1x1x1 to 64x48x40) of random boxes with noise, in
 * u8, u16, i16 (converted on the host) and f32, windows 3, 5 and 7, both
 * borders, every device method (direct, tile, separable, zchunk) against
 * the CPU fast path:
 *   - scores within 1e-5 of the CPU's largest |score| (the kernels sum in
 *     the CPU's order, so the bits are expected equal: reported);
 *   - the same keypoints (positions, scores and order), local maxima,
 *     threshold and largest score, with a relative threshold, an absolute
 *     0 (every positive maximum: up to hundreds, through the sort), and a
 *     relative one with min_distance and top;
 *   - a second run of the method gives the same bits;
 * then the public calls on the device (isa = the device's name), and the
 * refusals: the reference loop on a device, an unknown PTREG_HARRIS_METHOD;
 * the sort of many peaks (tens of runs, two merge levels, ties); and the
 * resident volume: a repeated detection uploads nothing in at most six
 * launches and allocates nothing. */
#include "feat/harris3d_impl.h"
#include "hooks.h"
#include "core/numeric.h"

typedef enum harris_select { SELECT_RELATIVE, SELECT_ALL, SELECT_THIN } harris_select;

typedef struct harris_case {
    size_t nx, ny, nz;
    int window;
    ptreg_harris_border border;
    ptreg_voxel_type type;
    harris_select select;
    uint64_t seed;
} harris_case;

static const harris_case harris_cases[] = {
    {1, 1, 1, 3, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_F32, SELECT_ALL, 81},
    {1, 1, 1, 5, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_U8, SELECT_RELATIVE, 82},
    {5, 7, 9, 3, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_U16, SELECT_ALL, 83},
    {5, 7, 9, 5, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_U8, SELECT_ALL, 84},
    {5, 7, 9, 3, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_I16, SELECT_RELATIVE, 85},
    {31, 17, 23, 5, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_U8, SELECT_RELATIVE, 86},
    {31, 17, 23, 7, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_F32, SELECT_THIN, 87},
    {31, 17, 23, 3, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_U16, SELECT_ALL, 88},
    {64, 48, 40, 5, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_U8, SELECT_ALL, 89},
    {64, 48, 40, 3, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_F32, SELECT_THIN, 90},
};

/* Random boxes of random levels over a background, plus noise; u8 boxes
 * of one level and no noise in half the volume make plateaus of equal
 * scores (the raster-order tie rule). */
static int harris_volume(const harris_case *hc, ptreg_volume *vol)
{
    if (ptreg_volume_alloc(vol, hc->nx, hc->ny, hc->nz, hc->type, NULL))
        return -1;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, hc->seed);
    size_t n = hc->nx * hc->ny * hc->nz;
    double *v = calloc(n, sizeof *v);
    if (!v)
        return -1;
    for (int b = 0; b < 12; b++) {
        size_t lo[3], hi[3], dims[3] = {hc->nx, hc->ny, hc->nz};
        for (int d = 0; d < 3; d++) {
            lo[d] = (size_t)(ptreg_rng_uniform(&rng) * (double)dims[d]);
            hi[d] = lo[d] + 1 + (size_t)(ptreg_rng_uniform(&rng) * (double)dims[d] / 2);
        }
        double level = 40 + 150 * ptreg_rng_uniform(&rng);
        for (size_t z = lo[2]; z < hi[2] && z < hc->nz; z++)
            for (size_t y = lo[1]; y < hi[1] && y < hc->ny; y++)
                for (size_t x = lo[0]; x < hi[0] && x < hc->nx; x++)
                    v[x + hc->nx * (y + hc->ny * z)] = level;
    }
    for (size_t i = 0; i < n; i++) {
        double noise = i < n / 2 ? 0 : 8 * ptreg_rng_uniform(&rng);
        double x = v[i] + noise;
        switch (hc->type) {
        case PTREG_VOXEL_U8: ((uint8_t *)vol->data)[i] = (uint8_t)x; break;
        case PTREG_VOXEL_U16: ((uint16_t *)vol->data)[i] = (uint16_t)(x * 250); break;
        case PTREG_VOXEL_I16: ((int16_t *)vol->data)[i] = (int16_t)(x * 100 - 9000); break;
        default: ((float *)vol->data)[i] = (float)(x * 0.37 + 0.001 * (double)(i % 7)); break;
        }
    }
    free(v);
    return 0;
}

static void harris_case_options(const harris_case *hc, const ptreg_device *device, ptreg_harris3d_options *o)
{
    ptreg_harris3d_options_default(o);
    o->window = hc->window;
    o->border = hc->border;
    o->device = *device;
    if (hc->select == SELECT_ALL) {
        o->threshold_mode = PTREG_HARRIS_ABSOLUTE;
        o->threshold = 0;
    } else if (hc->select == SELECT_THIN) {
        o->threshold = 1e-3;
        o->min_distance = 4;
        o->top = 20;
    }
}

/* One method's run on the resident volume: scores and keypoints back. */
typedef struct harris_run {
    float *scores;
    ptreg_keypoint *kp;
    size_t count, maxima;
    double thr;
    float max;
} harris_run;

static void harris_run_free(harris_run *r)
{
    free(r->scores);
    free(r->kp);
    memset(r, 0, sizeof *r);
}

static ptreg_status harris_device_run(harris3d_device_state *hd, const ptreg_harris3d_options *o, int method, size_t n,
                                      harris_run *r, ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    if (!(r->scores = malloc(n * sizeof(float))))
        return PTREG_ERR_NOMEM;
    int used;
    ptreg_status st = harris3d_device_scores(hd, o, method, &used, err);
    st = st ? st : harris3d_device_keypoints(hd, o, &r->kp, &r->count, &r->thr, &r->maxima, &r->max, err);
    return st ? st : harris3d_device_read_scores(hd, r->scores, err);
}

static int same_keypoints(const ptreg_keypoint *a, size_t na, const ptreg_keypoint *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].x != b[i].x || a[i].y != b[i].y || a[i].z != b[i].z || !same_floats(&a[i].score, &b[i].score, 1))
            return 0;
    return 1;
}

/* max |device - cpu| / max |cpu| (0 when the CPU's scores are all 0) */
static double harris_score_error(const float *cpu, const float *dev, size_t n)
{
    double scale = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fabs(cpu[i]) > scale ? fabs(cpu[i]) : scale;
        double d = fabs((double)cpu[i] - dev[i]);
        diff = d > diff || d != d ? d : diff;
    }
    return scale > 0 ? diff / scale : diff;
}

/* Every method on one case; one printed line per method. */
static void run_harris_case(const ptreg_device *device, const harris_case *hc, int *passed, int *failed)
{
    static const char *const types[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "f64"};
    ptreg_volume vol;
    ptreg_harris3d_options o, cpu_o;
    ptreg_harris3d_result cpu = {0};
    harris3d_device_state *hd = NULL;
    ptreg_error err = {0};
    harris_case_options(hc, device, &o);
    cpu_o = o;
    cpu_o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    size_t n = hc->nx * hc->ny * hc->nz;
    int setup = !harris_volume(hc, &vol) && !ptreg_harris3d(&vol, &cpu_o, &cpu, &err) &&
                !harris3d_device_open(device, &hd, &err) && !harris3d_device_upload(hd, &vol, &err);
    for (int m = 0; m < PTREG_HARRIS_METHODS; m++) {
        double t0 = ptreg_time_ms();
        harris_run a = {0}, b = {0};
        char detail[PTREG_ERROR_MESSAGE_MAX + 200] = "";
        int ok = setup;
        if (!setup)
            snprintf(detail, sizeof detail, "setup: %s", err.message);
        ptreg_status st = ok ? harris_device_run(hd, &o, m, n, &a, &err) : PTREG_OK;
        st = st ? st : ok ? harris_device_run(hd, &o, m, n, &b, &err) : PTREG_OK;
        if (ok && st) {
            ok = 0;
            snprintf(detail, sizeof detail, "%s", err.message);
        } else if (ok) {
            digest(a.scores, n * sizeof *a.scores);
            digest(a.kp, a.count * sizeof *a.kp);
            double e = harris_score_error(cpu.scores, a.scores, n);
            int bits = !memcmp(cpu.scores, a.scores, n * sizeof(float));
            int kp = same_keypoints(cpu.keypoints, cpu.keypoint_count, a.kp, a.count) && cpu.local_maxima == a.maxima &&
                     same_double(cpu.threshold, a.thr) && same_floats(&cpu.max_score, &a.max, 1);
            int again = !memcmp(a.scores, b.scores, n * sizeof(float)) && same_keypoints(a.kp, a.count, b.kp, b.count);
            ok = e <= 1e-5 && kp && again;
            snprintf(detail, sizeof detail, "scores max|d|/max|s| %.2g (%s), %zu keypoints of %zu maxima %s, rerun %s",
                     e, bits ? "bits equal" : "bits differ", a.count, a.maxima, kp ? "as the CPU" : "NOT AS THE CPU",
                     again ? "same bits" : "DIFFERENT BITS");
        }
        printf("%s harris3d   %zux%zux%zu W%d %-5s %-3s %-9s: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL",
               hc->nx, hc->ny, hc->nz, hc->window, hc->border == PTREG_HARRIS_BORDER_SKIP ? "skip" : "clamp",
               types[hc->type], harris3d_method_name(m), detail, ptreg_time_ms() - t0, take_digest());
        *passed += ok;
        *failed += !ok;
        harris_run_free(&a);
        harris_run_free(&b);
    }
    harris3d_device_close(hd);
    ptreg_harris3d_result_free(&cpu);
    ptreg_volume_free(&vol);
}

/* The public calls with the device in the options, and the refusals. */
static int run_harris_public(const ptreg_device *device, char *detail, size_t size)
{
    const harris_case hc = {31, 17, 23, 5, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_U8, SELECT_THIN, 91};
    ptreg_volume vol;
    ptreg_harris3d_options o, cpu_o;
    ptreg_harris3d_result dev = {0}, cpu = {0};
    ptreg_error err = {0};
    if (harris_volume(&hc, &vol))
        return 0;
    harris_case_options(&hc, device, &o);
    cpu_o = o;
    cpu_o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    size_t n = ptreg_volume_count(&vol), count = 0;
    float *scores = malloc(n * sizeof *scores);
    ptreg_keypoint *kp = NULL;
    int ok = scores && !ptreg_harris3d(&vol, &cpu_o, &cpu, &err) && !ptreg_harris3d(&vol, &o, &dev, &err) &&
             !ptreg_harris3d_scores(&vol, &o, scores, &err) &&
             !ptreg_harris3d_keypoints(cpu.scores, vol.nx, vol.ny, vol.nz, &o, &kp, &count, NULL, NULL, &err);
    int same = ok && same_floats(cpu.scores, dev.scores, n) && same_floats(cpu.scores, scores, n) &&
               same_keypoints(cpu.keypoints, cpu.keypoint_count, dev.keypoints, dev.keypoint_count) &&
               same_keypoints(cpu.keypoints, cpu.keypoint_count, kp, count) &&
               !strcmp(dev.isa, ptreg_device_name(device));
    o.reference = 1;
    ptreg_harris3d_result r = {0};
    ptreg_error ref_err;
    int refused = ptreg_harris3d(&vol, &o, &r, &ref_err) == PTREG_ERR_UNSUPPORTED && strstr(ref_err.message, "CPU");
    o.reference = 0;
    setenv("PTREG_HARRIS_METHOD", "fastest", 1);
    ptreg_error env_err;
    int env = ptreg_harris3d(&vol, &o, &r, &env_err) == PTREG_ERR_ARG && strstr(env_err.message, "fastest");
    unsetenv("PTREG_HARRIS_METHOD");
    snprintf(detail, size, "%s; isa '%s'; %zu keypoints; scores, keypoints, run %s; reference %s; bad method %s",
             ok ? "ran" : err.message, ok ? dev.isa : "", dev.keypoint_count, same ? "as the CPU" : "NOT AS THE CPU",
             refused ? "refused" : "NOT REFUSED", env ? "refused" : "NOT REFUSED");
    free(scores);
    free(kp);
    ptreg_harris3d_result_free(&dev);
    ptreg_harris3d_result_free(&cpu);
    ptreg_volume_free(&vol);
    return ok && same && refused && env;
}

/* Scores with a peak at every even voxel (147456 of them: 72 sorted runs,
 * two merge levels), in 61 levels so that most peaks tie, through the
 * device's selection against the CPU's: all, the best 1000, thinned. */
static int run_harris_sort(const ptreg_device *device, char *detail, size_t size)
{
    const size_t nx = 96, ny = 96, nz = 128, n = nx * ny * nz;
    float *scores = calloc(n, sizeof *scores);
    if (!scores)
        return 0;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 92);
    for (size_t z = 0; z < nz; z += 2)
        for (size_t y = 0; y < ny; y += 2)
            for (size_t x = 0; x < nx; x += 2)
                scores[x + nx * (y + ny * z)] = 1.0f + (float)(int)(61 * ptreg_rng_uniform(&rng));
    static const char *const names[] = {"all", "top 1000", "thinned"};
    int ok = 1, at = 0;
    for (int k = 0; k < 3; k++) {
        ptreg_harris3d_options o;
        ptreg_harris3d_options_default(&o);
        o.threshold_mode = PTREG_HARRIS_ABSOLUTE;
        o.threshold = 0;
        o.top = k == 0 ? 0 : k == 1 ? 1000 : 500;
        o.min_distance = k == 2 ? 3 : 0;
        o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
        ptreg_keypoint *a = NULL, *b = NULL;
        size_t na = 0, nb = 0, ma = 0, mb = 0;
        ptreg_error err = {0};
        int ran = !ptreg_harris3d_keypoints(scores, nx, ny, nz, &o, &a, &na, NULL, &ma, &err);
        o.device = *device;
        ran = ran && !ptreg_harris3d_keypoints(scores, nx, ny, nz, &o, &b, &nb, NULL, &mb, &err);
        int same = ran && ma == mb && ma == 147456 && same_keypoints(a, na, b, nb);
        at += snprintf(detail + at, size - (size_t)at, "%s%s: %zu of %zu %s", k ? "; " : "", names[k], nb, mb,
                       !ran   ? err.message
                       : same ? "as the CPU"
                              : "NOT AS THE CPU");
        ok = ok && same;
        free(a);
        free(b);
    }
    free(scores);
    return ok;
}

/* A volume resident on the device: the first detection as ptreg_harris3d
 * on the CPU; the second uploads nothing, allocates nothing, launches at
 * most six kernels and copies no scores back; a new volume set in place
 * (another size) detects as the CPU does. */
static int run_harris_resident(const ptreg_device *device, char *detail, size_t size)
{
    const harris_case small = {31, 17, 23, 5, PTREG_HARRIS_BORDER_SKIP, PTREG_VOXEL_U8, SELECT_ALL, 93};
    const harris_case other = {40, 36, 30, 3, PTREG_HARRIS_BORDER_CLAMP, PTREG_VOXEL_F32, SELECT_ALL, 94};
    ptreg_volume v1, v2;
    if (harris_volume(&small, &v1))
        return 0;
    if (harris_volume(&other, &v2)) {
        ptreg_volume_free(&v1);
        return 0;
    }
    ptreg_harris3d_options o, cpu_o;
    harris_case_options(&small, device, &o);
    cpu_o = o;
    cpu_o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_harris3d_volume *hv = NULL;
    ptreg_harris3d_result first = {0}, again = {0}, moved = {0}, cpu1 = {0}, cpu2 = {0};
    ptreg_device_stats before, used = {0};
    ptreg_error err = {0};
    int ran = !ptreg_harris3d(&v1, &cpu_o, &cpu1, &err) && !ptreg_harris3d(&v2, &cpu_o, &cpu2, &err) &&
              !ptreg_harris3d_volume_create(&v1, &o, &hv, &err) && !ptreg_harris3d_volume_run(hv, &o, 1, &first, &err);
    ptreg_device_stats_get(&before);
    ran = ran && !ptreg_harris3d_volume_run(hv, &o, 0, &again, &err);
    ptreg_device_stats_since(&before, &used);
    ran = ran && !ptreg_harris3d_volume_set(hv, &v2, &err) && !ptreg_harris3d_volume_run(hv, &o, 0, &moved, &err);
    size_t n = ptreg_volume_count(&v1);
    int same = ran && first.scores && same_floats(first.scores, cpu1.scores, n) &&
               same_keypoints(cpu1.keypoints, cpu1.keypoint_count, first.keypoints, first.keypoint_count) &&
               same_keypoints(cpu1.keypoints, cpu1.keypoint_count, again.keypoints, again.keypoint_count) &&
               !again.scores &&
               same_keypoints(cpu2.keypoints, cpu2.keypoint_count, moved.keypoints, moved.keypoint_count);
    int quiet = ran && used.bytes_to == 0 && used.allocs == 0 && used.launches <= 6 &&
                used.bytes_from < n * sizeof(float);
    snprintf(detail, size,
             "%s; %zu and %zu keypoints %s; a repeat: %llu launches, %llu bytes up, %llu back, "
             "%llu allocations%s",
             ran ? "ran" : err.message, cpu1.keypoint_count, cpu2.keypoint_count,
             same ? "as the CPU" : "NOT AS THE CPU", (unsigned long long)used.launches,
             (unsigned long long)used.bytes_to, (unsigned long long)used.bytes_from, (unsigned long long)used.allocs,
             quiet ? "" : " (TOO MUCH)");
    ptreg_harris3d_volume_destroy(hv);
    ptreg_harris3d_result *all[] = {&first, &again, &moved, &cpu1, &cpu2};
    for (size_t i = 0; i < 5; i++)
        ptreg_harris3d_result_free(all[i]);
    ptreg_volume_free(&v1);
    ptreg_volume_free(&v2);
    return same && quiet;
}

static void run_harris_operations(const ptreg_device_info *info, int *passed, int *failed)
{
    double t0 = ptreg_time_ms();
    for (size_t k = 0; k < sizeof harris_cases / sizeof harris_cases[0]; k++)
        run_harris_case(&info->device, &harris_cases[k], passed, failed);
    char detail[PTREG_ERROR_MESSAGE_MAX + 300] = "";
    double t1 = ptreg_time_ms();
    int ok = run_harris_public(&info->device, detail, sizeof detail);
    printf("%s harris3d   public calls: %s (%.0f ms)\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t1);
    *passed += ok;
    *failed += !ok;
    t1 = ptreg_time_ms();
    ok = run_harris_sort(&info->device, detail, sizeof detail);
    printf("%s harris3d   sort of many peaks: %s (%.0f ms)\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t1);
    *passed += ok;
    *failed += !ok;
    t1 = ptreg_time_ms();
    ok = run_harris_resident(&info->device, detail, sizeof detail);
    printf("%s harris3d   resident volume: %s (%.0f ms; all harris3d %.0f ms)\n", ok ? "ok  " : "FAIL", detail,
           ptreg_time_ms() - t1, ptreg_time_ms() - t0);
    *passed += ok;
    *failed += !ok;
}
