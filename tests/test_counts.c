/* 64-bit counts (docs/DESIGN.md, "64-bit counts") at the edge, in a
 * synthetic index space: the helpers that products and sums of counts go
 * through, with values near 2^31 and 2^32 (no 2^31 points allocated), and
 * every entry point that names points with uint32 indices given more
 * points than that: PTREG_ERR_ARG, before a single point is read. The
 * points handed over then are a page that cannot be read (PROT_NONE), so
 * an entry that reads first crashes the test instead of passing. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>

#include "check.h"
#include "core/counts.h"
#include "device/backend.h"
#include "nn/delaunay_impl.h"
#include "nn/kdtree_query.h"
#include "ptreg/ptreg.h"
#include "hooks.h"

#define TWO31 ((size_t)1 << 31)
#define TWO32 ((size_t)1 << 32)
#define MORE_THAN_U32 ((size_t)UINT32_MAX + 1)

/* Products past 2^31 and 2^32 come out whole; those past SIZE_MAX are
 * refused. */
static void test_products(void)
{
    size_t p = 0;
    CHECK(count_mul(100000000, 43, &p) && p == (size_t)4300000000u);        /* 100 M points, k 43 */
    CHECK(count_mul(TWO31 + 5, 33, &p) && p == (TWO31 + 5) * 33);           /* FPFH rows */
    CHECK(count_mul(UINT32_MAX, 125, &p) && p == (size_t)UINT32_MAX * 125); /* PFH rows */
    CHECK(count_mul3(TWO32, 43, sizeof(float), &p) && p == TWO32 * 172);
    CHECK(count_mul(0, SIZE_MAX, &p) && p == 0);
    p = 7;
    CHECK(!count_mul(SIZE_MAX / 2 + 1, 2, &p) && p == 7); /* refused, untouched */
    CHECK(!count_mul(TWO32, TWO32, &p));
    CHECK(!count_mul3(TWO32, TWO31, 8, &p));
    CHECK(!count_mul3(SIZE_MAX, 1, 2, &p));
    CHECK(count_add(UINT32_MAX, UINT32_MAX, &p) && p == (size_t)2 * UINT32_MAX);
    CHECK(!count_add(SIZE_MAX, 1, &p));
}

/* The slot of entry j of row i: where a 32-bit i * k + j wraps, it does
 * not. */
static void test_slots(void)
{
    const uint32_t i = UINT32_MAX - 1, k = 43, j = 42;
    const size_t want = (size_t)i * k + j;
    CHECK(count_slot(i, k, j) == want);
    CHECK(count_slot(i, k, j) != (size_t)(uint32_t)(i * k + j)); /* what 32 bits gave */
    CHECK(count_slot((uint32_t)(TWO31 / 33 + 1), 33, 0) > TWO31);
    CHECK(count_slot(TWO31 - 1, 1, 1) == TWO31);
    CHECK(count_slot(MORE_THAN_U32, 3, 2) == 3 * MORE_THAN_U32 + 2);
}

static void test_check_points(void)
{
    ptreg_error err;
    CHECK(count_check_points("x", UINT32_MAX, UINT32_MAX, "why", &err) == PTREG_OK);
    CHECK(count_check_points("x", MORE_THAN_U32, UINT32_MAX, "why", &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "4294967296 points: more than 4294967295") != NULL, "%s", err.message);
    CHECK(kd_check_points("t", KD_MAX_POINTS, &err) == PTREG_OK);
    CHECK(kd_check_points("t", KD_MAX_POINTS + 1, &err) == PTREG_ERR_ARG);
    /* the tree's slots stay below PTREG_NO_NEIGHBOR, its leaves below the leaf bit */
    CHECK((uint64_t)KD_MAX_CHUNKS * 16 < PTREG_NO_NEIGHBOR);
    CHECK((uint64_t)(KD_MAX_CHUNKS + 1) * 16 > PTREG_NO_NEIGHBOR);
}

/* A launch's ids are u32 and CUDA's grids hold 2^31 - 1 groups: at the
 * edge of both. */
static void test_grids(void)
{
    CHECK(dev_grid_fits(DEV_GRID_GROUPS_MAX, 2));                /* 2^32 - 2 threads */
    CHECK(!dev_grid_fits(DEV_GRID_GROUPS_MAX + 1, 1));           /* one group too many for CUDA */
    CHECK(dev_grid_fits(TWO32 / 256, 256));                      /* exactly 2^32 threads: ids 0 .. 2^32 - 1 */
    CHECK(!dev_grid_fits(TWO32 / 256 + 1, 256));                 /* an id would wrap */
    CHECK(dev_grid_fits(((size_t)UINT32_MAX + 255) / 256, 256)); /* 2^32 - 1 points padded to 256 */
    CHECK(!dev_grid_fits(1, 0));
    CHECK(!dev_grid_fits(SIZE_MAX, 1));
}

