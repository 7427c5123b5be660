/* Reference motifs (a lattice point's nearest lattice points), their
 * symmetry (the proper rotations that map a motif onto itself), and
 * orientations up to that symmetry: the fundamental-zone representative,
 * the misorientation, the inverse-pole-figure colour of cubic crystals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/motif.h"
#include "apt/testing.h"
#include "apt/orientation_impl.h"

static const char *const lattice_names[] = {"fcc", "bcc", "hcp", "sc"};

const char *ptreg_lattice_name(ptreg_lattice lattice)
{
    return (unsigned)lattice < 4 ? lattice_names[lattice] : "unknown";
}

int ptreg_lattice_parse(const char *name, ptreg_lattice *lattice)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, lattice_names[i])) {
            *lattice = (ptreg_lattice)i;
            return 0;
        }
    return -1;
}

/* ---- lattices ---- */

#define CELLS 4 /* lattice points from -CELLS .. CELLS cells: shells far beyond 64 points */

typedef struct site {
    double p[3], d2;
} site;

/* Whether lattice point (i, j, k) in half-cell units belongs to the
 * lattice (fcc: even sum; bcc: all even or all odd; sc: all even). */
static int cubic_member(ptreg_lattice l, int i, int j, int k)
{
    const int odd = (i & 1) + (j & 1) + (k & 1);
    switch (l) {
    case PTREG_LATTICE_FCC: return odd % 2 == 0;
    case PTREG_LATTICE_BCC: return odd == 0 || odd == 3;
    default: return odd == 0;
    }
}

/* Every lattice point near the origin except the origin itself. */
static size_t lattice_sites(ptreg_lattice l, double a, site *out)
{
    size_t n = 0;
    if (l == PTREG_LATTICE_HCP) {
        const double c = sqrt(8.0 / 3.0), s3 = sqrt(3.0) / 2.0;
        for (int i = -CELLS; i <= CELLS; i++)
            for (int j = -CELLS; j <= CELLS; j++)
                for (int k = -CELLS; k <= CELLS; k++)
                    for (int b = 0; b < 2; b++) {
                        /* a1 = (1, 0, 0), a2 = (1/2, sqrt3/2, 0) (60 degrees apart), basis 0
                         * and (1/3, 1/3, 1/2): the second layer over the triangles' centres */
                        const double u = i + (b ? 1.0 / 3.0 : 0.0), v = j + (b ? 1.0 / 3.0 : 0.0);
                        const double x = u + 0.5 * v, y = s3 * v, z = c * (k + (b ? 0.5 : 0.0));
                        if (i == 0 && j == 0 && k == 0 && b == 0)
                            continue;
                        out[n++] = (site){{a * x, a * y, a * z}, x * x + y * y + z * z};
                    }
        return n;
    }
    for (int i = -2 * CELLS; i <= 2 * CELLS; i++)
        for (int j = -2 * CELLS; j <= 2 * CELLS; j++)
            for (int k = -2 * CELLS; k <= 2 * CELLS; k++)
                if ((i || j || k) && cubic_member(l, i, j, k))
                    out[n++] = (site){{0.5 * a * i, 0.5 * a * j, 0.5 * a * k}, 0.25 * (i * i + j * j + k * k)};
    return n;
}

/* Nearest first; a shell in a fixed order: z, then y, then x. Distances
 * within 1e-9 (relative) are one shell. */
static int site_cmp(const void *pa, const void *pb)
{
    const site *a = pa, *b = pb;
    if (fabs(a->d2 - b->d2) > 1e-9 * (a->d2 + b->d2))
        return a->d2 < b->d2 ? -1 : 1;
    for (int k = 2; k >= 0; k--)
        if (a->p[k] != b->p[k])
            return a->p[k] < b->p[k] ? -1 : 1;
    return 0;
}

static site *sorted_sites(ptreg_lattice l, double a, size_t *count)
{
    const size_t cap = 2 * (size_t)(4 * CELLS + 1) * (4 * CELLS + 1) * (4 * CELLS + 1);
    site *s = malloc(cap * sizeof *s);
    if (!s)
        return NULL;
    *count = lattice_sites(l, a, s);
    qsort(s, *count, sizeof *s, site_cmp);
    return s;
}

