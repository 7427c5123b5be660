/* The device parity suite's normals (included by test_device_parity.c):
 * ptreg_normals on the device against the CPU on the bunny scan and the
 * LiDAR scan of ../shared/data (skipped without it) and on a small
 * synthetic cloud made of the edge cases: a cubic lattice (isotropic
 * neighborhoods: the Jacobi fallback), points on a line, five copies of
 * one point (no plane: NaN), lone points (fewer than 3 neighbors within a
 * radius: NaN) and a jittered plane; k-NN (k beyond n too), radius and
 * hybrid neighborhoods; the viewpoint, direction and none orientations.
 *   - normals and curvature within 1e-5 of the CPU's (signs compared as
 *     they are: the orientations fix them; none: the solver's sign), NaN
 *     in the same places, the same missing count; with double on the
 *     device they are the CPU's bits (counted and printed);
 *   - without double (acc_t float) within NORMALS_TOL_FP32 for all but
 *     0.1% of the points (a float covariance of a thin neighborhood);
 *   - a second device run gives the same bits; the launches are counted
 *     (k-NN and hybrid 2, radius 3);
 * and the resident entry (feat_device_normals): its buffer holds the
 * one-off call's bits, on its own tree and on ICP's resident model's
 * (nn_device_model); tangent-plane is refused, naming it. */
#include "feat/normals_device.h"
#include "core/numeric.h"

#define NORMALS_TOL 1e-5
#define NORMALS_TOL_FP32 1e-2

typedef enum normals_cloud { NC_SYNTH = 0, NC_BUNNY, NC_LIDAR } normals_cloud;

typedef struct normals_case {
    normals_cloud cloud;
    size_t k;
    double radius;
    ptreg_normal_orientation orient;
    int launches; /* expected per call */
} normals_case;

static const normals_case normals_cases[] = {
    {NC_SYNTH, 10, 0, PTREG_ORIENT_VIEWPOINT, 2},     {NC_SYNTH, 0, 1.5, PTREG_ORIENT_VIEWPOINT, 3},
    {NC_SYNTH, 6, 1.5, PTREG_ORIENT_DIRECTION, 2},    {NC_SYNTH, 1000, 0, PTREG_ORIENT_NONE, 2},
    {NC_BUNNY, 30, 0, PTREG_ORIENT_VIEWPOINT, 2},     {NC_BUNNY, 0, 0.004, PTREG_ORIENT_VIEWPOINT, 3},
    {NC_BUNNY, 20, 0.003, PTREG_ORIENT_DIRECTION, 2}, {NC_LIDAR, 30, 0, PTREG_ORIENT_VIEWPOINT, 2},
    {NC_LIDAR, 16, 0.5, PTREG_ORIENT_NONE, 2},
};

static const char *normals_cloud_name(normals_cloud c)
{
    return c == NC_BUNNY ? "bunny" : c == NC_LIDAR ? "lidar" : "synthetic";
}

/* The edge cases' cloud (about 250 points), appended to *p. */
static float *normals_synthetic(size_t *count)
{
    float *p = malloc(400 * 3 * sizeof *p);
    size_t n = 0;
    if (!p)
        return NULL;
    for (int z = 0; z < 4; z++) /* the lattice */
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++, n++)
                p[3 * n] = (float)x, p[3 * n + 1] = (float)y, p[3 * n + 2] = (float)z;
    for (int i = 0; i < 10; i++, n++) /* a line */
        p[3 * n] = 20.0f + 0.5f * (float)i, p[3 * n + 1] = 20.0f, p[3 * n + 2] = 20.0f;
    for (int i = 0; i < 5; i++, n++) /* one point five times */
        p[3 * n] = 50.0f, p[3 * n + 1] = 50.0f, p[3 * n + 2] = 50.0f;
    for (int i = 0; i < 3; i++, n++) /* lone points */
        p[3 * n] = -80.0f - 30.0f * (float)i, p[3 * n + 1] = 5.0f, p[3 * n + 2] = 1.0f;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 4242);
    for (int y = 0; y < 13; y++) /* a jittered plane, tilted */
        for (int x = 0; x < 13; x++, n++) {
            const double u = 0.4 * x + 0.05 * ptreg_rng_normal(&rng), v = 0.4 * y + 0.05 * ptreg_rng_normal(&rng);
            p[3 * n] = (float)(-20.0 + u), p[3 * n + 1] = (float)(v),
                  p[3 * n + 2] = (float)(3.0 + 0.3 * u - 0.2 * v + 0.01 * ptreg_rng_normal(&rng));
        }
    *count = n;
    return p;
}

