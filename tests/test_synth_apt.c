/* The synthetic atom-probe polycrystal: atom counts, grains, the lattice
 * (nearest-neighbor distances, the truth rotation taking neighborhoods
 * onto the motif), every site made once (against a brute-force count),
 * anisotropic noise, solutes, determinism and the limits. */
#include "check.h"
#include "ptreg/orientation.h"
#include "ptreg/synth_apt.h"
#include "hooks.h"
#include "apt/orientation_impl.h"

static double dist2f(const float *a, const float *b)
{
    const double dx = (double)a[0] - b[0], dy = (double)a[1] - b[1], dz = (double)a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

static void rotate(const double R[9], const double v[3], double out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = R[3 * i] * v[0] + R[3 * i + 1] * v[1] + R[3 * i + 2] * v[2];
}

/* Sites per nm^3 of the lattices as ptreg_motif_lattice lays them out. */
static double density(ptreg_lattice l, double a)
{
    switch (l) {
    case PTREG_LATTICE_FCC: return 4.0 / (a * a * a);
    case PTREG_LATTICE_BCC: return 2.0 / (a * a * a);
    case PTREG_LATTICE_HCP: return sqrt(2.0) / (a * a * a);
    default: return 1.0 / (a * a * a);
    }
}

static void test_defaults(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    CHECK(o.lattice == PTREG_LATTICE_FCC && o.a == 0.405 && o.grains == 8 && o.efficiency == 0.5);
    CHECK(o.box[0] == 12 && o.box[1] == 12 && o.box[2] == 12 && o.noise == 0.05 && o.noise_depth < 0);
    ptreg_apt_synth s;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_OK);
    const double sites = 12.0 * 12.0 * 12.0 * 4.0 / (0.405 * 0.405 * 0.405);
    CHECK_MSG(fabs((double)s.sites / sites - 1) < 0.02, "%zu sites, %.0f expected", s.sites, sites);
    CHECK_MSG(fabs((double)s.n / (0.5 * sites) - 1) < 0.03, "%zu atoms, %.0f expected", s.n, 0.5 * sites);
    CHECK(s.grains == 8 && s.solutes == 0);
    size_t count[8] = {0}, total = 0;
    int labels_ok = 1, mq_ok = 1, inside = 1;
    for (size_t i = 0; i < s.n; i++) {
        if (s.grain[i] >= 8) {
            labels_ok = 0;
            continue;
        }
        count[s.grain[i]]++;
        mq_ok &= s.mq[i] == 27.0f;
        for (int k = 0; k < 3; k++)
            inside &= s.xyz[3 * i + k] > -0.5f && s.xyz[3 * i + k] < 12.5f;
    }
    CHECK(labels_ok && mq_ok && inside);
    for (int g = 0; g < 8; g++) {
        CHECK_MSG(count[g] > 0 && count[g] == s.grain_atoms[g], "grain %d: %zu atoms, %zu reported", g, count[g],
                  s.grain_atoms[g]);
        total += count[g];
        const double *q = s.orientation + 4 * g;
        CHECK_NEAR(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1.0, 1e-12);
        CHECK(q[0] >= 0);
        for (int k = 0; k < 3; k++)
            CHECK(s.seed[3 * g + k] >= 0 && s.seed[3 * g + k] < 12);
    }
    CHECK(total == s.n);
    ptreg_apt_synth_free(&s);
    CHECK(s.n == 0 && s.xyz == NULL);
}

/* With no noise and every atom detected: atoms well inside a grain (2 a
 * from any other grain's atom and from the box's faces) have their first
 * shell at the lattice's distance, and the truth rotation takes the shell
 * (relative to the atom) onto ptreg_motif_lattice's first shell. */
