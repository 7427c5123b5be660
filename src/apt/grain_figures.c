/* The figures of a grain map (grains_impl.h): the boundaries'
 * misorientation histogram against Mackenzie's distribution, and pole
 * figures, as SVG text. */
#include "apt/grains_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/transform.h"

#define PI 3.14159265358979323846
#define DEG (PI / 180.0)
/* Beyond this no two cubic orientations are misoriented (degrees). */
#define MACKENZIE_MAX 62.8
/* Rotation axes sampled (a Fibonacci lattice on the sphere) for the share
 * of axes inside the fundamental zone beyond 60 degrees. */
#define AXES 200000
/* Each histogram bin's expectation integrates the density over this many
 * steps (Simpson's rule). */
#define BIN_STEPS 16
/* Pole figures: density cells across, and the grains drawn as rings. */
#define POLE_CELLS 60
#define POLE_GRAINS 100

/* ---- Mackenzie's distribution ---- */

/* The share of rotation axes n for which the rotation by theta about n is
 * in the cubic fundamental zone: its Rodrigues vector r = n tan(theta/2)
 * has |r_i| <= sqrt(2) - 1 and |r_1| + |r_2| + |r_3| <= 1 (Frank, Metall.
 * Trans. A 19, 1988). */
static double axes_inside(double theta)
{
    const double t = tan(theta / 2), golden = PI * (3.0 - sqrt(5.0)), cg = cos(golden), sg = sin(golden);
    size_t inside = 0;
    double c = 1.0, s = 0.0; /* cos and sin of the i-th turn by the golden angle, by recurrence */
    for (size_t i = 0; i < AXES; i++) {
        const double z = 1.0 - (2.0 * (double)i + 1.0) / AXES, r = sqrt(1.0 - z * z);
        const double n[3] = {fabs(r * c), fabs(r * s), fabs(z)}, c1 = c * cg - s * sg;
        s = s * cg + c * sg, c = c1;
        const double top = fmax(n[0], fmax(n[1], n[2]));
        inside += t * top <= sqrt(2.0) - 1.0 && t * (n[0] + n[1] + n[2]) <= 1.0;
    }
    return (double)inside / AXES;
}

double grain_mackenzie_density(double deg)
{
    if (!(deg >= 0) || deg > MACKENZIE_MAX)
        return 0.0;
    /* a uniform rotation's angle has density (1 - cos) / pi a radian; the
     * 24 equivalents share it: 24 / 180 = 2/15 a degree */
    const double theta = deg * DEG, base = 2.0 / 15.0 * (1.0 - cos(theta));
    if (deg <= 45.0) /* every axis */
        return base;
    /* to 60 degrees only the six caps |n_i| tan(theta/2) > sqrt(2) - 1 are
     * out, and they do not meet: a share of 3 (sqrt(2) - 1) / tan(theta/2) - 2 */
    if (deg <= 60.0)
        return 2.0 / 15.0 * (3.0 * (sqrt(2.0) - 1.0) * sin(theta) - 2.0 * (1.0 - cos(theta)));
    return base * axes_inside(theta);
}

/* The expected share of random boundaries between lo and hi degrees. */
static double mackenzie_share(double lo, double hi)
{
    const double h = (hi - lo) / BIN_STEPS;
    double sum = grain_mackenzie_density(lo) + grain_mackenzie_density(hi);
    for (int s = 1; s < BIN_STEPS; s++)
        sum += (s % 2 ? 4.0 : 2.0) * grain_mackenzie_density(lo + h * s);
    return sum * h / 3.0;
}

/* Misorientation histogram bins (degrees) of the figures. */
#define HIST_BIN_DEG 2.5

ptreg_status grain_histogram(ptreg_grain_map *map, int cubic, double bin_deg, ptreg_error *err)
{
    if (!(bin_deg >= 0.1 && bin_deg <= 90))
        return ptreg_error_set(err, PTREG_ERR_ARG, "misorientation histogram: bins of 0.1 to 90 degrees, not %g",
                               bin_deg);
    const double top = cubic ? 65.0 : 180.0;
    map->bin_deg = bin_deg;
    map->bins = (size_t)ceil(top / bin_deg);
    map->bin_count = calloc(map->bins, sizeof *map->bin_count);
    map->bin_expected = cubic ? calloc(map->bins, sizeof *map->bin_expected) : NULL;
    if (!map->bin_count || (cubic && !map->bin_expected))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "misorientation histogram: out of memory");
    for (size_t i = 0; i < map->boundary_count; i++) {
        const size_t b = (size_t)(map->boundaries[i].misorientation_deg / bin_deg);
        map->bin_count[b < map->bins ? b : map->bins - 1]++;
    }
    size_t used = 0;
    map->chi2 = 0.0;
    for (size_t b = 0; map->bin_expected && b < map->bins; b++) {
        map->bin_expected[b] = (double)map->boundary_count * mackenzie_share(b * bin_deg, (b + 1) * bin_deg);
        if (map->bin_expected[b] >= 5.0) {
            map->chi2 += pow((double)map->bin_count[b] - map->bin_expected[b], 2) / map->bin_expected[b];
            used++;
        }
    }
    map->dof = used > 0 ? used - 1 : 0;
    return PTREG_OK;
}