/* The case's cloud: 1 made, 0 the data folder is absent, -1 an error. */
static int normals_load(normals_cloud which, float **xyz, size_t *n)
{
    if (which == NC_SYNTH)
        return (*xyz = normals_synthetic(n)) ? 1 : -1;
    const char *dir = getenv("PTREG_DATA_DIR");
#ifdef PTREG_DATA_DIR
    if (!dir)
        dir = PTREG_DATA_DIR;
#endif
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", which == NC_BUNNY ? "bunny/bun000.ply" : "lidar/source.ply");
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    fclose(f);
    ptreg_cloud c;
    ptreg_error err;
    if (ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err))
        return -1;
    *xyz = c.xyz, *n = c.n;
    c.xyz = NULL;
    ptreg_cloud_free(&c);
    return 1;
}

static void normals_options_of(const normals_case *nc, const ptreg_device *device, ptreg_normals_options *o)
{
    ptreg_normals_options_default(o);
    o->neighbors.k = nc->k;
    o->neighbors.radius = nc->radius;
    o->orientation = nc->orient;
    o->viewpoint[0] = 0.25, o->viewpoint[1] = -0.5, o->viewpoint[2] = 1.0;
    o->direction[0] = 0.3, o->direction[1] = -0.1, o->direction[2] = 0.9;
    o->device = *device;
}

/* How the device's normals (a, curvature ca) compare with the CPU's (b,
 * cb): points off by more than tol (or NaN where the other is not), the
 * worst difference, and the points not the same bits. */
typedef struct normals_diff {
    size_t off, not_bits;
    double worst;
} normals_diff;

static normals_diff normals_compare(const float *a, const float *ca, const float *b, const float *cb, size_t n,
                                    double tol)
{
    normals_diff d = {0, 0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)ca[i] - cb[i]);
        for (int k = 0; k < 3; k++)
            e = check_worse(e, fabs((double)a[3 * i + k] - b[3 * i + k]));
        const int nan_a = isnan(a[3 * i]) || isnan(ca[i]), nan_b = isnan(b[3 * i]) || isnan(cb[i]);
        const int bad = nan_a != nan_b || (!nan_a && !(e <= tol));
        d.off += bad;
        if (!nan_a && !nan_b)
            d.worst = check_worse(d.worst, e);
        d.not_bits += memcmp(a + 3 * i, b + 3 * i, 3 * sizeof *a) != 0 || memcmp(ca + i, cb + i, sizeof *ca) != 0;
    }
    return d;
}

/* 1 passed, 0 failed, -1 skipped (no data). */
static int run_normals_case(const ptreg_device *device, int fp64, const normals_case *nc, char *detail, size_t size)
{
    float *xyz = NULL;
    size_t n = 0;
    const int loaded = normals_load(nc->cloud, &xyz, &n);
    if (loaded <= 0) {
        snprintf(detail, size, loaded ? "the cloud did not load" : "no ../shared/data: skipped");
        return loaded ? 0 : -1;
    }
    ptreg_normals_options cpu, dev;
    ptreg_device on_cpu = {PTREG_BACKEND_CPU, 0};
    normals_options_of(nc, &on_cpu, &cpu);
    normals_options_of(nc, device, &dev);
    float *nr[3], *cv[3];
    size_t missing[3] = {0, 0, 0};
    ptreg_error err = {0};
    ptreg_status st = PTREG_OK;
    ptreg_device_stats before, used = {0};
    for (int r = 0; r < 3; r++) {
        nr[r] = malloc(3 * n * sizeof(float));
        cv[r] = malloc(n * sizeof(float));
        if (!nr[r] || !cv[r])
            st = PTREG_ERR_NOMEM;
    }
    for (int r = 0; r < 3 && !st; r++) { /* the CPU, the device twice */
        ptreg_device_stats_get(&before);
        st = ptreg_normals(xyz, n, r ? &dev : &cpu, nr[r], cv[r], &missing[r], &err);
        if (r == 1)
            ptreg_device_stats_since(&before, &used);
    }
    int ok = 0;
    if (st) {
        snprintf(detail, size, "%s", err.message);
    } else {
        const double tol = fp64 ? NORMALS_TOL : NORMALS_TOL_FP32;
        const normals_diff d = normals_compare(nr[1], cv[1], nr[0], cv[0], n, tol);
        const int repeat = !memcmp(nr[1], nr[2], 3 * n * sizeof(float)) && !memcmp(cv[1], cv[2], n * sizeof(float));
        const size_t allowed = fp64 ? 0 : n / 1000;
        ok = d.off <= allowed && missing[1] == missing[0] && repeat && used.launches == (uint64_t)nc->launches;
        snprintf(detail, size,
                 "%zu points, %zu missing (cpu %zu), %zu off by more than %g, worst %.2g, %zu not the cpu's bits, "
                 "repeat %s, %llu launches (expected %d)",
                 n, missing[1], missing[0], d.off, tol, d.worst, d.not_bits, repeat ? "same" : "DIFFERS",
                 (unsigned long long)used.launches, nc->launches);
        digest(nr[1], 3 * n * sizeof(float));
        digest(cv[1], n * sizeof(float));
    }
    for (int r = 0; r < 3; r++)
        free(nr[r]), free(cv[r]);
    free(xyz);
    return ok;
}