static void test_lattice(ptreg_lattice lattice, double a)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.lattice = lattice;
    o.a = a;
    o.box[0] = 4.5, o.box[1] = 4.0, o.box[2] = 3.5;
    o.grains = 3;
    o.efficiency = 1;
    o.noise = 0;
    o.seed = 11;
    ptreg_apt_synth s;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_OK);
    CHECK(s.n == s.sites);
    size_t shells[2];
    CHECK(ptreg_lattice_shells(lattice, shells, 2) == 2);
    const size_t k = shells[0];
    float motif[3 * 12];
    CHECK(k <= 12 && ptreg_motif_lattice(lattice, a, k, motif, &err) == PTREG_OK);
    const double nn = sqrt((double)motif[0] * motif[0] + (double)motif[1] * motif[1] + (double)motif[2] * motif[2]);
    const double expect_nn = lattice == PTREG_LATTICE_FCC   ? a / sqrt(2.0)
                             : lattice == PTREG_LATTICE_BCC ? a * sqrt(3.0) / 2.0
                                                            : a;
    CHECK_NEAR(nn, expect_nn, 1e-6);
    size_t tested = 0, bad_nn = 0, bad_shell = 0, bad_motif = 0, turned = 0;
    double worst = 0;
    for (size_t i = 0; i < s.n; i++) {
        const float *p = s.xyz + 3 * i;
        int interior = 1;
        for (int c = 0; c < 3; c++)
            interior &= p[c] > 2 * a && p[c] < o.box[c] - 2 * a;
        if (!interior)
            continue;
        double other = INFINITY, nearest = INFINITY;
        size_t shell[32], ns = 0;
        for (size_t j = 0; j < s.n; j++) {
            if (j == i)
                continue;
            const double d2 = dist2f(p, s.xyz + 3 * j);
            if (s.grain[j] != s.grain[i]) {
                other = check_least(other, d2);
                continue;
            }
            nearest = check_least(nearest, d2);
            if (d2 < 1.1 * 1.1 * expect_nn * expect_nn && ns < 32)
                shell[ns++] = j;
        }
        if (other < 4 * a * a)
            continue;
        tested++;
        bad_nn += !(fabs(sqrt(nearest) - expect_nn) <= 1e-4);
        if (ns != k) {
            bad_shell++;
            continue;
        }
        double R[9];
        ptreg_quaternion_to_matrix(s.orientation + 4 * s.grain[i], R);
        /* hcp: the second atom of the basis sees the motif turned 180
         * degrees about c (x, y -> -x, -y) */
        int matched = 0;
        for (int turn = 0; turn < (lattice == PTREG_LATTICE_HCP ? 2 : 1) && !matched; turn++) {
            int used[12] = {0}, off = 0;
            for (size_t m = 0; m < ns; m++) {
                const float *q = s.xyz + 3 * shell[m];
                const double d[3] = {(double)q[0] - p[0], (double)q[1] - p[1], (double)q[2] - p[2]};
                double r[3];
                rotate(R, d, r);
                if (turn)
                    r[0] = -r[0], r[1] = -r[1];
                size_t hit = k;
                double best = INFINITY;
                for (size_t t = 0; t < k; t++) {
                    const double e = sqrt((r[0] - motif[3 * t]) * (r[0] - motif[3 * t]) +
                                          (r[1] - motif[3 * t + 1]) * (r[1] - motif[3 * t + 1]) +
                                          (r[2] - motif[3 * t + 2]) * (r[2] - motif[3 * t + 2]));
                    if (e < best)
                        best = e, hit = t;
                }
                if (!(best <= 1e-4) || used[hit])
                    off++;
                else
                    used[hit] = 1, worst = check_worse(worst, best);
            }
            if (!off)
                matched = 1, turned += turn;
        }
        bad_motif += !matched;
    }
    if (lattice == PTREG_LATTICE_HCP)
        CHECK_MSG(turned > tested / 4 && turned < 3 * tested / 4, "hcp: %zu of %zu atoms turned", turned, tested);
    else
        CHECK(turned == 0);
    CHECK_MSG(tested > 50, "%s: %zu interior atoms", ptreg_lattice_name(lattice), tested);
    CHECK_MSG(bad_nn == 0 && bad_shell == 0 && bad_motif == 0,
              "%s: of %zu atoms, %zu with a wrong nearest distance, %zu a wrong shell count, %zu off the motif "
              "(worst match %.3g nm)",
              ptreg_lattice_name(lattice), tested, bad_nn, bad_shell, bad_motif, worst);
    ptreg_apt_synth_free(&s);
}

