/* A synthetic atom-probe polycrystal with its grains' orientations
 * (synth_apt.h): Voronoi grains of rotated lattices, detector efficiency and
 * anisotropic noise.
 *
 * The box is cut into bins. For each bin the grains whose cells can reach
 * it are found (the candidates: any seed that is the nearest of some point
 * of the bin lies within d0 + 2 hd of the bin's centre, d0 the nearest
 * seed's distance from the centre, hd the bin's half diagonal), and each
 * candidate's lattice sites over the bin are visited. A site is kept by the
 * bin that holds it (its bin is computed from its position, so exactly one
 * bin keeps it) when its grain is the nearest seed among the candidates.
 * A site's position is computed the same way from every bin that visits it,
 * so the tests give the same answer each time. */
#include "ptreg/synth_apt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "apt/testing.h"
#include "core/numeric.h"

#define PI 3.14159265358979323846

/* Draws come from three streams of the seed: the grains, the detection of
 * each site (one uniform per site, so the atoms kept at a lower efficiency
 * are a subset of those kept at a higher one), and each atom's noise and
 * species (always four draws, so runs that differ only in noise or solute
 * keep the same atoms in the same order). */
#define STREAM_DETECT 0x6465746563740001ull
#define STREAM_ATOM 0x61746f6d73000002ull

#define SITES_PER_BIN 2048.0

void ptreg_apt_synth_options_default(ptreg_apt_synth_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->lattice = PTREG_LATTICE_FCC;
    opt->a = 0.405;
    opt->box[0] = opt->box[1] = opt->box[2] = 12.0;
    opt->grains = 8;
    opt->efficiency = 0.5;
    opt->noise = 0.05;
    opt->noise_depth = -1.0;
    opt->solute = 0.0;
    opt->mq = 27.0;
    opt->mq_solute = 24.0;
    opt->seed = 1;
}

void ptreg_apt_synth_init(ptreg_apt_synth *s) { memset(s, 0, sizeof *s); }

void ptreg_apt_synth_free(ptreg_apt_synth *s)
{
    if (!s)
        return;
    free(s->xyz);
    free(s->mq);
    free(s->grain);
    free(s->orientation);
    free(s->seed);
    free(s->grain_atoms);
    ptreg_apt_synth_init(s);
}

/* A lattice as primitive vectors (the columns of A, nm) and a basis: the
 * crystal axes of ptreg_motif_lattice. */
typedef struct lattice_cell {
    double A[9], Ainv[9];
    double basis[4][3];
    int nbasis;
    double density; /* sites per nm^3 */
} lattice_cell;

static void lattice_cell_make(ptreg_lattice l, double a, lattice_cell *c)
{
    memset(c, 0, sizeof *c);
    if (l == PTREG_LATTICE_HCP) {
        /* a1 = a (1, 0, 0), a2 = a (1/2, sqrt3/2, 0), a3 = a (0, 0, sqrt(8/3));
         * the second atom at (1/3, 1/3, 1/2) in those axes. */
        const double s3 = sqrt(3.0) / 2.0, cz = sqrt(8.0 / 3.0);
        const double A[9] = {a, 0.5 * a, 0, 0, s3 * a, 0, 0, 0, cz * a};
        memcpy(c->A, A, sizeof A);
        c->nbasis = 2;
        c->basis[1][0] = a * (1.0 / 3.0 + 0.5 / 3.0);
        c->basis[1][1] = a * s3 / 3.0;
        c->basis[1][2] = a * cz / 2.0;
    } else {
        c->A[0] = c->A[4] = c->A[8] = a;
        static const double fcc[4][3] = {{0, 0, 0}, {0, 0.5, 0.5}, {0.5, 0, 0.5}, {0.5, 0.5, 0}};
        static const double bcc[2][3] = {{0, 0, 0}, {0.5, 0.5, 0.5}};
        const double(*b)[3] = l == PTREG_LATTICE_FCC ? fcc : bcc;
        c->nbasis = l == PTREG_LATTICE_FCC ? 4 : l == PTREG_LATTICE_BCC ? 2 : 1;
        for (int i = 0; i < c->nbasis; i++)
            for (int k = 0; k < 3; k++)
                c->basis[i][k] = a * b[i][k];
    }
    /* A is upper triangular. */
    const double *A = c->A;
    double *I = c->Ainv;
    memset(I, 0, sizeof c->Ainv);
    I[0] = 1.0 / A[0];
    I[4] = 1.0 / A[4];
    I[8] = 1.0 / A[8];
    I[1] = -A[1] * I[4] * I[0];
    I[5] = -A[5] * I[8] * I[4];
    I[2] = (A[1] * A[5] - A[2] * A[4]) * I[0] * I[4] * I[8];
    c->density = c->nbasis / (A[0] * A[4] * A[8]);
}

