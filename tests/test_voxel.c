/* Voxel-grid downsampling: Open3D's centroids on PCL's bun0
 * (tests/data/icp/open3d_voxel_bun0_0.01.csv, remade by open3d_voxel.py),
 * the grid's anchor and the output's order, normals, bad sizes, and the
 * table of voxel sums against a plain reference (sort by key) on a cloud
 * in random order that makes the table grow. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "ptreg/ptreg.h"

static int by_xyz(const void *a, const void *b)
{
    const float *x = a, *y = b;
    for (int k = 0; k < 3; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* The same centroids as Open3D's (its order is a hash map's: both sorted),
 * to float rounding of the double sums. */
static void test_open3d_golden(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pcl/bun0.pcd", dir);
    ptreg_cloud c, d;
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, NULL) == PTREG_OK);
    free(c.normals), c.normals = NULL;
    CHECK(ptreg_voxel_downsample(&c, 0.01, &d, NULL) == PTREG_OK);
    FILE *f = fopen(PTREG_TEST_SOURCE_DIR "/data/icp/open3d_voxel_bun0_0.01.csv", "r");
    CHECK_MSG(f != NULL, "open3d_voxel_bun0_0.01.csv is missing");
    float want[3 * 400];
    size_t rows = 0;
    double x, y, z;
    while (f && rows < 400 && fscanf(f, "%lf,%lf,%lf", &x, &y, &z) == 3) {
        want[3 * rows] = (float)x, want[3 * rows + 1] = (float)y, want[3 * rows + 2] = (float)z;
        rows++;
    }
    if (f)
        fclose(f);
    CHECK_MSG(rows == d.n, "%zu centroids; Open3D's %zu", d.n, rows);
    qsort(d.xyz, d.n, 3 * sizeof(float), by_xyz);
    double worst = 0.0;
    for (size_t i = 0; rows == d.n && i < 3 * d.n; i++)
        worst = check_worse(worst, fabs((double)d.xyz[i] - want[i]));
    CHECK_MSG(worst < 1e-7, "centroids %g from Open3D's", worst);
    ptreg_cloud_free(&c);
    ptreg_cloud_free(&d);
}

/* Cubes from half a voxel below the minimum: points 0 and 0.49 share one,
 * 0.51 starts the next; the output follows each cube's first point; the
 * normals' mean is made unit. */
static void test_grid_and_order(void)
{
    const float xyz[] = {2.0f, 0, 0, 0.0f, 0, 0, 0.49f, 0, 0, 0.51f, 0, 0, 2.2f, 0, 0};
    const float nrm[] = {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1};
    ptreg_cloud c = {5, (float *)xyz, (float *)nrm, NULL, 0, {0, 0, 0}, NULL, NULL, NULL}, d;
    CHECK(ptreg_voxel_downsample(&c, 1.0, &d, NULL) == PTREG_OK);
    CHECK_MSG(d.n == 3, "%zu cubes", d.n);
    if (d.n == 3) {
        CHECK(fabsf(d.xyz[0] - 2.1f) < 1e-6f && fabsf(d.xyz[3] - 0.245f) < 1e-6f && d.xyz[6] == 0.51f);
        CHECK(d.normals && fabsf(d.normals[3] - 0.70710678f) < 1e-6f && fabsf(d.normals[4] - 0.70710678f) < 1e-6f);
        CHECK(d.normals[5] == 0.0f && d.normals[2] == 1.0f && d.normals[8] == 1.0f);
    }
    ptreg_cloud_free(&d);
    ptreg_error err;
    CHECK(ptreg_voxel_downsample(&c, 0.0, &d, &err) == PTREG_ERR_ARG && strstr(err.message, "voxel"));
    CHECK(ptreg_voxel_downsample(&c, NAN, &d, NULL) == PTREG_ERR_ARG);
    CHECK(ptreg_voxel_downsample(&c, 1e-9, &d, &err) == PTREG_ERR_ARG && strstr(err.message, "2^21"));
    const float bad[] = {0, 0, 0, NAN, 0, 0};
    ptreg_cloud b = {2, (float *)bad, NULL, NULL, 0, {0, 0, 0}, NULL, NULL, NULL};
    CHECK(ptreg_voxel_downsample(&b, 1.0, &d, &err) == PTREG_ERR_ARG && strstr(err.message, "point 1"));
    ptreg_cloud empty = {0, (float *)xyz, NULL, NULL, 0, {0, 0, 0}, NULL, NULL, NULL};
    CHECK(ptreg_voxel_downsample(&empty, 1.0, &d, NULL) == PTREG_OK && d.n == 0);
    ptreg_cloud_free(&d);
}

