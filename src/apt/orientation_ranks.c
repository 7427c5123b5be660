/* Orientations of every atom shared among the ranks of several processes
 * (orientation.h): the atoms are divided into slabs along the longest
 * axis, each rank registers the atoms of its slab with a halo of neighbors
 * around it. An atom's answer depends only on its neighborhood and the
 * motif, so the answers are one process's once every neighborhood is the
 * same: a rank checks that everything each atom's answer depends on is
 * nearer than its halo's edge, and all ranks widen the halo and start
 * again when one is not. The motif estimate's sums are integers, added up
 * over the ranks. The caller's collectives (MPI's, or any other) are the
 * only communication, so the library needs no MPI. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/orientation.h"

/* The slabs' boundaries sit on the edges of a histogram this fine, so the
 * ranks get about as many atoms each. */
#define SLAB_BINS 65536

static int finite3(const float *p) { return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]); }

/* The input as every rank has it. */
typedef struct atoms {
    const float *xyz;
    size_t n;
    const uint8_t *selected;
} atoms;

static int taken_atom(const atoms *a, size_t i) { return (!a->selected || a->selected[i]) && finite3(a->xyz + 3 * i); }

/* Every rank computes the same slabs from the same input. */
typedef struct slabs {
    int axis;
    double lo, hi; /* the taken atoms' extent along the axis */
    double *bound; /* ranks + 1: slab r is [bound[r], bound[r + 1]) */
    size_t taken;
    double volume; /* of the taken atoms' bounding box */
} slabs;

static void taken_extent(const atoms *a, slabs *s)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    s->taken = 0;
    for (size_t i = 0; i < a->n; i++)
        if (taken_atom(a, i)) {
            s->taken++;
            for (int k = 0; k < 3; k++)
                lo[k] = fmin(lo[k], a->xyz[3 * i + k]), hi[k] = fmax(hi[k], a->xyz[3 * i + k]);
        }
    s->axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[s->axis] - lo[s->axis])
            s->axis = k;
    s->lo = lo[s->axis], s->hi = hi[s->axis];
    s->volume = 1.0;
    for (int k = 0; k < 3; k++)
        s->volume *= fmax(hi[k] - lo[k], 1e-9);
}

static ptreg_status make_slabs(const atoms *a, int ranks, slabs *s, ptreg_error *err)
{
    taken_extent(a, s);
    s->bound = malloc((size_t)(ranks + 1) * sizeof *s->bound);
    uint64_t *hist = calloc(SLAB_BINS, sizeof *hist);
    if (!s->bound || !hist) {
        free(hist);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the slabs");
    }
    const double width = s->hi > s->lo ? (s->hi - s->lo) / SLAB_BINS : 1.0;
    for (size_t i = 0; i < a->n; i++)
        if (taken_atom(a, i)) {
            const double b = (a->xyz[3 * i + s->axis] - s->lo) / width;
            hist[b < SLAB_BINS - 1 ? (size_t)b : SLAB_BINS - 1]++;
        }
    s->bound[0] = -INFINITY, s->bound[ranks] = INFINITY;
    uint64_t below = 0;
    int r = 1;
    for (size_t b = 0; b < SLAB_BINS && r < ranks; b++) {
        below += hist[b];
        while (r < ranks && below * (uint64_t)ranks >= (uint64_t)r * s->taken)
            s->bound[r++] = s->lo + (double)(b + 1) * width;
    }
    while (r < ranks)
        s->bound[r++] = INFINITY;
    free(hist);
    return PTREG_OK;
}

/* The first halo: a few times the radius of a ball holding k atoms at the
 * mean density of the taken atoms' box (or the search radius). */
static double first_halo(const slabs *s, const ptreg_orientation_options *o)
{
    const double density = s->taken ? (double)s->taken / s->volume : 1.0;
    const double knn = 2.0 * cbrt(3.0 * (double)(o->k + 1) / (4.0 * 3.14159265358979323846 * density));
    const double neighbors = o->radius > 0 ? o->radius : knn;
    /* grain pooling: the candidate cells' corners, their pools' radius, and
     * the neighborhoods of the atoms in those pools and around the atom */
    return o->grain_radius > 0 ? (2.0 * sqrt(3.0) + 1.0) * o->grain_radius + 2.0 * neighbors : neighbors;
}

