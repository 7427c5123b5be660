/* Registration of neighborhoods from several starting rotations
 * (orientation_impl.h). A symmetric motif's EM-ICP cost has a basin around
 * each equivalent of the truth about 40 degrees wide (fcc's 12 neighbors,
 * noiseless: every start within 40 degrees succeeds, none beyond 50);
 * starts that cover the motif's fundamental zone at a smaller spacing
 * find the right basin for every orientation. The coarse part of the
 * schedule (down to sigma = r / 2) decides the basin at a fraction of the
 * cost; only the best start runs the rest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apt/orientation_impl.h"
#include "apt/orientation_kernels.h"
#include "reg/batch/batch_pairs.h"

/* Candidates for the starts: a Halton sequence (bases 2, 3, 5) through
 * Shoemake's uniform map onto unit quaternions, the same on every run. */
#define START_CANDIDATES 4096
/* The coarse part ends once sigma^2 <= COARSE_END r^2. */
#define COARSE_END 0.25
/* The coarse part registers at most this many points of a source (the
 * first): enough to find the basin of a pool of hundreds of points at a
 * fraction of the cost (96 and 64 find the same basins on the synthetic
 * polycrystal's 12 cases, bench/NOTES.md change 144); the rest of the
 * schedule takes them all. */
#define COARSE_POINTS 64
/* Registrations from every start run a chunk of pairs at a time. */
#define CHUNK_PAIRS 16384

static double halton(unsigned i, unsigned base)
{
    double f = 1.0, r = 0.0;
    for (; i; i /= base) {
        f /= base;
        r += f * (double)(i % base);
    }
    return r;
}

static void candidate(unsigned i, double q[4])
{
    const double u1 = halton(i + 1, 2), u2 = halton(i + 1, 3), u3 = halton(i + 1, 5), two_pi = 6.283185307179586;
    q[0] = sqrt(1 - u1) * sin(two_pi * u2), q[1] = sqrt(1 - u1) * cos(two_pi * u2);
    q[2] = sqrt(u1) * sin(two_pi * u3), q[3] = sqrt(u1) * cos(two_pi * u3);
}

size_t orient_starts(const double sym[][4], size_t nsym, double spacing_deg, double starts[][4])
{
    starts[0][0] = 1.0, starts[0][1] = starts[0][2] = starts[0][3] = 0.0;
    if (!(spacing_deg < 180.0))
        return 1;
    double(*cand)[4] = malloc(START_CANDIDATES * sizeof *cand);
    double *gap = malloc(START_CANDIDATES * sizeof *gap);
    size_t count = 1;
    if (!cand || !gap) {
        free(cand), free(gap);
        return 0;
    }
    for (unsigned i = 0; i < START_CANDIDATES; i++) {
        candidate(i, cand[i]);
        gap[i] = ptreg_misorientation_deg(cand[i], starts[0], sym, nsym);
    }
    /* farthest point first, until every candidate is near a start */
    while (count < ORIENT_MAX_STARTS) {
        unsigned far = 0;
        for (unsigned i = 1; i < START_CANDIDATES; i++)
            far = gap[i] > gap[far] ? i : far;
        if (gap[far] < spacing_deg)
            break;
        ptreg_orientation_reduce(cand[far], sym, nsym, starts[count]);
        for (unsigned i = 0; i < START_CANDIDATES; i++)
            gap[i] = fmin(gap[i], ptreg_misorientation_deg(cand[i], starts[count], sym, nsym));
        count++;
    }
    free(cand);
    free(gap);
    return count;
}

double orient_fit(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2)
{
    return orient_cpu_kernels()->fit(R, p, n, motif, mk, tau2);
}

void orient_point_fits(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2,
                       double *fit)
{
    orient_cpu_kernels()->point_fits(R, p, n, motif, mk, tau2, fit);
}

PTREG_ISA_TABLE(orient_cpu_kernel_table, orient_cpu_kernels, ORIENT_CPU_KERNELS)

/* C = A B, rotations in double. */
static void multiply(const double A[9], const double B[9], double C[9])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c];
}

/* The sources of pairs [first, first + count) rotated by R[pair] (9 each,
 * indexed from first), as a pair set onto the motif. */
typedef struct rotated_set {
    ptreg_pair_set set;
    float *points;
    size_t *offset;
} rotated_set;

static size_t taken_points(const ptreg_pair_set *in, size_t i, size_t most)
{
    const size_t n = in->source_offset[i + 1] - in->source_offset[i];
    return n < most ? n : most;
}

/* Each source's first `most` points, in `copies` rotated copies. */
static int rotate_sources(const ptreg_pair_set *in, size_t first, size_t count, size_t copies, size_t most,
                          const double *R, rotated_set *out)
{
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += taken_points(in, first + i, most);
    out->points = malloc((3 * total * copies + 1) * sizeof(float));
    out->offset = malloc((count * copies + 1) * sizeof(size_t));
    if (!out->points || !out->offset)
        return 0;
    size_t at = 0;
    out->offset[0] = 0;
    for (size_t i = 0; i < count; i++)
        for (size_t c = 0; c < copies; c++) {
            const double *r = R + 9 * (i * copies + c);
            const size_t s0 = in->source_offset[first + i];
            for (size_t s = s0; s < s0 + taken_points(in, first + i, most); s++, at++)
                for (int k = 0; k < 3; k++)
                    out->points[3 * at + (size_t)k] = (float)(r[3 * k] * in->source[3 * s] +
                                                              r[3 * k + 1] * in->source[3 * s + 1] +
                                                              r[3 * k + 2] * in->source[3 * s + 2]);
            out->offset[i * copies + c + 1] = at;
        }
    out->set = (ptreg_pair_set){count * copies, out->points, out->offset, in->target, NULL, in->target_points};
    return 1;
}

