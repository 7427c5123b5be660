/* The device parity suite's PFH and FPFH (included by test_device_parity.c):
 * clouds on a lumpy sphere (normals from the CPU) of 300 to 3000 points,
 * with lone points far out, points repeated (ties at distance 0) and a few
 * non-finite normals; k-NN (k beyond n too), radius and hybrid
 * neighborhoods; FPFH in both conventions and PFH; against the CPU path:
 *   - the device's neighbor lists are the CPU's (sorted lists: the same
 *     indices and distance bits);
 *   - every bin within 0.01 of the CPU's, NaN rows in the same places and
 *     the same missing count; a row off by more is counted and printed
 *     (a pair within a float ulp of a bin edge where the device's acos or
 *     atan2 rounds the other way): at most 0.1% of rows may be;
 *   - a second device run gives the same bits;
 * and the resident model (ptreg_features_model): its rows are the one-off
 * calls' bits, a repeated call launches one kernel, uploads nothing and
 * copies back only the rows asked for. */
#include "feat/neighborhood.h"
#include "feat/pfh_impl.h"
#include "hooks.h"
#include "core/numeric.h"

typedef enum feat_op { FEAT_OP_FPFH_PCL, FEAT_OP_FPFH_OPEN3D, FEAT_OP_PFH } feat_op;

typedef struct feat_case {
    feat_op op;
    size_t n;        /* points on the sphere, before the extras */
    size_t k;        /* neighborhood: k */
    double radius_n; /* radius in mean spacings (0: none) */
    int extras;      /* lone points, repeats and non-finite normals */
    uint64_t seed;
    int single; /* k-NN lists by one search per point (PTREG_NN_DEVICE_KNN=single), not by groups */
} feat_case;

static const feat_case feat_cases[] = {
    {FEAT_OP_FPFH_PCL, 300, 12, 0, 1, 91, 0},
    {FEAT_OP_FPFH_OPEN3D, 300, 12, 0, 1, 92, 0},
    {FEAT_OP_PFH, 300, 12, 0, 1, 93, 0},
    {FEAT_OP_FPFH_PCL, 5, 10, 0, 0, 94, 0},
    {FEAT_OP_FPFH_PCL, 1000, 0, 2.5, 1, 95, 0},
    {FEAT_OP_FPFH_OPEN3D, 1000, 0, 2.5, 1, 96, 0},
    {FEAT_OP_PFH, 1000, 0, 2.0, 1, 97, 0},
    {FEAT_OP_FPFH_PCL, 1000, 30, 2.0, 1, 98, 0},
    {FEAT_OP_PFH, 1000, 20, 2.0, 1, 99, 0},
    {FEAT_OP_FPFH_PCL, 3000, 40, 0, 1, 100, 0},
    {FEAT_OP_FPFH_OPEN3D, 3000, 0, 3.0, 0, 101, 0},
    /* k-NN by groups falls back to one search per point: k beyond a leaf;
     * a lone point's chunk, whose gather overflows */
    {FEAT_OP_FPFH_PCL, 1000, 300, 0, 1, 102, 0},
    {FEAT_OP_FPFH_OPEN3D, 4000, 20, 0, 1, 103, 0},
    {FEAT_OP_FPFH_PCL, 1000, 30, 2.0, 1, 104, 1},
    {FEAT_OP_PFH, 300, 12, 0, 1, 105, 1},
};

static const char *feat_op_name(feat_op op)
{
    return op == FEAT_OP_PFH ? "pfh" : op == FEAT_OP_FPFH_OPEN3D ? "fpfh/o3d" : "fpfh/pcl";
}

/* A lumpy unit sphere; extras: 3 lone points far out, every 10th point
 * repeated twice more, the normals of 3 points NaN. */
