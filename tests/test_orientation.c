/* Motifs and orientations (batch.h): lattice shells and their symmetry,
 * fundamental-zone reduction, misorientation and IPF colours; orientations
 * of rotated crystals (perfect at any orientation, thinned and noisy with
 * grain pooling), the synthetic polycrystal's target (60% detection,
 * 0.05 nm noise: median misorientation <= 3 degrees, >= 95% within 10),
 * atom selection, the registered subset (what MPI ranks use) giving the
 * same bits, motif estimation with its combining hook, the run shared
 * among ranks (threads standing in for MPI's processes) and one slab after
 * another from a source read in pieces giving one process's bits, map
 * colours, thread counts, bad options. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#include <pthread.h>

#include "check.h"
#include "ptreg/orientation.h"
#include "ptreg/synth_apt.h"
#include "hooks.h"
#include "core/numeric.h"
#include "apt/orientation_impl.h"

#define PI 3.14159265358979323846

static double dist(const float *a, const float *b)
{
    return sqrt(pow(a[0] - b[0], 2) + pow(a[1] - b[1], 2) + pow(a[2] - b[2], 2));
}

static void test_lattices(void)
{
    const ptreg_lattice kinds[] = {PTREG_LATTICE_FCC, PTREG_LATTICE_BCC, PTREG_LATTICE_HCP, PTREG_LATTICE_SC};
    const size_t first[] = {12, 8, 12, 6}, second[] = {18, 14, 18, 18};
    const double nearest[] = {0.405 / sqrt(2.0), 0.405 * sqrt(3.0) / 2.0, 0.405, 0.405};
    const size_t symmetry[] = {24, 24, 6, 24};
    for (int l = 0; l < 4; l++) {
        size_t shells[4];
        CHECK(ptreg_lattice_shells(kinds[l], shells, 4) == 4);
        CHECK_MSG(shells[0] == first[l] && shells[1] == second[l], "%s: %zu %zu", ptreg_lattice_name(kinds[l]),
                  shells[0], shells[1]);
        float m[3 * 64];
        const float origin[3] = {0, 0, 0};
        ptreg_error err;
        CHECK(ptreg_motif_lattice(kinds[l], 0.405, first[l], m, &err) == PTREG_OK);
        for (size_t i = 0; i < first[l]; i++)
            CHECK_NEAR(dist(m + 3 * i, origin), nearest[l], 1e-6);
        double q[PTREG_MAX_SYMMETRY][4];
        const size_t count = ptreg_motif_symmetry(m, first[l], 0.1, q);
        CHECK_MSG(count == symmetry[l], "%s: %zu symmetries", ptreg_lattice_name(kinds[l]), count);
        CHECK(q[0][0] == 1.0 && q[0][1] == 0.0);
        /* each one maps the motif onto itself */
        for (size_t g = 0; g < count; g++) {
            double R[9];
            ptreg_quaternion_to_matrix(q[g], R);
            for (size_t i = 0; i < first[l]; i++) {
                float r[3];
                for (int c = 0; c < 3; c++)
                    r[c] = (float)(R[3 * c] * m[3 * i] + R[3 * c + 1] * m[3 * i + 1] + R[3 * c + 2] * m[3 * i + 2]);
                double best = 1e9;
                for (size_t j = 0; j < first[l]; j++)
                    best = check_least(best, dist(r, m + 3 * j));
                CHECK(best < 1e-5);
            }
        }
        ptreg_lattice parsed;
        CHECK(ptreg_lattice_parse(ptreg_lattice_name(kinds[l]), &parsed) == 0 && parsed == kinds[l]);
    }
    ptreg_lattice parsed;
    CHECK(ptreg_lattice_parse("diamond", &parsed) == -1);
    /* a cut shell breaks the symmetry: 13 fcc points keep only rotations about the 13th */
    float m[3 * 13];
    double q[PTREG_MAX_SYMMETRY][4];
    CHECK(ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 13, m, NULL) == PTREG_OK);
    CHECK(ptreg_motif_symmetry(m, 13, 0.1, q) < 24);
    ptreg_error err;
    CHECK(ptreg_motif_lattice(PTREG_LATTICE_FCC, -1.0, 12, m, &err) == PTREG_ERR_ARG);
}

static void axis_angle_q(double x, double y, double z, double deg, double q[4])
{
    const double n = sqrt(x * x + y * y + z * z), h = 0.5 * deg * PI / 180.0;
    q[0] = cos(h), q[1] = sin(h) * x / n, q[2] = sin(h) * y / n, q[3] = sin(h) * z / n;
}

