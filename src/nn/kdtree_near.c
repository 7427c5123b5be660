/* Leaf neighbor lists of the k-d tree (see kdtree_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kdtree_impl.h"

/* A list may hold at most this many leaves; a leaf in a denser
 * neighborhood gets a smaller reach, or no list (its queries walk the
 * tree instead). */
#define NEAR_MAX_LEAVES 32
#define NEAR_TRIES 3

/* Gap between two boxes, in double: differences of floats are exact there,
 * so membership is decided far inside the certificate's margins. */
static double box_box_gap2(const float alo[3], const float ahi[3], const float blo[3], const float bhi[3])
{
    double s = 0.0;
    for (int k = 0; k < 3; k++) {
        double below = (double)alo[k] - bhi[k], above = (double)blo[k] - ahi[k];
        double g = below > above ? below : above;
        g = g > 0.0 ? g : 0.0; /* compares, not fmax: that is a call to libm */
        s += g * g;
    }
    return s;
}

/* The leaves whose boxes come within reach of leaf's box, in depth-first
 * order; stores up to cap of them in out (may be NULL) and returns how many
 * there are, or cap + 1 once there are more. */
static size_t near_leaves(const ptreg_kdtree *t, const kd_leaf *leaf, double reach, size_t cap, uint32_t *out)
{
    uint32_t stack[2 * PTREG_KD_MAX_DEPTH + 2];
    int sp = 0;
    size_t count = 0;
    double reach2 = reach * reach;
    stack[sp++] = 0;
    while (sp > 0) {
        uint32_t ref = stack[--sp];
        if (ref & PTREG_KD_LEAF_BIT) {
            if (count == cap)
                return cap + 1;
            if (out)
                out[count] = ref & ~PTREG_KD_LEAF_BIT;
            count++;
            continue;
        }
        const kd_node *nd = &t->nodes[ref];
        for (int c = 1; c >= 0; c--) {
            float lo[3] = {nd->lo[0][c], nd->lo[1][c], nd->lo[2][c]};
            float hi[3] = {nd->hi[0][c], nd->hi[1][c], nd->hi[2][c]};
            if ((c == 0 || nd->child[1] != nd->child[0]) && box_box_gap2(lo, hi, leaf->box_lo, leaf->box_hi) <= reach2)
                stack[sp++] = nd->child[c];
        }
    }
    return count;
}

/* A quarter of the leaf's largest extent (about three point spacings for
 * a square patch of 128 surface points), halved until the list is short. */
static size_t choose_reach(const ptreg_kdtree *t, kd_leaf *leaf)
{
    double extent = 0.0;
    for (int k = 0; k < 3; k++)
        extent = fmax(extent, (double)leaf->box_hi[k] - leaf->box_lo[k]);
    double reach = 0.25 * extent;
    for (int attempt = 0; attempt < NEAR_TRIES && reach > 0.0; attempt++, reach *= 0.5) {
        size_t n = near_leaves(t, leaf, reach, NEAR_MAX_LEAVES, NULL);
        if (n <= NEAR_MAX_LEAVES) {
            leaf->reach = reach;
            return n;
        }
    }
    leaf->reach = 0.0;
    return 0;
}

static void fill_neighbors(ptreg_kdtree *t, const kd_leaf *leaf, size_t count)
{
    uint32_t ids[NEAR_MAX_LEAVES];
    near_leaves(t, leaf, leaf->reach, count, ids);
    for (uint32_t b = 0; b < leaf->near_blocks; b++) {
        kd_near *blk = &t->near[leaf->near_first + b];
        memset(blk, 0, sizeof *blk);
        for (unsigned l = 0; l < PTREG_KD_NEAR_LANES; l++) {
            size_t k = (size_t)b * PTREG_KD_NEAR_LANES + l;
            const kd_leaf *o = k < count ? &t->leaves[ids[k]] : NULL;
            for (int a = 0; a < 3; a++) {
                blk->lo[a][l] = o ? o->box_lo[a] : INFINITY;
                blk->hi[a][l] = o ? o->box_hi[a] : -INFINITY;
            }
            blk->leaf[l] = o ? ids[k] : PTREG_NO_NEIGHBOR;
        }
    }
}

int kd_build_neighbors(ptreg_kdtree *t)
{
    long leaves = (long)t->leaf_count;
    size_t *counts = malloc(t->leaf_count * sizeof *counts);
    if (!counts)
        return -1;
#pragma omp parallel for schedule(dynamic, 16) num_threads(ptreg_get_num_threads())
    for (long i = 0; i < leaves; i++)
        counts[i] = choose_reach(t, &t->leaves[i]);
    size_t total = 0;
    for (size_t i = 0; i < t->leaf_count; i++) {
        t->leaves[i].near_first = (uint32_t)total;
        t->leaves[i].near_blocks = (uint32_t)((counts[i] + PTREG_KD_NEAR_LANES - 1) / PTREG_KD_NEAR_LANES);
        total += t->leaves[i].near_blocks;
    }
    t->near_count = total;
    t->near = total ? aligned_alloc(64, total * sizeof *t->near) : NULL;
    if (total && !t->near) {
        free(counts);
        return -1;
    }
#pragma omp parallel for schedule(dynamic, 16) num_threads(ptreg_get_num_threads())
    for (long i = 0; i < leaves; i++)
        if (counts[i])
            fill_neighbors(t, &t->leaves[i], counts[i]);
    free(counts);
    return 0;
}
