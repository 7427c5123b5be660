/* Grains of an orientation map (grains.h), in stages:
 * 1. the atoms with an orientation, each joined to its k nearest such atoms
 *    when the two agree to within half the threshold (union-find, each
 *    component's root its lowest atom, so the components do not depend on
 *    the order of the unions): EBSD's grain reconstruction by neighbor
 *    misorientation;
 * 2. components below min_atoms dissolved into their neighbors' grains;
 * 3. neighboring components whose mean orientations agree within the
 *    threshold joined;
 * 4. atoms at boundaries rechecked against the grains' means;
 * 5. 2 and 3 again; then each grain's mean orientation, spread, centroid
 *    and its boundaries. */
#include "apt/grains_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/nn.h"
#include "ptreg/transform.h"
#include "apt/orientation_impl.h"

#define MAX_K 64
/* Each atom is compared with this many nearest atoms with an orientation. */
#define GRAIN_K 12
#define NO_GRAIN UINT32_MAX
/* Atoms join their neighbors within this share of the threshold; the
 * pieces then join where their means are within the whole of it. A
 * pooled map's boundary pools, registered onto both grains' points, bridge
 * grains 15 degrees apart in steps below 5 (two of the polycrystal's eight
 * grains became one); pieces' means bridge nothing (bench/NOTES.md,
 * change 145). */
#define JOIN_SHARE 0.5
/* Dissolving stops after this many rounds even if atoms are left. */
#define MAX_ROUNDS 10000
/* Boundaries are rechecked at most this many rounds: each moves a
 * boundary by up to a neighbor's distance. */
#define RECHECK_ROUNDS 10
/* A grain's mean and spread leave out its atoms oriented farther than this
 * from it (degrees). */
#define OUTLIER_DEG 15.0
/* A grain's mean starts from where this many of its atoms crowd. */
#define SEED_SAMPLES 32

void grain_map_free(ptreg_grain_map *map)
{
    if (!map)
        return;
    free(map->grain);
    free(map->grains);
    free(map->boundaries);
    free(map->bin_count);
    free(map->bin_expected);
    for (int f = 0; f < 4; f++)
        free(map->figure[f]);
    memset(map, 0, sizeof *map);
}

static void q_of(const ptreg_orientations *o, size_t i, double q[4])
{
    for (int c = 0; c < 4; c++)
        q[c] = o->q[4 * i + (size_t)c];
}

static int oriented(const float *xyz, const ptreg_orientations *o, size_t i)
{
    return isfinite(o->q[4 * i]) && isfinite(xyz[3 * i]) && isfinite(xyz[3 * i + 1]) && isfinite(xyz[3 * i + 2]);
}

/* The atoms with an orientation and each one's k nearest among them. */
typedef struct graph {
    size_t m, k;
    size_t *atom;   /* m: the atom's index in the input */
    float *xyz;     /* 3m */
    uint32_t *nbr;  /* m x k */
    uint8_t *count; /* m: neighbors found */
} graph;

static void graph_free(graph *g)
{
    free(g->atom);
    free(g->xyz);
    free(g->nbr);
    free(g->count);
}

static ptreg_status build_graph(const float *xyz, const ptreg_orientations *o, size_t k, graph *g, ptreg_error *err)
{
    memset(g, 0, sizeof *g);
    g->k = k;
    for (size_t i = 0; i < o->n; i++)
        g->m += oriented(xyz, o, i);
    if (g->m >= UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "grains: %zu atoms, more than 2^32 - 1", g->m);
    g->atom = malloc((g->m + 1) * sizeof *g->atom);
    g->xyz = malloc((3 * g->m + 1) * sizeof *g->xyz);
    g->nbr = malloc((g->m * k + 1) * sizeof *g->nbr);
    g->count = malloc(g->m + 1);
    if (!g->atom || !g->xyz || !g->nbr || !g->count)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory for %zu atoms", g->m);
    for (size_t i = 0, t = 0; i < o->n; i++)
        if (oriented(xyz, o, i)) {
            memcpy(g->xyz + 3 * t, xyz + 3 * i, 3 * sizeof(float));
            g->atom[t++] = i;
        }
    ptreg_kdtree *tree = NULL;
    ptreg_status st = g->m ? ptreg_kdtree_create(g->xyz, g->m, NULL, &tree, err) : PTREG_OK;
    const long m = st ? 0 : (long)g->m;
#pragma omp parallel for schedule(dynamic, 512) num_threads(ptreg_get_num_threads())
    for (long t = 0; t < m; t++) {
        uint32_t index[MAX_K + 1];
        float d2[MAX_K + 1];
        const size_t found = ptreg_kdtree_knn(tree, g->xyz + 3 * t, k + 1, index, d2);
        size_t kept = 0;
        for (size_t j = 0; j < found && kept < k; j++)
            if (index[j] != (uint32_t)t)
                g->nbr[(size_t)t * k + kept++] = index[j];
        g->count[t] = (uint8_t)kept;
    }
    ptreg_kdtree_destroy(tree);
    return st;
}

