/* Evaluating a trajectory against a true one (track.h, ptreg eval):
 * docs/ALGORITHMS.md, "Evaluating trajectories". The pairs by time (TUM's
 * associate.py) or by index; the estimate laid on the truth by Umeyama's
 * similarity (Horn's rotation, the same optimum); ATE and RPE as Sturm et
 * al. (IROS 2012) define them; the KITTI metric as the odometry devkit's
 * evaluate_odometry.cpp computes it (Geiger et al., CVPR 2012). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "core/options_table.h"
#include "core/results_table.h"
#include "ptreg/track.h"
#include "ptreg/transform.h"

#define PI 3.14159265358979323846
/* The KITTI devkit starts a segment at every 10th pose. */
#define KITTI_STEP 10

/* ---- the options' table ---- */

static const ptreg_option_name associate_names[] = {
    {"auto", PTREG_ASSOCIATE_AUTO}, {"time", PTREG_ASSOCIATE_TIME}, {"index", PTREG_ASSOCIATE_INDEX}, {NULL, 0}};
static const ptreg_option_name align_names[] = {
    {"se3", PTREG_ALIGN_SE3}, {"sim3", PTREG_ALIGN_SIM3}, {"none", PTREG_ALIGN_NONE}, {NULL, 0}};
static const ptreg_option_name unit_names[] = {
    {"frames", PTREG_DELTA_FRAMES}, {"m", PTREG_DELTA_METERS}, {"s", PTREG_DELTA_SECONDS}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_eval_options, associate);
OPTION_ENUM_IS_INT(ptreg_eval_options, align);
OPTION_ENUM_IS_INT(ptreg_eval_options, delta_unit);

static const ptreg_option eval_rows[] = {
    OPTION_ENUM(ptreg_eval_options, associate, "associate", NULL, associate_names, 0,
                "how poses are paired: time, the nearest timestamps within --max-diff (TUM's associate.py); "
                "index, pose i with pose i; auto, time when both files have timestamps (TUM), else index"),
    OPTION_FIELD(ptreg_eval_options, max_diff, NULL, DOUBLE, 0, 1e9, PTREG_OPTION_OPEN_LO, "S",
                 "pairing by time: the largest time difference of a pair, seconds (default 0.02)"),
    OPTION_FIELD(ptreg_eval_options, offset, NULL, DOUBLE, -1e12, 1e12, 0, "S",
                 "pairing by time: added to the estimate's timestamps first (default 0)"),
    OPTION_ENUM(ptreg_eval_options, align, "align", NULL, align_names, 0,
                "how the estimate is laid on the truth before the errors: se3, the rigid motion that best fits the "
                "positions (Umeyama); sim3, with a scale; none, as they are (default se3)"),
    OPTION_FIELD(ptreg_eval_options, delta, NULL, DOUBLE, 0, 1e12, PTREG_OPTION_OPEN_LO, "D",
                 "RPE's step in --delta-unit (default 1)"),
    OPTION_ENUM(ptreg_eval_options, delta_unit, "delta_unit", NULL, unit_names, 0,
                "RPE's pairs: frames, D poses apart; m, the first pose D along the true path; s, the first D "
                "seconds later (default frames)"),
};

