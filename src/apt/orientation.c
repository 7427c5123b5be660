/* Orientations of atomic neighborhoods (orientation.h): each selected atom's
 * nearest selected neighbors, relative to it, registered onto the motif
 * by the batch engine (rotation only by default), reduced by the motif's
 * symmetry, and judged by how well the rotated neighbors sit on motif
 * points. With estimate_motif the motif is replaced, round after round, by
 * the mean of the registered neighborhoods (generalised Procrustes), the
 * "true, average local structure" of the EM-ICP study's Eq. 4. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/orientation.h"
#include "ptreg/nn.h"
#include "apt/grains_impl.h"
#include "apt/orientation_impl.h"
#include "nn/hoods.h"
#include "reg/batch/batch_pairs.h"

#define MAX_K 256
/* Starting rotations cover the motif's orientations this closely (degrees)
 * unless the options say: EM-ICP's basin is ~40 degrees wide for one clean
 * neighborhood, narrower for a noisy pool (25 degrees finds the right one
 * for 99% of pools at 0.05 nm noise and 60% detection, 35 for 89%). */
#define ATOM_SPACING 35.0
#define POOL_SPACING 25.0
/* A pool's schedule ends at sigma^2 = this r^2 unless the options say: a
 * pool blurs each site by two atoms' noise, and stopping the annealing
 * near that blur halves the orientation error at 0.05 nm noise. */
#define POOL_SIGMA2_FINAL_REL 0.01
/* A pool's coarse part (which picks the basin from each start) anneals by
 * this factor a step: 5 steps from 3 r^2 pick a pool's basin as well as 24
 * at 0.9 (the same accuracy on the polycrystal's 12 cases, bench/NOTES.md
 * change 144). One atom's dozen neighbors need the slower schedule: at 0.8
 * a perfect crystal's surface atoms find the wrong basin. */
#define POOL_COARSE_FACTOR 0.6
/* Motif estimation takes the rotated neighbors within this fraction of
 * the motif's shortest distance of a motif point: half (what matched
 * counts) lets the next shell's atoms of misregistered neighborhoods in,
 * 0.12 nm from an fcc first-shell point, and the estimate grows by 3%. */
#define ESTIMATE_MATCH 0.25
/* Motif estimation sums rotated points in fixed point (2^-32 nm), so the
 * mean is the same bits whatever the order of the atoms (threads, ranks). */
#define FIXED_SCALE 4294967296.0
/* The grain map's defaults (ptreg_orientation_options). */
#define GRAIN_THRESHOLD_DEG 5.0
#define GRAIN_MIN_ATOMS 100

void ptreg_orientation_options_default(ptreg_orientation_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->k = 12;
    opt->min_matched = 0.5;
    opt->symmetry_tol = 0.1;
    opt->pool_points = 384;
    ptreg_batch_options_default(&opt->batch);
    opt->batch.translation = 0;
}

const char *ptreg_orientation_flag_name(ptreg_orientation_flag flag)
{
    switch (flag) {
    case PTREG_ORIENT_OK: return "ok";
    case PTREG_ORIENT_POOR: return "poor";
    case PTREG_ORIENT_NOT_SELECTED: return "not_selected";
    case PTREG_ORIENT_TOO_FEW: return "too_few_neighbors";
    case PTREG_ORIENT_NOT_FINITE: return "not_finite";
    }
    return "unknown";
}

void ptreg_orientations_free(ptreg_orientations *o)
{
    if (!o)
        return;
    free(o->q);
    free(o->residual);
    free(o->matched);
    free(o->flag);
    free(o->reach);
    free(o->assignment);
    free(o->motif);
    if (o->grains)
        grain_map_free(o->grains);
    free(o->grains);
    memset(o, 0, sizeof *o);
}

static int cubic(const ptreg_orientations *o) { return o->symmetry_count == 24; }