/* Shoemake's uniform random rotation, as a unit quaternion w x y z. */
static void random_rotation(ptreg_rng *rng, double q[4])
{
    const double u1 = ptreg_rng_uniform(rng), u2 = ptreg_rng_uniform(rng), u3 = ptreg_rng_uniform(rng);
    const double r1 = sqrt(1.0 - u1), r2 = sqrt(u1);
    q[0] = r2 * cos(2.0 * PI * u3);
    q[1] = r1 * sin(2.0 * PI * u2);
    q[2] = r1 * cos(2.0 * PI * u2);
    q[3] = r2 * sin(2.0 * PI * u3);
}

typedef struct grain {
    double seed[3];
    double R[9];         /* crystal -> sample */
    double M[9];         /* R A: lattice indices -> sample offsets */
    double origin[4][3]; /* seed + R basis[b] */
} grain;

/* The atoms as they are made. */
typedef struct builder {
    size_t n, cap;
    float *xyz, *mq;
    uint32_t *grain;
} builder;

static int builder_grow(builder *b)
{
    size_t cap = b->cap + b->cap / 2 + 1024;
    float *xyz = realloc(b->xyz, 3 * cap * sizeof *xyz);
    if (xyz)
        b->xyz = xyz;
    float *mq = realloc(b->mq, cap * sizeof *mq);
    if (mq)
        b->mq = mq;
    uint32_t *g = realloc(b->grain, cap * sizeof *g);
    if (g)
        b->grain = g;
    if (!xyz || !mq || !g)
        return -1;
    b->cap = cap;
    return 0;
}

typedef struct run {
    const ptreg_apt_synth_options *opt;
    lattice_cell cell;
    grain *grains;
    size_t G;
    double box[3], width[3]; /* bin widths */
    long nb[3];              /* bins per axis */
    double noise_xy, noise_z;
    ptreg_rng detect, atom;
    builder out;
    size_t sites, solutes;
    size_t *grain_atoms;
} run;

static long bin_of(const run *r, int axis, double x)
{
    long b = (long)floor(x / r->width[axis]);
    return b < 0 ? 0 : b >= r->nb[axis] ? r->nb[axis] - 1 : b;
}

/* Whether grain g is the nearest of the candidates to x (ties to the
 * lower index). */
static int owns(const run *r, const uint32_t *cand, size_t nc, uint32_t g, const double x[3])
{
    const double *s = r->grains[g].seed;
    const double dg = (x[0] - s[0]) * (x[0] - s[0]) + (x[1] - s[1]) * (x[1] - s[1]) + (x[2] - s[2]) * (x[2] - s[2]);
    for (size_t c = 0; c < nc; c++) {
        const uint32_t h = cand[c];
        if (h == g)
            continue;
        const double *t = r->grains[h].seed;
        const double dh = (x[0] - t[0]) * (x[0] - t[0]) + (x[1] - t[1]) * (x[1] - t[1]) + (x[2] - t[2]) * (x[2] - t[2]);
        if (dh < dg || (dh == dg && h < g))
            return 0;
    }
    return 1;
}

static ptreg_status add_site(run *r, uint32_t g, const double x[3], ptreg_error *err)
{
    r->sites++;
    if (!(ptreg_rng_uniform(&r->detect) < r->opt->efficiency))
        return PTREG_OK;
    const double n0 = ptreg_rng_normal(&r->atom), n1 = ptreg_rng_normal(&r->atom), n2 = ptreg_rng_normal(&r->atom);
    const int solute = ptreg_rng_uniform(&r->atom) < r->opt->solute;
    builder *b = &r->out;
    if (b->n == b->cap && builder_grow(b))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "apt synth: out of memory at %zu atoms", b->n);
    float *p = b->xyz + 3 * b->n;
    p[0] = (float)(x[0] + r->noise_xy * n0);
    p[1] = (float)(x[1] + r->noise_xy * n1);
    p[2] = (float)(x[2] + r->noise_z * n2);
    b->mq[b->n] = (float)(solute ? r->opt->mq_solute : r->opt->mq);
    b->grain[b->n] = g;
    b->n++;
    r->solutes += (size_t)solute;
    r->grain_atoms[g]++;
    return PTREG_OK;
}