static ptreg_status eval_rules(const void *options, ptreg_option_spelling spelling, ptreg_error *err)
{
    const ptreg_eval_options *o = options;
    if (o->delta_unit == PTREG_DELTA_FRAMES && o->delta != floor(o->delta))
        return ptreg_error_set(err, PTREG_ERR_ARG, "eval: %s %g is not a whole number of frames",
                               spelling == PTREG_OPTION_SPELL_CLI ? "--delta" : "delta", o->delta);
    if (o->kitti_lengths > PTREG_EVAL_MAX_LENGTHS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "eval: at most %d KITTI segment lengths", PTREG_EVAL_MAX_LENGTHS);
    for (size_t k = 0; k < o->kitti_lengths; k++)
        if (!(o->kitti_length[k] > 0.0) || !isfinite(o->kitti_length[k]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "eval: KITTI segment length %g is not a positive number",
                                   o->kitti_length[k]);
    return PTREG_OK;
}

OPTION_TABLE_CHECKED(ptreg_eval_option_table, "eval", ptreg_eval_options, ptreg_eval_options_default, eval_rows,
                     eval_rules)

/* ---- pairing ---- */

typedef struct candidate {
    double diff;
    size_t i, j;
} candidate;

static int by_candidate(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->diff != y->diff)
        return x->diff < y->diff ? -1 : 1;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/* The first index of t (increasing) at or above v. */
static size_t lower_bound(const double *t, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (t[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static ptreg_status no_memory(ptreg_error *err) { return ptreg_error_set(err, PTREG_ERR_NOMEM, "eval: out of memory"); }

/* Every (i, j) within max_diff, taken greedily from the nearest, each pose
 * once, into ref_of[i] (the reference pose paired with the estimate's pose
 * i; SIZE_MAX: none). */
static ptreg_status pair_by_time(const ptreg_trajectory *est, const ptreg_trajectory *ref, const ptreg_eval_options *o,
                                 size_t *ref_of, ptreg_error *err)
{
    size_t count = 0, cap = 0;
    candidate *c = NULL;
    for (size_t i = 0; i < est->n; i++) {
        const double a = est->t[i] + o->offset;
        /* one before the bound: a - max_diff rounds, |a - t| is what counts */
        const size_t from = lower_bound(ref->t, ref->n, a - o->max_diff);
        for (size_t j = from ? from - 1 : 0; j < ref->n; j++) {
            const double diff = fabs(a - ref->t[j]);
            if (ref->t[j] > a && !(diff <= o->max_diff))
                break;
            if (!(diff <= o->max_diff))
                continue;
            if (count == cap) {
                cap = cap ? 2 * cap : 1024;
                candidate *grown = realloc(c, cap * sizeof *c);
                if (!grown) {
                    free(c);
                    return no_memory(err);
                }
                c = grown;
            }
            c[count++] = (candidate){diff, i, j};
        }
    }
    unsigned char *ref_taken = calloc(ref->n, 1);
    if (!ref_taken) {
        free(c);
        return no_memory(err);
    }
    if (count)
        qsort(c, count, sizeof *c, by_candidate);
    for (size_t k = 0; k < count; k++)
        if (ref_of[c[k].i] == SIZE_MAX && !ref_taken[c[k].j])
            ref_of[c[k].i] = c[k].j, ref_taken[c[k].j] = 1;
    free(ref_taken);
    free(c);
    return PTREG_OK;
}

/* The pairs in the estimate's order into res (estimate_index, reference_index). */
static ptreg_status associate(const ptreg_trajectory *est, const ptreg_trajectory *ref, const ptreg_eval_options *o,
                              ptreg_eval_result *res, ptreg_error *err)
{
    size_t *ref_of = malloc((est->n ? est->n : 1) * sizeof *ref_of);
    if (!ref_of)
        return no_memory(err);
    for (size_t i = 0; i < est->n; i++)
        ref_of[i] = res->pairing.method == PTREG_ASSOCIATE_INDEX && i < ref->n ? i : SIZE_MAX;
    ptreg_status st = res->pairing.method == PTREG_ASSOCIATE_TIME ? pair_by_time(est, ref, o, ref_of, err) : PTREG_OK;
    size_t n = 0;
    for (size_t i = 0; !st && i < est->n; i++)
        n += ref_of[i] != SIZE_MAX;
    res->estimate_index = st ? NULL : malloc((n ? n : 1) * sizeof *res->estimate_index);
    res->reference_index = st ? NULL : malloc((n ? n : 1) * sizeof *res->reference_index);
    if (!st && (!res->estimate_index || !res->reference_index))
        st = no_memory(err);
    for (size_t i = 0; !st && i < est->n; i++)
        if (ref_of[i] != SIZE_MAX) {
            res->estimate_index[res->pairing.pairs] = i;
            res->reference_index[res->pairing.pairs++] = ref_of[i];
        }
    free(ref_of);
    return st;
}

/* ---- alignment ---- */

static void position(const double T[16], double p[3]) { p[0] = T[3], p[1] = T[7], p[2] = T[11]; }

/* Umeyama's similarity of the estimate's positions onto the truth's: R by
 * Horn's method (the same least-squares rotation as Umeyama's SVD), s =
 * sum (q - mu_q) . R (p - mu_p) / sum |p - mu_p|^2 for SIM3, t = mu_q - s R mu_p. */
static ptreg_status align(const double *P, const double *Q, size_t n, ptreg_eval_align how, double A[16], double *scale,
                          ptreg_error *err)
{
    ptreg_transform_identity(A);
    *scale = 1.0;
    if (how == PTREG_ALIGN_NONE)
        return PTREG_OK;
    double mp[3] = {0, 0, 0}, mq[3] = {0, 0, 0};
    for (size_t k = 0; k < n; k++)
        for (int a = 0; a < 3; a++)
            mp[a] += P[16 * k + 4 * a + 3] / (double)n, mq[a] += Q[16 * k + 4 * a + 3] / (double)n;
    ptreg_moments m;
    ptreg_moments_init(&m, mp, mq);
    for (size_t k = 0; k < n; k++) {
        double p[3], q[3];
        position(P + 16 * k, p);
        position(Q + 16 * k, q);
        ptreg_moments_add(&m, p, q, 1.0);
    }
    int degenerate = 0;
    ptreg_status st = ptreg_horn_solve(&m, A, &degenerate, err);
    if (st)
        return st;
    if (degenerate)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "eval: the paired positions lie on one line (or one point): the alignment's rotation "
                               "is not determined; use --align none");
    if (how == PTREG_ALIGN_SIM3) {
        double num = 0.0, den = 0.0;
        for (size_t k = 0; k < n; k++) {
            double p[3], q[3], Rp[3];
            position(P + 16 * k, p);
            position(Q + 16 * k, q);
            for (int a = 0; a < 3; a++)
                p[a] -= mp[a], q[a] -= mq[a];
            for (int a = 0; a < 3; a++)
                Rp[a] = A[4 * a] * p[0] + A[4 * a + 1] * p[1] + A[4 * a + 2] * p[2];
            num += q[0] * Rp[0] + q[1] * Rp[1] + q[2] * Rp[2];
            den += p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
        }
        if (!(num > 0.0 && den > 0.0))
            return ptreg_error_set(err, PTREG_ERR_ARG, "eval: no positive scale lays the estimate on the truth");
        *scale = num / den;
    }
    for (int a = 0; a < 3; a++)
        A[4 * a + 3] = mq[a] - *scale * (A[4 * a] * mp[0] + A[4 * a + 1] * mp[1] + A[4 * a + 2] * mp[2]);
    return PTREG_OK;
}

/* The estimate's pose k laid on the truth: rotation R R_k, position s R p_k + t. */
static void aligned_pose(const double A[16], double s, const double E[16], double out[16])
{
    ptreg_transform_identity(out);
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++)
            out[4 * a + b] = A[4 * a] * E[b] + A[4 * a + 1] * E[4 + b] + A[4 * a + 2] * E[8 + b];
        out[4 * a + 3] = s * (A[4 * a] * E[3] + A[4 * a + 1] * E[7] + A[4 * a + 2] * E[11]) + A[4 * a + 3];
    }
}

/* ---- errors ---- */

/* A rotation's angle, degrees, by atan2 (acos loses the small ones). */
static double angle_deg(const double T[16])
{
    const double x = T[9] - T[6], y = T[2] - T[8], z = T[4] - T[1];
    return atan2(0.5 * sqrt(x * x + y * y + z * z), 0.5 * (T[0] + T[5] + T[10] - 1.0)) * 180.0 / PI;
}

/* (A^-1 B) for rigid A, B. */
static void relative(const double A[16], const double B[16], double out[16])
{
    double inv[16];
    ptreg_transform_invert_rigid(A, inv);
    ptreg_transform_mul(inv, B, out);
}

/* (Q_i^-1 Q_j)^-1 (A_i^-1 A_j): what the estimate's motion from i to j
 * gets wrong (the devkit's order for KITTI: the other way round, as it is). */
static void motion_error(const double *Ai, const double *Aj, const double *Qi, const double *Qj, double E[16])
{
    double da[16], dq[16], dq_inv[16];
    relative(Ai, Aj, da);
    relative(Qi, Qj, dq);
    ptreg_transform_invert_rigid(dq, dq_inv);
    ptreg_transform_mul(dq_inv, da, E);
}

static double translation_norm(const double T[16]) { return sqrt(T[3] * T[3] + T[7] * T[7] + T[11] * T[11]); }

/* Statistics of v[0..n) (n > 0); v is sorted on return. */
static void stats(double *v, size_t n, ptreg_eval_stats *s)
{
    double sum = 0.0, sq = 0.0, dev = 0.0;
    s->min = v[0], s->max = v[0];
    for (size_t k = 0; k < n; k++) {
        sum += v[k], sq += v[k] * v[k];
        s->min = v[k] < s->min ? v[k] : s->min;
        s->max = v[k] > s->max ? v[k] : s->max;
    }
    s->mean = sum / (double)n;
    s->rmse = sqrt(sq / (double)n);
    for (size_t k = 0; k < n; k++)
        dev += (v[k] - s->mean) * (v[k] - s->mean);
    s->std = sqrt(dev / (double)n);
    s->median = ptreg_median(v, n);
}

static void set_errors(ptreg_eval_errors *e, double *t, double *r, size_t n)
{
    e->pairs = n;
    stats(t, n, &e->t);
    stats(r, n, &e->r);
    e->translation = &e->t, e->rotation_deg = &e->r;
}

/* The distance along the truth's path to each pair (the devkit's
 * trajectoryDistances). */
static void path_lengths(const double *Q, size_t n, double *d)
{
    d[0] = 0.0;
    for (size_t k = 1; k < n; k++) {
        const double x = Q[16 * k + 3] - Q[16 * (k - 1) + 3], y = Q[16 * k + 7] - Q[16 * (k - 1) + 7],
                     z = Q[16 * k + 11] - Q[16 * (k - 1) + 11];
        d[k] = d[k - 1] + sqrt(x * x + y * y + z * z);
    }
}

/* RPE's partner of pair i: the first j > i delta apart in the chosen unit;
 * SIZE_MAX when there is none. d (nondecreasing) is searched by halves. */
static size_t rpe_partner(const ptreg_eval_options *o, const double *time, const double *d, size_t n, size_t i)
{
    if (o->delta_unit == PTREG_DELTA_FRAMES)
        return i + (size_t)o->delta < n ? i + (size_t)o->delta : SIZE_MAX;
    if (o->delta_unit == PTREG_DELTA_METERS) {
        size_t lo = i + 1, hi = n;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (d[mid] - d[i] >= o->delta)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo < n ? lo : SIZE_MAX;
    }
    for (size_t j = i + 1; j < n; j++)
        if (time[j] - time[i] >= o->delta)
            return j;
    return SIZE_MAX;
}

static ptreg_status relative_errors(const double *A, const double *Q, const double *d, size_t n,
                                    const ptreg_eval_options *o, ptreg_eval_result *res, ptreg_error *err)
{
    double *t = malloc(n * sizeof *t), *r = malloc(n * sizeof *r);
    if (!t || !r) {
        free(t), free(r);
        return no_memory(err);
    }
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t j = rpe_partner(o, res->time, d, n, i);
        if (j == SIZE_MAX)
            continue;
        double E[16];
        motion_error(A + 16 * i, A + 16 * j, Q + 16 * i, Q + 16 * j, E);
        t[count] = translation_norm(E);
        r[count++] = angle_deg(E);
    }
    res->rpe_errors.delta = o->delta, res->rpe_errors.unit = o->delta_unit;
    if (count) {
        set_errors(&res->rpe_errors, t, r, count);
        res->rpe = &res->rpe_errors;
    }
    free(t), free(r);
    return PTREG_OK;
}