static int feat_cloud(const feat_case *fc, float **xyz, float **normals, size_t *count)
{
    const size_t n = fc->n, extra = fc->extras ? 3 + 2 * (n / 10) : 0, total = n + extra;
    float *p = malloc(3 * total * sizeof *p), *nv = malloc(3 * total * sizeof *nv);
    if (!p || !nv) {
        free(p);
        free(nv);
        return -1;
    }
    ptreg_rng rng;
    ptreg_rng_seed(&rng, fc->seed);
    for (size_t i = 0; i < n; i++) {
        double v[3], len = 0;
        for (int a = 0; a < 3; a++) {
            v[a] = ptreg_rng_normal(&rng);
            len += v[a] * v[a];
        }
        len = sqrt(len) / (1.0 + 0.1 * sin(3 * v[0] / sqrt(len)));
        for (int a = 0; a < 3; a++)
            p[3 * i + (size_t)a] = (float)(v[a] / len);
    }
    size_t at = n;
    for (size_t i = 0; fc->extras && i < n; i += 10)
        for (int r = 0; r < 2; r++, at++)
            memcpy(p + 3 * at, p + 3 * i, 3 * sizeof *p);
    for (int l = 0; fc->extras && l < 3; l++, at++)
        for (int a = 0; a < 3; a++)
            p[3 * at + (size_t)a] = (float)(50.0 * (l + 1) + a);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors.k = 10;
    if (ptreg_normals(p, total, &no, nv, NULL, NULL, NULL)) {
        free(p);
        free(nv);
        return -1;
    }
    for (size_t j = 0; fc->extras && j < 3; j++)
        nv[3 * (7 + 97 * j) + j] = NAN;
    *xyz = p;
    *normals = nv;
    *count = total;
    return 0;
}

static ptreg_neighborhood feat_neighborhood(const feat_case *fc)
{
    ptreg_neighborhood nb = {fc->k, 0};
    if (fc->radius_n > 0) /* the mean spacing of n points on the unit sphere */
        nb.radius = fc->radius_n * sqrt(4.0 * 3.14159265358979 / (double)fc->n);
    return nb;
}

/* The device's lists against the CPU's sorted table: -1 for an error. */
static int feat_lists_same(const ptreg_device *device, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                           size_t *max_count, char *detail, size_t size)
{
    ptreg_kdtree *tree;
    feat_table table;
    feat_device_lists dl;
    ptreg_error err;
    if (ptreg_kdtree_create(xyz, n, NULL, &tree, &err))
        return -1;
    ptreg_status st = feat_table_build(tree, xyz, n, nb, 1, NN_SORTED, &table, &err);
    ptreg_kdtree_destroy(tree);
    if (st)
        return -1;
    if (feat_device_neighbors(device, xyz, n, nb, &dl, &err)) {
        snprintf(detail, size, "device lists: %.400s", err.message);
        feat_table_free(&table);
        return 0;
    }
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        const nn_list *l = &table.list[i];
        int same = dl.count[i] == l->count && !memcmp(dl.index + dl.start[i], l->index, l->count * sizeof *l->index) &&
                   same_floats(dl.dist2 + dl.start[i], l->dist2, l->count);
        differ += !same;
    }
    *max_count = dl.max_count;
    snprintf(detail, size, "lists: %zu of %zu differ (longest %zu)", differ, n, dl.max_count);
    feat_device_lists_free(&dl);
    feat_table_free(&table);
    return differ == 0;
}

static ptreg_status feat_run_op(const feat_case *fc, const ptreg_device *device, const float *xyz, const float *normals,
                                size_t n, float *out, size_t *missing, ptreg_error *err)
{
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    o.neighbors = feat_neighborhood(fc);
    o.convention = fc->op == FEAT_OP_FPFH_OPEN3D ? PTREG_FPFH_OPEN3D : PTREG_FPFH_PCL;
    o.device = *device;
    return fc->op == FEAT_OP_PFH ? ptreg_pfh(xyz, normals, n, &o, out, missing, err)
                                 : ptreg_fpfh(xyz, normals, n, &o, out, missing, err);
}

/* Rows whose bins differ by more than 0.01 (NaN where the other is not
 * counts), and the largest difference elsewhere. */
static size_t feat_rows_off(const float *ref, const float *got, size_t n, size_t bins, double *worst)
{
    size_t off = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        int bad = 0;
        for (size_t b = 0; b < bins; b++) {
            float r = ref[bins * i + b], g = got[bins * i + b];
            if (isnan(r) || isnan(g)) {
                bad |= isnan(r) != isnan(g);
                continue;
            }
            double d = fabs((double)r - (double)g);
            bad |= d > 0.01; /* nan-ok: d is a number here (NaNs above) */
            *worst = d > *worst && d <= 0.01 ? d : *worst;
        }
        off += bad;
    }
    return off;
}