void ptreg_orientation_color(const ptreg_orientations *o, size_t i, unsigned char rgb[3])
{
    const double q[4] = {o->q[4 * i], o->q[4 * i + 1], o->q[4 * i + 2], o->q[4 * i + 3]};
    if (!isfinite(q[0])) {
        rgb[0] = rgb[1] = rgb[2] = 128;
        return;
    }
    if (cubic(o)) {
        ptreg_ipf_color(q, rgb);
        return;
    }
    double R[9];
    ptreg_quaternion_to_matrix(q, R);
    for (int k = 0; k < 3; k++)
        rgb[k] = (unsigned char)lround(255.0 * fabs(R[3 * k + 2]));
}

static ptreg_status check_options(const ptreg_orientation_options *o, ptreg_error *err)
{
    if (o->k < 3 || o->k > MAX_K)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: k = %zu: take 3 to %d neighbors", o->k, MAX_K);
    if (!(o->radius >= 0) || !isfinite(o->radius))
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: the radius must be >= 0 (0: the k nearest)");
    if (!o->motif || o->motif_points < 3 || o->motif_points > MAX_K)
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: the motif needs 3 to %d points", MAX_K);
    if (o->estimate_motif < 0 || o->estimate_motif > 100 || !(o->min_matched >= 0 && o->min_matched <= 1) ||
        !(o->symmetry_tol > 0 && o->symmetry_tol < 1))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "orientations: estimate_motif 0..100, min_matched and "
                               "symmetry_tol in [0, 1]");
    if (!(o->start_spacing >= 0) || !(o->grain_radius >= 0) || !isfinite(o->grain_radius) ||
        (o->grain_radius > 0 && o->pool_points < 3))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "orientations: start_spacing >= 0, grain_radius >= 0 and, "
                               "pooling, pool_points >= 3");
    if (!(o->grain_threshold_deg >= 0 && o->grain_threshold_deg < 180))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "orientations: the grain map's threshold is in [0, 180) degrees (0: 5)");
    for (size_t i = 0; i < 3 * o->motif_points; i++)
        if (!isfinite(o->motif[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: motif point %zu is not finite", i / 3);
    return PTREG_OK;
}

static ptreg_status allocate(ptreg_orientations *out, size_t n, const ptreg_orientation_options *o, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->k = o->k;
    out->motif_points = o->motif_points;
    out->q = malloc((4 * n + 1) * sizeof(float));
    out->residual = malloc((n + 1) * sizeof(float));
    out->matched = malloc((n + 1) * sizeof(float));
    out->flag = malloc(n + 1);
    out->reach = malloc((n + 1) * sizeof(float));
    out->motif = malloc(3 * o->motif_points * sizeof(float));
    out->assignment = o->assignment ? malloc((n * o->k + 1) * sizeof(uint16_t)) : NULL;
    if (!out->q || !out->residual || !out->matched || !out->flag || !out->reach || !out->motif ||
        (o->assignment && !out->assignment))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu atoms", n);
    memcpy(out->motif, o->motif, 3 * o->motif_points * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 4; c++)
            out->q[4 * i + (size_t)c] = NAN;
        out->residual[i] = out->matched[i] = out->reach[i] = NAN;
    }
    if (out->assignment)
        for (size_t i = 0; i < n * o->k; i++)
            out->assignment[i] = 65535;
    return PTREG_OK;
}

/* ---- neighborhoods ---- */

/* The atoms taken (selected and finite), compacted; flags for the rest. */
typedef struct atoms {
    size_t m;
    float *xyz;         /* the taken atoms' coordinates */
    size_t *atom;       /* per taken atom: its index in the input */
    size_t *offset;     /* m + 1: neighborhood i is points [offset[i], offset[i + 1]) */
    float *nbr;         /* the neighborhoods, relative to their atoms */
    uint32_t *nbr_atom; /* per neighborhood point: the taken atom it is */
    uint8_t *wanted;    /* per taken atom: to be registered (else a neighbor only) */
    float *reach;       /* per taken atom: its farthest neighbor's distance */
    ptreg_kdtree *tree; /* of the taken atoms */
} atoms;

static void atoms_free(atoms *a)
{
    free(a->xyz);
    free(a->atom);
    free(a->offset);
    free(a->nbr);
    free(a->nbr_atom);
    free(a->wanted);
    free(a->reach);
    ptreg_kdtree_destroy(a->tree);
    memset(a, 0, sizeof *a);
}

static int taken(const float *xyz, size_t i, const uint8_t *selected)
{
    return (!selected || selected[i]) && isfinite(xyz[3 * i]) && isfinite(xyz[3 * i + 1]) && isfinite(xyz[3 * i + 2]);
}

static ptreg_status take_atoms(const float *xyz, size_t n, const uint8_t *selected, const uint8_t *registered,
                               ptreg_orientations *out, atoms *a, ptreg_error *err)
{
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < n; i++) {
        a->m += taken(xyz, i, selected);
        const int finite = isfinite(xyz[3 * i]) && isfinite(xyz[3 * i + 1]) && isfinite(xyz[3 * i + 2]);
        const int chosen = (!selected || selected[i]) && (!registered || registered[i]);
        out->flag[i] = !chosen ? PTREG_ORIENT_NOT_SELECTED : !finite ? PTREG_ORIENT_NOT_FINITE : PTREG_ORIENT_TOO_FEW;
    }
    a->xyz = malloc((3 * a->m + 1) * sizeof(float));
    a->atom = malloc((a->m + 1) * sizeof(size_t));
    a->offset = malloc((a->m + 1) * sizeof(size_t));
    a->wanted = malloc(a->m + 1);
    a->reach = malloc((a->m + 1) * sizeof(float));
    if (!a->xyz || !a->atom || !a->offset || !a->wanted || !a->reach)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu atoms", a->m);
    size_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (taken(xyz, i, selected)) {
            memcpy(a->xyz + 3 * t, xyz + 3 * i, 3 * sizeof(float));
            a->wanted[t] = !registered || registered[i];
            a->reach[t] = NAN;
            a->atom[t++] = i;
        }
    return PTREG_OK;
}