/* Every lattice site in the box made once, by the grain of the nearest
 * seed: counted by brute force over each grain's lattice. */
static void test_sites_once(ptreg_lattice lattice)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.lattice = lattice;
    o.box[0] = 3.0, o.box[1] = 5.0, o.box[2] = 2.5;
    o.grains = 5;
    o.efficiency = 1;
    o.noise = 0;
    o.seed = 5;
    ptreg_apt_synth s;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_OK);
    /* the same lattice: the motif's 256 nearest points span it; take the
     * primitive steps from them by brute force over a large block */
    const double a = o.a;
    double basis[4][3] = {{0}}, A[3][3] = {{0}};
    int nb = 1;
    if (lattice == PTREG_LATTICE_HCP) {
        const double cz = sqrt(8.0 / 3.0);
        const double A_[3][3] = {{a, 0, 0}, {0.5 * a, sqrt(3.0) / 2 * a, 0}, {0, 0, cz * a}};
        memcpy(A, A_, sizeof A);
        nb = 2;
        basis[1][0] = 0.5 * a, basis[1][1] = a * sqrt(3.0) / 6, basis[1][2] = cz * a / 2;
    } else {
        A[0][0] = A[1][1] = A[2][2] = a;
        if (lattice == PTREG_LATTICE_FCC) {
            nb = 4;
            const double b_[4][3] = {{0, 0, 0}, {0, .5 * a, .5 * a}, {.5 * a, 0, .5 * a}, {.5 * a, .5 * a, 0}};
            memcpy(basis, b_, sizeof basis);
        } else if (lattice == PTREG_LATTICE_BCC) {
            nb = 2;
            basis[1][0] = basis[1][1] = basis[1][2] = 0.5 * a;
        }
    }
    size_t expect_total = 0;
    const double reach = sqrt(3.0 * 5.0 * 5.0);
    const int N = (int)(reach / (0.8 * a)) + 2;
    for (size_t g = 0; g < s.grains; g++) {
        double R[9], Rt[9];
        ptreg_quaternion_to_matrix(s.orientation + 4 * g, Rt); /* the truth: sample -> crystal */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                R[3 * i + j] = Rt[3 * j + i];
        const double *seed = s.seed + 3 * g;
        size_t count = 0;
        for (int i = -N; i <= N; i++)
            for (int j = -N; j <= N; j++)
                for (int k = -N; k <= N; k++)
                    for (int b = 0; b < nb; b++) {
                        double c[3], x[3];
                        for (int d = 0; d < 3; d++)
                            c[d] = i * A[0][d] + j * A[1][d] + k * A[2][d] + basis[b][d];
                        rotate(R, c, x);
                        int in = 1;
                        for (int d = 0; d < 3; d++) {
                            x[d] += seed[d];
                            in &= x[d] >= 0 && x[d] < o.box[d];
                        }
                        if (!in)
                            continue;
                        double dg = 0;
                        for (int d = 0; d < 3; d++)
                            dg += (x[d] - seed[d]) * (x[d] - seed[d]);
                        int mine = 1;
                        for (size_t h = 0; h < s.grains && mine; h++) {
                            double dh = 0;
                            for (int d = 0; d < 3; d++)
                                dh += (x[d] - s.seed[3 * h + d]) * (x[d] - s.seed[3 * h + d]);
                            mine = h == g || dh > dg;
                        }
                        count += (size_t)mine;
                    }
        CHECK_MSG(count == s.grain_atoms[g], "%s grain %zu: %zu sites by brute force, %zu made",
                  ptreg_lattice_name(lattice), g, count, s.grain_atoms[g]);
        expect_total += count;
    }
    CHECK(expect_total == s.n);
    /* each atom's grain is its nearest seed (float positions: up to rounding) */
    size_t wrong = 0;
    for (size_t i = 0; i < s.n; i++) {
        double best = INFINITY, mine = 0;
        for (size_t h = 0; h < s.grains; h++) {
            double d = 0;
            for (int c = 0; c < 3; c++)
                d += ((double)s.xyz[3 * i + c] - s.seed[3 * h + c]) * ((double)s.xyz[3 * i + c] - s.seed[3 * h + c]);
            best = check_least(best, d);
            if (h == s.grain[i])
                mine = d;
        }
        wrong += !(mine <= best + 1e-5);
    }
    CHECK(wrong == 0);
    ptreg_apt_synth_free(&s);
}

