/* Orientations of every atom in slabs along the taken atoms' longest axis,
 * each slab's atoms registered with a halo of neighbors around them:
 * shared among the ranks of several processes
 * (ptreg_orientations_distributed), or one slab after another for an input
 * larger than memory (ptreg_orientations_slabs). An atom's answer depends
 * only on its neighborhood and the motif, so the answers are one process's
 * once every neighborhood is the same: a slab checks that everything each
 * atom's answer depends on is nearer than its halo's edge, and widens the
 * halo and starts again when one is not. Among ranks, the motif estimate's
 * sums are integers added up over the ranks, and the caller's collectives
 * (MPI's, or any other) are the only communication, so the library needs
 * no MPI. The input is only ever scanned, a piece at a time, so that it
 * need not be in memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/orientation.h"

/* The slabs' boundaries sit on the edges of a histogram this fine, so the
 * slabs get about as many atoms each. */
#define SLAB_BINS 65536

static int finite3(const float *p) { return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]); }

static int taken_atom(const float *p, const uint8_t *selected, size_t i)
{
    return (!selected || selected[i]) && finite3(p);
}

/* ---- the slabs' bounds, from two scans ---- */

typedef struct slabs {
    int axis;
    double lo, hi; /* the taken atoms' extent along the axis */
    size_t count;
    double *bound; /* count + 1: slab r is [bound[r], bound[r + 1]) */
    size_t taken;
    double volume; /* of the taken atoms' bounding box */
} slabs;

typedef struct extent_scan {
    double lo[3], hi[3];
    size_t taken;
} extent_scan;

static ptreg_status add_extent(void *ctx, size_t first, size_t count, const float *xyz, const uint8_t *selected,
                               ptreg_error *err)
{
    (void)first, (void)err;
    extent_scan *e = ctx;
    for (size_t i = 0; i < count; i++) {
        const float *p = xyz + 3 * i;
        if (!taken_atom(p, selected, i))
            continue;
        e->taken++;
        for (int k = 0; k < 3; k++)
            e->lo[k] = fmin(e->lo[k], p[k]), e->hi[k] = fmax(e->hi[k], p[k]);
    }
    return PTREG_OK;
}

static ptreg_status taken_extent(const ptreg_atom_source *src, slabs *s, ptreg_error *err)
{
    extent_scan e = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0};
    ptreg_status st = src->scan(src->src, NULL, add_extent, &e, err);
    s->taken = e.taken;
    s->axis = 0;
    for (int k = 1; k < 3; k++)
        if (e.hi[k] - e.lo[k] > e.hi[s->axis] - e.lo[s->axis])
            s->axis = k;
    s->lo = e.lo[s->axis], s->hi = e.hi[s->axis];
    s->volume = 1.0;
    for (int k = 0; k < 3; k++)
        s->volume *= fmax(e.hi[k] - e.lo[k], 1e-9);
    return st;
}

typedef struct histogram_scan {
    const slabs *s;
    uint64_t *hist;
} histogram_scan;

static ptreg_status add_histogram(void *ctx, size_t first, size_t count, const float *xyz, const uint8_t *selected,
                                  ptreg_error *err)
{
    (void)first, (void)err;
    const histogram_scan *h = ctx;
    const double width = h->s->hi > h->s->lo ? (h->s->hi - h->s->lo) / SLAB_BINS : 1.0;
    for (size_t i = 0; i < count; i++)
        if (taken_atom(xyz + 3 * i, selected, i)) {
            const double b = (xyz[3 * i + h->s->axis] - h->s->lo) / width;
            h->hist[b < SLAB_BINS - 1 ? (size_t)b : SLAB_BINS - 1]++;
        }
    return PTREG_OK;
}

/* count slabs (0: as many as hold about slab_atoms taken atoms each). */
static ptreg_status make_slabs(const ptreg_atom_source *src, size_t count, size_t slab_atoms, slabs *s,
                               ptreg_error *err)
{
    ptreg_status st = taken_extent(src, s, err);
    if (st)
        return st;
    s->count = count ? count : s->taken > slab_atoms ? (s->taken + slab_atoms - 1) / slab_atoms : 1;
    s->bound = malloc((s->count + 1) * sizeof *s->bound);
    uint64_t *hist = calloc(SLAB_BINS, sizeof *hist);
    histogram_scan h = {s, hist};
    st = s->bound && hist ? src->scan(src->src, NULL, add_histogram, &h, err)
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the slabs");
    if (st) {
        free(hist);
        return st;
    }
    const double width = s->hi > s->lo ? (s->hi - s->lo) / SLAB_BINS : 1.0;
    s->bound[0] = -INFINITY, s->bound[s->count] = INFINITY;
    uint64_t below = 0;
    size_t r = 1;
    for (size_t b = 0; b < SLAB_BINS && r < s->count; b++) {
        below += hist[b];
        while (r < s->count && below * (uint64_t)s->count >= (uint64_t)r * s->taken)
            s->bound[r++] = s->lo + (double)(b + 1) * width;
    }
    while (r < s->count)
        s->bound[r++] = INFINITY;
    free(hist);
    return PTREG_OK;
}