/* The devkit's last pose of a segment from first: the first whose path
 * length exceeds first's by more than len; SIZE_MAX when none does. */
static size_t segment_end(const double *d, size_t n, size_t first, double len)
{
    size_t lo = first, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (d[mid] > d[first] + len)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < n ? lo : SIZE_MAX;
}

/* The KITTI metric: per segment, its translation and rotation error over
 * its length, averaged over all and over each length. */
static void kitti_metric(const double *A, const double *Q, const double *d, size_t n, const ptreg_eval_options *o,
                         ptreg_eval_result *res)
{
    ptreg_eval_kitti *k = &res->kitti_metric;
    double t_all = 0.0, r_all = 0.0;
    for (size_t l = 0; l < o->kitti_lengths; l++) {
        const double len = o->kitti_length[l];
        double t_sum = 0.0, r_sum = 0.0;
        size_t count = 0;
        for (size_t first = 0; first < n; first += KITTI_STEP) {
            const size_t last = segment_end(d, n, first, len);
            if (last == SIZE_MAX)
                continue;
            double E[16];
            /* the devkit: inverse(delta_result) * delta_gt */
            motion_error(Q + 16 * first, Q + 16 * last, A + 16 * first, A + 16 * last, E);
            const double c = fmax(fmin(0.5 * (E[0] + E[5] + E[10] - 1.0), 1.0), -1.0);
            t_sum += translation_norm(E) / len;
            r_sum += acos(c) / len;
            count++;
        }
        if (!count)
            continue;
        k->length[k->length_count++] = (ptreg_eval_kitti_length){len, count, 100.0 * t_sum / (double)count,
                                                                 r_sum / (double)count * 180.0 / PI};
        t_all += t_sum, r_all += r_sum, k->segments += count;
    }
    k->lengths = k->length;
    if (k->segments) {
        k->translation_percent = 100.0 * t_all / (double)k->segments;
        k->rotation_deg_per_m = r_all / (double)k->segments * 180.0 / PI;
        res->kitti = k;
    }
}