/* Same seed, noise or not: the same atoms in the same order, so the
 * displacements are the noise: sigma along x and y, the depth sigma along
 * z. */
static void test_noise(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.seed = 7;
    o.noise = 0;
    ptreg_apt_synth clean, noisy, deep;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &clean, &err) == PTREG_OK);
    o.noise = 0.05;
    CHECK(ptreg_apt_synth_polycrystal(&o, &noisy, &err) == PTREG_OK);
    o.noise_depth = 0.1;
    o.solute = 0.2;
    CHECK(ptreg_apt_synth_polycrystal(&o, &deep, &err) == PTREG_OK);
    CHECK(clean.n == noisy.n && clean.n == deep.n && clean.n > 10000);
    CHECK(!memcmp(clean.grain, noisy.grain, clean.n * sizeof *clean.grain));
    CHECK(!memcmp(clean.grain, deep.grain, clean.n * sizeof *clean.grain));
    const ptreg_apt_synth *runs[2] = {&noisy, &deep};
    const double want[2][3] = {{0.05, 0.05, 0.025}, {0.05, 0.05, 0.1}};
    for (int r = 0; r < 2; r++) {
        double sum[3] = {0}, sq[3] = {0};
        for (size_t i = 0; i < clean.n; i++)
            for (int c = 0; c < 3; c++) {
                const double d = (double)runs[r]->xyz[3 * i + c] - clean.xyz[3 * i + c];
                sum[c] += d, sq[c] += d * d;
            }
        for (int c = 0; c < 3; c++) {
            const double mean = sum[c] / clean.n, sd = sqrt(sq[c] / clean.n - mean * mean);
            CHECK_MSG(fabs(mean) < 0.01 * want[r][c] + 1e-3 && fabs(sd / want[r][c] - 1) < 0.03,
                      "run %d axis %c: mean %.4g, sigma %.4g (want %.4g)", r, "xyz"[c], mean, sd, want[r][c]);
        }
    }
    /* solutes: about the fraction asked for, marked by their m/q */
    size_t solutes = 0, other = 0;
    for (size_t i = 0; i < deep.n; i++) {
        solutes += deep.mq[i] == 24.0f;
        other += deep.mq[i] != 24.0f && deep.mq[i] != 27.0f;
    }
    CHECK(solutes == deep.solutes && other == 0);
    CHECK_MSG(fabs((double)solutes / deep.n - 0.2) < 0.01, "%zu solutes of %zu", solutes, deep.n);
    ptreg_apt_synth_free(&clean);
    ptreg_apt_synth_free(&noisy);
    ptreg_apt_synth_free(&deep);
}

static void test_determinism(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.box[0] = 8, o.box[1] = 6, o.box[2] = 10;
    o.grains = 5;
    o.solute = 0.05;
    o.seed = 42;
    ptreg_apt_synth a, b, c;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &a, &err) == PTREG_OK);
    CHECK(ptreg_apt_synth_polycrystal(&o, &b, &err) == PTREG_OK);
    o.seed = 43;
    CHECK(ptreg_apt_synth_polycrystal(&o, &c, &err) == PTREG_OK);
    CHECK(a.n == b.n && a.sites == b.sites && a.solutes == b.solutes);
    CHECK(!memcmp(a.xyz, b.xyz, 3 * a.n * sizeof(float)) && !memcmp(a.mq, b.mq, a.n * sizeof(float)));
    CHECK(!memcmp(a.grain, b.grain, a.n * sizeof(uint32_t)));
    CHECK(!memcmp(a.orientation, b.orientation, 4 * a.grains * sizeof(double)));
    CHECK(!memcmp(a.seed, b.seed, 3 * a.grains * sizeof(double)));
    CHECK(memcmp(a.orientation, c.orientation, 4 * a.grains * sizeof(double)) != 0);
    /* a lower efficiency keeps a subset: the detection draws are per site */
    o.seed = 42;
    o.efficiency = 1;
    ptreg_apt_synth all;
    CHECK(ptreg_apt_synth_polycrystal(&o, &all, &err) == PTREG_OK);
    CHECK(all.n == all.sites && all.sites == a.sites);
    const double expect = 8.0 * 6.0 * 10.0 * density(PTREG_LATTICE_FCC, 0.405);
    CHECK_MSG(fabs((double)all.sites / expect - 1) < 0.02, "%zu sites, %.0f expected", all.sites, expect);
    ptreg_apt_synth_free(&a);
    ptreg_apt_synth_free(&b);
    ptreg_apt_synth_free(&c);
    ptreg_apt_synth_free(&all);
}