static uint32_t root_of(uint32_t *parent, uint32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* Joins the components of a and b under the lower root. */
static void join(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = root_of(parent, a), b = root_of(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

/* Per atom, which of its neighbors are within the threshold (a bit each). */
static void agreeing_neighbors(const graph *g, const ptreg_orientations *o, double threshold_deg, uint64_t *same)
{
    const double(*sym)[4] = (const double(*)[4])o->symmetry;
#pragma omp parallel for schedule(dynamic, 512) num_threads(ptreg_get_num_threads())
    for (long t = 0; t < (long)g->m; t++) {
        double a[4], b[4];
        q_of(o, g->atom[t], a);
        uint64_t bits = 0;
        for (size_t j = 0; j < g->count[t]; j++) {
            q_of(o, g->atom[g->nbr[(size_t)t * g->k + j]], b);
            const int equal = !memcmp(a, b, sizeof a); /* pooled maps: often the very same orientation */
            if (equal || ptreg_misorientation_deg(a, b, sym, o->symmetry_count) < threshold_deg)
                bits |= (uint64_t)1 << j;
        }
        same[t] = bits;
    }
}

/* label[t]: the root of t's component (its lowest atom). */
static void components(const graph *g, const uint64_t *same, uint32_t *parent, uint32_t *label)
{
    for (size_t t = 0; t < g->m; t++)
        parent[t] = (uint32_t)t;
    for (size_t t = 0; t < g->m; t++)
        for (size_t j = 0; j < g->count[t]; j++)
            if (same[t] >> j & 1)
                join(parent, (uint32_t)t, g->nbr[t * g->k + j]);
    for (size_t t = 0; t < g->m; t++)
        label[t] = root_of(parent, (uint32_t)t);
}

/* Labels (each < m) held by fewer than min_atoms atoms become NO_GRAIN;
 * size is scratch of m. */
static void drop_small(const graph *g, size_t min_atoms, uint32_t *label, uint32_t *size)
{
    memset(size, 0, g->m * sizeof *size);
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN)
            size[label[t]]++;
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN && size[label[t]] < min_atoms)
            label[t] = NO_GRAIN;
}

/* The grain most of t's neighbors are in (ties: the lower root), or
 * NO_GRAIN when none is in one. */
static uint32_t vote(const graph *g, const uint32_t *label, size_t t)
{
    uint32_t best = NO_GRAIN;
    size_t best_votes = 0;
    const uint32_t *nb = g->nbr + t * g->k;
    for (size_t j = 0; j < g->count[t]; j++) {
        const uint32_t c = label[nb[j]];
        if (c == NO_GRAIN)
            continue;
        size_t votes = 0;
        for (size_t i = 0; i < g->count[t]; i++)
            votes += label[nb[i]] == c;
        if (votes > best_votes || (votes == best_votes && c < best))
            best = c, best_votes = votes;
    }
    return best;
}

/* Atoms of dissolved components join their neighbors' grains, round by
 * round from the last round's labels (the same for any thread count).
 * Returns 0 when out of memory. */
static int dissolve(const graph *g, uint32_t *label)
{
    uint32_t *next = malloc((g->m + 1) * sizeof *next);
    if (!next)
        return 0;
    for (int round = 0, changed = 1; changed && round < MAX_ROUNDS; round++) {
        changed = 0;
#pragma omp parallel for schedule(dynamic, 1024) num_threads(ptreg_get_num_threads()) reduction(| : changed)
        for (long t = 0; t < (long)g->m; t++) {
            next[t] = label[t] != NO_GRAIN ? label[t] : vote(g, label, (size_t)t);
            changed |= next[t] != label[t];
        }
        memcpy(label, next, g->m * sizeof *label);
    }
    free(next);
    return 1;
}

typedef struct root_size {
    uint32_t root;
    size_t atoms;
} root_size;

static int larger_first(const void *pa, const void *pb)
{
    const root_size *a = pa, *b = pb;
    if (a->atoms != b->atoms)
        return a->atoms > b->atoms ? -1 : 1;
    return (a->root > b->root) - (a->root < b->root);
}

/* Grain ids, largest first, into out->grain; label becomes the ids. */
static ptreg_status number_grains(const graph *g, uint32_t *label, ptreg_grain_map *out, ptreg_error *err)
{
    size_t *size = calloc(g->m + 1, sizeof *size);
    if (!size)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory");
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN)
            size[label[t]]++;
    size_t count = 0;
    for (size_t t = 0; t < g->m; t++)
        count += size[t] > 0;
    root_size *order = malloc((count + 1) * sizeof *order);
    out->grains = calloc(count + 1, sizeof *out->grains);
    if (!order || !out->grains) {
        free(size), free(order);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory for %zu grains", count);
    }
    for (size_t t = 0, c = 0; t < g->m; t++)
        if (size[t])
            order[c++] = (root_size){(uint32_t)t, size[t]};
    qsort(order, count, sizeof *order, larger_first);
    for (size_t c = 0; c < count; c++) {
        size[order[c].root] = c; /* now: the root's id */
        out->grains[c].atoms = order[c].atoms;
    }
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN) {
            label[t] = (uint32_t)size[label[t]];
            out->grain[g->atom[t]] = (int32_t)label[t];
            out->grained++;
        }
    out->count = count;
    free(size), free(order);
    return PTREG_OK;
}

