/* Grain orientations from pooled neighborhoods (orientation_impl.h). At
 * atom-probe noise (0.05 nm, 60% detection) one atom's dozen neighbors
 * fix its orientation only to tens of degrees; the atoms of a grain share
 * one, though. Space is cut into cubic cells of the pooling radius R; each
 * cell's seed (its atom nearest the cell's centre) pools the
 * neighborhoods of the atoms nearest it within R, a few hundred points
 * that sit on the lattice sites and register to a degree or two; each
 * atom then takes the orientation of a seed among those of the 27 cells
 * around it: the one under which its own neighborhood and its
 * neighbors' fit the motif best, so that atoms near a grain boundary pick
 * their own grain. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apt/orientation_impl.h"

/* Grids beyond this many cells per axis are refused (coordinates / R). */
#define MAX_CELLS_PER_AXIS 1000000

typedef struct cell_atom {
    int64_t key; /* the cell */
    double d2;   /* to the cell's centre */
    size_t atom;
} cell_atom;

static int cell_atom_cmp(const void *pa, const void *pb)
{
    const cell_atom *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->d2 != b->d2)
        return a->d2 < b->d2 ? -1 : 1;
    return (a->atom > b->atom) - (a->atom < b->atom);
}

static int64_t cell_key(const int64_t c[3])
{
    const int64_t span = 2 * MAX_CELLS_PER_AXIS + 1;
    return ((c[0] + MAX_CELLS_PER_AXIS) * span + (c[1] + MAX_CELLS_PER_AXIS)) * span + (c[2] + MAX_CELLS_PER_AXIS);
}

static void cell_of(const float *p, double R, int64_t c[3])
{
    for (int k = 0; k < 3; k++)
        c[k] = (int64_t)floor(p[k] / R);
}

/* The seeds: per occupied cell (sorted by key), its atom with a
 * neighborhood nearest the centre (ties to the lower index); and the
 * cell's atoms with a neighborhood. */
typedef struct seeds {
    size_t count;
    int64_t *key;
    size_t *atom;
    size_t *first;  /* count + 1: cell i's atoms are member[first[i] .. first[i + 1]) */
    size_t *member; /* the atoms, by cell */
} seeds;

static void seeds_free(seeds *s)
{
    free(s->key);
    free(s->atom);
    free(s->first);
    free(s->member);
}

static ptreg_status find_seeds(const orient_grain_input *in, double R, seeds *s, ptreg_error *err)
{
    cell_atom *ca = malloc((in->m + 1) * sizeof *ca);
    s->key = malloc((in->m + 1) * sizeof *s->key);
    s->atom = malloc((in->m + 1) * sizeof *s->atom);
    s->first = malloc((in->m + 1) * sizeof *s->first);
    s->member = malloc((in->m + 1) * sizeof *s->member);
    if (!ca || !s->key || !s->atom || !s->first || !s->member) {
        free(ca);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the grain cells");
    }
    size_t n = 0;
    for (size_t t = 0; t < in->m; t++) {
        if (in->offset[t + 1] == in->offset[t])
            continue;
        const float *p = in->xyz + 3 * t;
        int64_t c[3];
        cell_of(p, R, c);
        for (int k = 0; k < 3; k++)
            if (c[k] <= -MAX_CELLS_PER_AXIS || c[k] >= MAX_CELLS_PER_AXIS) {
                free(ca);
                return ptreg_error_set(err, PTREG_ERR_ARG,
                                       "orientations: atom at (%g, %g, %g) is more than %d grain "
                                       "radii from the origin: give a larger radius",
                                       p[0], p[1], p[2], MAX_CELLS_PER_AXIS);
            }
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += pow(p[k] - ((double)c[k] + 0.5) * R, 2);
        ca[n++] = (cell_atom){cell_key(c), d2, t};
    }
    qsort(ca, n, sizeof *ca, cell_atom_cmp);
    s->count = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || ca[i].key != ca[i - 1].key) {
            s->first[s->count] = i;
            s->key[s->count] = ca[i].key;
            s->atom[s->count++] = ca[i].atom;
        }
        s->member[i] = ca[i].atom;
    }
    s->first[s->count] = n;
    free(ca);
    return PTREG_OK;
}

static long seed_of_cell(const seeds *s, int64_t key)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (s->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->count && s->key[lo] == key ? (long)lo : -1;
}

/* The seeds of the 27 cells around cell c (-1 where a cell has none), in
 * a fixed order. */