/* The reference: each point's cube key, points sorted by (key, index),
 * each run summed in point order in double; voxels in the order of their
 * first point. */
typedef struct ref_point {
    uint64_t key;
    size_t index;
} ref_point;

static int by_key_then_index(const void *a, const void *b)
{
    const ref_point *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

typedef struct ref_voxel {
    size_t first;
    double s[3], ns[3];
    size_t count;
} ref_voxel;

static int by_first(const void *a, const void *b)
{
    const ref_voxel *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

static size_t reference_voxels(const ptreg_cloud *c, double voxel, ref_voxel *out)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY};
    for (size_t i = 0; i < 3 * c->n; i++)
        lo[i % 3] = check_least(lo[i % 3], c->xyz[i]);
    ref_point *pts = malloc(c->n * sizeof *pts);
    for (size_t i = 0; i < c->n; i++) {
        uint64_t key = 0;
        for (int k = 0; k < 3; k++)
            key = key << 21 | (uint64_t)floor(((double)c->xyz[3 * i + k] - (lo[k] - 0.5 * voxel)) / voxel);
        pts[i] = (ref_point){key, i};
    }
    qsort(pts, c->n, sizeof *pts, by_key_then_index);
    size_t count = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (i == 0 || pts[i].key != pts[i - 1].key)
            out[count++] = (ref_voxel){pts[i].index, {0, 0, 0}, {0, 0, 0}, 0};
        ref_voxel *v = &out[count - 1];
        v->count++;
        for (int k = 0; k < 3; k++) {
            v->s[k] += c->xyz[3 * pts[i].index + k];
            v->ns[k] += c->normals[3 * pts[i].index + k];
        }
    }
    free(pts);
    qsort(out, count, sizeof *out, by_first);
    return count;
}

static void test_against_reference(void)
{
    const size_t n = 300001; /* not a multiple of the lookup's blocks */
    ptreg_cloud c = {n,   malloc(3 * n * sizeof(float)), malloc(3 * n * sizeof(float)), NULL, 0, {0, 0, 0}, NULL, NULL,
                     NULL};
    uint64_t state = 99;
    for (size_t i = 0; i < 3 * n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(state >> 11) / 9007199254740992.0;
        c.xyz[i] = (float)(10.0 * u - 3.0);
        c.normals[i] = (float)(u - 0.45);
    }
    ref_voxel *ref = malloc(n * sizeof *ref);
    const double voxel = 0.2; /* 50^3 cubes: about 110,000 occupied, the table grows twice */
    const size_t count = reference_voxels(&c, voxel, ref);
    ptreg_cloud d;
    CHECK(ptreg_voxel_downsample(&c, voxel, &d, NULL) == PTREG_OK);
    CHECK_MSG(d.n == count && count > 100000, "%zu voxels, the reference %zu", d.n, count);
    size_t wrong = 0;
    for (size_t v = 0; d.n == count && v < count; v++) {
        const double *ns = ref[v].ns, len = sqrt(ns[0] * ns[0] + ns[1] * ns[1] + ns[2] * ns[2]);
        for (int k = 0; k < 3; k++)
            wrong += d.xyz[3 * v + k] != (float)(ref[v].s[k] * (1.0 / (double)ref[v].count)) ||
                     d.normals[3 * v + k] != (float)(ref[v].ns[k] * (1.0 / len));
    }
    CHECK_MSG(wrong == 0, "%zu coordinates differ from the reference's bits", wrong);
    ptreg_cloud_free(&d);
    free(ref);
    free(c.xyz);
    free(c.normals);
}

int main(void)
{
    test_grid_and_order();
    test_against_reference();
    const char *dir = check_data_dir();
    if (dir)
        test_open3d_golden(dir);
    return check_exit();
}