/* Grain g's sites in bin (bx, by, bz). */
static ptreg_status visit(run *r, const long bin[3], const uint32_t *cand, size_t nc, uint32_t g, ptreg_error *err)
{
    const grain *gr = &r->grains[g];
    const lattice_cell *c = &r->cell;
    /* The bin (with a margin for rounding) in lattice coordinates about the
     * seed: f = Ainv R^T (p - seed) over the corners. */
    const double margin = 1e-9 * (r->box[0] + r->box[1] + r->box[2] + r->opt->a);
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = bin[k] * r->width[k] - margin;
        hi[k] = (bin[k] + 1) * r->width[k] + margin;
    }
    double flo[3] = {INFINITY, INFINITY, INFINITY}, fhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int corner = 0; corner < 8; corner++) {
        const double p[3] = {(corner & 1 ? hi[0] : lo[0]) - gr->seed[0], (corner & 2 ? hi[1] : lo[1]) - gr->seed[1],
                             (corner & 4 ? hi[2] : lo[2]) - gr->seed[2]};
        double s[3], f[3];
        for (int k = 0; k < 3; k++)
            s[k] = gr->R[k] * p[0] + gr->R[3 + k] * p[1] + gr->R[6 + k] * p[2];
        for (int k = 0; k < 3; k++) {
            f[k] = c->Ainv[3 * k] * s[0] + c->Ainv[3 * k + 1] * s[1] + c->Ainv[3 * k + 2] * s[2];
            flo[k] = fmin(flo[k], f[k]);
            fhi[k] = fmax(fhi[k], f[k]);
        }
    }
    for (int b = 0; b < c->nbasis; b++) {
        const double *o = gr->origin[b];
        double fb[3];
        for (int k = 0; k < 3; k++)
            fb[k] = c->Ainv[3 * k] * c->basis[b][0] + c->Ainv[3 * k + 1] * c->basis[b][1] +
                    c->Ainv[3 * k + 2] * c->basis[b][2];
        long i0[3], i1[3];
        for (int k = 0; k < 3; k++) {
            i0[k] = (long)ceil(flo[k] - fb[k]) - 1;
            i1[k] = (long)floor(fhi[k] - fb[k]) + 1;
        }
        const double *M = gr->M;
        for (long k = i0[2]; k <= i1[2]; k++)
            for (long j = i0[1]; j <= i1[1]; j++)
                for (long i = i0[0]; i <= i1[0]; i++) {
                    const double di = (double)i, dj = (double)j, dk = (double)k;
                    const double x[3] = {o[0] + (M[0] * di + M[1] * dj + M[2] * dk),
                                         o[1] + (M[3] * di + M[4] * dj + M[5] * dk),
                                         o[2] + (M[6] * di + M[7] * dj + M[8] * dk)};
                    if (!(x[0] >= 0 && x[0] < r->box[0] && x[1] >= 0 && x[1] < r->box[1] && x[2] >= 0 &&
                          x[2] < r->box[2]))
                        continue;
                    if (bin_of(r, 0, x[0]) != bin[0] || bin_of(r, 1, x[1]) != bin[1] || bin_of(r, 2, x[2]) != bin[2])
                        continue;
                    if (!owns(r, cand, nc, g, x))
                        continue;
                    ptreg_status st = add_site(r, g, x, err);
                    if (st)
                        return st;
                }
    }
    return PTREG_OK;
}