static void cell_seeds(const seeds *s, const int64_t c[3], long out[27])
{
    int n = 0;
    for (int dx = -1; dx <= 1; dx++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dz = -1; dz <= 1; dz++) {
                const int64_t d[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
                out[n++] = seed_of_cell(s, cell_key(d));
            }
}

/* ... around atom t's cell. */
static void candidates(const orient_grain_input *in, const seeds *s, double R, size_t t, long out[27])
{
    int64_t c[3];
    cell_of(in->xyz + 3 * t, R, c);
    cell_seeds(s, c, out);
}

static double distance(const float *a, const float *b)
{
    return sqrt(pow((double)a[0] - b[0], 2) + pow((double)a[1] - b[1], 2) + pow((double)a[2] - b[2], 2));
}

/* Pooled neighborhoods of the seeds in use, as a pair set onto the motif;
 * per pool, how far from its seed anything it holds depends on. */
typedef struct pools {
    size_t count;
    long *slot;     /* per seed: its pool, or -1 */
    size_t *seed;   /* per pool: its seed */
    size_t *offset; /* count + 1 */
    float *points;
    double *reach;
} pools;

static void pools_free(pools *p)
{
    free(p->slot);
    free(p->seed);
    free(p->offset);
    free(p->points);
    free(p->reach);
}

/* The pool of the seed at atom: the neighborhoods of the atoms nearest
 * it within R, nearest first, whole, while they fit in cap points; *reach:
 * how far from the seed its content depends on anything. Returns 1 when
 * out of memory. */
static int fill_pool(const orient_grain_input *in, size_t atom, double R, size_t cap, ptreg_neighbors *nb, float *out,
                     size_t *len, double *reach)
{
    *len = 0, *reach = 0.0;
    if (ptreg_kdtree_radius(in->tree, in->xyz + 3 * atom, (float)R, nb, NULL))
        return 1;
    for (size_t j = 0; j < nb->count; j++) {
        const size_t q = nb->index[j], n = in->offset[q + 1] - in->offset[q];
        if (n == 0)
            continue;
        if (*len + n > cap)
            break;
        memcpy(out + 3 * *len, in->nbr + 3 * in->offset[q], 3 * n * sizeof(float));
        *len += n;
        *reach = fmax(*reach, distance(in->xyz + 3 * atom, in->xyz + 3 * q) + in->reach[q]);
    }
    *reach = fmax(*reach, R); /* which atoms made it depends on every one within R */
    return 0;
}

/* Candidates closer than this (degrees, up to the motif's symmetry) are
 * one grain's orientation: pools of one grain agree to a few degrees. */
#define SAME_GRAIN_DEG 5.0
/* The atom's own neighborhood counts this many times a neighbor's: more
 * sharpens grain boundaries at low noise, less steadies them at high
 * (weights 1, 2, 4 at 0.02 / 0.05 nm: 97.7 / 95.5%, 98.1 / 95.3%,
 * 98.5 / 95.3% within 10 degrees). */
#define OWN_WEIGHT 2.0

static double misorientation(const double *Ta, const double *Tb, const orient_grain_options *go)
{
    double Ra[9], Rb[9], qa[4], qb[4];
    ptreg_transform_rotation(Ta, Ra), ptreg_transform_rotation(Tb, Rb);
    ptreg_matrix_to_quaternion(Ra, qa), ptreg_matrix_to_quaternion(Rb, qb);
    return ptreg_misorientation_deg(qa, qb, go->sym, go->nsym);
}

/* A cell's candidate orientations: the pools of the 27 cells around it,
 * those of one grain taken together. The candidates depend on the cell
 * alone, so its atoms share them. */
typedef struct cell_grains {
    long pool[27]; /* per neighboring cell: its pool, or -1 */
    int group[27]; /* per neighboring cell: its grain among the candidates, or -1 */
    long rep[27];  /* per grain: the pool whose orientation stands for it */
    int groups;
} cell_grains;

static void group_candidates(const seeds *s, const pools *p, const double *Tp, const orient_grain_options *go,
                             const int64_t cell[3], cell_grains *cg)
{
    long seed[27];
    cell_seeds(s, cell, seed);
    cg->groups = 0;
    for (int n = 0; n < 27; n++) {
        const long pool = seed[n] >= 0 ? p->slot[seed[n]] : -1;
        cg->pool[n] = pool;
        cg->group[n] = -1;
        if (pool < 0)
            continue;
        for (int g = 0; g < cg->groups && cg->group[n] < 0; g++)
            if (misorientation(Tp + 16 * pool, Tp + 16 * cg->rep[g], go) < SAME_GRAIN_DEG)
                cg->group[n] = g;
        if (cg->group[n] < 0)
            cg->rep[cg->groups] = pool, cg->group[n] = cg->groups++;
    }
}

/* The fit (orient_fit) of each neighborhood a cell's atoms score with,
 * under each of the cell's grains: atom[i]'s under grain g is
 * fit[i * groups + g]. Neighbors share neighborhoods, so each is fitted
 * once per cell rather than once per atom that counts it; and all of
 * them in one pass over their points, which fills the vector lanes. */
typedef struct fit_table {
    size_t count, cap, slots, points_cap;
    size_t *atom; /* the neighborhoods' atoms, in the order first met */
    double *fit;
    size_t *slot_atom; /* open addressing, atom -> row: SIZE_MAX where empty */
    size_t *slot_row;
    float *points;     /* the atoms' neighborhoods, one after another */
    double *point_fit; /* per point: its term of the fit */
} fit_table;

static void fit_table_free(fit_table *f)
{
    free(f->atom);
    free(f->fit);
    free(f->slot_atom);
    free(f->slot_row);
    free(f->points);
    free(f->point_fit);
}

static int grow(void **p, size_t bytes)
{
    void *q = realloc(*p, bytes);
    if (q)
        *p = q;
    return q != NULL;
}

/* Room for this many atoms (and twice as many slots, a power of two)
 * and points. */
static int fit_table_reserve(fit_table *f, size_t atoms, size_t points)
{
    if (atoms > f->cap) {
        if (!grow((void **)&f->atom, atoms * sizeof *f->atom) || !grow((void **)&f->fit, atoms * 27 * sizeof *f->fit))
            return 0;
        f->cap = atoms;
    }
    size_t slots = 16;
    while (slots < 2 * atoms)
        slots *= 2;
    if (slots > f->slots) {
        if (!grow((void **)&f->slot_atom, slots * sizeof *f->slot_atom) ||
            !grow((void **)&f->slot_row, slots * sizeof *f->slot_row))
            return 0;
        f->slots = slots;
    }
    if (points > f->points_cap) {
        if (!grow((void **)&f->points, 3 * points * sizeof *f->points) ||
            !grow((void **)&f->point_fit, points * sizeof *f->point_fit))
            return 0;
        f->points_cap = points;
    }
    return 1;
}

/* Atom u's slot: where it is, or the empty one where it goes. */
static size_t slot_of(const fit_table *f, size_t u)
{
    size_t at = (size_t)(((uint64_t)u * 0x9E3779B97F4A7C15ull) >> 32) & (f->slots - 1);
    while (f->slot_atom[at] != SIZE_MAX && f->slot_atom[at] != u)
        at = (at + 1) & (f->slots - 1);
    return at;
}

static void add_atom(fit_table *f, size_t u)
{
    const size_t at = slot_of(f, u);
    if (f->slot_atom[at] == SIZE_MAX)
        f->slot_atom[at] = u, f->slot_row[at] = f->count, f->atom[f->count++] = u;
}

static double fit_of(const fit_table *f, size_t u, int groups, int g)
{
    return f->fit[f->slot_row[slot_of(f, u)] * (size_t)groups + (size_t)g];
}

/* The neighborhoods the wanted atoms atoms[0..n) of one cell score with:
 * theirs and their neighbors', once each, into f->atom and f->points;
 * returns how many points, or 0 when out of memory. */
static size_t gather_neighborhoods(const orient_grain_input *in, const size_t *atoms, size_t n, fit_table *f)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += 1 + in->offset[atoms[i] + 1] - in->offset[atoms[i]];
    if (!fit_table_reserve(f, total, 0))
        return 0;
    for (size_t i = 0; i < f->slots; i++)
        f->slot_atom[i] = SIZE_MAX;
    f->count = 0;
    for (size_t i = 0; i < n; i++) {
        add_atom(f, atoms[i]);
        for (size_t j = in->offset[atoms[i]]; j < in->offset[atoms[i] + 1]; j++)
            add_atom(f, in->nbr_atom[j]);
    }
    size_t points = 0;
    for (size_t i = 0; i < f->count; i++)
        points += in->offset[f->atom[i] + 1] - in->offset[f->atom[i]];
    if (!fit_table_reserve(f, f->count, points + 1))
        return 0;
    for (size_t i = 0, at = 0; i < f->count; i++) {
        const size_t u = f->atom[i], nu = in->offset[u + 1] - in->offset[u];
        memcpy(f->points + 3 * at, in->nbr + 3 * in->offset[u], 3 * nu * sizeof(float));
        at += nu;
    }
    return points + 1; /* + 1: zero points is not a failure */
}