/* The Delaunay graph's uint32 offsets: 2^32 - 1 is "none". */
static void test_graph_limits(void)
{
    CHECK(delaunay_fits(UINT32_MAX - 1, UINT32_MAX - 1));
    CHECK(!delaunay_fits(UINT32_MAX, 0));
    CHECK(!delaunay_fits(0, UINT32_MAX));
    CHECK(!delaunay_fits((size_t)15 * 300000000, 0)); /* ~15 directed edges a point at 300 M points */
}

static int is_arg(ptreg_status st, const ptreg_error *err, const char *what)
{
    if (st != PTREG_ERR_ARG)
        fprintf(stderr, "%s: status %d (%s), PTREG_ERR_ARG wanted\n", what, (int)st, err->message);
    return st == PTREG_ERR_ARG;
}

/* More points than a uint32 (or the tree's 2^31 - 1) names: refused before
 * any is read (the arrays are unreadable). ICP's source may pass the tree's
 * limit (only its target is a tree): it is tried beyond 32 bits only. */
static void test_entries_refuse(const float *none, size_t big)
{
    ptreg_error err;
    ptreg_kdtree *tree = NULL;
    CHECK(is_arg(ptreg_kdtree_create(none, big, NULL, &tree, &err), &err, "kdtree") && !tree);
    ptreg_model_index *idx = NULL;
    CHECK(is_arg(ptreg_model_index_create(none, big, NULL, &idx, &err), &err, "index") && !idx);
    CHECK(is_arg(ptreg_normals(none, big, NULL, (float *)none, NULL, NULL, &err), &err, "normals"));
    CHECK(is_arg(ptreg_fpfh(none, none, big, NULL, (float *)none, NULL, &err), &err, "fpfh"));
    CHECK(is_arg(ptreg_pfh(none, none, big, NULL, (float *)none, NULL, &err), &err, "pfh"));
    ptreg_features_model *fm = NULL;
    CHECK(is_arg(ptreg_features_model_create(none, none, big, NULL, &fm, &err), &err, "features model") && !fm);
    CHECK_MSG(strstr(err.message, "points: more than") != NULL, "%s", err.message);
    ptreg_icp_result r;
    if (big > UINT32_MAX)
        CHECK(is_arg(ptreg_icp(none, big, none, 8, NULL, &r, &err), &err, "icp source"));
    CHECK(is_arg(ptreg_icp(none, 8, none, big, NULL, &r, &err), &err, "icp target"));
}

static void test_entries(void)
{
    void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(page != MAP_FAILED);
    const float *none = page;
    ptreg_error err;
    test_entries_refuse(none, MORE_THAN_U32);
    test_entries_refuse(none, SIZE_MAX / 2);      /* 3 n and n x 12 bytes would wrap too */
    test_entries_refuse(none, KD_MAX_POINTS + 1); /* within uint32, beyond the tree */
    /* leaves of 4 points take 16 slots each: 2^30 points need 2^32 slots */
    ptreg_kdtree_options small = {4};
    ptreg_kdtree *tree = NULL;
    CHECK(is_arg(ptreg_kdtree_create(none, (size_t)1 << 30, &small, &tree, &err), &err, "kdtree slots") && !tree);
    CHECK_MSG(strstr(err.message, "slots") != NULL, "%s", err.message);
    uint32_t index[1];
    float d2[1];
    CHECK(is_arg(ptreg_brute_nearest(none, MORE_THAN_U32, none, 1, index, d2, &err), &err, "brute"));
    ptreg_matches mt;
    CHECK(is_arg(ptreg_match_features(none, MORE_THAN_U32, none, 1, 33, 0, &mt, &err), &err, "match"));
    ptreg_cloud cloud;
    ptreg_cloud_init(&cloud);
    cloud.xyz = (float *)page, cloud.n = MORE_THAN_U32;
    ptreg_cloud out;
    CHECK(is_arg(ptreg_voxel_downsample(&cloud, 1.0, &out, &err), &err, "voxel"));
    ptreg_lddmm_result lr;
    const double *dnone = page;
    CHECK(is_arg(ptreg_lddmm_register(dnone, dnone, (size_t)INT_MAX / 3 + 1, NULL, NULL, &lr, &err), &err, "lddmm"));
    munmap(page, 4096);
}

/* The limits leave today's sizes alone: a small cloud still builds with
 * leaves of 4, and its k-NN table's slots are i * k. */
static void test_small_unchanged(void)
{
    float xyz[3 * 64];
    for (int i = 0; i < 64; i++)
        xyz[3 * i] = (float)(i % 4), xyz[3 * i + 1] = (float)(i / 4 % 4), xyz[3 * i + 2] = (float)(i / 16);
    ptreg_kdtree_options small = {4};
    ptreg_kdtree *tree = NULL;
    ptreg_error err;
    CHECK(ptreg_kdtree_create(xyz, 64, &small, &tree, &err) == PTREG_OK);
    CHECK(tree && kdtree_slot_count(tree) < PTREG_NO_NEIGHBOR);
    ptreg_kdtree_destroy(tree);
}

int main(void)
{
    test_products();
    test_slots();
    test_check_points();
    test_grids();
    test_graph_limits();
    test_entries();
    test_small_unchanged();
    return check_exit();
}