/* Where the neighborhood engine's blocks go: each atom's list, less the
 * atom itself and (with a radius) those beyond it, at most k. */
typedef struct hood_lists {
    atoms *a;
    const ptreg_orientation_options *o;
    int everyone; /* every taken atom's neighborhood, not the wanted atoms' alone */
    uint32_t *lists;
    size_t *counts;
} hood_lists;

static int take_block(void *ctx, nn_block *b)
{
    hood_lists *h = ctx;
    const float r2 = (float)(h->o->radius * h->o->radius);
    for (size_t j = 0; j < b->count; j++) {
        const uint32_t t = b->point[j];
        const nn_list *l = &b->list[j];
        size_t kept = 0;
        for (size_t i = 0; i < l->count && kept < h->o->k && (h->everyone || h->a->wanted[t]); i++)
            if (l->index[i] != t && (h->o->radius == 0 || l->dist2[i] < r2)) {
                h->lists[(size_t)t * h->o->k + kept++] = l->index[i];
                h->a->reach[t] = sqrtf(l->dist2[i]);
            }
        h->counts[t] = kept;
    }
    return 1;
}

/* Every wanted atom's neighborhood; with grain pooling, every taken
 * atom's (pools take the neighbors' neighborhoods too). The k + 1 nearest
 * (the atom among them) come from the neighborhood engine (nn/hoods.h),
 * a block of nearby atoms at a time: the lists of independent searches,
 * sorted by distance then index. */
static ptreg_status find_neighborhoods(atoms *a, const ptreg_orientation_options *o, ptreg_error *err)
{
    ptreg_status st = a->m ? ptreg_kdtree_create(a->xyz, a->m, NULL, &a->tree, err) : PTREG_OK;
    uint32_t *lists = malloc((a->m * o->k + 1) * sizeof *lists);
    size_t *counts = malloc((a->m + 1) * sizeof *counts);
    if (!st && (!lists || !counts))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the neighborhoods");
    hood_lists h = {a, o, o->grain_radius > 0, lists, counts};
    const nn_hoods hoods = {a->tree, a->xyz, a->m, {o->k + 1 < a->m ? o->k + 1 : a->m, 0.0}, NN_SORTED, 0};
    if (!st && a->m && !nn_hoods_each(&hoods, take_block, &h))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the neighborhoods");
    if (!st) {
        a->offset[0] = 0;
        for (size_t t = 0; t < a->m; t++)
            a->offset[t + 1] = a->offset[t] + (counts[t] >= 3 ? counts[t] : 0);
        a->nbr = malloc((3 * a->offset[a->m] + 1) * sizeof(float));
        a->nbr_atom = malloc((a->offset[a->m] + 1) * sizeof(uint32_t));
        if (!a->nbr || !a->nbr_atom)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the neighborhoods");
        for (size_t t = 0; !st && t < a->m; t++)
            for (size_t j = 0; j < a->offset[t + 1] - a->offset[t]; j++) {
                const uint32_t nb = lists[t * o->k + j];
                const size_t at = a->offset[t] + j;
                a->nbr_atom[at] = nb;
                for (int c = 0; c < 3; c++)
                    a->nbr[3 * at + (size_t)c] = a->xyz[3 * (size_t)nb + (size_t)c] - a->xyz[3 * t + (size_t)c];
            }
    }
    free(lists);
    free(counts);
    return st;
}