/* q's equivalent (g q, g a symmetry) nearest ref, on ref's side. */
static void nearest_equivalent(const double q[4], const double ref[4], const double sym[][4], size_t nsym,
                               double out[4])
{
    double best = -1.0;
    memcpy(out, q, 4 * sizeof *out);
    for (size_t s = 0; s < nsym; s++) {
        double e[4];
        orient_quat_mul(sym[s], q, e);
        const double d = e[0] * ref[0] + e[1] * ref[1] + e[2] * ref[2] + e[3] * ref[3];
        if (fabs(d) > best) {
            best = fabs(d);
            const double sign = d < 0 ? -1.0 : 1.0;
            for (int c = 0; c < 4; c++)
                out[c] = sign * e[c];
        }
    }
}

/* The mean of the orientations of members within `within` degrees of
 * ref (all of them when within is infinite), each one's equivalent
 * nearest ref summed in atom order; ref when none is. */
static void mean_near(const graph *g, const ptreg_orientations *o, const size_t *members, size_t n, const double ref[4],
                      double within, double mean[4])
{
    const double(*sym)[4] = (const double(*)[4])o->symmetry;
    double acc[4] = {0, 0, 0, 0}, q[4], e[4];
    for (size_t i = 0; i < n; i++) {
        q_of(o, g->atom[members[i]], q);
        if (isfinite(within) && !(ptreg_misorientation_deg(q, ref, sym, o->symmetry_count) < within))
            continue;
        nearest_equivalent(q, ref, sym, o->symmetry_count, e);
        for (int c = 0; c < 4; c++)
            acc[c] += e[c];
    }
    const double norm = sqrt(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2] + acc[3] * acc[3]);
    for (int c = 0; c < 4; c++)
        mean[c] = norm > 0 ? acc[c] / norm : ref[c];
}

/* Where a grain's atoms' orientations crowd: of up to SEED_SAMPLES of its
 * atoms, evenly spread over it, the one with the most others within
 * OUTLIER_DEG (ties: the first). The first atom could be one the boundary
 * check moved in; and against a reference far from the grain's own, its
 * atoms' nearest equivalents split between two and their mean means
 * nothing. */