/* A rank's atoms with their coordinates and whether each is taken. */
typedef struct local_set {
    ptreg_orientation_share *share;
    float *xyz;
    uint8_t *selected;
    double low, high; /* the region the local set covers along the axis */
} local_set;

static void local_free(local_set *l)
{
    free(l->xyz);
    free(l->selected);
    l->xyz = NULL, l->selected = NULL;
    ptreg_orientation_share_free(l->share);
}

/* Not-taken atoms belong to rank 0, which flags them. */
static int owner(const atoms *a, const slabs *s, int ranks, size_t i)
{
    if (!taken_atom(a, i))
        return 0;
    const double x = a->xyz[3 * i + s->axis];
    int r = 0;
    while (r + 1 < ranks && x >= s->bound[r + 1])
        r++;
    return r;
}

static int held(const atoms *a, const slabs *s, const local_set *l, int own, size_t i)
{
    const double x = a->xyz[3 * i + s->axis];
    return own || (taken_atom(a, i) && x >= l->low && x < l->high);
}

static ptreg_status local_alloc(local_set *l, size_t m, ptreg_error *err)
{
    ptreg_orientation_share *sh = l->share;
    sh->atom = malloc((m + 1) * sizeof *sh->atom);
    sh->owned = malloc(m + 1);
    l->xyz = malloc(3 * (m + 1) * sizeof *l->xyz);
    l->selected = malloc(m + 1);
    if (!sh->atom || !sh->owned || !l->xyz || !l->selected)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu atoms", m);
    return PTREG_OK;
}

/* This rank's atoms: its slab's and the halo's (taken ones only, plus,
 * on rank 0, every atom not taken), in atom order. */
static ptreg_status build_local(const ptreg_ranks *ranks, const atoms *a, const slabs *s, double halo, local_set *l,
                                ptreg_error *err)
{
    l->low = s->bound[ranks->rank] - halo, l->high = s->bound[ranks->rank + 1] + halo;
    size_t m = 0;
    for (size_t i = 0; i < a->n; i++)
        m += (size_t)held(a, s, l, owner(a, s, ranks->size, i) == ranks->rank, i);
    ptreg_status st = local_alloc(l, m, err);
    ptreg_orientation_share *sh = l->share;
    for (size_t i = 0; !st && i < a->n; i++) {
        const int own = owner(a, s, ranks->size, i) == ranks->rank;
        if (!held(a, s, l, own, i))
            continue;
        sh->atom[sh->m] = i;
        memcpy(l->xyz + 3 * sh->m, a->xyz + 3 * i, 3 * sizeof(float));
        l->selected[sh->m] = !a->selected || a->selected[i];
        sh->owned[sh->m++] = (uint8_t)own;
    }
    return st;
}

/* Whether every owned atom's answer is certainly a single process's: all
 * it depends on (its reach: its farthest neighbor, or with grain pooling
 * the pools it chose from) nearer than the local region's edge, and the
 * region holding more than k taken atoms (or being everything). */
static int neighborhoods_exact(const local_set *l, const slabs *s, const ptreg_orientations *o,
                               const ptreg_orientation_options *opt)
{
    const ptreg_orientation_share *sh = l->share;
    if (opt->radius > 0 && opt->grain_radius == 0)
        return 1; /* halo = radius: every atom nearer than it is here */
    size_t taken = 0;
    for (size_t j = 0; j < sh->m; j++)
        taken += l->selected[j] && finite3(l->xyz + 3 * j);
    const int everything = l->low <= s->lo && l->high > s->hi;
    if (taken <= opt->k && !everything)
        return 0;
    for (size_t j = 0; j < sh->m; j++) {
        if (!sh->owned[j] || !isfinite(o->reach[j]))
            continue;
        const double x = l->xyz[3 * j + s->axis];
        const double gap = fmin(l->low <= s->lo ? INFINITY : x - l->low, l->high > s->hi ? INFINITY : l->high - x);
        if (!((double)o->reach[j] < gap))
            return 0;
    }
    return 1;
}