/* The ATE's errors per pair and the positions for plots. */
static void absolute_errors(const double *A, const double *Q, size_t n, ptreg_eval_result *res)
{
    for (size_t k = 0; k < n; k++) {
        const double *a = A + 16 * k, *q = Q + 16 * k;
        double E[16];
        relative(q, a, E);
        position(a, res->aligned_xyz + 3 * k);
        position(q, res->reference_xyz + 3 * k);
        const double x = a[3] - q[3], y = a[7] - q[7], z = a[11] - q[11];
        res->translation_error[k] = sqrt(x * x + y * y + z * z);
        res->rotation_error_deg[k] = angle_deg(E);
    }
}

static ptreg_status check_inputs(const ptreg_trajectory *est, const ptreg_trajectory *ref, const ptreg_eval_options *o,
                                 ptreg_error *err)
{
    if (!est || !ref || !o || !est->n || !ref->n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "eval: two trajectories with poses and options are needed");
    ptreg_status st = ptreg_options_check(ptreg_eval_option_table(), o, err);
    if (!st && o->associate == PTREG_ASSOCIATE_TIME &&
        (est->format == PTREG_TRAJECTORY_KITTI || ref->format == PTREG_TRAJECTORY_KITTI))
        st = ptreg_error_set(err, PTREG_ERR_ARG,
                             "eval: pairing by time needs timestamps; a KITTI file has none "
                             "(pair by index)");
    return st;
}