static void test_reduction(void)
{
    float m[36];
    double sym[PTREG_MAX_SYMMETRY][4];
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, m, NULL);
    const size_t n = ptreg_motif_symmetry(m, 12, 0.1, sym);
    double q[4], fz[4], other[4];
    axis_angle_q(1, 2, 3, 50, q);
    ptreg_orientation_reduce(q, (const double(*)[4])sym, n, fz);
    CHECK(fz[0] >= 0 && fz[0] >= fabs(q[0]) - 1e-12);
    /* every equivalent g q reduces to the same representative */
    for (size_t g = 0; g < n; g++) {
        double gq[4] = {sym[g][0] * q[0] - sym[g][1] * q[1] - sym[g][2] * q[2] - sym[g][3] * q[3],
                        sym[g][0] * q[1] + sym[g][1] * q[0] + sym[g][2] * q[3] - sym[g][3] * q[2],
                        sym[g][0] * q[2] - sym[g][1] * q[3] + sym[g][2] * q[0] + sym[g][3] * q[1],
                        sym[g][0] * q[3] + sym[g][1] * q[2] - sym[g][2] * q[1] + sym[g][3] * q[0]};
        ptreg_orientation_reduce(gq, (const double(*)[4])sym, n, other);
        for (int k = 0; k < 4; k++)
            CHECK_NEAR(other[k], fz[k], 1e-9);
        CHECK_NEAR(ptreg_misorientation_deg(q, gq, (const double(*)[4])sym, n), 0.0, 1e-5);
    }
    double id[4] = {1, 0, 0, 0}, ten[4], ninety[4];
    axis_angle_q(0, 0, 1, 10, ten);
    axis_angle_q(0, 0, 1, 90, ninety);
    CHECK_NEAR(ptreg_misorientation_deg(id, ten, (const double(*)[4])sym, n), 10.0, 1e-9);
    CHECK_NEAR(ptreg_misorientation_deg(id, ninety, (const double(*)[4])sym, n), 0.0, 1e-5);
    CHECK_NEAR(ptreg_misorientation_deg(id, ninety, (const double(*)[4])sym, 1), 90.0, 1e-9);
    /* IPF: the sample's z along [001], [101] and [111] of the crystal */
    unsigned char rgb[3];
    ptreg_ipf_color(id, rgb);
    CHECK(rgb[0] == 255 && rgb[1] == 0 && rgb[2] == 0);
    double to101[4], to111[4];
    axis_angle_q(0, 1, 0, 45, to101);
    axis_angle_q(-1, 1, 0, acos(1 / sqrt(3.0)) * 180 / PI, to111);
    ptreg_ipf_color(to101, rgb);
    CHECK_MSG(rgb[0] == 0 && rgb[1] == 255 && rgb[2] == 0, "%d %d %d", rgb[0], rgb[1], rgb[2]);
    ptreg_ipf_color(to111, rgb);
    CHECK_MSG(rgb[0] == 0 && rgb[1] == 0 && rgb[2] == 255, "%d %d %d", rgb[0], rgb[1], rgb[2]);
}

/* An fcc crystal of cells^3 unit cells (a = 0.405 nm) with its crystal
 * axes rotated by R (sites x = R s), atoms kept with probability keep,
 * Gaussian noise sigma along x and y, sigma / 2 along z. inside (may be NULL): whether the atom's site is
 * at least 1 nm inside the crystal. */
static size_t crystal_inside(int cells, const double R[9], double keep, double sigma, uint64_t seed, float *xyz,
                             uint8_t *inside)
{
    static const double basis[4][3] = {{0, 0, 0}, {.5, .5, 0}, {.5, 0, .5}, {0, .5, .5}};
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    size_t n = 0;
    for (int i = 0; i < cells; i++)
        for (int j = 0; j < cells; j++)
            for (int k = 0; k < cells; k++)
                for (int b = 0; b < 4; b++) {
                    const double s[3] = {0.405 * (i + basis[b][0]), 0.405 * (j + basis[b][1]),
                                         0.405 * (k + basis[b][2])};
                    if (ptreg_rng_uniform(&rng) >= keep)
                        continue;
                    for (int c = 0; c < 3; c++) /* noise as atom probes have it: half as much in depth */
                        xyz[3 * n + c] = (float)(R[3 * c] * s[0] + R[3 * c + 1] * s[1] + R[3 * c + 2] * s[2] +
                                                 (c == 2 ? 0.5 : 1.0) * sigma * ptreg_rng_normal(&rng));
                    if (inside) {
                        const double far = 0.405 * (cells - 0.5) - 1.0;
                        inside[n] = s[0] >= 1.0 && s[1] >= 1.0 && s[2] >= 1.0 && s[0] <= far && s[1] <= far &&
                                    s[2] <= far;
                    }
                    n++;
                }
    return n;
}

static size_t crystal(int cells, const double R[9], double keep, double sigma, uint64_t seed, float *xyz)
{
    return crystal_inside(cells, R, keep, sigma, seed, xyz, NULL);
}

static void fcc_options(ptreg_orientation_options *o, float *motif)
{
    ptreg_orientation_options_default(o);
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, motif, NULL);
    o->motif = motif;
    o->motif_points = 12;
}

