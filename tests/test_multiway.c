/* Multiway's merged cloud (ptreg_multiway_merge): the placed scans moved
 * by their poses, in scan order, a lost scan left out; normals only when
 * every placed scan has them; a result of another count refused. (The
 * registration itself: tests/cli/multiway.sh.) */
#include <stdlib.h>

#include "check.h"
#include "ptreg/multiway.h"

static void test_merge(void)
{
    const float a[6] = {0, 0, 0, 1, 0, 0}, b[3] = {0, 1, 0}, c[3] = {5, 5, 5};
    const float na[6] = {0, 0, 1, 0, 0, 1}, nb[3] = {1, 0, 0};
    ptreg_multiway_scan scans[3] = {{a, na, 2}, {b, nb, 1}, {c, NULL, 1}};
    double poses[48];
    int placed[3] = {1, 1, 0}; /* the third scan is lost: its missing normals do not count */
    for (int i = 0; i < 3; i++)
        ptreg_transform_identity(poses + 16 * i);
    poses[16 + 3] = 2.0; /* scan 1 moved by 2 along x */
    ptreg_multiway_result r;
    memset(&r, 0, sizeof r);
    r.scan_count = 3, r.poses = poses, r.placed = placed;
    ptreg_cloud out;
    CHECK(ptreg_multiway_merge(scans, 3, &r, &out, NULL) == PTREG_OK);
    const float want[9] = {0, 0, 0, 1, 0, 0, 2, 1, 0}, want_n[9] = {0, 0, 1, 0, 0, 1, 1, 0, 0};
    CHECK(out.n == 3 && out.normals != NULL);
    if (out.n == 3 && out.normals) {
        CHECK(memcmp(out.xyz, want, sizeof want) == 0);
        CHECK(memcmp(out.normals, want_n, sizeof want_n) == 0);
    }
    ptreg_cloud_free(&out);
    placed[2] = 1; /* placed, without normals: the merged cloud has none */
    CHECK(ptreg_multiway_merge(scans, 3, &r, &out, NULL) == PTREG_OK);
    CHECK(out.n == 4 && out.normals == NULL);
    if (out.n == 4)
        CHECK(out.xyz[9] == 5.0f && out.xyz[10] == 5.0f && out.xyz[11] == 5.0f);
    ptreg_cloud_free(&out);
    ptreg_error err;
    CHECK(ptreg_multiway_merge(scans, 2, &r, &out, &err) == PTREG_ERR_ARG && out.n == 0);
    CHECK_MSG(strstr(err.message, "2 scans for a result of 3") != NULL, "%s", err.message);
}

int main(void)
{
    test_merge();
    return check_exit();
}