/* The paired poses: the estimate's laid on the truth (A) and the truth's (Q). */
static ptreg_status paired_poses(const ptreg_trajectory *est, const ptreg_trajectory *ref, ptreg_eval_result *res,
                                 double **A, double **Q, ptreg_error *err)
{
    const size_t n = res->pairing.pairs;
    double *P = malloc(16 * n * sizeof *P);
    *A = malloc(16 * n * sizeof **A), *Q = malloc(16 * n * sizeof **Q);
    if (!P || !*A || !*Q) {
        free(P);
        return no_memory(err);
    }
    for (size_t k = 0; k < n; k++) {
        memcpy(P + 16 * k, est->pose + 16 * res->estimate_index[k], 16 * sizeof *P);
        memcpy(*Q + 16 * k, ref->pose + 16 * res->reference_index[k], 16 * sizeof *P);
        res->time[k] = ref->t[res->reference_index[k]];
    }
    double T[16], s;
    ptreg_status st = align(P, *Q, n, res->align, T, &s, err);
    for (size_t k = 0; !st && k < n; k++)
        aligned_pose(T, s, P + 16 * k, *A + 16 * k);
    ptreg_eval_alignment *by = &res->aligned_by;
    for (int a = 0; a < 3; a++) {
        memcpy(by->rotation + 3 * a, T + 4 * a, 3 * sizeof *T);
        by->translation[a] = T[4 * a + 3];
    }
    by->scale = s;
    res->alignment = by;
    free(P);
    return st;
}

