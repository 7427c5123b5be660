/* The real data sets of ../shared/data load with the point counts their
 * headers give and the exact first and last points (the values below are
 * the files' own, as floats; the binary ones were checked against Open3D's
 * reader). Skipped (exit 77) when the data folder is absent. */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "ptreg/io.h"

#include <unistd.h>

typedef struct data_case {
    const char *file;
    size_t n;
    int normals;
    float first[3], last[3];
} data_case;

/* clang-format off */
static const data_case cases[] = {
    {"bunny/bun000.ply", 40256, 0, {-0.06325f, 0.0359793f, 0.0420873f},
     {-0.018f, 0.18794f, -0.0197253f}},
    {"bunny/bun045.ply", 40097, 0, {-0.0075f, 0.0342091f, 0.0703997f},
     {0.0385f, 0.187639f, 0.0121749f}},
    {"lidar/source.ply", 69792, 0, {0.00404510926f, 2.5751946f, -1.52721739f},
     {-0.00409372197f, 1.80425072f, 0.339939237f}},
    {"lidar/target.ply", 69088, 0, {0.00313989166f, 2.57003498f, -1.52415681f},
     {-0.00437020417f, 1.92610645f, 0.362898111f}},
    {"pcl/bun0.pcd", 397, 1, {0.0054215998f, 0.11349f, 0.040748999f},
     {-0.07793f, 0.17516f, -0.0444f}},
    {"pcl/bun4.pcd", 361, 0, {0.053026f, 0.11349f, 0.077131f}, {-0.046917f, 0.080411f, 0.022365f}},
    {"pcl/milk.pcd", 13704, 0, {-0.131607607f, -0.2095429f, 0.772000015f},
     {0.01380667f, -0.188206702f, 0.763000011f}},
    {"features/cloud_bin_0.pcd", 3903, 1, {2.84890771f, 0.0313906074f, -1.74716592f},
     {2.83244228f, 0.34990868f, -1.44149673f}},
    {"features/cloud_bin_1.pcd", 3458, 1, {2.84490657f, 0.00878696144f, -1.81662917f},
     {2.69935513f, 0.862446547f, -1.79014838f}},
    {"emicp/P101.txt", 101, 0, {-0.06325f, 0.0359793f, 0.0420873f},
     {-0.015f, 0.184911f, -0.0220136f}},
    {"emicp/P5032.txt", 5032, 0, {-0.06325f, 0.0359793f, 0.0420873f},
     {-0.01825f, 0.187162f, -0.0181009f}},
    {"cpd/bunny_source.txt", 453, 0, {0.968778372f, 1.12630403f, 1.00514925f},
     {0.981916606f, 1.03481424f, 1.04587722f}},
    {"landmarks/shooting_test_2d_target.vtk", 80, 0, {-0.0f, -1, -0.0f},
     {-0.078459f, -0.996917f, -0.0f}},
    {"landmarks/shooting_test_2d_template.vtk", 80, 0, {0.8f, 0.3f, 0}, {0.799075f, 0.292154f, 0}},
    {"landmarks/shooting_test_3d_box.vtk", 150, 0, {-0.5f, -0.5f, -1}, {0.5f, -0.25f, 1}},
    {"landmarks/shooting_test_3d_sphere.vtk", 162, 0, {0, 0, 0.5f},
     {0.130143f, -0.0539072f, -0.479746f}},
};
/* clang-format on */

/* The count a header states ("element vertex N", "POINTS N"), or the
 * number of non-empty lines of a plain text file. */
static size_t header_count(const char *path)
{
    FILE *f = fopen(path, "rb");
    char line[4096];
    size_t n = 0, lines = 0, v;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "element vertex %zu", &v) == 1 || sscanf(line, "POINTS %zu", &v) == 1) {
            n = v;
            break;
        }
        lines += line[0] != '\n' && line[0] != '\r';
    }
    if (f)
        fclose(f);
    return n ? n : lines;
}

static void check_case(const char *dir, const data_case *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, d->file);
    ptreg_cloud c;
    ptreg_error err;
    double t0 = ptreg_time_ms();
    ptreg_status s = ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err);
    double ms = ptreg_time_ms() - t0;
    CHECK_MSG(s == PTREG_OK, "%s", err.message);
    printf("%-40s %6zu points %s %.1f ms\n", d->file, c.n, c.normals ? "+ normals" : "         ", ms);
    CHECK_MSG(c.n == d->n, "%s: %zu points, want %zu", d->file, c.n, d->n);
    CHECK_MSG(c.n + c.dropped_nonfinite == header_count(path), "%s: header says %zu", d->file, header_count(path));
    CHECK_MSG((c.normals != NULL) == d->normals, "%s: normals", d->file);
    if (c.n == d->n) {
        CHECK_MSG(memcmp(c.xyz, d->first, sizeof d->first) == 0, "%s: first point %.9g %.9g %.9g", d->file, c.xyz[0],
                  c.xyz[1], c.xyz[2]);
        const float *l = c.xyz + 3 * (c.n - 1);
        CHECK_MSG(memcmp(l, d->last, sizeof d->last) == 0, "%s: last point %.9g %.9g %.9g", d->file, l[0], l[1], l[2]);
    }
    ptreg_cloud_free(&c);
}

/* A real scan through each binary writer and back, bit for bit. */
static void check_rewrite(const char *dir, const char *file, const char *out_ext)
{
    char path[4096], out[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(out, sizeof out, "/tmp/ptreg_test_io_data_%d.%s", (int)getpid(), out_ext);
    ptreg_cloud a, b;
    ptreg_error err;
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &a, &err) == PTREG_OK);
    CHECK_MSG(ptreg_cloud_write(out, &a, NULL, &err) == PTREG_OK, "%s", err.message);
    CHECK(ptreg_cloud_read(out, PTREG_FORMAT_AUTO, &b, &err) == PTREG_OK);
    CHECK(a.n == b.n && memcmp(a.xyz, b.xyz, 12 * a.n) == 0);
    CHECK((a.normals == NULL) == (b.normals == NULL));
    if (a.normals && b.normals && a.n == b.n)
        CHECK(memcmp(a.normals, b.normals, 12 * a.n) == 0);
    ptreg_cloud_free(&a);
    ptreg_cloud_free(&b);
    unlink(out);
}

int main(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return check_exit();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(dir, &cases[i]);
    check_rewrite(dir, "bunny/bun000.ply", "ply");
    check_rewrite(dir, "features/cloud_bin_0.pcd", "pcd");
    check_rewrite(dir, "pcl/milk.pcd", "xyz");
    return check_exit();
}