static void crowded_orientation(const graph *g, const ptreg_orientations *o, const size_t *members, size_t n,
                                double seed[4])
{
    const double(*sym)[4] = (const double(*)[4])o->symmetry;
    const size_t samples = n < SEED_SAMPLES ? n : SEED_SAMPLES;
    double q[SEED_SAMPLES][4];
    for (size_t s = 0; s < samples; s++)
        q_of(o, g->atom[members[s * n / samples]], q[s]);
    size_t best = 0, best_votes = 0;
    for (size_t s = 0; s < samples; s++) {
        size_t votes = 0;
        for (size_t r = 0; r < samples; r++)
            votes += ptreg_misorientation_deg(q[s], q[r], sym, o->symmetry_count) < OUTLIER_DEG;
        if (votes > best_votes)
            best = s, best_votes = votes;
    }
    memcpy(seed, q[best], sizeof q[best]);
}

/* A grain's mean orientation: the mean of its atoms within OUTLIER_DEG of
 * where they crowd, then of those within OUTLIER_DEG of that mean (the
 * atoms the boundary check moved in from another grain, with their own
 * orientation, left out); its spread over the same atoms; its centroid
 * over all. */
static void describe_grain(const graph *g, const ptreg_orientations *o, const size_t *members, size_t n,
                           ptreg_grain *out)
{
    const double(*sym)[4] = (const double(*)[4])o->symmetry;
    double seed[4], rough[4], mean[4], q[4];
    crowded_orientation(g, o, members, n, seed);
    mean_near(g, o, members, n, seed, OUTLIER_DEG, rough);
    mean_near(g, o, members, n, rough, OUTLIER_DEG, mean);
    ptreg_orientation_reduce(mean, sym, o->symmetry_count, out->q);
    double sum2 = 0.0, centre[3] = {0, 0, 0};
    size_t near = 0;
    for (size_t i = 0; i < n; i++) {
        q_of(o, g->atom[members[i]], q);
        const double d = ptreg_misorientation_deg(q, out->q, sym, o->symmetry_count);
        if (d < OUTLIER_DEG)
            sum2 += d * d, near++;
        for (int c = 0; c < 3; c++)
            centre[c] += g->xyz[3 * members[i] + (size_t)c];
    }
    out->spread_deg = near ? sqrt(sum2 / (double)near) : NAN;
    for (int c = 0; c < 3; c++)
        out->centroid[c] = centre[c] / (double)n;
}

static ptreg_status describe_grains(const graph *g, const ptreg_orientations *o, const uint32_t *label,
                                    ptreg_grain_map *out, ptreg_error *err)
{
    size_t *first = calloc(out->count + 1, sizeof *first), *members = malloc((out->grained + 1) * sizeof *members);
    if (!first || !members) {
        free(first), free(members);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory");
    }
    for (size_t c = 0; c < out->count; c++)
        first[c + 1] = first[c] + out->grains[c].atoms;
    size_t *at = malloc((out->count + 1) * sizeof *at);
    if (!at) {
        free(first), free(members);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory");
    }
    memcpy(at, first, out->count * sizeof *at);
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN)
            members[at[label[t]]++] = t;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long c = 0; c < (long)out->count; c++)
        describe_grain(g, o, members + first[c], out->grains[c].atoms, &out->grains[c]);
    free(first), free(members), free(at);
    return PTREG_OK;
}

/* Atom t's bonds: its neighbors relative to it. */
static size_t bonds_of(const graph *g, size_t t, float bond[3 * MAX_K])
{
    const uint32_t *nb = g->nbr + t * g->k;
    for (size_t j = 0; j < g->count[t]; j++)
        for (int c = 0; c < 3; c++)
            bond[3 * j + (size_t)c] = g->xyz[3 * (size_t)nb[j] + (size_t)c] - g->xyz[3 * t + (size_t)c];
    return g->count[t];
}

/* How well t's bonds and its neighbors' sit on the motif under rotation R
 * (its own counted twice, as the orientation map's grain choice counts
 * them, orientation_grains.c). */
static double local_fit(const graph *g, const ptreg_orientations *o, size_t t, const double R[9], double tau2)
{
    float bond[3 * MAX_K];
    double sum = 0.0;
    for (size_t j = 0; j <= g->count[t]; j++) {
        const size_t u = j < g->count[t] ? g->nbr[t * g->k + j] : t;
        const size_t n = bonds_of(g, u, bond);
        if (n)
            sum += (u == t ? 2.0 : 1.0) * (double)n * orient_fit(R, bond, n, o->motif, o->motif_points, tau2);
    }
    return sum;
}