/* ---- judging and estimating ---- */

/* Neighbor j rotated by T, its nearest motif point (ties: the lowest) and
 * the squared distance. */
static size_t nearest_motif(const double T[16], const float *p, const float *motif, size_t mk, double r[3],
                            double *best_d2)
{
    for (int c = 0; c < 3; c++)
        r[c] = T[4 * c] * p[0] + T[4 * c + 1] * p[1] + T[4 * c + 2] * p[2] + T[4 * c + 3];
    size_t best = 0;
    *best_d2 = INFINITY;
    for (size_t i = 0; i < mk; i++) {
        const double dx = r[0] - motif[3 * i], dy = r[1] - motif[3 * i + 1], dz = r[2] - motif[3 * i + 2];
        const double d = dx * dx + dy * dy + dz * dz;
        if (d < *best_d2)
            *best_d2 = d, best = i;
    }
    return best;
}

/* Residual, matched fraction, assignment and flag of taken atom t. */
static void judge(const atoms *a, size_t t, const double T[16], const ptreg_orientation_options *o, double match_d,
                  ptreg_orientations *out)
{
    const size_t first = a->offset[t], count = a->offset[t + 1] - first, i = a->atom[t];
    double sum = 0.0, nearest[MAX_K];
    size_t matched = 0;
    /* rotation only and no assignment: the distances in vector lanes, the same bits */
    const int lanes = T[3] == 0 && T[7] == 0 && T[11] == 0 && !out->assignment;
    if (lanes) {
        double R[9];
        ptreg_transform_rotation(T, R);
        orient_point_fits(R, a->nbr + 3 * first, count, out->motif, out->motif_points, INFINITY, nearest);
    }
    for (size_t j = 0; j < count; j++) {
        double r[3], d2;
        if (lanes) {
            d2 = nearest[j];
        } else {
            const size_t m = nearest_motif(T, a->nbr + 3 * (first + j), out->motif, out->motif_points, r, &d2);
            if (out->assignment)
                out->assignment[i * o->k + j] = (uint16_t)m;
        }
        sum += d2;
        matched += d2 <= match_d * match_d;
    }
    out->residual[i] = (float)sqrt(sum / (double)count);
    out->matched[i] = (float)((double)matched / (double)count);
    out->flag[i] = out->matched[i] >= o->min_matched ? PTREG_ORIENT_OK : PTREG_ORIENT_POOR;
}

/* The estimate keeps the reference's point group: motif point i becomes
 * the mean over the reference's symmetries g of g^-1 applied to the mean
 * of the point g takes i to. Without it, points drift apart round after
 * round, each one reaching out to the farther shell's atoms. */