ptreg_status ptreg_motif_lattice(ptreg_lattice lattice, double a, size_t k, float *xyz, ptreg_error *err)
{
    if ((unsigned)lattice > PTREG_LATTICE_SC)
        return ptreg_error_set(err, PTREG_ERR_ARG, "motif: unknown lattice %d", (int)lattice);
    if (!(a > 0) || !isfinite(a))
        return ptreg_error_set(err, PTREG_ERR_ARG, "motif: lattice constant %g must be > 0", a);
    if (k < 1 || k > 256)
        return ptreg_error_set(err, PTREG_ERR_ARG, "motif: %zu points: take 1 to 256", k);
    size_t count;
    site *s = sorted_sites(lattice, a, &count);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "motif: out of memory");
    for (size_t i = 0; i < k; i++)
        for (int c = 0; c < 3; c++)
            xyz[3 * i + (size_t)c] = (float)s[i].p[c];
    free(s);
    return PTREG_OK;
}

size_t ptreg_lattice_shells(ptreg_lattice lattice, size_t *shells, size_t max)
{
    size_t count, found = 0;
    site *s = (unsigned)lattice <= PTREG_LATTICE_SC ? sorted_sites(lattice, 1.0, &count) : NULL;
    if (!s)
        return 0;
    for (size_t i = 1; i <= count && found < max && i <= 256; i++)
        if (i == count || fabs(s[i].d2 - s[i - 1].d2) > 1e-9 * (s[i].d2 + s[i - 1].d2))
            shells[found++] = i;
    free(s);
    return found;
}

/* ---- quaternions ---- */

void orient_quat_mul(const double a[4], const double b[4], double out[4])
{
    const double w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    const double x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    const double y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    const double z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    out[0] = w, out[1] = x, out[2] = y, out[3] = z;
}

/* ---- symmetry ---- */