static double misorientation_to(const ptreg_orientations *o, size_t i, const double truth[4])
{
    const double q[4] = {o->q[4 * i], o->q[4 * i + 1], o->q[4 * i + 2], o->q[4 * i + 3]};
    return ptreg_misorientation_deg(q, truth, (const double(*)[4])o->symmetry, o->symmetry_count);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Perfect crystals at orientations far from the motif's frame (beyond
 * one start's basin): every atom, its first shell only, the surface too. */
static void test_rotated_crystal(void)
{
    const double axes[3][4] = {{0.3, -0.5, 0.8, 37}, {1, 1, 0.2, 58}, {-0.2, 0.9, 0.4, 61}};
    for (int r = 0; r < 3; r++) {
        double g[4], R[9];
        axis_angle_q(axes[r][0], axes[r][1], axes[r][2], axes[r][3], g);
        ptreg_quaternion_to_matrix(g, R);
        const double truth[4] = {g[0], -g[1], -g[2], -g[3]}; /* neighborhood -> motif: R^T */
        float *xyz = malloc(3 * 5 * 5 * 5 * 4 * sizeof(float)), motif[36];
        const size_t n = crystal(5, R, 1.0, 0.0, 1, xyz);
        ptreg_orientation_options opt;
        fcc_options(&opt, motif);
        opt.radius = 0.35;
        opt.assignment = 1;
        ptreg_orientations o;
        ptreg_error err;
        CHECK_MSG(ptreg_orientations_compute(xyz, n, NULL, &opt, &o, &err) == PTREG_OK, "%s", err.message);
        CHECK(o.n == n && o.registered == n && o.flagged == 0 && o.symmetry_count == 24 && o.starts > 1);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            worst = check_worse(worst, misorientation_to(&o, i, truth));
            CHECK(o.flag[i] == PTREG_ORIENT_OK && o.matched[i] == 1.0f && o.residual[i] < 1e-3f);
            CHECK_NEAR(o.reach[i], 0.405 / sqrt(2.0), 1e-5);
        }
        CHECK_MSG(worst < 0.05, "%g deg about axis %d: worst misorientation %g deg", axes[r][3], r, worst);
        /* q is in the fundamental zone: no equivalent has a larger w */
        for (size_t k = 0; k < o.symmetry_count; k++) {
            const double *sy = o.symmetry[k];
            const double w = sy[0] * o.q[0] - sy[1] * o.q[1] - sy[2] * o.q[2] - sy[3] * o.q[3];
            CHECK(fabs(w) <= o.q[0] + 1e-6);
        }
        /* an atom inside has 12 neighbors on 12 different motif points */
        int distinct = 0, seen[12] = {0};
        const size_t inside = 4 * (2 * 25 + 2 * 5 + 2); /* site (2, 2, 2), basis 0 */
        for (size_t j = 0; j < 12; j++)
            if (o.assignment[12 * inside + j] < 12 && !seen[o.assignment[12 * inside + j]]++)
                distinct++;
        CHECK(distinct == 12);
        ptreg_orientations_free(&o);
        free(xyz);
    }
}

/* Thinned and noisy, as atom probes see crystals, atoms at least 1 nm
 * inside: one atom's own first shell gives its orientation to a degree at
 * 0.01 nm noise; at 60% detection and 0.05 nm, pooling the neighborhoods
 * of the grain (a motif of two shells, which 12 neighbors then reach)
 * still gives it to a few degrees. */
static void test_noisy_crystal(void)
{
    double g[4], R[9];
    axis_angle_q(1, 1, 0.2, 71, g);
    ptreg_quaternion_to_matrix(g, R);
    const double truth[4] = {g[0], -g[1], -g[2], -g[3]};
    float *xyz = malloc(3 * 12 * 12 * 12 * 4 * sizeof(float)), motif[3 * 18];
    uint8_t *inside = malloc(12 * 12 * 12 * 4);
    for (int pooled = 0; pooled < 2; pooled++) {
        const size_t n = crystal_inside(pooled ? 12 : 8, R, pooled ? 0.6 : 1.0, pooled ? 0.05 : 0.01, 2, xyz, inside);
        ptreg_orientation_options opt;
        fcc_options(&opt, motif);
        if (pooled) {
            ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 18, motif, NULL);
            opt.motif_points = 18;
            opt.grain_radius = 1.0;
        } else {
            opt.radius = 0.35;
        }
        ptreg_orientations o;
        ptreg_error err;
        CHECK_MSG(ptreg_orientations_compute(xyz, n, NULL, &opt, &o, &err) == PTREG_OK, "%s", err.message);
        CHECK(pooled ? o.pools > 100 : o.pools == 0);
        double *mis = malloc(n * sizeof *mis);
        size_t within = 0, count = 0;
        for (size_t i = 0; i < n; i++)
            if (inside[i]) {
                mis[count] = misorientation_to(&o, i, truth);
                within += mis[count++] < 10.0;
            }
        qsort(mis, count, sizeof *mis, cmp_double);
        CHECK_MSG(count > 100 && mis[count / 2] < (pooled ? 3.0 : 2.0),
                  "pooled %d: median misorientation %g deg of "
                  "%zu atoms",
                  pooled, mis[count / 2], count);
        CHECK_MSG(within >= 0.95 * (double)count, "pooled %d: %zu of %zu within 10 deg", pooled, within, count);
        free(mis);
        ptreg_orientations_free(&o);
    }
    free(xyz);
    free(inside);
}