/* The slab an atom's position falls in (the first for one not finite):
 * the last whose lower bound is at most the position. */
static size_t slab_of(const slabs *s, const float *p)
{
    if (!finite3(p))
        return 0;
    const double x = p[s->axis];
    size_t lo = 0, hi = s->count - 1;
    while (lo < hi) {
        const size_t mid = (lo + hi + 1) / 2;
        if (x >= s->bound[mid])
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
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

/* ---- one slab's atoms: its own and its halo's ---- */

typedef struct local_set {
    ptreg_orientation_share *share;
    float *xyz;
    uint8_t *selected;
    size_t cap;
    double low, high; /* the region the local set covers along the axis */
} local_set;

static void local_free(local_set *l)
{
    free(l->xyz);
    free(l->selected);
    l->xyz = NULL, l->selected = NULL, l->cap = 0;
}

static int grow(local_set *l)
{
    ptreg_orientation_share *sh = l->share;
    const size_t cap = l->cap ? 2 * l->cap : 4096;
    size_t *atom = realloc(sh->atom, cap * sizeof *atom);
    sh->atom = atom ? atom : sh->atom;
    uint8_t *owned = realloc(sh->owned, cap);
    sh->owned = owned ? owned : sh->owned;
    float *xyz = realloc(l->xyz, 3 * cap * sizeof *xyz);
    l->xyz = xyz ? xyz : l->xyz;
    uint8_t *selected = realloc(l->selected, cap);
    l->selected = selected ? selected : l->selected;
    if (!atom || !owned || !xyz || !selected)
        return 0;
    l->cap = cap;
    return 1;
}

typedef struct local_scan {
    const slabs *s;
    size_t slab;
    local_set *l;
} local_scan;

/* Keeps the slab's atoms (taken or not) and the taken atoms within the
 * halo, in atom order. */
static ptreg_status add_local(void *ctx, size_t first, size_t count, const float *xyz, const uint8_t *selected,
                              ptreg_error *err)
{
    const local_scan *ls = ctx;
    local_set *l = ls->l;
    ptreg_orientation_share *sh = l->share;
    for (size_t i = 0; i < count; i++) {
        const float *p = xyz + 3 * i;
        const int own = slab_of(ls->s, p) == ls->slab;
        const double x = p[ls->s->axis];
        if (!own && !(taken_atom(p, selected, i) && x >= l->low && x < l->high))
            continue;
        if (sh->m == l->cap && !grow(l))
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for a slab of %zu atoms", sh->m);
        sh->atom[sh->m] = first + i;
        memcpy(l->xyz + 3 * sh->m, p, 3 * sizeof *p);
        l->selected[sh->m] = !selected || selected[i];
        sh->owned[sh->m++] = (uint8_t)own;
    }
    return PTREG_OK;
}

static ptreg_status build_local(const ptreg_atom_source *src, const slabs *s, size_t slab, double halo, local_set *l,
                                ptreg_error *err)
{
    l->low = s->bound[slab] - halo, l->high = s->bound[slab + 1] + halo;
    l->share->m = 0;
    local_scan ls = {s, slab, l};
    /* the slab's own atoms lie in [bound, next bound) and the first slab
     * owns those not finite: the halo's window holds every atom kept */
    const ptreg_atom_window window = {s->axis, l->low, l->high, slab == 0};
    return src->scan(src->src, &window, add_local, &ls, err);
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

/* ---- a slab's registration, among ranks or alone ---- */

/* Among ranks (ranks not NULL), every rank returns the worst status; a
 * rank that did not fail itself says that another did. */
static ptreg_status agree(const ptreg_ranks *ranks, ptreg_status st, ptreg_error *err)
{
    if (!ranks)
        return st;
    const int worst = ranks->max_of_all((int)st, ranks->ctx);
    if (worst && !st)
        return ptreg_error_set(err, (ptreg_status)worst, "orientations: another rank failed");
    return (ptreg_status)worst;
}

/* Orientations of the slab's local set under a halo; *exact: every owned
 * answer (among ranks: every rank's) is a single process's. */
static ptreg_status slab_round(const ptreg_ranks *ranks, const ptreg_atom_source *src, const slabs *s, size_t slab,
                               double halo, const ptreg_orientation_options *opt_in, local_set *l,
                               ptreg_orientations *o, int *exact, ptreg_error *err)
{
    ptreg_status st = agree(ranks, build_local(src, s, slab, halo, l, err), err);
    if (st)
        return st;
    ptreg_orientation_options opt = *opt_in;
    opt.registered = l->share->owned;
    if (ranks)
        opt.combine_motif_sums = ranks->sum_motif, opt.combine_ctx = ranks->ctx;
    st = agree(ranks, ptreg_orientations_compute(l->xyz, l->share->m, l->selected, &opt, o, err), err);
    if (st)
        return st;
    const int here = neighborhoods_exact(l, s, o, &opt);
    *exact = ranks ? !ranks->max_of_all(!here, ranks->ctx) : here;
    return PTREG_OK;
}

/* The slab's orientations, the halo widened until they are exact. */
static ptreg_status register_slab(const ptreg_ranks *ranks, const ptreg_atom_source *src, const slabs *s, size_t slab,
                                  const ptreg_orientation_options *opt, local_set *l, ptreg_orientations *o,
                                  ptreg_error *err)
{
    ptreg_orientation_share *share = l->share;
    share->halo = first_halo(s, opt);
    ptreg_status st;
    for (share->halo_rounds = 1;; share->halo_rounds++) {
        int exact = 0;
        st = slab_round(ranks, src, s, slab, share->halo, opt, l, o, &exact, err);
        if (st || exact)
            break;
        ptreg_orientations_free(o);
        share->halo *= 2.0;
    }
    if (st)
        ptreg_orientations_free(o);
    return st;
}

/* ---- among ranks ---- */

typedef struct memory_atoms {
    const float *xyz;
    size_t n;
    const uint8_t *selected;
} memory_atoms;

static ptreg_status scan_memory(void *src, const ptreg_atom_window *window, ptreg_atom_piece_fn fn, void *ctx,
                                ptreg_error *err)
{
    (void)window; /* one piece: everything */
    const memory_atoms *a = src;
    return a->n ? fn(ctx, 0, a->n, a->xyz, a->selected, err) : PTREG_OK;
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
    memory_atoms a = {xyz, n, selected};
    const ptreg_atom_source src = {scan_memory, &a};
    slabs s = {0};
    st = agree(ranks, make_slabs(&src, (size_t)ranks->size, 0, &s, err), err);
    local_set l = {.share = share};
    st = st ? st : register_slab(ranks, &src, &s, (size_t)ranks->rank, opt, &l, out, err);
    local_free(&l);
    free(s.bound);
    if (st)
        ptreg_orientation_share_free(share);
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

/* ---- one slab after another ---- */

static ptreg_status check_slabs(const ptreg_atom_source *atoms, size_t slab_atoms, const ptreg_orientation_options *opt,
                                ptreg_orientation_slab_fn fn, ptreg_error *err)
{
    if (!atoms || !atoms->scan || !fn || slab_atoms == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations in slabs: no atoms, no function or slabs of 0 atoms");
    if (opt && opt->grain_map) /* a slab is let go before the next: the grains cross slabs */
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations in slabs: a grain map takes every atom at once");
    return PTREG_OK;
}

ptreg_status ptreg_orientations_slabs(const ptreg_atom_source *atoms, size_t slab_atoms,
                                      const ptreg_orientation_options *opt, ptreg_orientation_slab_fn fn, void *ctx,
                                      ptreg_error *err)
{
    ptreg_status st = check_slabs(atoms, slab_atoms, opt, fn, err);
    if (st)
        return st;
    ptreg_orientation_options one;
    if (opt)
        one = *opt;
    else
        ptreg_orientation_options_default(&one);
    memset(&one.progress, 0, sizeof one.progress);
    slabs s = {0};
    st = make_slabs(atoms, 0, slab_atoms, &s, err);
    if (!st && one.estimate_motif > 0 && s.count > 1)
        st = ptreg_error_set(err, PTREG_ERR_ARG,
                             "orientations in slabs: the motif estimate needs every atom at once, and the input is %zu "
                             "slabs: estimate the motif on a part of it and give that as the motif",
                             s.count);
    for (size_t slab = 0; !st && slab < s.count; slab++) {
        ptreg_orientation_share share = {0};
        local_set l = {.share = &share};
        ptreg_orientations o;
        memset(&o, 0, sizeof o);
        st = register_slab(NULL, atoms, &s, slab, &one, &l, &o, err);
        st = st ? st : fn(ctx, &o, &share, l.xyz, err);
        ptreg_orientations_free(&o);
        ptreg_orientation_share_free(&share);
        local_free(&l);
    }
    free(s.bound);
    return st;
}