static int run_feature_case(const ptreg_device *device, const feat_case *fc, char *detail, size_t size)
{
    float *xyz, *normals;
    size_t n, max_count = 0;
    if (feat_cloud(fc, &xyz, &normals, &n))
        return 0;
    ptreg_neighborhood nb = feat_neighborhood(fc);
    char lists[PTREG_ERROR_MESSAGE_MAX + 64];
    int ok = feat_lists_same(device, xyz, n, &nb, &max_count, lists, sizeof lists);
    const size_t bins = fc->op == FEAT_OP_PFH ? PTREG_PFH_BINS : PTREG_FPFH_BINS;
    float *ref = malloc(n * bins * sizeof *ref), *got = malloc(n * bins * sizeof *got),
          *again = malloc(n * bins * sizeof *again);
    size_t miss_ref = 0, miss_got = 0, miss_again = 0;
    ptreg_error err = {0};
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    ptreg_status st = !ref || !got || !again ? PTREG_ERR_NOMEM : PTREG_OK;
    st = st ? st : feat_run_op(fc, &cpu, xyz, normals, n, ref, &miss_ref, &err);
    st = st ? st : feat_run_op(fc, device, xyz, normals, n, got, &miss_got, &err);
    st = st ? st : feat_run_op(fc, device, xyz, normals, n, again, &miss_again, &err);
    if (st) {
        snprintf(detail, size, "%s; error: %s", lists, err.message);
        ok = 0;
    } else {
        double worst;
        digest(got, n * bins * sizeof *got);
        size_t off = feat_rows_off(ref, got, n, bins, &worst);
        int same_bits = !memcmp(got, again, n * bins * sizeof *got) && miss_got == miss_again;
        ok = ok > 0 && miss_ref == miss_got && same_bits && (double)off <= 0.001 * (double)n;
        snprintf(detail, size,
                 "%s; %zu rows off by > 0.01 (allowed %zu), largest other diff %.2g; missing %zu/%zu; "
                 "rerun %s",
                 lists, off, (size_t)(0.001 * (double)n), worst, miss_got, miss_ref,
                 same_bits ? "same bits" : "DIFFERENT BITS");
    }
    free(ref);
    free(got);
    free(again);
    free(xyz);
    free(normals);
    return ok;
}

typedef ptreg_status (*model_rows_fn)(ptreg_features_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                      size_t count, float *out, size_t *missing, ptreg_error *err);

/* One call on the model, its device work counted. */
static ptreg_status model_call(model_rows_fn fn, ptreg_features_model *m, const ptreg_features_options *o,
                               const uint32_t *which, size_t count, float *out, ptreg_device_stats *used,
                               ptreg_error *err)
{
    ptreg_device_stats before;
    ptreg_device_stats_get(&before);
    ptreg_status st = fn(m, o, which, count, out, NULL, err);
    ptreg_device_stats_since(&before, used);
    return st;
}

/* FPFH, FPFH again, 40 points picked (repeats, any order), then PFH and a
 * radius FPFH on one model against the one-off calls (the same bits). */