/* Many grains: the orientations are uniform on SO(3) (E[R] = 0), the
 * counts follow the other lattices' densities. */
static void test_many_grains(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.lattice = PTREG_LATTICE_BCC;
    o.a = 0.2866; /* iron */
    o.grains = 2000;
    o.box[0] = 10, o.box[1] = 10, o.box[2] = 10;
    ptreg_apt_synth s;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_OK);
    const double sites = 1000 * density(PTREG_LATTICE_BCC, o.a);
    CHECK_MSG(fabs((double)s.sites / sites - 1) < 0.02, "%zu bcc sites, %.0f expected", s.sites, sites);
    double mean[9] = {0};
    for (size_t g = 0; g < s.grains; g++) {
        double R[9];
        ptreg_quaternion_to_matrix(s.orientation + 4 * g, R);
        for (int k = 0; k < 9; k++)
            mean[k] += R[k] / (double)s.grains;
    }
    for (int k = 0; k < 9; k++)
        CHECK_MSG(fabs(mean[k]) < 0.06, "E[R]_%d = %.4f", k, mean[k]);
    int labels_ok = 1;
    for (size_t i = 0; i < s.n; i++)
        labels_ok &= s.grain[i] < 2000;
    CHECK(labels_ok);
    ptreg_apt_synth_free(&s);
}


/* The truth is what ptreg_orientations_compute finds: atoms 0.8 nm inside
 * their grain (from its cell's faces and the box's), noiseless, in grains
 * whose orientation is within 38 degrees of the motif's frame (EM-ICP from
 * the identity misses orientations beyond about 45 degrees), up to the
 * cube's symmetry; float quaternions resolve about 0.02 degrees. */
static void test_orientation_convention(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth_options_default(&o);
    o.box[0] = o.box[1] = o.box[2] = 6;
    o.grains = 4;
    o.efficiency = 1;
    o.noise = 0;
    o.seed = 4; /* grains 20, 35, 37 and 20 degrees from the motif's frame */
    ptreg_apt_synth s;
    ptreg_error err;
    CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_OK);
    float motif[36];
    CHECK(ptreg_motif_lattice(PTREG_LATTICE_FCC, o.a, 12, motif, &err) == PTREG_OK);
    ptreg_orientation_options oo;
    ptreg_orientation_options_default(&oo);
    oo.motif = motif;
    oo.motif_points = 12;
    ptreg_orientations r;
    CHECK(ptreg_orientations_compute(s.xyz, s.n, NULL, &oo, &r, &err) == PTREG_OK);
    const double identity[4] = {1, 0, 0, 0};
    size_t tested = 0, wrong = 0, grains = 0;
    for (size_t g = 0; g < s.grains; g++) {
        const double *truth = s.orientation + 4 * g;
        if (ptreg_misorientation_deg(identity, truth, r.symmetry, r.symmetry_count) > 38)
            continue;
        grains++;
        for (size_t i = 0; i < s.n; i++) {
            if (s.grain[i] != g)
                continue;
            const float *p = s.xyz + 3 * i;
            double inside = INFINITY;
            for (int c = 0; c < 3; c++)
                inside = check_least(inside, check_least(p[c], o.box[c] - p[c]));
            for (size_t h = 0; h < s.grains; h++) {
                if (h == g)
                    continue;
                const double *a = s.seed + 3 * g, *b = s.seed + 3 * h;
                double da = 0, db = 0, ab = 0;
                for (int c = 0; c < 3; c++) {
                    da += (p[c] - a[c]) * (p[c] - a[c]);
                    db += (p[c] - b[c]) * (p[c] - b[c]);
                    ab += (b[c] - a[c]) * (b[c] - a[c]);
                }
                inside = check_least(inside, (db - da) / (2 * sqrt(ab))); /* distance to the bisector */
            }
            if (inside < 0.8)
                continue;
            tested++;
            const double q[4] = {r.q[4 * i], r.q[4 * i + 1], r.q[4 * i + 2], r.q[4 * i + 3]};
            wrong += !(r.flag[i] == PTREG_ORIENT_OK &&
                       ptreg_misorientation_deg(q, truth, r.symmetry, r.symmetry_count) < 0.1);
        }
    }
    CHECK_MSG(grains == 4 && tested > 500 && wrong == 0, "%zu grains, %zu atoms, %zu not at their truth", grains,
              tested, wrong);
    ptreg_orientations_free(&r);
    ptreg_apt_synth_free(&s);
}