/* Atoms at a boundary (a neighbor in another grain) take, of their own
 * grain and their neighbors' grains, the one under whose mean orientation
 * they and their neighbors sit best on the motif (local_fit; ties: the
 * grain they are in). The grains' means are far sharper than the pools'
 * orientations the map chose among. Round by round from the last round's
 * labels, over the atoms marked in `check` (an atom whose label and whose
 * neighbors' labels stayed would choose as before); marks for the next
 * round the atoms that changed and those that have them as neighbors.
 * Returns how many changed. */
static size_t recheck_boundaries(const graph *g, const ptreg_orientations *o, const ptreg_grain_map *map,
                                 uint32_t *label, uint32_t *next, uint8_t *check)
{
    const double shortest = ptreg_motif_shortest_distance(o->motif, o->motif_points);
    const double tau2 = 0.25 * shortest * shortest; /* orientation.c's match distance, squared */
    size_t changed = 0;
#pragma omp parallel for schedule(dynamic, 256) num_threads(ptreg_get_num_threads()) reduction(+ : changed)
    for (long t = 0; t < (long)g->m; t++) {
        const uint32_t *nb = g->nbr + (size_t)t * g->k, own = label[t];
        next[t] = own;
        int across = 0;
        if (!check[t])
            continue;
        for (size_t j = 0; j < g->count[t]; j++)
            across |= label[nb[j]] != own && label[nb[j]] != NO_GRAIN;
        if (!across || own == NO_GRAIN)
            continue;
        double best = INFINITY;
        for (size_t j = 0; j <= g->count[t]; j++) {
            const uint32_t c = j < g->count[t] ? label[nb[j]] : own;
            int seen = c == NO_GRAIN;
            for (size_t i = 0; i < j && !seen; i++)
                seen = label[nb[i]] == c;
            if (seen)
                continue;
            double R[9];
            ptreg_quaternion_to_matrix(map->grains[c].q, R);
            const double fit = local_fit(g, o, (size_t)t, R, tau2);
            if (fit < best || (fit == best && c == own))
                best = fit, next[t] = c;
        }
        changed += next[t] != own;
    }
#pragma omp parallel for schedule(static) num_threads(ptreg_get_num_threads())
    for (long t = 0; t < (long)g->m; t++) {
        int moved = next[t] != label[t];
        for (size_t j = 0; j < g->count[t] && !moved; j++)
            moved = next[g->nbr[(size_t)t * g->k + j]] != label[g->nbr[(size_t)t * g->k + j]];
        check[t] = (uint8_t)moved;
    }
    memcpy(label, next, g->m * sizeof *label);
    return changed;
}

static int key_cmp(const void *pa, const void *pb)
{
    const uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Every neighbor pair across two grains, as (a << 32 | b), a < b; then
 * one boundary per pair of grains with its count. */
static ptreg_status find_boundaries(const graph *g, const ptreg_orientations *o, const uint32_t *label,
                                    ptreg_grain_map *out, ptreg_error *err)
{
    size_t n = 0;
    for (size_t t = 0; t < g->m; t++)
        for (size_t j = 0; j < g->count[t]; j++) {
            const uint32_t a = label[t], b = label[g->nbr[t * g->k + j]];
            n += a != b && a != NO_GRAIN && b != NO_GRAIN;
        }
    uint64_t *key = malloc((n + 1) * sizeof *key);
    out->boundaries = malloc((n + 1) * sizeof *out->boundaries);
    if (!key || !out->boundaries) {
        free(key);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory for %zu boundary links", n);
    }
    n = 0;
    for (size_t t = 0; t < g->m; t++)
        for (size_t j = 0; j < g->count[t]; j++) {
            const uint32_t a = label[t], b = label[g->nbr[t * g->k + j]];
            if (a != b && a != NO_GRAIN && b != NO_GRAIN)
                key[n++] = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
        }
    qsort(key, n, sizeof *key, key_cmp);
    const double(*sym)[4] = (const double(*)[4])o->symmetry;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && key[i] == key[i - 1]) {
            out->boundaries[out->boundary_count - 1].links++;
            continue;
        }
        ptreg_grain_boundary *b = &out->boundaries[out->boundary_count++];
        b->a = (uint32_t)(key[i] >> 32), b->b = (uint32_t)key[i], b->links = 1;
        b->misorientation_deg = ptreg_misorientation_deg(out->grains[b->a].q, out->grains[b->b].q, sym,
                                                         o->symmetry_count);
    }
    free(key);
    return PTREG_OK;
}