/* ---- SVG ---- */

typedef struct text {
    char *s;
    size_t len, cap;
    int failed;
} text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        va_start(ap, fmt);
        const int w = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->failed = 1;
        } else if (t->s && t->len + (size_t)w < t->cap) {
            t->len += (size_t)w;
            return;
        } else {
            const size_t cap = 2 * (t->cap + (size_t)w) + 256;
            char *grown = realloc(t->s, cap);
            if (!grown)
                t->failed = 1;
            else
                t->s = grown, t->cap = cap;
        }
    }
}

static ptreg_status finish(text *t, char **svg, ptreg_error *err)
{
    if (t->failed || !t->s) {
        free(t->s);
        *svg = NULL;
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "figure: out of memory");
    }
    *svg = t->s;
    return PTREG_OK;
}

static ptreg_status histogram_svg(const ptreg_grain_map *h, char **svg, ptreg_error *err)
{
    const double W = 440, H = 260, L = 44, R = 10, T = 24, B = 36;
    double top = 1.0;
    for (size_t b = 0; b < h->bins; b++)
        top = fmax(top, fmax((double)h->bin_count[b], h->bin_expected ? h->bin_expected[b] : 0.0));
    const double bw = (W - L - R) / (double)h->bins, sy = (H - T - B) / top;
    text t = {0};
    add(&t,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
        "font-family=\"sans-serif\" font-size=\"11\">\n",
        W, H, W, H);
    add(&t, "<text x=\"%g\" y=\"14\">grain boundaries: %zu; misorientation (degrees)%s</text>\n", L, h->boundary_count,
        h->bin_expected ? ", line: Mackenzie (random)" : "");
    for (size_t b = 0; b < h->bins; b++)
        add(&t, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#4a7fb5\"/>\n", L + bw * (double)b,
            H - B - sy * (double)h->bin_count[b], bw * 0.9, sy * (double)h->bin_count[b]);
    if (h->bin_expected) {
        add(&t, "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"");
        for (size_t b = 0; b < h->bins; b++)
            add(&t, "%.2f,%.2f ", L + bw * ((double)b + 0.45), H - B - sy * h->bin_expected[b]);
        add(&t, "\"/>\n");
    }
    add(&t, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#000\"/>\n", L, H - B, W - R, H - B);
    add(&t, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#000\"/>\n", L, T, L, H - B);
    for (double d = 0; d <= h->bin_deg * (double)h->bins + 1e-9; d += h->bins * h->bin_deg > 90 ? 30 : 10)
        add(&t, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n", L + bw * d / h->bin_deg, H - B + 14, d);
    add(&t, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%g</text>\n", L - 4, T + 4, top);
    add(&t, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">0</text>\n", L - 4, H - B);
    if (h->bin_expected)
        add(&t, "<text x=\"%g\" y=\"%g\">chi-square %.1f on %zu degrees of freedom</text>\n", L, H - 4, h->chi2,
            h->dof);
    add(&t, "</svg>\n");
    return finish(&t, svg, err);
}

/* The crystal directions of a family, one of each +- pair. */
static size_t family_directions(int family, double dir[6][3])
{
    static const double d100[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    static const double d110[6][3] = {{1, 1, 0}, {1, -1, 0}, {1, 0, 1}, {1, 0, -1}, {0, 1, 1}, {0, 1, -1}};
    static const double d111[4][3] = {{1, 1, 1}, {1, 1, -1}, {1, -1, 1}, {-1, 1, 1}};
    const double(*src)[3] = family == 100 ? d100 : family == 110 ? d110 : d111;
    const size_t n = family == 100 ? 3 : family == 110 ? 6 : 4;
    for (size_t i = 0; i < n; i++) {
        const double len = sqrt(src[i][0] * src[i][0] + src[i][1] * src[i][1] + src[i][2] * src[i][2]);
        for (int c = 0; c < 3; c++)
            dir[i][c] = src[i][c] / len;
    }
    return n;
}

/* Crystal direction d of orientation q (which takes the sample frame onto
 * the crystal's) in the sample frame, on the upper hemisphere, projected
 * equal-area onto the unit disc. */
static void pole(const double q[4], const double d[3], double xy[2])
{
    double R[9], s[3];
    ptreg_quaternion_to_matrix(q, R);
    for (int c = 0; c < 3; c++) /* R^T d */
        s[c] = R[c] * d[0] + R[3 + c] * d[1] + R[6 + c] * d[2];
    if (s[2] < 0)
        s[0] = -s[0], s[1] = -s[1], s[2] = -s[2];
    const double f = 1.0 / sqrt(1.0 + s[2]);
    xy[0] = s[0] * f, xy[1] = s[1] * f;
}

/* Family 100, 110 or 111 of a cubic map. */
static ptreg_status pole_figure_svg(const ptreg_orientations *o, const ptreg_grain_map *map, int family, char **svg,
                                    ptreg_error *err)
{
    double dir[6][3];
    const size_t nd = family_directions(family, dir);
    size_t *cell = calloc(POLE_CELLS * POLE_CELLS, sizeof *cell), top = 1;
    if (!cell)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pole figure: out of memory");
    for (size_t i = 0; i < o->n; i++) {
        const double q[4] = {o->q[4 * i], o->q[4 * i + 1], o->q[4 * i + 2], o->q[4 * i + 3]};
        for (size_t k = 0; k < nd && isfinite(q[0]); k++) {
            double xy[2];
            pole(q, dir[k], xy);
            const int cx = (int)fmin(POLE_CELLS - 1, (xy[0] + 1) / 2 * POLE_CELLS);
            const int cy = (int)fmin(POLE_CELLS - 1, (xy[1] + 1) / 2 * POLE_CELLS);
            size_t *c = &cell[(size_t)cy * POLE_CELLS + (size_t)cx];
            top = ++*c > top ? *c : top;
        }
    }
    const double S = 300, C = S / 2, Rad = S / 2 - 20, px = 2 * Rad / POLE_CELLS;
    text t = {0};
    add(&t,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
        "font-family=\"sans-serif\" font-size=\"11\">\n",
        S, S, S, S);
    add(&t, "<text x=\"4\" y=\"14\">{%d} pole figure (equal area, sample z up)</text>\n", family);
    add(&t, "<circle cx=\"%g\" cy=\"%g\" r=\"%g\" fill=\"#fff\" stroke=\"#000\"/>\n", C, C, Rad);
    for (int cy = 0; cy < POLE_CELLS; cy++)
        for (int cx = 0; cx < POLE_CELLS; cx++) {
            const size_t c = cell[cy * POLE_CELLS + cx];
            if (c)
                add(&t,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"#1f3b73\" "
                    "fill-opacity=\"%.3f\"/>\n",
                    C - Rad + px * cx, C + Rad - px * (cy + 1), px, px, 0.15 + 0.85 * sqrt((double)c / (double)top));
        }
    for (size_t g = 0; map && g < map->count && g < POLE_GRAINS; g++)
        for (size_t k = 0; k < nd; k++) {
            double xy[2];
            pole(map->grains[g].q, dir[k], xy);
            add(&t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" stroke=\"#d62728\"/>\n", C + Rad * xy[0],
                C - Rad * xy[1]);
        }
    add(&t, "<text x=\"%g\" y=\"%g\">x</text><text x=\"%g\" y=\"%g\">y</text>\n", C + Rad + 4, C + 4, C - 3,
        C - Rad - 4);
    add(&t, "</svg>\n");
    free(cell);
    return finish(&t, svg, err);
}

ptreg_status grain_figures(const ptreg_orientations *o, ptreg_grain_map *map, ptreg_error *err)
{
    static const int families[3] = {100, 110, 111};
    const int cubic = o->symmetry_count == 24;
    ptreg_status st = grain_histogram(map, cubic, HIST_BIN_DEG, err);
    st = st ? st : histogram_svg(map, &map->figure[0], err);
    for (int k = 0; !st && cubic && k < 3; k++)
        st = pole_figure_svg(o, map, families[k], &map->figure[1 + k], err);
    return st;
}