/* The target on the synthetic polycrystal: 60% detection,
 * 0.05 nm lateral noise (0.025 in depth), 8 grains in 12 nm: with grain
 * pooling the median misorientation to the atom's true grain is at most 3
 * degrees and at least 95% of the atoms are within 10. */
static void test_polycrystal(void)
{
    ptreg_apt_synth_options so;
    ptreg_apt_synth_options_default(&so);
    so.efficiency = 0.6, so.noise = 0.05;
    ptreg_apt_synth poly;
    ptreg_error err;
    CHECK_MSG(ptreg_apt_synth_polycrystal(&so, &poly, &err) == PTREG_OK, "%s", err.message);
    float motif[3 * 18];
    ptreg_orientation_options opt;
    fcc_options(&opt, motif);
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 18, motif, NULL);
    opt.motif_points = 18;
    opt.grain_radius = 1.0;
    ptreg_orientations o;
    CHECK_MSG(ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &o, &err) == PTREG_OK, "%s", err.message);
    double *mis = malloc(poly.n * sizeof *mis);
    size_t within = 0;
    for (size_t i = 0; i < poly.n; i++) {
        mis[i] = misorientation_to(&o, i, poly.orientation + 4 * poly.grain[i]);
        within += mis[i] < 10.0;
    }
    /* grains are chosen cell by cell, on threads: the same bits on one */
    ptreg_orientations one;
    ptreg_set_num_threads(1);
    CHECK(ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &one, &err) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(!memcmp(one.q, o.q, 4 * poly.n * sizeof *o.q) && !memcmp(one.reach, o.reach, poly.n * sizeof *o.reach));
    CHECK(o.grain_ms > 0 && o.pools > 100);
    ptreg_orientations_free(&one);
    qsort(mis, poly.n, sizeof *mis, cmp_double);
    printf("polycrystal: %zu atoms, median misorientation %.2f deg, %.1f%% within 10 deg, %.0f ms\n", poly.n,
           mis[poly.n / 2], 100.0 * (double)within / (double)poly.n, o.stats.time_ms);
    CHECK_MSG(mis[poly.n / 2] <= 3.0, "median misorientation %g deg", mis[poly.n / 2]);
    CHECK_MSG(within >= 0.95 * (double)poly.n, "%zu of %zu within 10 deg", within, poly.n);
    free(mis);
    ptreg_orientations_free(&o);
    ptreg_apt_synth_free(&poly);
}

/* orient_fit takes points a vector at a time: the same bits as one point
 * at a time in plain arithmetic, and the same as its per-point terms
 * summed in order; at every length around the vector's width. */
static void test_fit(void)
{
    float p[3 * 40], motif[3 * 18];
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 18, motif, NULL);
    for (size_t j = 0; j < 3 * 40; j++)
        p[j] = (float)(0.4 * sin(1.7 * (double)j + 0.3));
    double q[4], R[9], terms[40];
    axis_angle_q(0.3, -1, 0.5, 37, q);
    ptreg_quaternion_to_matrix(q, R);
    const double tau2 = 0.02;
    for (size_t n = 1; n <= 40; n++) {
        double sum = 0.0, summed = 0.0;
        for (size_t j = 0; j < n; j++) {
            double r[3], best = tau2;
            for (int c = 0; c < 3; c++)
                r[c] = R[3 * c] * p[3 * j] + R[3 * c + 1] * p[3 * j + 1] + R[3 * c + 2] * p[3 * j + 2];
            for (size_t m = 0; m < 18; m++) {
                const double dx = r[0] - motif[3 * m], dy = r[1] - motif[3 * m + 1], dz = r[2] - motif[3 * m + 2];
                const double d2 = dx * dx + dy * dy + dz * dz;
                best = d2 < best ? d2 : best;
            }
            sum += best;
        }
        orient_point_fits(R, p, n, motif, 18, tau2, terms);
        for (size_t j = 0; j < n; j++)
            summed += terms[j];
        const double fit = orient_fit(R, p, n, motif, 18, tau2);
        CHECK_MSG(fit == sum / (double)n && fit == summed / (double)n, "n %zu: %.17g %.17g %.17g", n, fit,
                  sum / (double)n, summed / (double)n);
    }
}

/* Selected atoms only are registered and are each other's neighbors;
 * a registered subset (a rank's own atoms, the rest its halo) gives the
 * whole run's bits for those atoms; the same bits on 1 and 2 threads. */