static void symmetrise(const double *mean, size_t mk, const float *reference, float *out)
{
    double sym[PTREG_MAX_SYMMETRY][4];
    const size_t count = ptreg_motif_symmetry(reference, mk, 0.1, sym);
    double *acc = calloc(3 * mk, sizeof *acc);
    if (!acc) {
        for (size_t i = 0; i < 3 * mk; i++)
            out[i] = (float)mean[i];
        return;
    }
    for (size_t g = 0; g < count; g++) {
        double R[9];
        ptreg_quaternion_to_matrix(sym[g], R);
        for (size_t i = 0; i < mk; i++) {
            /* j: the reference point nearest g r_i */
            double gr[3], best = INFINITY;
            size_t j = i;
            for (int c = 0; c < 3; c++)
                gr[c] = R[3 * c] * reference[3 * i] + R[3 * c + 1] * reference[3 * i + 1] +
                        R[3 * c + 2] * reference[3 * i + 2];
            for (size_t k = 0; k < mk; k++) {
                const double d = pow(gr[0] - reference[3 * k], 2) + pow(gr[1] - reference[3 * k + 1], 2) +
                                 pow(gr[2] - reference[3 * k + 2], 2);
                if (d < best)
                    best = d, j = k;
            }
            for (int c = 0; c < 3; c++) /* g^-1 = R^T */
                acc[3 * i + (size_t)c] += R[c] * mean[3 * j] + R[3 + c] * mean[3 * j + 1] + R[6 + c] * mean[3 * j + 2];
        }
    }
    for (size_t i = 0; i < 3 * mk; i++)
        out[i] = (float)(acc[i] / (double)count);
    free(acc);
}

/* The new motif: each motif point the mean of the rotated neighbors
 * near it (ESTIMATE_MATCH), over the atoms
 * judged ok (points nobody matched stay). Sums in fixed point: the same
 * bits in any order. */
static ptreg_status estimate(const atoms *a, const size_t *pair_atom, size_t pairs, const double *T,
                             const ptreg_orientation_options *o, ptreg_orientations *out, ptreg_error *err)
{
    const size_t mk = out->motif_points;
    int64_t *sum = calloc(3 * mk, sizeof *sum);
    uint64_t *count = calloc(mk, sizeof *count);
    if (!sum || !count) {
        free(sum), free(count);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory");
    }
    const double match_d = ESTIMATE_MATCH * ptreg_motif_shortest_distance(out->motif, mk);
    for (size_t p = 0; p < pairs; p++) {
        const size_t t = pair_atom[p];
        if (out->flag[a->atom[t]] != PTREG_ORIENT_OK)
            continue;
        for (size_t j = a->offset[t]; j < a->offset[t + 1]; j++) {
            double r[3], d2;
            const size_t m = nearest_motif(T + 16 * p, a->nbr + 3 * j, out->motif, mk, r, &d2);
            if (d2 > match_d * match_d)
                continue; /* a farther shell's atom, or a neighbor astray */
            for (int c = 0; c < 3; c++)
                sum[3 * m + (size_t)c] += llround(r[c] * FIXED_SCALE);
            count[m]++;
        }
    }
    ptreg_status st = o->combine_motif_sums ? o->combine_motif_sums(sum, count, mk, o->combine_ctx, err) : PTREG_OK;
    double *mean = malloc(3 * mk * sizeof *mean);
    if (!st && !mean)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory");
    for (size_t m = 0; !st && m < mk; m++)
        for (int c = 0; c < 3; c++)
            mean[3 * m + (size_t)c] = count[m] ? (double)sum[3 * m + (size_t)c] / FIXED_SCALE / (double)count[m]
                                               : out->motif[3 * m + (size_t)c];
    if (!st)
        symmetrise(mean, mk, o->motif, out->motif);
    free(mean);
    free(sum), free(count);
    return st;
}

/* ---- the whole ---- */

typedef struct registration {
    size_t pairs;
    size_t *pair_atom; /* per pair: the taken atom */
    size_t *offset;    /* pairs + 1 into the neighborhood points */
    double *T;
    float *reach; /* how far from its atom anything can change a pair's answer */
} registration;

static void registration_free(registration *r)
{
    free(r->pair_atom);
    free(r->offset);
    free(r->T);
    free(r->reach);
}