static ptreg_status check_options(const ptreg_apt_synth_options *o, const lattice_cell *cell, ptreg_error *err)
{
    if ((unsigned)o->lattice > PTREG_LATTICE_SC)
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: unknown lattice %d", (int)o->lattice);
    if (!(o->a > 0) || !isfinite(o->a))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: lattice constant %g nm must be > 0", o->a);
    for (int k = 0; k < 3; k++)
        if (!(o->box[k] > 0) || !isfinite(o->box[k]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: box extent %c = %g nm must be > 0", "xyz"[k],
                                   o -> box[k]);
    if (o->grains < 1 || o->grains > PTREG_APT_SYNTH_MAX_GRAINS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: %zu grains: take 1 to %d", o->grains,
                               PTREG_APT_SYNTH_MAX_GRAINS);
    if (!(o->efficiency > 0 && o->efficiency <= 1))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: detection efficiency %g must be in (0, 1]",
                               o->efficiency);
    if (!(o->noise >= 0) || !isfinite(o->noise))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: noise sigma %g nm must be >= 0", o->noise);
    if (!isfinite(o->noise_depth))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: depth noise sigma %g nm must be finite", o->noise_depth);
    if (!(o->solute >= 0 && o->solute <= 1))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: solute fraction %g must be in [0, 1]", o->solute);
    if (!isfinite(o->mq) || !isfinite(o->mq_solute))
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: mass-to-charge %g / %g must be finite", o->mq,
                               o->mq_solute);
    const double volume = o->box[0] * o->box[1] * o->box[2];
    const double sites = volume * cell->density, atoms = o->efficiency * sites;
    if (!(sites <= PTREG_APT_SYNTH_MAX_SITES) || !(atoms <= PTREG_APT_SYNTH_MAX_ATOMS))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "apt synth: a %g x %g x %g nm box of %s (a = %g nm) holds %.4g lattice sites, "
                               "%.4g atoms at efficiency %g: the limits are 2^33 sites and 2^31 atoms",
                               o->box[0], o->box[1], o->box[2], ptreg_lattice_name(o->lattice), o->a, sites, atoms,
                               o->efficiency);
    return PTREG_OK;
}

static void make_grains(run *r, ptreg_apt_synth *out)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, r->opt->seed);
    for (size_t g = 0; g < r->G; g++) {
        grain *gr = &r->grains[g];
        for (int k = 0; k < 3; k++)
            gr->seed[k] = ptreg_rng_uniform(&rng) * r->box[k];
        /* A draw on the box's edge belongs outside [0, X): pull it in. */
        for (int k = 0; k < 3; k++)
            if (gr->seed[k] >= r->box[k])
                gr->seed[k] = nextafter(r->box[k], 0.0);
        double q[4], Rt[9];
        random_rotation(&rng, q);
        ptreg_quaternion_to_matrix(q, gr->R);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                Rt[3 * i + j] = gr->R[3 * j + i];
                gr->M[3 * i + j] = gr->R[3 * i] * r->cell.A[j] + gr->R[3 * i + 1] * r->cell.A[3 + j] +
                                   gr->R[3 * i + 2] * r->cell.A[6 + j];
            }
        for (int b = 0; b < r->cell.nbasis; b++)
            for (int i = 0; i < 3; i++)
                gr->origin[b][i] = gr->seed[i] + gr->R[3 * i] * r->cell.basis[b][0] +
                                   gr->R[3 * i + 1] * r->cell.basis[b][1] + gr->R[3 * i + 2] * r->cell.basis[b][2];
        ptreg_matrix_to_quaternion(Rt, out->orientation + 4 * g);
        memcpy(out->seed + 3 * g, gr->seed, sizeof gr->seed);
    }
}

/* Bins of about SITES_PER_BIN sites, at most half a grain wide, at least
 * two lattice constants. */
static void make_bins(run *r)
{
    const double volume = r->box[0] * r->box[1] * r->box[2];
    double h = cbrt(SITES_PER_BIN / r->cell.density);
    h = fmin(h, 0.5 * cbrt(volume / (double)r->G));
    h = fmax(h, 2.0 * r->opt->a);
    for (int k = 0; k < 3; k++) {
        double nb = ceil(r->box[k] / h);
        r->nb[k] = nb < 1 ? 1 : (long)nb;
        r->width[k] = r->box[k] / (double)r->nb[k];
    }
}