static void test_subsets(void)
{
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    float *xyz = malloc(3 * 5 * 5 * 5 * 4 * sizeof(float)), motif[36];
    const size_t n = crystal(5, R, 0.8, 0.01, 3, xyz);
    uint8_t *selected = malloc(n), *registered = malloc(n);
    for (size_t i = 0; i < n; i++) {
        selected[i] = i % 5 != 0;
        registered[i] = xyz[3 * i + 2] < 0.8f;
    }
    ptreg_orientation_options opt;
    fcc_options(&opt, motif);
    ptreg_orientations all, part, one;
    ptreg_error err;
    ptreg_set_num_threads(2);
    CHECK(ptreg_orientations_compute(xyz, n, selected, &opt, &all, &err) == PTREG_OK);
    opt.registered = registered;
    CHECK(ptreg_orientations_compute(xyz, n, selected, &opt, &part, &err) == PTREG_OK);
    opt.registered = NULL;
    ptreg_set_num_threads(1);
    CHECK(ptreg_orientations_compute(xyz, n, selected, &opt, &one, &err) == PTREG_OK);
    ptreg_set_num_threads(0);
    size_t reg = 0;
    for (size_t i = 0; i < n; i++) {
        if (!selected[i]) {
            CHECK(all.flag[i] == PTREG_ORIENT_NOT_SELECTED && isnan(all.q[4 * i]) && isnan(all.residual[i]));
            continue;
        }
        CHECK(!memcmp(all.q + 4 * i, one.q + 4 * i, 4 * sizeof(float)) && all.residual[i] == one.residual[i]);
        if (registered[i]) {
            reg++;
            CHECK(!memcmp(all.q + 4 * i, part.q + 4 * i, 4 * sizeof(float)));
            CHECK(all.residual[i] == part.residual[i] && all.flag[i] == part.flag[i] && all.reach[i] == part.reach[i]);
        } else {
            CHECK(part.flag[i] == PTREG_ORIENT_NOT_SELECTED && isnan(part.q[4 * i]));
        }
    }
    CHECK(part.registered == reg && all.registered > reg);
    ptreg_orientations_free(&all);
    ptreg_orientations_free(&part);
    ptreg_orientations_free(&one);
    free(selected);
    free(registered);
    free(xyz);
}

typedef struct combine_log {
    int calls;
    uint64_t points;
} combine_log;

static ptreg_status log_combine(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err)
{
    (void)sum, (void)err;
    combine_log *log = ctx;
    log->calls++;
    log->points = 0;
    for (size_t m = 0; m < points; m++)
        log->points += count[m];
    return PTREG_OK;
}

/* Motif estimation recovers the lattice constant from a wrong start. */
static void test_estimate(void)
{
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    float *xyz = malloc(3 * 7 * 7 * 7 * 4 * sizeof(float)), motif[36];
    const size_t n = crystal(7, R, 0.7, 0.01, 4, xyz);
    ptreg_orientation_options opt;
    ptreg_orientation_options_default(&opt);
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.37, 12, motif, NULL);
    opt.motif = motif, opt.motif_points = 12;
    opt.estimate_motif = 3;
    combine_log log = {0, 0};
    opt.combine_motif_sums = log_combine;
    opt.combine_ctx = &log;
    ptreg_orientations o;
    ptreg_error err;
    CHECK_MSG(ptreg_orientations_compute(xyz, n, NULL, &opt, &o, &err) == PTREG_OK, "%s", err.message);
    CHECK(log.calls == 3 && log.points > 0 && log.points <= 12 * (uint64_t)n);
    const float origin[3] = {0, 0, 0};
    double mean = 0.0;
    for (size_t m = 0; m < 12; m++)
        mean += dist(o.motif + 3 * m, origin) / 12.0;
    CHECK_MSG(fabs(mean - 0.405 / sqrt(2.0)) < 0.01 * 0.405 / sqrt(2.0), "estimated radius %g", mean);
    CHECK(o.symmetry_count == 24);
    ptreg_orientations_free(&o);
    free(xyz);
}

/* ---- a run shared among ranks: threads with barrier collectives ---- */

#define MAX_RANKS 4

typedef struct thread_ranks {
    int size;
    pthread_barrier_t barrier;
    int value[MAX_RANKS];
    int64_t *sum[MAX_RANKS];
    uint64_t *count[MAX_RANKS];
} thread_ranks;

typedef struct rank_run {
    thread_ranks *all;
    int rank;
    const float *xyz;
    size_t n;
    const ptreg_orientation_options *opt;
    ptreg_orientations out;
    ptreg_orientation_share share;
    ptreg_status status;
} rank_run;

/* Each rank posts its value, all read every post, and the second barrier
 * keeps the posts until everyone has read them. */
static int threads_max(int value, void *ctx)
{
    rank_run *me = ctx;
    thread_ranks *all = me->all;
    all->value[me->rank] = value;
    pthread_barrier_wait(&all->barrier);
    int max = value;
    for (int r = 0; r < all->size; r++)
        max = all->value[r] > max ? all->value[r] : max;
    pthread_barrier_wait(&all->barrier);
    return max;
}