/* The taken atoms with a neighborhood, as one pair set. */
static ptreg_status build_pairs(const atoms *a, registration *r, ptreg_error *err)
{
    r->pairs = 0;
    for (size_t t = 0; t < a->m; t++)
        r->pairs += a->wanted[t] && a->offset[t + 1] > a->offset[t];
    r->pair_atom = malloc((r->pairs + 1) * sizeof *r->pair_atom);
    r->offset = malloc((r->pairs + 1) * sizeof *r->offset);
    r->T = malloc((16 * r->pairs + 1) * sizeof *r->T);
    r->reach = malloc((r->pairs + 1) * sizeof *r->reach);
    if (!r->pair_atom || !r->offset || !r->T || !r->reach)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for %zu pairs", r->pairs);
    size_t p = 0;
    r->offset[0] = 0;
    for (size_t t = 0; t < a->m; t++)
        if (a->wanted[t] && a->offset[t + 1] > a->offset[t]) {
            r->pair_atom[p] = t;
            r->offset[p + 1] = r->offset[p] + (a->offset[t + 1] - a->offset[t]);
            p++;
        }
    return PTREG_OK;
}

/* With grain pooling: every pair's T is its atom's grain orientation, and
 * its reach how far away anything can change that. */
static ptreg_status register_grains(atoms *a, registration *r, const ptreg_orientation_options *o,
                                    const double starts[][4], const double sym[][4], size_t nsym, double tau2,
                                    ptreg_orientations *out, ptreg_error *err)
{
    double *T = malloc((16 * a->m + 1) * sizeof *T);
    float *depends = malloc((a->m + 1) * sizeof *depends);
    ptreg_batch_options pool_batch = o->batch;
    double s2i, s2f, d02, radius;
    ptreg_status st = T && depends ? PTREG_OK
                                   : ptreg_error_set(err, PTREG_ERR_NOMEM,
                                                     "orientations: out of memory for %zu "
                                                     "atoms",
                                                     a->m);
    st = st ? st : ptreg_batch_schedule(out->motif, out->motif_points, &o->batch, &s2i, &s2f, &d02, &radius, err);
    if (!(o->batch.sigma2_final > 0))
        pool_batch.sigma2_final = POOL_SIGMA2_FINAL_REL * radius * radius;
    const orient_grain_input in = {a->xyz, a->m, a->offset, a->nbr, a->nbr_atom, a->reach, a->tree, a->wanted};
    const orient_grain_options go = {o->grain_radius,
                                     o->pool_points,
                                     out->motif,
                                     out->motif_points,
                                     &pool_batch,
                                     POOL_COARSE_FACTOR,
                                     starts,
                                     out->starts,
                                     tau2,
                                     sym,
                                     nsym};
    st = st ? st : orient_grains(&in, &go, T, depends, &out->pools, &out->grain_ms, &out->stats, err);
    for (size_t p = 0; !st && p < r->pairs; p++) {
        memcpy(r->T + 16 * p, T + 16 * r->pair_atom[p], 16 * sizeof(double));
        r->reach[p] = depends[r->pair_atom[p]];
    }
    free(T);
    free(depends);
    return st;
}

static ptreg_status register_all(atoms *a, registration *r, const ptreg_orientation_options *o, ptreg_orientations *out,
                                 ptreg_error *err)
{
    const ptreg_pair_set set = {r->pairs, a->nbr, r->offset, out->motif, NULL, out->motif_points};
    const double match_d = 0.5 * ptreg_motif_shortest_distance(out->motif, out->motif_points);
    double starts[ORIENT_MAX_STARTS][4];
    /* the motif's symmetry, kept for finish(): the motif changes only
     * between rounds */
    out->symmetry_count = ptreg_motif_symmetry(out->motif, out->motif_points, o->symmetry_tol, out->symmetry);
    const double(*sym)[4] = (const double(*)[4])out->symmetry;
    const size_t nsym = out->symmetry_count;
    const double spacing = o->start_spacing > 0 ? o->start_spacing : o->grain_radius > 0 ? POOL_SPACING : ATOM_SPACING;
    out->starts = o->batch.translation ? 1 : orient_starts(sym, nsym, spacing, starts);
    ptreg_status st;
    if (!out->starts) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the starting rotations");
    } else if (o->grain_radius > 0) {
        st = register_grains(a, r, o, (const double(*)[4])starts, sym, nsym, match_d * match_d, out, err);
    } else {
        st = orient_register(&set, &o->batch, o->batch.sigma_factor, (const double(*)[4])starts, out->starts,
                             match_d * match_d, r->T, &out->stats, err);
        for (size_t p = 0; p < r->pairs; p++)
            r->reach[p] = a->reach[r->pair_atom[p]];
    }
    const long pairs = st ? 0 : (long)r->pairs;