static void test_errors(void)
{
    ptreg_apt_synth_options o;
    ptreg_apt_synth s;
    ptreg_error err;
#define EXPECT_ARG(setup, text)                                                             \
    do {                                                                                    \
        ptreg_apt_synth_options_default(&o);                                                \
        setup;                                                                              \
        CHECK(ptreg_apt_synth_polycrystal(&o, &s, &err) == PTREG_ERR_ARG);                  \
        CHECK_MSG(strstr(err.message, text) != NULL, "'%s' lacks '%s'", err.message, text); \
        CHECK(s.n == 0 && s.xyz == NULL && s.orientation == NULL);                          \
    } while (0)
    EXPECT_ARG(o.efficiency = 0, "efficiency 0 must be in (0, 1]");
    EXPECT_ARG(o.efficiency = 1.5, "efficiency 1.5");
    EXPECT_ARG(o.efficiency = NAN, "efficiency nan");
    EXPECT_ARG(o.noise = -0.1, "noise sigma -0.1");
    EXPECT_ARG(o.noise_depth = INFINITY, "depth noise");
    EXPECT_ARG(o.a = 0, "lattice constant 0");
    EXPECT_ARG(o.grains = 0, "0 grains");
    EXPECT_ARG(o.grains = PTREG_APT_SYNTH_MAX_GRAINS + 1, "take 1 to");
    EXPECT_ARG(o.box[1] = -2, "box extent y = -2");
    EXPECT_ARG(o.solute = 1.5, "solute fraction 1.5");
    EXPECT_ARG(o.lattice = (ptreg_lattice)9, "unknown lattice");
    /* 330 nm: 2.16e9 sites, all detected: over 2^31 atoms */
    EXPECT_ARG((o.box[0] = o.box[1] = o.box[2] = 330, o.efficiency = 1), "2.164e+09 atoms at efficiency 1");
    EXPECT_ARG((o.box[0] = o.box[1] = o.box[2] = 1000, o.efficiency = 0.01), "6.021e+10 lattice sites");
    CHECK(ptreg_apt_synth_polycrystal(NULL, &s, &err) == PTREG_ERR_ARG);
#undef EXPECT_ARG
}

int main(void)
{
    /* the motif's hcp: 12 nearest at a, then 6 (ideal c/a) */
    size_t shells[2];
    CHECK(ptreg_lattice_shells(PTREG_LATTICE_HCP, shells, 2) == 2 && shells[0] == 12 && shells[1] == 18);
    test_defaults();
    test_lattice(PTREG_LATTICE_FCC, 0.405);
    test_lattice(PTREG_LATTICE_BCC, 0.2866);
    test_lattice(PTREG_LATTICE_HCP, 0.32);
    test_lattice(PTREG_LATTICE_SC, 0.3);
    test_sites_once(PTREG_LATTICE_FCC);
    test_sites_once(PTREG_LATTICE_HCP);
    test_noise();
    test_determinism();
    test_many_grains();
    test_orientation_convention();
    test_errors();
    return check_exit();
}