static ptreg_status threads_sum(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err)
{
    (void)err;
    rank_run *me = ctx;
    thread_ranks *all = me->all;
    all->sum[me->rank] = sum, all->count[me->rank] = count;
    pthread_barrier_wait(&all->barrier);
    int64_t total[3 * 64] = {0};
    uint64_t counts[64] = {0};
    for (int r = 0; r < all->size; r++)
        for (size_t m = 0; m < points; m++) {
            counts[m] += all->count[r][m];
            for (int c = 0; c < 3; c++)
                total[3 * m + (size_t)c] += all->sum[r][3 * m + (size_t)c];
        }
    pthread_barrier_wait(&all->barrier);
    memcpy(sum, total, 3 * points * sizeof *sum);
    memcpy(count, counts, points * sizeof *count);
    return PTREG_OK;
}

static void *rank_main(void *arg)
{
    rank_run *me = arg;
    const ptreg_ranks ranks = {me->rank, me->all->size, threads_max, threads_sum, me, NULL};
    ptreg_error err;
    me->status = ptreg_orientations_distributed(&ranks, me->xyz, me->n, NULL, me->opt, &me->out, &me->share, &err);
    return NULL;
}

/* Every atom answered by exactly one rank, with one process's bits. */
static void check_shared_run(const float *xyz, size_t n, const ptreg_orientation_options *opt, int size, int min_rounds)
{
    ptreg_orientations one;
    ptreg_error err;
    CHECK_MSG(ptreg_orientations_compute(xyz, n, NULL, opt, &one, &err) == PTREG_OK, "%s", err.message);
    thread_ranks all = {.size = size};
    pthread_barrier_init(&all.barrier, NULL, (unsigned)size);
    rank_run run[MAX_RANKS];
    pthread_t thread[MAX_RANKS];
    for (int r = 0; r < size; r++) {
        run[r] = (rank_run){.all = &all, .rank = r, .xyz = xyz, .n = n, .opt = opt};
        pthread_create(&thread[r], NULL, rank_main, &run[r]);
    }
    for (int r = 0; r < size; r++)
        pthread_join(thread[r], NULL);
    pthread_barrier_destroy(&all.barrier);
    size_t *answered = calloc(n, sizeof *answered);
    for (int r = 0; r < size; r++) {
        const ptreg_orientations *o = &run[r].out;
        const ptreg_orientation_share *sh = &run[r].share;
        CHECK(run[r].status == PTREG_OK && o->n == sh->m && sh->halo_rounds >= min_rounds);
        CHECK(!memcmp(o->motif, one.motif, 3 * one.motif_points * sizeof(float)));
        for (size_t j = 0; j < sh->m; j++) {
            const size_t i = sh->atom[j];
            if (!sh->owned[j])
                continue;
            answered[i]++;
            CHECK(!memcmp(o->q + 4 * j, one.q + 4 * i, 4 * sizeof(float)) && o->flag[j] == one.flag[i]);
            CHECK(!memcmp(o->residual + j, one.residual + i, sizeof(float)) &&
                  !memcmp(o->matched + j, one.matched + i, sizeof(float)));
            CHECK(!o->assignment || !memcmp(o->assignment + o->k * j, one.assignment + one.k * i, 2 * one.k));
        }
        ptreg_orientations_free(&run[r].out);
        ptreg_orientation_share_free(&run[r].share);
    }
    size_t once = 0;
    for (size_t i = 0; i < n; i++)
        once += answered[i] == 1;
    CHECK_MSG(once == n, "%zu of %zu atoms answered once", once, n);
    free(answered);
    ptreg_orientations_free(&one);
}

static void test_shared_ranks(void)
{
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    float *xyz = malloc(3 * (2 * 6 * 6 * 6 * 4 + 8) * sizeof(float)), motif[36];
    size_t n = crystal(6, R, 0.8, 0.01, 5, xyz);
    xyz[3 * 7] = NAN; /* not taken: rank 0 answers for it */
    ptreg_orientation_options opt;
    fcc_options(&opt, motif);
    opt.estimate_motif = 1, opt.assignment = 1;
    ptreg_set_num_threads(1);
    check_shared_run(xyz, n, &opt, 3, 1);
    /* two crystals far apart along z with a few atoms between them: the
     * first halo is too thin for the sparse middle and widens */
    const size_t half = n;
    for (size_t i = 0; i < half; i++) {
        memcpy(xyz + 3 * (half + i), xyz + 3 * i, 3 * sizeof(float));
        xyz[3 * (half + i) + 2] += 40.0f;
    }
    n = 2 * half;
    for (size_t i = 0; i < 8; i++)
        xyz[3 * (n + i)] = 1.0f, xyz[3 * (n + i) + 1] = 1.0f, xyz[3 * (n + i) + 2] = 3.0f + 4.5f * (float)i;
    n += 8;
    opt.assignment = 0;
    check_shared_run(xyz, n, &opt, 2, 2);
    ptreg_set_num_threads(0);
    const ptreg_ranks bad = {2, 2, threads_max, threads_sum, NULL, NULL};
    ptreg_orientations o;
    ptreg_orientation_share share;
    ptreg_error err;
    CHECK(ptreg_orientations_distributed(&bad, xyz, n, NULL, &opt, &o, &share, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "rank 2 of 2"));
    free(xyz);
}