ptreg_status ptreg_apt_synth_polycrystal(const ptreg_apt_synth_options *opt, ptreg_apt_synth *out, ptreg_error *err)
{
    if (!opt || !out)
        return ptreg_error_set(err, PTREG_ERR_ARG, "apt synth: no options or no output");
    ptreg_apt_synth_init(out);
    run r;
    memset(&r, 0, sizeof r);
    r.opt = opt;
    if ((unsigned)opt->lattice <= PTREG_LATTICE_SC && opt->a > 0 && isfinite(opt->a))
        lattice_cell_make(opt->lattice, opt->a, &r.cell);
    ptreg_status st = check_options(opt, &r.cell, err);
    if (st)
        return st;
    r.G = opt->grains;
    memcpy(r.box, opt->box, sizeof r.box);
    r.noise_xy = opt->noise;
    r.noise_z = opt->noise_depth < 0 ? 0.5 * opt->noise : opt->noise_depth;
    r.grains = calloc(r.G, sizeof *r.grains);
    r.grain_atoms = calloc(r.G, sizeof *r.grain_atoms);
    uint32_t *cand = malloc(r.G * sizeof *cand);
    out->orientation = malloc(4 * r.G * sizeof *out->orientation);
    out->seed = malloc(3 * r.G * sizeof *out->seed);
    if (!r.grains || !r.grain_atoms || !cand || !out->orientation || !out->seed) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "apt synth: out of memory for %zu grains", r.G);
        goto done;
    }
    make_grains(&r, out);
    make_bins(&r);
    ptreg_rng_seed(&r.detect, opt->seed ^ STREAM_DETECT);
    ptreg_rng_seed(&r.atom, opt->seed ^ STREAM_ATOM);
    {
        const double expected = opt->efficiency * r.box[0] * r.box[1] * r.box[2] * r.cell.density;
        r.out.cap = (size_t)(expected * 1.01) + 1024;
        r.out.xyz = malloc(3 * r.out.cap * sizeof *r.out.xyz);
        r.out.mq = malloc(r.out.cap * sizeof *r.out.mq);
        r.out.grain = malloc(r.out.cap * sizeof *r.out.grain);
        if (!r.out.xyz || !r.out.mq || !r.out.grain) {
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "apt synth: out of memory for %.4g atoms", expected);
            goto done;
        }
    }
    const double hd = 0.5 * sqrt(r.width[0] * r.width[0] + r.width[1] * r.width[1] + r.width[2] * r.width[2]);
    const double slack = 1e-9 * (r.box[0] + r.box[1] + r.box[2]);
    for (long bz = 0; bz < r.nb[2] && !st; bz++)
        for (long by = 0; by < r.nb[1] && !st; by++)
            for (long bx = 0; bx < r.nb[0] && !st; bx++) {
                const long bin[3] = {bx, by, bz};
                const double c[3] = {(bx + 0.5) * r.width[0], (by + 0.5) * r.width[1], (bz + 0.5) * r.width[2]};
                double d0 = INFINITY;
                for (size_t g = 0; g < r.G; g++) {
                    const double *s = r.grains[g].seed;
                    d0 = fmin(d0, sqrt((s[0] - c[0]) * (s[0] - c[0]) + (s[1] - c[1]) * (s[1] - c[1]) +
                                       (s[2] - c[2]) * (s[2] - c[2])));
                }
                const double reach = d0 + 2.0 * hd + slack;
                size_t nc = 0;
                for (size_t g = 0; g < r.G; g++) {
                    const double *s = r.grains[g].seed;
                    if (sqrt((s[0] - c[0]) * (s[0] - c[0]) + (s[1] - c[1]) * (s[1] - c[1]) +
                             (s[2] - c[2]) * (s[2] - c[2])) <= reach)
                        cand[nc++] = (uint32_t)g;
                }
                for (size_t i = 0; i < nc && !st; i++)
                    st = visit(&r, bin, cand, nc, cand[i], err);
            }
    if (st)
        goto done;
    out->n = r.out.n;
    out->xyz = r.out.xyz;
    out->mq = r.out.mq;
    out->grain = r.out.grain;
    r.out.xyz = r.out.mq = NULL;
    r.out.grain = NULL;
    out->grains = r.G;
    out->grain_atoms = r.grain_atoms;
    r.grain_atoms = NULL;
    out->sites = r.sites;
    out->solutes = r.solutes;
done:
    free(r.grains);
    free(r.grain_atoms);
    free(cand);
    free(r.out.xyz);
    free(r.out.mq);
    free(r.out.grain);
    if (st)
        ptreg_apt_synth_free(out);
    return st;
}