#pragma omp parallel for schedule(static, 1024) num_threads(ptreg_get_num_threads())
    for (long p = 0; p < pairs; p++) { /* each atom's own rows */
        const size_t t = r->pair_atom[p];
        judge(a, t, r->T + 16 * p, o, match_d, out);
        out->reach[a->atom[t]] = r->reach[p];
    }
    return st;
}

/* Each registered atom's rotation as a quaternion in the fundamental zone
 * of the motif's symmetry (register_all's). */
static void finish(const atoms *a, const registration *r, ptreg_orientations *out)
{
    out->registered = r->pairs;
    out->flagged = 0;
    for (size_t p = 0; p < r->pairs; p++) {
        double R[9], q[4], fz[4];
        ptreg_transform_rotation(r->T + 16 * p, R);
        ptreg_matrix_to_quaternion(R, q);
        ptreg_orientation_reduce(q, (const double(*)[4])out->symmetry, out->symmetry_count, fz);
        const size_t i = a->atom[r->pair_atom[p]];
        for (int c = 0; c < 4; c++)
            out->q[4 * i + (size_t)c] = (float)fz[c];
    }
    for (size_t i = 0; i < out->n; i++)
        out->flagged += out->flag[i] != PTREG_ORIENT_OK;
}

static ptreg_status make_grain_map(const float *xyz, const ptreg_orientation_options *o, ptreg_orientations *out,
                                   ptreg_error *err)
{
    if (!o->grain_map)
        return PTREG_OK;
    out->grains = calloc(1, sizeof *out->grains);
    if (!out->grains)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory for the grain map");
    const double threshold = o->grain_threshold_deg > 0 ? o->grain_threshold_deg : GRAIN_THRESHOLD_DEG;
    const size_t min_atoms = o->grain_min_atoms > 0 ? o->grain_min_atoms : GRAIN_MIN_ATOMS;
    ptreg_status st = grain_map_compute(xyz, out, threshold, min_atoms, out->grains, err);
    return st ? st : grain_figures(out, out->grains, err);
}

ptreg_status ptreg_orientations_compute(const float *xyz, size_t n, const uint8_t *selected,
                                        const ptreg_orientation_options *o_in, ptreg_orientations *out,
                                        ptreg_error *err)
{
    ptreg_orientation_options defaults;
    if (!o_in)
        ptreg_orientation_options_default(&defaults);
    const ptreg_orientation_options *o = o_in ? o_in : &defaults;
    if (out)
        memset(out, 0, sizeof *out);
    if (!out || (n && !xyz))
        return ptreg_error_set(err, PTREG_ERR_ARG, "orientations: no atoms or no output");
    ptreg_status st = check_options(o, err);
    st = st ? st : allocate(out, n, o, err);
    atoms a;
    registration r = {0};
    memset(&a, 0, sizeof a);
    st = st ? st : take_atoms(xyz, n, selected, o->registered, out, &a, err);
    const double t0 = ptreg_time_ms();
    st = st ? st : find_neighborhoods(&a, o, err);
    out->neighbor_ms = ptreg_time_ms() - t0;
    const int stages = 2 + o->estimate_motif;
    if (!st && o->progress.fn)
        o->progress.fn(o->progress.ctx, 1, stages, (double)a.m);
    st = st ? st : build_pairs(&a, &r, err);
    st = st ? st : register_all(&a, &r, o, out, err);
    if (!st && o->progress.fn)
        o->progress.fn(o->progress.ctx, 2, stages, (double)r.pairs);
    for (int round = 0; !st && round < o->estimate_motif; round++) {
        st = estimate(&a, r.pair_atom, r.pairs, r.T, o, out, err);
        st = st ? st : register_all(&a, &r, o, out, err);
        if (!st && o->progress.fn)
            o->progress.fn(o->progress.ctx, 3 + round, stages, (double)r.pairs);
    }
    if (!st)
        finish(&a, &r, out);
    st = st ? st : make_grain_map(xyz, o, out, err);
    registration_free(&r);
    atoms_free(&a);
    if (st)
        ptreg_orientations_free(out);
    return st;
}
