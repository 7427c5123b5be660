#include "feat/neighborhood.h"

#include <math.h>
#include <stdlib.h>

ptreg_status feat_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err)
{
    if (nb->k == 0 && !(nb->radius > 0 && isfinite(nb->radius)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "neighbourhood: k must be > 0 or the radius > 0 (got k %zu, "
                                                   "radius %g)", nb->k, nb->radius);
    if (nb->k > ((size_t)1 << 20))
        return ptreg_error_set(err, PTREG_ERR_ARG, "neighbourhood: k %zu is too large", nb->k);
    return PTREG_OK;
}

static int reserve(ptreg_neighbors *out, size_t k)
{
    if (out->capacity >= k)
        return 1;
    uint32_t *index = realloc(out->index, k * sizeof *index);
    if (index)
        out->index = index;
    float *dist2 = realloc(out->dist2, k * sizeof *dist2);
    if (dist2)
        out->dist2 = dist2;
    if (!index || !dist2)
        return 0;
    out->capacity = k;
    return 1;
}

ptreg_status feat_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, const float q[3],
                            ptreg_neighbors *out, ptreg_error *err)
{
    if (nb->k == 0)
        return ptreg_kdtree_radius(tree, q, (float)nb->radius, out, err);
    if (!reserve(out, nb->k))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu neighbours", nb->k);
    out->count = ptreg_kdtree_knn(tree, q, nb->k, out->index, out->dist2);
    return PTREG_OK;
}