static int run_feature_model(const ptreg_device *device, char *detail, size_t size)
{
    const feat_case fc = {FEAT_OP_FPFH_PCL, 1000, 30, 0, 1, 102, 0};
    float *xyz, *normals;
    size_t n;
    if (feat_cloud(&fc, &xyz, &normals, &n))
        return 0;
    enum { PICKED = 40 };
    uint32_t which[PICKED];
    for (size_t i = 0; i < PICKED; i++)
        which[i] = (uint32_t)((i * 7919 + 13) % n / (i % 5 == 4 ? 2 : 1));
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    o.neighbors.k = 30;
    o.device = *device;
    ptreg_features_options radius = o;
    radius.neighbors.k = 0;
    radius.neighbors.radius = 0.15;
    float *once = malloc(n * PTREG_PFH_BINS * sizeof *once), *got = malloc(n * PTREG_PFH_BINS * sizeof *got);
    ptreg_features_model *m = NULL;
    ptreg_device_stats first = {0}, again = {0}, picked = {0}, pfh = {0};
    ptreg_error err = {0};
    const size_t row = PTREG_FPFH_BINS * sizeof(float);
    int ok = once && got && !ptreg_fpfh(xyz, normals, n, &o, once, NULL, &err) &&
             !ptreg_features_model_create(xyz, normals, n, &o, &m, &err) &&
             !model_call(ptreg_features_model_fpfh, m, &o, NULL, 0, got, &first, &err);
    int same = ok && !memcmp(once, got, n * row);
    ok = ok && !model_call(ptreg_features_model_fpfh, m, &o, NULL, 0, got, &again, &err);
    same = same && ok && !memcmp(once, got, n * row);
    ok = ok && !model_call(ptreg_features_model_fpfh, m, &o, which, PICKED, got, &picked, &err);
    for (size_t i = 0; ok && i < PICKED; i++)
        same = same && !memcmp(got + i * PTREG_FPFH_BINS, once + which[i] * PTREG_FPFH_BINS, row);
    ok = ok && !ptreg_pfh(xyz, normals, n, &o, once, NULL, &err) &&
         !model_call(ptreg_features_model_pfh, m, &o, NULL, 0, got, &pfh, &err);
    same = same && ok && !memcmp(once, got, n * PTREG_PFH_BINS * sizeof(float));
    ok = ok && !ptreg_fpfh(xyz, normals, n, &radius, once, NULL, &err) &&
         !ptreg_features_model_fpfh(m, &radius, NULL, 0, got, NULL, &err);
    same = same && ok && !memcmp(once, got, n * row);
    int quiet = again.launches == 1 && again.bytes_to == 0 && again.allocs == 0 && again.bytes_from == n * row &&
                picked.launches == 1 && picked.bytes_from == PICKED * row && picked.bytes_to == sizeof which &&
                pfh.launches == 1 && first.launches <= 4;
    snprintf(detail, size,
             "%s; rows %s; launches %llu, %llu, %llu, pfh %llu; a repeat: %llu bytes up, %llu back "
             "(%zu rows), %llu allocations; %d picked: %llu bytes back%s",
             ok ? "ran" : err.message, same ? "as the one-off calls" : "NOT AS THE ONE-OFF CALLS",
             (unsigned long long)first.launches, (unsigned long long)again.launches,
             (unsigned long long)picked.launches, (unsigned long long)pfh.launches, (unsigned long long)again.bytes_to,
             (unsigned long long)again.bytes_from, n, (unsigned long long)again.allocs, PICKED,
             (unsigned long long)picked.bytes_from, quiet ? "" : " (TOO MUCH)");
    ptreg_features_model_destroy(m);
    free(once);
    free(got);
    free(xyz);
    free(normals);
    return ok && same && quiet;
}

static void run_feature_operations(const ptreg_device_info *info, int *passed, int *failed)
{
    for (size_t k = 0; k < sizeof feat_cases / sizeof feat_cases[0]; k++) {
        const feat_case *fc = &feat_cases[k];
        char detail[2 * PTREG_ERROR_MESSAGE_MAX + 400] = "";
        double t0 = ptreg_time_ms();
        if (fc->single)
            setenv("PTREG_NN_DEVICE_KNN", "single", 1);
        int ok = run_feature_case(&info->device, fc, detail, sizeof detail);
        unsetenv("PTREG_NN_DEVICE_KNN");
        printf("%s features   %-8s n=%zu k=%zu r=%.1f seed=%llu%s: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL",
               feat_op_name(fc->op), fc->n, fc->k, fc->radius_n, (unsigned long long)fc->seed,
               fc->single ? " single" : "", detail, ptreg_time_ms() - t0, take_digest());
        *passed += ok;
        *failed += !ok;
    }
    char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
    double t0 = ptreg_time_ms();
    int ok = run_feature_model(&info->device, detail, sizeof detail);
    printf("%s features   resident model: %s (%.0f ms)\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t0);
    *passed += ok;
    *failed += !ok;
}