/* Fills f for the wanted atoms atoms[0..n) of one cell. Returns 0 when out
 * of memory. */
static int fill_fits(const orient_grain_input *in, const orient_grain_options *go, const double *Tp,
                     const cell_grains *cg, const size_t *atoms, size_t n, fit_table *f)
{
    const size_t points = gather_neighborhoods(in, atoms, n, f);
    if (!points)
        return 0;
    for (int g = 0; g < cg->groups; g++) {
        double R[9];
        ptreg_transform_rotation(Tp + 16 * cg->rep[g], R);
        orient_point_fits(R, f->points, points - 1, go->motif, go->motif_points, go->tau2, f->point_fit);
        for (size_t i = 0, at = 0; i < f->count; i++) {
            const size_t u = f->atom[i], nu = in->offset[u + 1] - in->offset[u];
            double sum = 0.0;
            for (size_t j = 0; j < nu; j++)
                sum += f->point_fit[at + j];
            at += nu;
            f->fit[i * (size_t)cg->groups + (size_t)g] = nu ? sum / (double)nu : 0.0;
        }
    }
    return 1;
}

/* How well atom t's neighborhood and those of its neighbors sit on the
 * motif under grain g: one atom's dozen noisy neighbors pick the wrong
 * grain too often (17% at 0.05 nm), a dozen atoms' seldom. */