/* ---- one slab after another, from a source read in pieces ---- */

typedef struct piece_source {
    const float *xyz;
    size_t n, piece;
    const uint8_t *selected;
    size_t skipped; /* pieces left out, over every scan */
} piece_source;

/* Whether a window needs any atom of the piece. */
static int piece_needed(const ptreg_atom_window *w, const float *xyz, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const float *p = xyz + 3 * i;
        const int finite = isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
        if (finite ? p[w->axis] >= w->lo && p[w->axis] < w->hi : w->nonfinite)
            return 1;
    }
    return 0;
}

/* Leaves out every piece a window does not need, as a file source may: a
 * window too narrow would change some slab's answers. */
static ptreg_status scan_pieces(void *src, const ptreg_atom_window *window, ptreg_atom_piece_fn fn, void *ctx,
                                ptreg_error *err)
{
    piece_source *p = src;
    ptreg_status st = PTREG_OK;
    for (size_t first = 0; !st && first < p->n; first += p->piece) {
        const size_t count = p->n - first < p->piece ? p->n - first : p->piece;
        if (window && !piece_needed(window, p->xyz + 3 * first, count)) {
            p->skipped++;
            continue;
        }
        st = fn(ctx, first, count, p->xyz + 3 * first, p->selected ? p->selected + first : NULL, err);
    }
    return st;
}

typedef struct slab_check {
    const ptreg_orientations *whole;
    const float *xyz; /* the source's */
    size_t *answered;
    size_t slabs, max_rounds, fail_at;
} slab_check;

static ptreg_status check_slab(void *ctx, const ptreg_orientations *o, const ptreg_orientation_share *sh,
                               const float *xyz, ptreg_error *err)
{
    slab_check *c = ctx;
    const ptreg_orientations *one = c->whole;
    CHECK(o->n == sh->m);
    for (size_t j = 0; j < sh->m; j++) {
        const size_t i = sh->atom[j];
        CHECK(j == 0 || i > sh->atom[j - 1]);
        CHECK(!memcmp(xyz + 3 * j, c->xyz + 3 * i, 3 * sizeof(float)));
        if (!sh->owned[j])
            continue;
        c->answered[i]++;
        CHECK(!memcmp(o->q + 4 * j, one->q + 4 * i, 4 * sizeof(float)) && o->flag[j] == one->flag[i]);
        CHECK(!memcmp(o->residual + j, one->residual + i, sizeof(float)) &&
              !memcmp(o->reach + j, one->reach + i, sizeof(float)));
    }
    c->max_rounds = (size_t)sh->halo_rounds > c->max_rounds ? (size_t)sh->halo_rounds : c->max_rounds;
    if (++c->slabs == c->fail_at)
        return ptreg_error_set(err, PTREG_ERR_IO, "slab %zu: the caller failed", c->slabs);
    return PTREG_OK;
}

/* Every atom answered by exactly one slab with the whole input's bits;
 * returns the slabs. */
static size_t check_slabs(piece_source *src, size_t slab_atoms, const ptreg_orientation_options *opt, size_t min_rounds)
{
    ptreg_orientations one;
    ptreg_error err;
    CHECK_MSG(ptreg_orientations_compute(src->xyz, src->n, src->selected, opt, &one, &err) == PTREG_OK, "%s",
              err.message);
    slab_check c = {&one, src->xyz, calloc(src->n, sizeof(size_t)), 0, 0, 0};
    const ptreg_atom_source atoms = {scan_pieces, src};
    CHECK_MSG(ptreg_orientations_slabs(&atoms, slab_atoms, opt, check_slab, &c, &err) == PTREG_OK, "%s", err.message);
    size_t once = 0;
    for (size_t i = 0; i < src->n; i++)
        once += c.answered[i] == 1;
    CHECK_MSG(once == src->n, "%zu of %zu atoms answered once", once, src->n);
    CHECK_MSG(c.max_rounds >= min_rounds, "halo rounds %zu", c.max_rounds);
    free(c.answered);
    ptreg_orientations_free(&one);
    return c.slabs;
}