static ptreg_status per_pair_arrays(ptreg_eval_result *res, ptreg_error *err)
{
    const size_t n = res->pairing.pairs;
    res->time = malloc(n * sizeof *res->time);
    res->translation_error = malloc(n * sizeof *res->translation_error);
    res->rotation_error_deg = malloc(n * sizeof *res->rotation_error_deg);
    res->aligned_xyz = malloc(3 * n * sizeof *res->aligned_xyz);
    res->reference_xyz = malloc(3 * n * sizeof *res->reference_xyz);
    return res->time && res->translation_error && res->rotation_error_deg && res->aligned_xyz && res->reference_xyz
               ? PTREG_OK
               : no_memory(err);
}

/* The ATE's statistics from copies (stats sorts what it is given). */
static ptreg_status ate_stats(ptreg_eval_result *res, ptreg_error *err)
{
    const size_t n = res->pairing.pairs;
    double *t = malloc(n * sizeof *t), *r = malloc(n * sizeof *r);
    if (!t || !r) {
        free(t), free(r);
        return no_memory(err);
    }
    memcpy(t, res->translation_error, n * sizeof *t);
    memcpy(r, res->rotation_error_deg, n * sizeof *r);
    set_errors(&res->ate_errors, t, r, n);
    res->ate = &res->ate_errors;
    free(t), free(r);
    return PTREG_OK;
}

static ptreg_status evaluate(const ptreg_trajectory *est, const ptreg_trajectory *ref, const ptreg_eval_options *o,
                             ptreg_eval_result *res, ptreg_error *err)
{
    ptreg_status st = associate(est, ref, o, res, err);
    if (st)
        return st;
    const size_t need = res->align == PTREG_ALIGN_NONE ? 2 : 3;
    if (res->pairing.pairs < need)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "eval: %zu pose%s paired (by %s%s), %zu needed: are the files of one run? (--offset, "
                               "--max-diff, --associate)",
                               res->pairing.pairs, res->pairing.pairs == 1 ? "" : "s",
                               res->pairing.method == PTREG_ASSOCIATE_TIME ? "time" : "index",
                               res->pairing.method == PTREG_ASSOCIATE_TIME ? ", within --max-diff" : "", need);
    double *A = NULL, *Q = NULL, *d = NULL;
    if (!(st = per_pair_arrays(res, err)))
        st = paired_poses(est, ref, res, &A, &Q, err);
    if (!st && !(d = malloc(res->pairing.pairs * sizeof *d)))
        st = no_memory(err);
    if (!st) {
        absolute_errors(A, Q, res->pairing.pairs, res);
        path_lengths(Q, res->pairing.pairs, d);
        st = ate_stats(res, err);
    }
    if (!st)
        st = relative_errors(A, Q, d, res->pairing.pairs, o, res, err);
    if (!st)
        kitti_metric(A, Q, d, res->pairing.pairs, o, res);
    free(A), free(Q), free(d);
    return st;
}

