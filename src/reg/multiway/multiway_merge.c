/* The registered scans as one cloud (multiway.h): what `ptreg multiway
 * --merged` writes, Open3D's combined point cloud. */
#include <string.h>

#include "ptreg/multiway.h"

ptreg_status ptreg_multiway_merge(const ptreg_multiway_scan *scans, size_t count, const ptreg_multiway_result *r,
                                  ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    if (!scans || !r || r->scan_count != count || (count && (!r->poses || !r->placed)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "multiway merge: %zu scans for a result of %zu", count,
                               r ? r->scan_count : 0);
    size_t total = 0;
    int normals = 1;
    for (size_t i = 0; i < count; i++)
        if (r->placed[i])
            total += scans[i].n, normals &= scans[i].normals != NULL;
    ptreg_status st = ptreg_cloud_alloc(out, total, normals, err);
    for (size_t i = 0, at = 0; !st && i < count; i++) {
        if (!r->placed[i])
            continue;
        const ptreg_multiway_scan *c = &scans[i];
        ptreg_transform_points(r->poses + 16 * i, c->xyz, out->xyz + 3 * at, c->n);
        if (normals)
            ptreg_transform_vectors(r->poses + 16 * i, c->normals, out->normals + 3 * at, c->n);
        at += c->n;
    }
    return st;
}
