/* A left-balanced k-d tree of the model's points, stored implicitly (node
 * i's children are 2i + 1 and 2i + 2, one point per node, every level full
 * but the last, which fills from the left), for a device's stack-free
 * nearest-neighbor search (kdtree.cl's ptreg_nn_lbkd; I. Wald, "A
 * Stack-Free Traversal Algorithm for Left-Balanced k-d Trees", JCGT 2022:
 * docs/ALGORITHMS.md). Node d of depth d splits on axis d mod 3 at its own
 * point: its left subtree holds points at or below it on that axis, the
 * right at or above. Points are the CPU tree's slots (what the device's
 * other searches answer); the build orders ties by slot, so it is the same
 * on every run. */
#include "nn/nn_device.h"

#include <stdlib.h>

#include "nn/kdtree_impl.h"
#include "nn/kdtree_query.h"

/* How many of a left-balanced subtree's n nodes lie left of its root. */
size_t lbkd_left_size(size_t n)
{
    if (n <= 1)
        return 0;
    size_t full = 1; /* 2^h: the capacity of the last level, h = floor(log2 n) */
    while (2 * full <= n)
        full *= 2;
    const size_t last = n - (full - 1), half = full / 2;
    return (half - 1) + (last < half ? last : half);
}

/* (coordinate on axis, slot): a total order. */
static int before(const lbkd_node *a, const lbkd_node *b, int axis)
{
    const float u = (&a->x)[axis], v = (&b->x)[axis];
    return u < v || (u == v && (a->word & LBKD_SLOT_MASK) < (b->word & LBKD_SLOT_MASK));
}

static void swap_nodes(lbkd_node *a, lbkd_node *b)
{
    lbkd_node t = *a;
    *a = *b;
    *b = t;
}

/* p[0..n) partitioned around its k-th in the order on axis (quickselect,
 * the middle element as pivot: deterministic). */
static void select_kth(lbkd_node *p, size_t n, size_t k, int axis)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        swap_nodes(&p[lo + (hi - lo) / 2], &p[hi - 1]);
        const lbkd_node pivot = p[hi - 1];
        size_t store = lo;
        for (size_t i = lo; i + 1 < hi; i++)
            if (before(&p[i], &pivot, axis))
                swap_nodes(&p[i], &p[store++]);
        swap_nodes(&p[store], &p[hi - 1]);
        if (store == k)
            return;
        if (k < store)
            hi = store;
        else
            lo = store + 1;
    }
}

/* The subtree of node `at` (depth d) from points p[0..n). */
static void build(lbkd_node *p, size_t n, lbkd_node *tree, size_t at, int depth)
{
    while (n) {
        const int axis = depth % 3;
        const size_t left = lbkd_left_size(n);
        select_kth(p, n, left, axis);
        tree[at] = p[left];
        tree[at].word = (tree[at].word & LBKD_SLOT_MASK) | ((uint32_t)axis << LBKD_AXIS_SHIFT);
        build(p, left, tree, 2 * at + 1, depth + 1);
        p += left + 1, n -= left + 1, at = 2 * at + 2, depth++;
    }
}

ptreg_status lbkd_build(const ptreg_kdtree *t, lbkd_node **out, size_t *count, ptreg_error *err)
{
    const size_t slots = t->chunk_count * PTREG_KD_LANES;
    *out = NULL;
    *count = 0;
    if (slots > LBKD_SLOT_MASK)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "the device's k-d tree takes at most %u points",
                               (unsigned)LBKD_SLOT_MASK);
    lbkd_node *points = malloc((slots + 1) * sizeof *points), *tree = malloc((slots + 1) * sizeof *tree);
    if (!points || !tree) {
        free(points);
        free(tree);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the device's k-d tree");
    }
    size_t n = 0;
    for (size_t s = 0; s < slots; s++) {
        float p[3];
        kdtree_slot_point(t, (uint32_t)s, p);
        if (p[0] == p[0]) /* NaN: a chunk's unused lane */
            points[n++] = (lbkd_node){p[0], p[1], p[2], (uint32_t)s};
    }
    build(points, n, tree, 0, 0);
    free(points);
    *out = tree;
    *count = n;
    return PTREG_OK;
}
