/* Voxel-grid downsampling: Open3D's centroids on PCL's bun0
 * (tests/data/icp/open3d_voxel_bun0_0.01.csv, remade by open3d_voxel.py),
 * the grid's anchor and the output's order, normals, and bad sizes. */
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
        worst = fmax(worst, fabs((double)d.xyz[i] - want[i]));
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
    ptreg_cloud c = {5, (float *)xyz, (float *)nrm, NULL, 0, {0, 0, 0}, NULL, NULL}, d;
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
    ptreg_cloud b = {2, (float *)bad, NULL, NULL, 0, {0, 0, 0}, NULL, NULL};
    CHECK(ptreg_voxel_downsample(&b, 1.0, &d, &err) == PTREG_ERR_ARG && strstr(err.message, "point 1"));
    ptreg_cloud empty = {0, (float *)xyz, NULL, NULL, 0, {0, 0, 0}, NULL, NULL};
    CHECK(ptreg_voxel_downsample(&empty, 1.0, &d, NULL) == PTREG_OK && d.n == 0);
    ptreg_cloud_free(&d);
}

int main(void)
{
    test_grid_and_order();
    const char *dir = check_data_dir();
    if (dir)
        test_open3d_golden(dir);
    return check_exit();
}