static double local_fit(const orient_grain_input *in, const fit_table *f, int groups, size_t t, int g)
{
    double sum = 0.0;
    for (size_t j = in->offset[t]; j <= in->offset[t + 1]; j++) {
        const size_t u = j < in->offset[t + 1] ? in->nbr_atom[j] : t;
        const size_t n = in->offset[u + 1] - in->offset[u];
        if (n)
            sum += (u == t ? OWN_WEIGHT : 1.0) * (double)n * fit_of(f, u, groups, g);
    }
    return sum;
}

/* Atom t's orientation: its cell's grains scored by local_fit; of the best
 * grain, the pool whose seed is nearest the atom gives the answer (ties
 * to the first in the cells' order). Returns how far from the atom
 * anything can change that answer. */
static double assign(const orient_grain_input *in, const seeds *s, const pools *p, const double *Tp,
                     const orient_grain_options *go, const cell_grains *cg, const fit_table *f, size_t t, double T[16])
{
    double depends = 2.0 * sqrt(3.0) * go->radius; /* the 27 cells' farthest corner */
    for (int k = 0; k < 27; k++)
        if (cg->pool[k] >= 0)
            depends = fmax(depends, distance(in->xyz + 3 * t, in->xyz + 3 * s->atom[p->seed[cg->pool[k]]]) +
                                        p->reach[cg->pool[k]]);
    for (size_t j = in->offset[t]; j < in->offset[t + 1]; j++) {
        const size_t u = in->nbr_atom[j];
        depends = fmax(depends, distance(in->xyz + 3 * t, in->xyz + 3 * u) + in->reach[u]);
    }
    double best = INFINITY;
    int pick = cg->groups == 1 ? 0 : -1; /* one grain: nothing to choose */
    for (int g = 0; g < cg->groups && cg->groups > 1; g++) {
        const double fit = local_fit(in, f, cg->groups, t, g);
        if (fit < best)
            best = fit, pick = g;
    }
    double nearest = INFINITY;
    for (int k = 0; k < 27 && pick >= 0; k++) {
        if (cg->group[k] != pick)
            continue;
        const long pool = cg->pool[k];
        const double d = distance(in->xyz + 3 * t, in->xyz + 3 * s->atom[p->seed[pool]]);
        if (d < nearest) {
            nearest = d;
            memcpy(T, Tp + 16 * pool, 16 * sizeof(double));
        }
    }
    return depends;
}

/* Marks the seeds some wanted atom has among its candidates; returns how
 * many, listed in seed order. */
static size_t needed_seeds(const orient_grain_input *in, const seeds *s, double R, long *slot, size_t *list)
{
    for (size_t i = 0; i < s->count; i++)
        slot[i] = -1;
    for (size_t t = 0; t < in->m; t++) {
        if (!in->wanted[t] || in->offset[t + 1] == in->offset[t])
            continue;
        long c[27];
        candidates(in, s, R, t, c);
        for (int k = 0; k < 27; k++)
            if (c[k] >= 0)
                slot[c[k]] = 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->count; i++)
        if (!slot[i])
            list[n++] = i;
    return n;
}

/* The pools of the needed seeds, those with fewer than 3 points dropped
 * (their seeds get slot -1). */
