/* Grain maps (ptreg_grain_map: ptreg_orientations_compute with grain_map):
 * Mackenzie's distribution against its closed form and against random
 * orientations; the synthetic polycrystal's grains found with their
 * orientations and boundaries, the same on 1 and 2 threads; the figures;
 * bad options. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ptreg/orientation.h"
#include "ptreg/synth_apt.h"
#include "hooks.h"
#include "core/numeric.h"
#include "apt/grains_impl.h"
#include "apt/orientation_impl.h"

#define PI 3.14159265358979323846

static double simpson(double (*f)(double), double lo, double hi, int steps)
{
    const double h = (hi - lo) / steps;
    double sum = f(lo) + f(hi);
    for (int s = 1; s < steps; s++)
        sum += (s % 2 ? 4.0 : 2.0) * f(lo + h * s);
    return sum * h / 3.0;
}

/* Mackenzie's (1958) closed forms: (2/15)(1 - cos) to 45 degrees, then
 * (2/15)(3 (sqrt 2 - 1) sin - 2 (1 - cos)) to 60; beyond, the sampled share
 * of axes meets the closed form at 60 degrees; a density that sums to one
 * and ends at 62.8 degrees. */
static void test_mackenzie(void)
{
    for (double d = 0; d <= 45; d += 2.5)
        CHECK_NEAR(grain_mackenzie_density(d), 2.0 / 15.0 * (1 - cos(d * PI / 180)), 1e-12);
    for (double d = 46; d <= 60; d += 2) {
        const double r = d * PI / 180, closed = 2.0 / 15.0 * (3 * (sqrt(2.0) - 1) * sin(r) - 2 * (1 - cos(r)));
        CHECK_NEAR(grain_mackenzie_density(d), closed, 1e-12);
    }
    const double at60 = grain_mackenzie_density(60.0), past = grain_mackenzie_density(60.0001);
    CHECK_MSG(fabs(past - at60) < 1e-3 * at60, "60 degrees: %g, then %g", at60, past);
    CHECK_NEAR(simpson(grain_mackenzie_density, 0, 62.8, 628), 1.0, 1e-3);
    CHECK(grain_mackenzie_density(62.5) > 0 && grain_mackenzie_density(62.9) == 0 && grain_mackenzie_density(-1) == 0);
}

static void random_q(ptreg_rng *rng, double q[4])
{
    const double u1 = ptreg_rng_uniform(rng), u2 = ptreg_rng_uniform(rng), u3 = ptreg_rng_uniform(rng);
    q[0] = sqrt(1 - u1) * sin(2 * PI * u2), q[1] = sqrt(1 - u1) * cos(2 * PI * u2);
    q[2] = sqrt(u1) * sin(2 * PI * u3), q[3] = sqrt(u1) * cos(2 * PI * u3);
}

/* Boundaries between uniformly random cubic orientations: the histogram
 * within its noise of Mackenzie's expectation. */
static void test_random_boundaries(void)
{
    float motif[36];
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, motif, NULL);
    ptreg_orientations o;
    memset(&o, 0, sizeof o);
    o.symmetry_count = ptreg_motif_symmetry(motif, 12, 0.1, o.symmetry);
    CHECK(o.symmetry_count == 24);
    ptreg_grain_map map;
    memset(&map, 0, sizeof map);
    map.boundary_count = 4000;
    map.boundaries = calloc(map.boundary_count, sizeof *map.boundaries);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    for (size_t i = 0; i < map.boundary_count; i++) {
        double a[4], b[4];
        random_q(&rng, a), random_q(&rng, b);
        map.boundaries[i].misorientation_deg = ptreg_misorientation_deg(a, b, o.symmetry, 24);
        CHECK(map.boundaries[i].misorientation_deg <= 62.81);
    }
    ptreg_error err;
    CHECK(grain_figures(&o, &map, &err) == PTREG_OK);
    CHECK(map.bins == 26 && map.bin_deg == 2.5 && map.bin_expected && map.dof >= 15);
    double expected = 0;
    size_t counted = 0;
    for (size_t b = 0; b < map.bins; b++)
        expected += map.bin_expected[b], counted += map.bin_count[b];
    CHECK_NEAR(expected, 4000, 10);
    CHECK(counted == 4000);
    /* chi-square beyond dof + 4 sd of it: p < 1e-3 */
    CHECK_MSG(map.chi2 < (double)map.dof + 4 * sqrt(2.0 * (double)map.dof), "chi2 %g on %zu", map.chi2, map.dof);
    const char *svg = map.figure[0];
    CHECK(svg && !strncmp(svg, "<svg", 4) && strstr(svg, "Mackenzie") && strstr(svg, "</svg>"));
    CHECK(map.figure[3] && strstr(map.figure[3], "{111}")); /* no atoms: an empty pole figure */
    grain_map_free(&map);
    ptreg_grain_map bad;
    memset(&bad, 0, sizeof bad);
    CHECK(grain_histogram(&bad, 1, 0.0, &err) == PTREG_ERR_ARG);
}

static double grain_misorientation(const ptreg_orientations *o, const double *q, const double *truth)
{
    return ptreg_misorientation_deg(q, truth, o->symmetry, o->symmetry_count);
}