static void add_stats(ptreg_batch_stats *sum, const ptreg_batch_stats *part)
{
    sum->pair_terms += part->pair_terms;
    sum->isa = part->isa;
}

/* One chunk: every start's coarse registration, the best start per pair,
 * then the rest of the schedule from there. */
static ptreg_status register_chunk(const ptreg_pair_set *set, size_t first, size_t count,
                                   const ptreg_batch_options *coarse, const ptreg_batch_options *fine,
                                   const double starts[][4], size_t nstarts, double tau2, double *T,
                                   ptreg_batch_stats *stats, ptreg_error *err)
{
    double *R = malloc((9 * count * nstarts + 1) * sizeof *R), *Tc = malloc((16 * count * nstarts + 1) * sizeof *Tc);
    double *Rbest = malloc((9 * count + 1) * sizeof *Rbest);
    rotated_set rs = {0}, best = {0};
    ptreg_status st = R && Tc && Rbest ? PTREG_OK
                                       : ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory");
    for (size_t i = 0; !st && i < count; i++)
        for (size_t s = 0; s < nstarts; s++)
            ptreg_quaternion_to_matrix(starts[s], R + 9 * (i * nstarts + s));
    if (!st && !rotate_sources(set, first, count, nstarts, COARSE_POINTS, R, &rs))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory");
    ptreg_batch_stats part;
    st = st ? st : ptreg_batch_register(&rs.set, coarse, Tc, NULL, NULL, &part, err);
    if (!st) {
        add_stats(stats, &part);
        /* per pair, the best start's coarse rotation after its start */
#pragma omp parallel for schedule(dynamic, 64) num_threads(ptreg_get_num_threads())
        for (size_t i = 0; i < count; i++) {
            const float *p = set->source + 3 * set->source_offset[first + i];
            const size_t n = set->source_offset[first + i + 1] - set->source_offset[first + i];
            double best_fit = INFINITY, Rb[9] = {0};
            for (size_t s = 0; s < nstarts; s++) {
                double Rc[9], Rt[9];
                ptreg_transform_rotation(Tc + 16 * (i * nstarts + s), Rc);
                multiply(Rc, R + 9 * (i * nstarts + s), Rt);
                const double fit = orient_fit(Rt, p, n, set->target, set->target_points, tau2);
                if (fit < best_fit)
                    best_fit = fit, memcpy(Rb, Rt, sizeof Rb);
            }
            memcpy(Rbest + 9 * i, Rb, sizeof Rb);
        }
        if (!rotate_sources(set, first, count, 1, (size_t)-1, Rbest, &best))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "orientations: out of memory");
    }
    st = st ? st : ptreg_batch_register(&best.set, fine, Tc, NULL, NULL, &part, err);
    if (!st) {
        add_stats(stats, &part);
        for (size_t i = 0; i < count; i++) {
            double Rf[9], Rt[9];
            ptreg_transform_rotation(Tc + 16 * i, Rf);
            multiply(Rf, Rbest + 9 * i, Rt);
            double *out = T + 16 * (first + i);
            ptreg_transform_identity(out);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    out[4 * r + c] = Rt[3 * r + c];
        }
    }
    free(R), free(Tc), free(Rbest);
    free(rs.points), free(rs.offset), free(best.points), free(best.offset);
    return st;
}

ptreg_status orient_register(const ptreg_pair_set *set, const ptreg_batch_options *opt, double coarse_factor,
                             const double starts[][4], size_t nstarts, double tau2, double *T, ptreg_batch_stats *stats,
                             ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(stats, 0, sizeof *stats);
    if (nstarts <= 1 || opt->translation)
        return ptreg_batch_register(set, opt, T, NULL, NULL, stats, err);
    double s2i, s2f, d02, r;
    ptreg_status st = ptreg_batch_schedule(set->target, set->target_points, opt, &s2i, &s2f, &d02, &r, err);
    if (st)
        return st;
    int steps = 0;
    double s2 = s2i;
    coarse_factor = opt->sigma_factor < coarse_factor ? opt->sigma_factor : coarse_factor;
    while (s2 > COARSE_END * r * r && s2 > s2f && steps < opt->max_iter)
        s2 *= coarse_factor, steps++;
    ptreg_batch_options coarse = *opt, fine = *opt;
    coarse.sigma_factor = coarse_factor;
    coarse.max_iter = steps, coarse.tol = 0.0, coarse.sigma2_init = s2i, coarse.sigma2_final = s2f, coarse.d02 = d02;
    fine.max_iter = opt->max_iter - steps, fine.sigma2_init = s2, fine.sigma2_final = s2f, fine.d02 = d02;
    for (size_t first = 0; !st && first < set->count; first += CHUNK_PAIRS) {
        const size_t count = set->count - first < CHUNK_PAIRS ? set->count - first : CHUNK_PAIRS;
        st = register_chunk(set, first, count, &coarse, &fine, starts, nstarts, tau2, T, stats, err);
    }
    stats->pairs = set->count;
    stats->time_ms = ptreg_time_ms() - t0;
    const double s = stats->time_ms * 1e-3;
    stats->pairs_per_s = s > 0 ? (double)set->count / s : 0.0;
    stats->gpts = s > 0 ? stats->pair_terms / s / 1e9 : 0.0;
    return st;
}