/* out's grains from the labels: numbered by size, described, and their
 * boundaries. */
static ptreg_status measure(const graph *g, const ptreg_orientations *o, uint32_t *label, ptreg_grain_map *out,
                            ptreg_error *err)
{
    free(out->grains);
    free(out->boundaries);
    out->grains = NULL, out->boundaries = NULL;
    out->count = out->grained = out->boundary_count = 0;
    for (size_t i = 0; i < o->n; i++)
        out->grain[i] = -1;
    ptreg_status st = number_grains(g, label, out, err);
    st = st ? st : describe_grains(g, o, label, out, err);
    return st ? st : find_boundaries(g, o, label, out, err);
}

/* Neighboring grains whose means are misoriented by less than the
 * threshold are one: pieces of a grain that its atoms' scatter (a pooled
 * map's pools differ by a few degrees) cut apart, or that a few
 * misoriented atoms (dissolved since) kept apart. Measures the grains
 * (into out) before and after. parent: scratch. */
static ptreg_status merge_alike(const graph *g, const ptreg_orientations *o, double threshold_deg, uint32_t *label,
                                uint32_t *parent, ptreg_grain_map *out, ptreg_error *err)
{
    ptreg_status st = measure(g, o, label, out, err);
    if (st)
        return st;
    for (size_t c = 0; c < out->count; c++)
        parent[c] = (uint32_t)c;
    for (size_t b = 0; b < out->boundary_count; b++)
        if (out->boundaries[b].misorientation_deg < threshold_deg)
            join(parent, out->boundaries[b].a, out->boundaries[b].b);
    for (size_t t = 0; t < g->m; t++)
        if (label[t] != NO_GRAIN)
            label[t] = root_of(parent, label[t]);
    return measure(g, o, label, out, err);
}

/* Grains below min_atoms dissolved into their neighbors'. */
static ptreg_status settle_small(const graph *g, size_t min_atoms, uint32_t *label, uint32_t *scratch, ptreg_error *err)
{
    drop_small(g, min_atoms, label, scratch);
    return dissolve(g, label) ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory");
}

ptreg_status grain_map_compute(const float *xyz, const ptreg_orientations *o, double threshold_deg, size_t min_atoms,
                               ptreg_grain_map *out, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(out, 0, sizeof *out);
    if (!(threshold_deg > 0 && threshold_deg < 180))
        return ptreg_error_set(err, PTREG_ERR_ARG, "grains: the threshold is in (0, 180) degrees, not %g",
                               threshold_deg);
    out->threshold_deg = threshold_deg;
    out->grain = malloc((o->n + 1) * sizeof *out->grain);
    if (!out->grain)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory for %zu atoms", o->n);
    for (size_t i = 0; i < o->n; i++)
        out->grain[i] = -1;
    graph g;
    ptreg_status st = build_graph(xyz, o, GRAIN_K, &g, err);
    uint64_t *same = st ? NULL : malloc((g.m + 1) * sizeof *same);
    uint32_t *parent = st ? NULL : malloc((g.m + 1) * sizeof *parent);
    uint32_t *label = st ? NULL : malloc((g.m + 1) * sizeof *label);
    if (!st && (!same || !parent || !label))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory for %zu atoms", g.m);
    if (!st) {
        agreeing_neighbors(&g, o, JOIN_SHARE * threshold_deg, same);
        components(&g, same, parent, label);
        st = settle_small(&g, min_atoms, label, parent, err);
    }
    st = st ? st : merge_alike(&g, o, threshold_deg, label, parent, out, err);
    uint8_t *check = st ? NULL : malloc(g.m + 1);
    if (!st && !check)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "grains: out of memory");
    if (!st)
        memset(check, 1, g.m);
    for (int round = 0; !st && round < RECHECK_ROUNDS; round++)
        if (!recheck_boundaries(&g, o, out, label, parent, check))
            break;
    free(check);
    st = st ? st : settle_small(&g, min_atoms, label, parent, err);
    st = st ? st : merge_alike(&g, o, threshold_deg, label, parent, out, err);
    free(same), free(parent), free(label);
    graph_free(&g);
    out->time_ms = ptreg_time_ms() - t0;
    if (st)
        grain_map_free(out);
    return st;
}