/* The polycrystal (60% detection, 0.02 nm): each true grain is one found
 * grain holding >= 98% of its atoms, with its orientation; the boundaries
 * join grains that touch; the same bits on one thread. */
static void test_polycrystal_grains(void)
{
    ptreg_apt_synth_options so;
    ptreg_apt_synth_options_default(&so);
    so.efficiency = 0.6, so.noise = 0.02, so.grains = 4;
    so.box[0] = so.box[1] = so.box[2] = 8;
    ptreg_apt_synth poly;
    ptreg_error err;
    CHECK_MSG(ptreg_apt_synth_polycrystal(&so, &poly, &err) == PTREG_OK, "%s", err.message);
    float motif[3 * 18];
    ptreg_orientation_options opt;
    ptreg_orientation_options_default(&opt);
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 18, motif, NULL);
    opt.motif = motif, opt.motif_points = 18, opt.grain_radius = 1.0;
    opt.grain_map = 1;
    ptreg_orientations o, o1;
    CHECK_MSG(ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &o, &err) == PTREG_OK, "%s", err.message);
    ptreg_set_num_threads(1);
    CHECK(ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &o1, &err) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(o.grains && o1.grains);
    const ptreg_grain_map map = *o.grains, one = *o1.grains;
    CHECK(one.count == map.count && !memcmp(one.grain, map.grain, poly.n * sizeof *map.grain));
    CHECK(one.boundary_count == map.boundary_count && !memcmp(one.grains, map.grains, map.count * sizeof *map.grains));
    for (int f = 0; f < 4; f++)
        CHECK(map.figure[f] && !strcmp(map.figure[f], one.figure[f]));
    /* each true grain's found grain: the one most of its atoms are in */
    size_t right = 0;
    for (size_t g = 0; g < poly.grains; g++) {
        size_t *votes = calloc(map.count + 1, sizeof *votes), best = 0;
        for (size_t i = 0; i < poly.n; i++)
            if (poly.grain[i] == g && map.grain[i] >= 0)
                votes[map.grain[i]]++;
        for (size_t c = 1; c < map.count; c++)
            best = votes[c] > votes[best] ? c : best;
        right += votes[best];
        CHECK_MSG(grain_misorientation(&o, map.grains[best].q, poly.orientation + 4 * g) < 3.0,
                  "grain %zu: %g deg from the truth", g,
                  grain_misorientation(&o, map.grains[best].q, poly.orientation + 4 * g));
        CHECK(map.grains[best].spread_deg < 5.0);
        free(votes);
    }
    printf("grains: %zu found for %zu true, %zu boundaries, %.2f%% of %zu atoms in the right grain, %.0f ms\n",
           map.count, poly.grains, map.boundary_count, 100.0 * (double)right / (double)poly.n, poly.n, map.time_ms);
    CHECK_MSG((double)right >= 0.98 * (double)poly.n, "%zu of %zu atoms in the right grain", right, poly.n);
    CHECK(map.count == poly.grains && map.grained <= poly.n && map.grains[0].atoms >= map.grains[map.count - 1].atoms);
    for (size_t b = 0; b < map.boundary_count; b++) {
        const ptreg_grain_boundary *gb = &map.boundaries[b];
        CHECK(gb->a < gb->b && gb->b < map.count && gb->links > 0);
        CHECK(fabs(gb->misorientation_deg - grain_misorientation(&o, map.grains[gb->a].q, map.grains[gb->b].q)) <
              1e-12);
    }
    CHECK(strstr(map.figure[1], "{100}") && strstr(map.figure[2], "{110}") && strstr(map.figure[3], "{111}"));
    ptreg_orientations_free(&o);
    ptreg_orientations_free(&o1);
    ptreg_apt_synth_free(&poly);
}

/* A threshold out of range, and a grain map across ranks, are refused;
 * without grain_map there is none. */
static void test_bad_options(void)
{
    float xyz[3 * 64], motif[36];
    for (int i = 0; i < 64; i++)
        xyz[3 * i] = (float)(i % 4) * 0.3f, xyz[3 * i + 1] = (float)(i / 4 % 4) * 0.3f,
                xyz[3 * i + 2] = (float)(i / 16) * 0.3f;
    ptreg_orientation_options opt;
    ptreg_orientation_options_default(&opt);
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, motif, NULL);
    opt.motif = motif, opt.motif_points = 12;
    ptreg_orientations o;
    ptreg_error err;
    CHECK(ptreg_orientations_compute(xyz, 64, NULL, &opt, &o, &err) == PTREG_OK && !o.grains);
    ptreg_orientations_free(&o);
    opt.grain_map = 1, opt.grain_threshold_deg = 180;
    CHECK(ptreg_orientations_compute(xyz, 64, NULL, &opt, &o, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "threshold"));
    opt.grain_threshold_deg = 0;
    ptreg_orientation_share share;
    const ptreg_ranks one = {0, 1, NULL, NULL, NULL, NULL};
    CHECK(ptreg_orientations_distributed(&one, xyz, 64, NULL, &opt, &o, &share, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "grain map"));
}

int main(void)
{
    test_mackenzie();
    test_random_boundaries();
    test_polycrystal_grains();
    test_bad_options();
    return check_exit();
}