static void test_slabs(void)
{
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    float *xyz = malloc(3 * (2 * 6 * 6 * 6 * 4 + 8) * sizeof(float)), motif[36];
    const size_t half = crystal(6, R, 0.8, 0.01, 5, xyz);
    /* two crystals far apart along z, a few atoms between them: a slab's
     * first halo is too thin for the sparse middle and widens */
    for (size_t i = 0; i < half; i++) {
        memcpy(xyz + 3 * (half + i), xyz + 3 * i, 3 * sizeof(float));
        xyz[3 * (half + i) + 2] += 40.0f;
    }
    size_t n = 2 * half;
    for (size_t i = 0; i < 8; i++)
        xyz[3 * (n + i)] = 1.0f, xyz[3 * (n + i) + 1] = 1.0f, xyz[3 * (n + i) + 2] = 3.0f + 4.5f * (float)i;
    n += 8;
    xyz[3 * 7] = NAN; /* not taken: the first slab answers for it */
    uint8_t *selected = malloc(n);
    for (size_t i = 0; i < n; i++)
        selected[i] = i % 7 != 3;
    ptreg_orientation_options opt;
    fcc_options(&opt, motif);
    piece_source src = {xyz, n, 97, selected, 0};
    CHECK(check_slabs(&src, n / 2, &opt, 2) == 2);
    CHECK(check_slabs(&src, n / 7, &opt, 1) >= 6);
    CHECK(src.skipped > 0); /* the windows left pieces out */
    /* grain pooling: a slab's atoms choose among pools reaching into the halo */
    opt.grain_radius = 0.8;
    src.selected = NULL, src.piece = n;
    CHECK(check_slabs(&src, n / 3, &opt, 1) >= 3);
    /* the motif estimate needs every atom: one slab, or refused */
    fcc_options(&opt, motif);
    opt.estimate_motif = 1;
    CHECK(check_slabs(&src, n, &opt, 1) == 1);
    ptreg_error err;
    slab_check c = {NULL, xyz, NULL, 0, 0, 0};
    const ptreg_atom_source atoms = {scan_pieces, &src};
    CHECK(ptreg_orientations_slabs(&atoms, n / 2, &opt, check_slab, &c, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "motif estimate") && c.slabs == 0);
    fcc_options(&opt, motif);
    opt.grain_map = 1;
    CHECK(ptreg_orientations_slabs(&atoms, n, &opt, check_slab, &c, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "grain map"));
    CHECK(ptreg_orientations_slabs(&atoms, 0, NULL, check_slab, &c, &err) == PTREG_ERR_ARG);
    /* the caller's failure ends the run with its status */
    ptreg_orientations whole;
    fcc_options(&opt, motif);
    CHECK(ptreg_orientations_compute(xyz, n, NULL, &opt, &whole, &err) == PTREG_OK);
    c = (slab_check){&whole, xyz, calloc(n, sizeof(size_t)), 0, 0, 2};
    CHECK(ptreg_orientations_slabs(&atoms, n / 4, &opt, check_slab, &c, &err) == PTREG_ERR_IO &&
          strstr(err.message, "slab 2") && c.slabs == 2);
    free(c.answered);
    ptreg_orientations_free(&whole);
    free(selected);
    free(xyz);
}

/* An orientation map's colours: IPF for cubic motifs, |z| otherwise,
 * grey without an orientation. */
static void test_colors(void)
{
    float q[8] = {1, 0, 0, 0, NAN, NAN, NAN, NAN};
    ptreg_orientations o;
    memset(&o, 0, sizeof o);
    o.n = 2, o.q = q, o.symmetry_count = 2;
    unsigned char rgb[3], ipf[3];
    ptreg_orientation_color(&o, 0, rgb);
    CHECK(rgb[0] == 0 && rgb[1] == 0 && rgb[2] == 255 && strstr(ptreg_orientation_color_key(&o), "crystal frame"));
    ptreg_orientation_color(&o, 1, rgb);
    CHECK(rgb[0] == 128 && rgb[1] == 128 && rgb[2] == 128);
    o.symmetry_count = 24;
    const double identity[4] = {1, 0, 0, 0};
    ptreg_ipf_color(identity, ipf);
    ptreg_orientation_color(&o, 0, rgb);
    CHECK(!memcmp(rgb, ipf, 3) && strstr(ptreg_orientation_color_key(&o), "inverse pole figure"));
}

static void test_bad_options(void)
{
    float xyz[12] = {0}, motif[36];
    ptreg_orientation_options opt;
    fcc_options(&opt, motif);
    ptreg_orientations o;
    ptreg_error err;
    opt.k = 2;
    CHECK(ptreg_orientations_compute(xyz, 4, NULL, &opt, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "k"));
    CHECK(o.q == NULL);
    fcc_options(&opt, motif);
    opt.motif = NULL;
    CHECK(ptreg_orientations_compute(xyz, 4, NULL, &opt, &o, &err) == PTREG_ERR_ARG);
    fcc_options(&opt, motif);
    motif[4] = NAN;
    CHECK(ptreg_orientations_compute(xyz, 4, NULL, &opt, &o, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "motif point 1"));
    fcc_options(&opt, motif);
    /* four atoms at one point: nobody has a neighborhood to speak of */
    CHECK(ptreg_orientations_compute(xyz, 4, NULL, &opt, &o, &err) == PTREG_OK);
    ptreg_orientations_free(&o);
}

int main(void)
{
    test_lattices();
    test_reduction();
    test_rotated_crystal();
    test_noisy_crystal();
    test_fit();
    test_polycrystal();
    test_subsets();
    test_estimate();
    test_shared_ranks();
    test_slabs();
    test_colors();
    test_bad_options();
    return check_exit();
}