static double dist2(const double a[3], const double b[3])
{
    const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* An orthonormal frame from two non-collinear vectors; 0 when they are. */
static int frame(const double a[3], const double b[3], double F[9])
{
    const double na = norm3(a);
    if (na == 0)
        return 0;
    double e1[3] = {a[0] / na, a[1] / na, a[2] / na}, e2[3];
    const double d = b[0] * e1[0] + b[1] * e1[1] + b[2] * e1[2];
    for (int k = 0; k < 3; k++)
        e2[k] = b[k] - d * e1[k];
    const double n2 = norm3(e2);
    if (n2 < 1e-6 * norm3(b))
        return 0;
    for (int k = 0; k < 3; k++)
        e2[k] /= n2;
    const double e3[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    for (int k = 0; k < 3; k++)
        F[3 * k] = e1[k], F[3 * k + 1] = e2[k], F[3 * k + 2] = e3[k];
    return 1;
}

/* Whether R maps every motif point within tol of a distinct motif point. */
static int maps_onto(const double *m, size_t k, const double R[9], double tol2)
{
    unsigned char used[256] = {0};
    for (size_t i = 0; i < k; i++) {
        double r[3];
        for (int c = 0; c < 3; c++)
            r[c] = R[3 * c] * m[3 * i] + R[3 * c + 1] * m[3 * i + 1] + R[3 * c + 2] * m[3 * i + 2];
        size_t hit = k;
        for (size_t j = 0; j < k && hit == k; j++)
            if (!used[j] && dist2(r, m + 3 * j) <= tol2)
                hit = j;
        if (hit == k)
            return 0;
        used[hit] = 1;
    }
    return 1;
}

double ptreg_motif_shortest_distance(const float *motif, size_t k)
{
    double best = INFINITY;
    for (size_t i = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++) {
            const double a[3] = {motif[3 * i], motif[3 * i + 1], motif[3 * i + 2]};
            const double b[3] = {motif[3 * j], motif[3 * j + 1], motif[3 * j + 2]};
            best = fmin(best, dist2(a, b));
        }
    return sqrt(best);
}

/* The motif's points in double, and the two that fix a rotation: the
 * nearest the origin, and the first not collinear with it. */
static int reference_points(const double *m, size_t k, size_t *p1, size_t *p2)
{
    *p1 = 0;
    for (size_t i = 1; i < k; i++)
        if (norm3(m + 3 * i) < norm3(m + 3 * *p1))
            *p1 = i;
    double F[9];
    for (*p2 = 0; *p2 < k; ++*p2)
        if (*p2 != *p1 && frame(m + 3 * *p1, m + 3 * *p2, F))
            return 1;
    return 0;
}

static int known(double q[][4], size_t count, const double g[4])
{
    for (size_t i = 0; i < count; i++)
        if (fabs(q[i][0] * g[0] + q[i][1] * g[1] + q[i][2] * g[2] + q[i][3] * g[3]) > 1.0 - 1e-9)
            return 1;
    return 0;
}

/* Identity first, then by w descending, then x, y, z: a fixed order. */
static int quat_cmp(const void *pa, const void *pb)
{
    const double *a = pa, *b = pb;
    for (int k = 0; k < 4; k++)
        if (fabs(a[k] - b[k]) > 1e-9)
            return a[k] > b[k] ? -1 : 1;
    return 0;
}

size_t ptreg_motif_symmetry(const float *motif, size_t k, double tol, double q[PTREG_MAX_SYMMETRY][4])
{
    q[0][0] = 1, q[0][1] = q[0][2] = q[0][3] = 0;
    if (k < 2 || k > 256)
        return 1;
    double m[3 * 256];
    for (size_t i = 0; i < 3 * k; i++)
        m[i] = motif[i];
    size_t p1, p2, count = 1;
    if (!reference_points(m, k, &p1, &p2))
        return 1;
    const double shortest = ptreg_motif_shortest_distance(motif, k), tol2 = tol * shortest * tol * shortest;
    const double n1 = norm3(m + 3 * p1), n2 = norm3(m + 3 * p2);
    const double cosine = (m[3 * p1] * m[3 * p2] + m[3 * p1 + 1] * m[3 * p2 + 1] + m[3 * p1 + 2] * m[3 * p2 + 2]);
    double Fp[9];
    frame(m + 3 * p1, m + 3 * p2, Fp);
    for (size_t a = 0; a < k && count < PTREG_MAX_SYMMETRY; a++) {
        if (fabs(norm3(m + 3 * a) - n1) > tol * n1)
            continue;
        for (size_t b = 0; b < k && count < PTREG_MAX_SYMMETRY; b++) {
            const double *qa = m + 3 * a, *qb = m + 3 * b;
            const double c = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2];
            double Fq[9], R[9], g[4];
            if (b == a || fabs(norm3(qb) - n2) > tol * n2 || fabs(c - cosine) > 2 * tol * n1 * n2 || !frame(qa, qb, Fq))
                continue;
            for (int r = 0; r < 3; r++) /* R = Fq Fp^T takes p1 to a and p2 to b */
                for (int s = 0; s < 3; s++)
                    R[3 * r + s] = Fq[3 * r] * Fp[3 * s] + Fq[3 * r + 1] * Fp[3 * s + 1] +
                                   Fq[3 * r + 2] * Fp[3 * s + 2];
            ptreg_matrix_to_quaternion(R, g);
            if (!known(q, count, g) && maps_onto(m, k, R, tol2))
                memcpy(q[count++], g, sizeof g);
        }
    }
    qsort(q + 1, count - 1, sizeof q[0], quat_cmp);
    return count;
}

void ptreg_orientation_reduce(const double q[4], const double sym[][4], size_t count, double out[4])
{
    double best[4] = {q[0], q[1], q[2], q[3]}, bw = -1.0;
    for (size_t i = 0; i < count; i++) {
        double g[4];
        orient_quat_mul(sym[i], q, g);
        if (fabs(g[0]) > bw + 1e-12) {
            bw = fabs(g[0]);
            memcpy(best, g, sizeof best);
        }
    }
    const double s = best[0] < 0 ? -1.0 : 1.0;
    for (int k = 0; k < 4; k++)
        out[k] = s * best[k];
}

double ptreg_misorientation_deg(const double a[4], const double b[4], const double sym[][4], size_t count)
{
    const double binv[4] = {b[0], -b[1], -b[2], -b[3]};
    double best = 0.0;
    for (size_t i = 0; i < count; i++) {
        double g[4], d[4];
        orient_quat_mul(sym[i], a, g);
        orient_quat_mul(g, binv, d);
        best = fmax(best, fabs(d[0]));
    }
    return 2.0 * acos(fmin(1.0, best)) * (180.0 / 3.14159265358979323846);
}

void ptreg_ipf_color(const double q[4], unsigned char rgb[3])
{
    double R[9];
    ptreg_quaternion_to_matrix(q, R);
    /* the sample's z in the crystal frame, then the cubic symmetry: sorted
     * absolute components, z >= x >= y >= 0 */
    double v[3] = {fabs(R[2]), fabs(R[5]), fabs(R[8])};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (v[j] > v[j + 1]) {
                const double t = v[j];
                v[j] = v[j + 1], v[j + 1] = t;
            }
    const double z = v[2], x = v[1], y = v[0];
    double c[3] = {z - x, x - y, y};
    const double top = fmax(c[0], fmax(c[1], c[2]));
    for (int k = 0; k < 3; k++)
        rgb[k] = (unsigned char)lround(255.0 * (top > 0 ? c[k] / top : 1.0));
}