ptreg_status ptreg_trajectory_eval(const ptreg_trajectory *est, const ptreg_trajectory *ref,
                                   const ptreg_eval_options *o, ptreg_eval_result *res, ptreg_error *err)
{
    if (!res)
        return ptreg_error_set(err, PTREG_ERR_ARG, "eval: a place for the result is needed");
    memset(res, 0, sizeof *res);
    ptreg_status st = check_inputs(est, ref, o, err);
    if (st)
        return st;
    res->align = o->align;
    res->pairing.max_diff = o->max_diff, res->pairing.offset = o->offset;
    res->association = &res->pairing;
    res->pairing.method = o->associate != PTREG_ASSOCIATE_AUTO ? o->associate
                          : est->format == PTREG_TRAJECTORY_TUM && ref->format == PTREG_TRAJECTORY_TUM
                              ? PTREG_ASSOCIATE_TIME
                              : PTREG_ASSOCIATE_INDEX;
    if ((st = evaluate(est, ref, o, res, err)))
        ptreg_eval_result_free(res);
    return st;
}

void ptreg_eval_result_free(ptreg_eval_result *res)
{
    if (!res)
        return;
    free(res->estimate_index), free(res->reference_index), free(res->time);
    free(res->translation_error), free(res->rotation_error_deg), free(res->aligned_xyz), free(res->reference_xyz);
    memset(res, 0, sizeof *res);
}

/* ---- the result's tables ---- */

static const char *associate_name(int value) { return option_name_of(associate_names, value); }
static const char *align_name(int value) { return option_name_of(align_names, value); }
static const char *unit_name(int value) { return option_name_of(unit_names, value); }

#define R ptreg_eval_stats
static const ptreg_result_field stats_rows[] = {
    RESULT_FIELD(R, rmse, DOUBLE, "", "the root of the mean square"),
    RESULT_FIELD(R, mean, DOUBLE, "", "the mean"),
    RESULT_FIELD(R, median, DOUBLE, "", "the median"),
    RESULT_FIELD(R, std, DOUBLE, "", "the standard deviation (of the population)"),
    RESULT_FIELD(R, min, DOUBLE, "", "the smallest"),
    RESULT_FIELD(R, max, DOUBLE, "", "the largest")};
#undef R
static const ptreg_result_table stats_table = {"eval stats", stats_rows, sizeof stats_rows / sizeof stats_rows[0],
                                               sizeof(ptreg_eval_stats)};

#define R ptreg_eval_errors
#define ERROR_ROWS                                                                                              \
    RESULT_FIELD(R, pairs, SIZE, "", "the pose pairs measured"),                                                \
        RESULT_OBJECT(R, translation, "translation", &stats_table, "the translation errors, the poses' units"), \
        RESULT_OBJECT(R, rotation_deg, "rotation_deg", &stats_table, "the rotation errors, degrees")
static const ptreg_result_field ate_rows[] = {ERROR_ROWS};
static const ptreg_result_field rpe_rows[] = {RESULT_FIELD(R, delta, DOUBLE, "unit", "the step between a pair's poses"),
                                              RESULT_ENUM(R, unit, "unit", unit_name, "frames, m or s"), ERROR_ROWS};
#undef ERROR_ROWS
#undef R
static const ptreg_result_table ate_table = {"eval ate", ate_rows, sizeof ate_rows / sizeof ate_rows[0],
                                             sizeof(ptreg_eval_errors)};
static const ptreg_result_table rpe_table = {"eval rpe", rpe_rows, sizeof rpe_rows / sizeof rpe_rows[0],
                                             sizeof(ptreg_eval_errors)};