/* The resident entry: the normals left in a device buffer are the one-off
 * call's bits, without curvature or the missing count asked for; then
 * tangent-plane refused by name. */
static int run_normals_resident(const ptreg_device *device, char *detail, size_t size)
{
    size_t n = 0;
    float *xyz = normals_synthetic(&n);
    float *want = malloc(3 * n * sizeof *want), *got = malloc(3 * n * sizeof *got);
    ptreg_normals_options o;
    const normals_case nc = {NC_SYNTH, 12, 0, PTREG_ORIENT_VIEWPOINT, 2};
    normals_options_of(&nc, device, &o);
    ptreg_error err = {0};
    dev_handle *dev = NULL;
    ptreg_kdtree *tree = NULL;
    nn_device_tree on_device;
    memset(&on_device, 0, sizeof on_device);
    dbuf *points = NULL, *normals = NULL;
    ptreg_device_stats before, used = {0};
    ptreg_status st = xyz && want && got ? PTREG_OK : PTREG_ERR_NOMEM;
    st = st ? st : ptreg_normals(xyz, n, &o, want, NULL, NULL, &err);
    st = st ? st : dev_get(device, &dev, &err);
    st = st ? st : ptreg_kdtree_create(xyz, n, NULL, &tree, &err);
    st = st ? st : nn_device_tree_upload(dev, tree, 0, &on_device, &err);
    st = st ? st : dbuf_upload(dev, xyz, 3 * n * sizeof(float), &points, &err);
    if (!st)
        ptreg_device_stats_get(&before);
    st = st ? st : feat_device_normals(dev, points, &on_device, n, &o, &normals, NULL, NULL, &err);
    if (!st)
        ptreg_device_stats_since(&before, &used);
    st = st ? st : dbuf_read(normals, 0, got, 3 * n * sizeof(float), &err);
    int ok = !st && !memcmp(want, got, 3 * n * sizeof(float)) && used.launches == 2 && used.bytes_from == 0;
    snprintf(detail, size, "%s; %llu launches, %llu bytes back",
             st   ? err.message
             : ok ? "the same bits"
                  : "DIFFER",
             (unsigned long long)used.launches, (unsigned long long)used.bytes_from);
    dbuf_free(normals);
    dbuf_free(points);
    nn_device_tree_free(&on_device);
    ptreg_kdtree_destroy(tree);
    if (!st) {
        o.orientation = PTREG_ORIENT_TANGENT_PLANE;
        ptreg_error refusal = {0};
        const ptreg_status r = ptreg_normals(xyz, n, &o, got, NULL, NULL, &refusal);
        const int named = r == PTREG_ERR_UNSUPPORTED && strstr(refusal.message, "tangent-plane");
        ok = ok && named;
        snprintf(detail + strlen(detail), size - strlen(detail), "; tangent-plane %s (%.200s)",
                 named ? "refused" : "NOT REFUSED", refusal.message);
    }
    free(xyz), free(want), free(got);
    return ok;
}