/* Every rank returns the worst status; a rank that did not fail itself
 * says that another did. */
static ptreg_status agree(const ptreg_ranks *ranks, ptreg_status st, ptreg_error *err)
{
    const int worst = ranks->max_of_all((int)st, ranks->ctx);
    if (worst && !st)
        return ptreg_error_set(err, (ptreg_status)worst, "orientations: another rank failed");
    return (ptreg_status)worst;
}

/* Orientations of the local set under a halo; *exact: every rank's
 * neighborhoods are a single process's. */
static ptreg_status one_round(const ptreg_ranks *ranks, const atoms *a, const slabs *s, double halo,
                              const ptreg_orientation_options *opt_in, local_set *l, ptreg_orientations *o, int *exact,
                              ptreg_error *err)
{
    ptreg_status st = agree(ranks, build_local(ranks, a, s, halo, l, err), err);
    if (st)
        return st;
    ptreg_orientation_options opt = *opt_in;
    opt.registered = l->share->owned;
    opt.combine_motif_sums = ranks->sum_motif;
    opt.combine_ctx = ranks->ctx;
    st = agree(ranks, ptreg_orientations_compute(l->xyz, l->share->m, l->selected, &opt, o, err), err);
    if (!st)
        *exact = !ranks->max_of_all(!neighborhoods_exact(l, s, o, &opt), ranks->ctx);
    return st;
}

static ptreg_status check_ranks(const ptreg_ranks *ranks, const float *xyz, size_t n, ptreg_error *err)
{
    if (!ranks || ranks->size < 1 || ranks->rank < 0 || ranks->rank >= ranks->size)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: rank %d of %d is not a rank", ranks ? ranks->rank : 0,
                               ranks ? ranks->size : 0);
    if (!ranks->max_of_all || !ranks->sum_motif)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: the ranks' collectives are missing");
    if (!xyz && n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: no atoms");
    return PTREG_OK;
}

ptreg_status ptreg_orientations_distributed(const ptreg_ranks *ranks, const float *xyz, size_t n,
                                            const uint8_t *selected, const ptreg_orientation_options *opt,
                                            ptreg_orientations *out, ptreg_orientation_share *share, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    memset(share, 0, sizeof *share);
    ptreg_status st = opt && opt->grain_map /* a rank holds its slab: the grains cross slabs */
                          ? ptreg_error_set(err, PTREG_ERR_ARG,
                                            "orientations: a grain map takes one process's atoms, not ranks'")
                          : check_ranks(ranks, xyz, n, err);
    if (st)
        return st;
    ptreg_orientation_options defaults;
    if (!opt)
        ptreg_orientation_options_default(&defaults), opt = &defaults;
    const atoms a = {xyz, n, selected};
    slabs s = {0};
    st = agree(ranks, make_slabs(&a, ranks->size, &s, err), err);
    local_set l = {.share = share};
    share->halo = st ? 0 : first_halo(&s, opt);
    for (share->halo_rounds = 1; !st; share->halo_rounds++) {
        int exact = 0;
        st = one_round(ranks, &a, &s, share->halo, opt, &l, out, &exact, err);
        if (st || exact)
            break;
        ptreg_orientations_free(out);
        local_free(&l);
        share->halo *= 2.0;
    }
    free(l.xyz);
    free(l.selected);
    free(s.bound);
    if (st) {
        ptreg_orientations_free(out);
        ptreg_orientation_share_free(share);
    }
    return st;
}

void ptreg_orientation_share_free(ptreg_orientation_share *share)
{
    if (!share)
        return;
    free(share->atom);
    free(share->owned);
    share->atom = NULL, share->owned = NULL, share->m = 0;
}