#define R ptreg_eval_kitti_length
static const ptreg_result_field length_rows[] = {
    RESULT_FIELD(R, length, DOUBLE, "the poses' units", "the segments' length"),
    RESULT_FIELD(R, segments, SIZE, "", "segments of this length"),
    RESULT_FIELD(R, translation_percent, DOUBLE, "%", "their translation error over their length"),
    RESULT_FIELD(R, rotation_deg_per_m, DOUBLE, "deg/m", "their rotation error over their length")};
#undef R
static const ptreg_result_table length_table = {
    "eval kitti length", length_rows, sizeof length_rows / sizeof length_rows[0], sizeof(ptreg_eval_kitti_length)};

static size_t length_count(const void *result) { return ((const ptreg_eval_kitti *)result)->length_count; }

#define R ptreg_eval_kitti
static const ptreg_result_field kitti_rows[] = {
    RESULT_FIELD(R, segments, SIZE, "", "segments measured (from every 10th pose, each length)"),
    RESULT_FIELD(R, translation_percent, DOUBLE, "%", "the mean translation error over a segment's length"),
    RESULT_FIELD(R, rotation_deg_per_m, DOUBLE, "deg/m", "the mean rotation error over a segment's length"),
    RESULT_RECORDS(R, lengths, "lengths", length_count, &length_table, "per segment length (those with a segment)")};
#undef R
static const ptreg_result_table kitti_table = {"eval kitti", kitti_rows, sizeof kitti_rows / sizeof kitti_rows[0],
                                               sizeof(ptreg_eval_kitti)};

#define R ptreg_eval_association
static const ptreg_result_field association_rows[] = {
    RESULT_ENUM(R, method, "method", associate_name, "time or index"), RESULT_FIELD(R, pairs, SIZE, "", "poses paired"),
    RESULT_FIELD(R, max_diff, DOUBLE, "s", "by time: the largest time difference of a pair"),
    RESULT_FIELD(R, offset, DOUBLE, "s", "by time: added to the estimate's timestamps")};
#undef R
static const ptreg_result_table association_table = {"eval association", association_rows,
                                                     sizeof association_rows / sizeof association_rows[0],
                                                     sizeof(ptreg_eval_association)};

#define R ptreg_eval_alignment
static const ptreg_result_field alignment_rows[] = {
    RESULT_ARRAY(R, rotation, "rotation", DOUBLES, 9, "", "R, row-major"),
    RESULT_ARRAY(R, translation, "translation", DOUBLES, 3, "the poses' units", "t"),
    RESULT_FIELD(R, scale, DOUBLE, "", "s (1 unless sim3): a position x goes to s R x + t")};
#undef R
static const ptreg_result_table alignment_table = {
    "eval alignment", alignment_rows, sizeof alignment_rows / sizeof alignment_rows[0], sizeof(ptreg_eval_alignment)};

static size_t pair_count(const void *result) { return ((const ptreg_eval_result *)result)->pairing.pairs; }

#define R ptreg_eval_result
static const ptreg_result_field eval_result_rows[] = {
    RESULT_OBJECT(R, association, "association", &association_table, "how the poses were paired"),
    RESULT_ENUM(R, align, "align", align_name, "se3, sim3 or none"),
    RESULT_OBJECT(R, alignment, "alignment", &alignment_table, "what lays the estimate on the truth"),
    RESULT_OBJECT(R, ate, "ate", &ate_table, "the absolute trajectory error, after the alignment"),
    RESULT_OBJECT(R, rpe, "rpe", &rpe_table, "the relative pose error over --delta; absent when no pair fits"),
    RESULT_OBJECT(R, kitti, "kitti", &kitti_table, "the KITTI metric; absent when no segment fits"),
    RESULT_SERIES(R, time, "time", pair_count, "s", "each pair's true time (KITTI: its index)"),
    RESULT_SERIES(R, translation_error, "translation_error", pair_count, "the poses' units",
                  "each pair's ATE translation error"),
    RESULT_SERIES(R, rotation_error_deg, "rotation_error_deg", pair_count, "deg", "each pair's ATE rotation error")};
#undef R
RESULT_TABLE(ptreg_eval_result_table, "trajectory eval", ptreg_eval_result, eval_result_rows)