/* The resident entry over ICP's resident model (nn_device_model: the model
 * index's tree and points, as the ICP device engine holds its target): the
 * one-off call's bits, curvature and the missing count too. */
static int run_normals_on_model(const ptreg_device *device, char *detail, size_t size)
{
    size_t n = 0;
    float *xyz = NULL;
    const int loaded = normals_load(NC_BUNNY, &xyz, &n);
    if (loaded <= 0) {
        snprintf(detail, size, loaded ? "the cloud did not load" : "no ../shared/data: skipped");
        return loaded ? 0 : -1;
    }
    ptreg_normals_options o;
    const normals_case nc = {NC_BUNNY, 20, 0, PTREG_ORIENT_VIEWPOINT, 2};
    normals_options_of(&nc, device, &o);
    float *want = malloc(3 * n * sizeof *want), *got = malloc(3 * n * sizeof *got);
    float *want_c = malloc(n * sizeof *want_c), *got_c = malloc(n * sizeof *got_c);
    ptreg_error err = {0};
    dev_handle *dev = NULL;
    ptreg_model_index *idx = NULL;
    nn_device_model *dm = NULL;
    dbuf *normals = NULL, *curvature = NULL;
    size_t want_missing = 0, got_missing = 1;
    ptreg_status st = want && got && want_c && got_c ? PTREG_OK : PTREG_ERR_NOMEM;
    st = st ? st : ptreg_normals(xyz, n, &o, want, want_c, &want_missing, &err);
    st = st ? st : dev_get(device, &dev, &err);
    st = st ? st : ptreg_model_index_create(xyz, n, NULL, &idx, &err);
    st = st ? st : nn_device_create(dev, idx, 0, &dm, &err);
    st = st ? st : feat_device_normals(dev, dm->point_xyz, &dm->tree, n, &o, &normals, &curvature, &got_missing, &err);
    st = st ? st : dbuf_read(normals, 0, got, 3 * n * sizeof(float), &err);
    st = st ? st : dbuf_read(curvature, 0, got_c, n * sizeof(float), &err);
    const int ok = !st && !memcmp(want, got, 3 * n * sizeof(float)) && !memcmp(want_c, got_c, n * sizeof(float)) &&
                   want_missing == got_missing;
    snprintf(detail, size, "%zu points: %s", n, st ? err.message : ok ? "the same bits" : "DIFFER");
    dbuf_free(normals);
    dbuf_free(curvature);
    nn_device_destroy(dm);
    ptreg_model_index_destroy(idx);
    free(xyz), free(want), free(got), free(want_c), free(got_c);
    return ok;
}

static void run_normals_operations(const ptreg_device_info *info, int fp64, int *passed, int *failed)
{
    for (size_t k = 0; k < sizeof normals_cases / sizeof normals_cases[0]; k++) {
        const normals_case *nc = &normals_cases[k];
        char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
        double t0 = ptreg_time_ms();
        int ok = run_normals_case(&info->device, fp64, nc, detail, sizeof detail);
        printf("%s normals    %-9s k=%zu r=%g orient=%d: %s (%.0f ms) [bits %016llx]\n",
               ok > 0   ? "ok  "
               : ok < 0 ? "skip"
                        : "FAIL",
               normals_cloud_name(nc->cloud), nc->k, nc->radius, (int)nc->orient, detail, ptreg_time_ms() - t0,
               take_digest());
        *passed += ok > 0; /* nan-ok: an int */
        *failed += ok == 0;
    }
    char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
    double t0 = ptreg_time_ms();
    int ok = run_normals_resident(&info->device, detail, sizeof detail);
    printf("%s normals    resident: %s (%.0f ms)\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t0);
    *passed += ok;
    *failed += !ok;
    if (fp64) { /* the bits compared */
        t0 = ptreg_time_ms();
        ok = run_normals_on_model(&info->device, detail, sizeof detail);
        printf("%s normals    on ICP's resident model: %s (%.0f ms)\n",
               ok > 0   ? "ok  "
               : ok < 0 ? "skip"
                        : "FAIL",
               detail, ptreg_time_ms() - t0);
        *passed += ok > 0; /* nan-ok: an int */
        *failed += ok == 0;
    }
}