static ptreg_status build_pools(const orient_grain_input *in, const seeds *s, double R, size_t cap, pools *p,
                                ptreg_error *err)
{
    memset(p, 0, sizeof *p);
    p->slot = malloc((s->count + 1) * sizeof *p->slot);
    p->seed = malloc((s->count + 1) * sizeof *p->seed);
    if (!p->slot || !p->seed)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the grain pools");
    const size_t needed = needed_seeds(in, s, R, p->slot, p->seed);
    size_t *len = malloc((needed + 1) * sizeof *len);
    p->offset = malloc((needed + 1) * sizeof *p->offset);
    p->points = malloc((3 * cap * needed + 1) * sizeof *p->points);
    p->reach = malloc((needed + 1) * sizeof *p->reach);
    if (!len || !p->offset || !p->points || !p->reach) {
        free(len);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu grain pools", needed);
    }
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        ptreg_neighbors nb = {0};
#pragma omp for schedule(dynamic, 16)
        for (long i = 0; i < (long)needed; i++)
            failed |= fill_pool(in, s->atom[p->seed[i]], R, cap, &nb, p->points + 3 * cap * (size_t)i, &len[i],
                                &p->reach[i]);
        ptreg_neighbors_free(&nb);
    }
    p->offset[0] = 0;
    for (size_t i = 0; i < needed; i++) {
        const size_t seed = p->seed[i];
        p->slot[seed] = -1;
        if (len[i] < 3)
            continue;
        memmove(p->points + 3 * p->offset[p->count], p->points + 3 * cap * i, 3 * len[i] * sizeof(float));
        p->offset[p->count + 1] = p->offset[p->count] + len[i];
        p->reach[p->count] = p->reach[i];
        p->seed[p->count] = seed;
        p->slot[seed] = (long)p->count++;
    }
    free(len);
    return failed ? ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory pooling neighborhoods")
                  : PTREG_OK;
}

/* Every wanted atom's orientation, cell by cell. */
static ptreg_status assign_cells(const orient_grain_input *in, const seeds *s, const pools *p, const double *Tp,
                                 const orient_grain_options *go, double *T, float *reach, ptreg_error *err)
{
    size_t most = 0;
    for (size_t c = 0; c < s->count; c++)
        most = s->first[c + 1] - s->first[c] > most ? s->first[c + 1] - s->first[c] : most;
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        fit_table f = {0};
        size_t *atoms = malloc((most + 1) * sizeof *atoms);
        failed |= !atoms;
#pragma omp for schedule(dynamic, 4)
        for (long c = 0; c < (long)s->count; c++) {
            size_t n = 0;
            for (size_t i = s->first[c]; atoms && i < s->first[c + 1]; i++)
                if (in->wanted[s->member[i]])
                    atoms[n++] = s->member[i];
            if (!n)
                continue;
            cell_grains cg;
            int64_t cell[3];
            cell_of(in->xyz + 3 * atoms[0], go->radius, cell);
            group_candidates(s, p, Tp, go, cell, &cg);
            if (cg.groups > 1 && !fill_fits(in, go, Tp, &cg, atoms, n, &f)) {
                failed = 1;
                continue;
            }
            for (size_t i = 0; i < n; i++)
                reach[atoms[i]] = (float)assign(in, s, p, Tp, go, &cg, &f, atoms[i], T + 16 * atoms[i]);
        }
        fit_table_free(&f);
        free(atoms);
    }
    return failed ? ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory assigning grains") : PTREG_OK;
}

ptreg_status orient_grains(const orient_grain_input *in, const orient_grain_options *go, double *T, float *reach,
                           size_t *pools_used, double *grain_ms, ptreg_batch_stats *stats, ptreg_error *err)
{
    const double R = go->radius;
    seeds s = {0};
    pools p = {0};
    const double t0 = ptreg_time_ms();
    ptreg_status st = find_seeds(in, R, &s, err);
    st = st ? st : build_pools(in, &s, R, go->pool_points, &p, err);
    *grain_ms = ptreg_time_ms() - t0;
    double *Tp = st ? NULL : malloc((16 * p.count + 1) * sizeof *Tp);
    if (!st && !Tp)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu grain pools", p.count);
    if (!st) {
        const ptreg_pair_set set = {p.count, p.points, p.offset, go->motif, NULL, go->motif_points};
        st = orient_register(&set, go->batch, go->coarse_factor, go->starts, go->nstarts, go->tau2, Tp, stats, err);
    }
    const double t1 = ptreg_time_ms();
    st = st ? st : assign_cells(in, &s, &p, Tp, go, T, reach, err);
    *grain_ms += ptreg_time_ms() - t1;
    *pools_used = p.count;
    free(Tp);
    seeds_free(&s);
    pools_free(&p);
    return st;
}
