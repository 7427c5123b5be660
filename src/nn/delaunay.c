/* The Delaunay graph of a model, from Qhull's triangulation (libqhull_r):
 * each tetrahedron's six edges, deduplicated, as rows of the k-d tree's
 * slots with the unit edge vectors and half lengths the walk tests. */
#define _POSIX_C_SOURCE 200809L /* open_memstream: Qhull's messages */
#include <libqhull_r/qhull_ra.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/delaunay_impl.h"

void delaunay_destroy(delaunay_graph *g)
{
    if (!g)
        return;
    free(g->rows);
    free(g->row_at);
    if (!g->borrowed) {
        free(g->offset);
        free(g->nbr);
        free(g->ex);
        free(g->ey);
        free(g->ez);
        free(g->half);
    }
    free(g);
}

/* The distinct points, each named by the slot of its lowest original index;
 * the count of the others. */
typedef struct distinct_points {
    uint32_t *slot; /* per distinct point */
    size_t count;
    size_t duplicates;
} distinct_points;

static int cmp_coordinates(const void *a, const void *b)
{
    const kd_point *x = a, *y = b;
    int c = memcmp(x->p, y->p, sizeof x->p);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Exact duplicates (the same float bits) sort next to each other, the one
 * with the lowest index first. */
static int find_distinct(const ptreg_kdtree *t, distinct_points *d)
{
    kd_point *pts = malloc(t->n * sizeof *pts);
    d->slot = malloc(t->n * sizeof *d->slot);
    if (!pts || !d->slot) {
        free(pts);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        kdtree_slot_point(t, t->slot[i], pts[i].p);
        pts[i].index = (uint32_t)i;
    }
    qsort(pts, t->n, sizeof *pts, cmp_coordinates);
    d->count = 0;
    for (size_t i = 0; i < t->n; i++)
        if (i == 0 || memcmp(pts[i].p, pts[i - 1].p, sizeof pts[i].p))
            d->slot[d->count++] = t->slot[pts[i].index];
    d->duplicates = t->n - d->count;
    free(pts);
    return 0;
}

/* Edges as (smaller slot << 32 | larger slot), from Qhull's lower
 * Delaunay facets (tetrahedra), before deduplication. */
typedef struct edge_list {
    uint64_t *key;
    size_t count, cap;
} edge_list;

static int add_edge(edge_list *e, uint32_t a, uint32_t b)
{
    if (e->count == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 1024;
        uint64_t *k = realloc(e->key, cap * sizeof *k);
        if (!k)
            return -1;
        e->key = k, e->cap = cap;
    }
    e->key[e->count++] = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
    return 0;
}

/* Qhull's messages run over many lines; the first says what went wrong. */
static size_t first_line_length(const char *msg, size_t most)
{
    size_t len = 0;
    while (msg && len < most && msg[len] && msg[len] != '\n')
        len++;
    return len;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Runs Qhull's Delaunay triangulation ("d Qt Qbb Qz": triangulated output,
 * the paraboloid scaled for precision, a point at infinity for cospherical
 * input) and collects the edges. Returns 0, 1 (no triangulation: reason in
 * `why`) or -1 (out of memory). */
static int triangulate(const ptreg_kdtree *t, const distinct_points *d, edge_list *edges, char *why, size_t why_size)
{
    if (d->count > INT_MAX) { /* Qhull counts and names its points with an int */
        snprintf(why, why_size, "%zu distinct points: more than Qhull's %d", d->count, INT_MAX);
        return 1;
    }
    coordT *pts = malloc(3 * d->count * sizeof *pts);
    char *msg = NULL;
    size_t msg_len = 0;
    FILE *errfile = open_memstream(&msg, &msg_len);
    if (!pts || !errfile) {
        free(pts);
        if (errfile)
            fclose(errfile);
        free(msg);
        return -1;
    }
    for (size_t i = 0; i < d->count; i++) {
        float p[3];
        kdtree_slot_point(t, d->slot[i], p);
        for (int k = 0; k < 3; k++)
            pts[3 * i + k] = p[k];
    }
    qhT qh_storage, *qh = &qh_storage;
    qh_zero(qh, errfile);
    char options[] = "qhull d Qt Qbb Qz";
    int rc = qh_new_qhull(qh, 3, (int)d->count, pts, False, options, NULL, errfile);
    int status = 0;
    if (rc) {
        fflush(errfile);
        snprintf(why, why_size, "Qhull cannot triangulate the model (all points coplanar or collinear?): %.*s",
                 (int)first_line_length(msg, 160), msg && msg_len ? msg : "no message");
        status = 1;
    } else {
        size_t vertices = 0;
        vertexT *vertex, **vertexp;
        FORALLvertices vertices += (size_t)qh_pointid(qh, vertex->point) < d->count;
        if (vertices != d->count) {
            snprintf(why, why_size, "Qhull left %zu of %zu distinct points out of the triangulation",
                     d->count - vertices, d->count);
            status = 1;
        }
        facetT *facet;
        FORALLfacets
        {
            if (status || facet->upperdelaunay)
                continue;
            uint32_t ids[4];
            int nv = 0;
            FOREACHvertex_(facet->vertices)
            {
                int id = qh_pointid(qh, vertex->point);
                if (id >= 0 && (size_t)id < d->count && nv < 4)
                    ids[nv++] = d->slot[id];
            }
            for (int a = 0; a < nv && status == 0; a++)
                for (int b = a + 1; b < nv && status == 0; b++)
                    if (add_edge(edges, ids[a], ids[b]))
                        status = -1;
        }
    }
    qh_freeqhull(qh, !qh_ALL);
    int curlong, totlong;
    qh_memfreeshort(qh, &curlong, &totlong);
    fclose(errfile);
    free(msg);
    free(pts);
    return status;
}

int delaunay_fits(size_t directed_edges, size_t row_units)
{
    return directed_edges < UINT32_MAX && row_units < UINT32_MAX;
}

/* Rows by slot, both directions of every edge, with the edge vectors.
 * Returns 0, -1 when out of memory, 1 (why says so) when the edges are
 * more than the rows' uint32 offsets name. */
static int fill_rows(const ptreg_kdtree *t, edge_list *edges, delaunay_graph *g, char *why, size_t why_size)
{
    qsort(edges->key, edges->count, sizeof *edges->key, cmp_u64);
    size_t unique = 0;
    for (size_t i = 0; i < edges->count; i++)
        if (i == 0 || edges->key[i] != edges->key[i - 1])
            edges->key[unique++] = edges->key[i];
    g->edges = 2 * unique;
    if (!delaunay_fits(g->edges, 0)) { /* about 15 per point: 2^32 at 280 M points */
        snprintf(why, why_size, "%zu directed Delaunay edges: more than the graph's uint32 offsets name (2^32 - 1)",
                 g->edges);
        return 1;
    }
    g->offset = calloc(g->slots + 1, sizeof *g->offset);
    g->nbr = malloc(g->edges * sizeof *g->nbr);
    g->ex = malloc(g->edges * sizeof *g->ex);
    g->ey = malloc(g->edges * sizeof *g->ey);
    g->ez = malloc(g->edges * sizeof *g->ez);
    g->half = malloc(g->edges * sizeof *g->half);
    if (!g->offset || !g->nbr || !g->ex || !g->ey || !g->ez || !g->half)
        return -1;
    for (size_t i = 0; i < unique; i++) {
        g->offset[(edges->key[i] >> 32) + 1]++;
        g->offset[(edges->key[i] & 0xffffffffu) + 1]++;
    }
    for (size_t s = 0; s < g->slots; s++)
        g->offset[s + 1] += g->offset[s];
    uint32_t *fill = malloc(g->slots * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, g->offset, g->slots * sizeof *fill);
    for (size_t i = 0; i < unique; i++) {
        uint32_t ends[2] = {(uint32_t)(edges->key[i] >> 32), (uint32_t)(edges->key[i] & 0xffffffffu)};
        for (int k = 0; k < 2; k++) {
            uint32_t from = ends[k], to = ends[1 - k], at = fill[from]++;
            float a[3], b[3];
            kdtree_slot_point(t, from, a);
            kdtree_slot_point(t, to, b);
            double v[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
            double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            g->nbr[at] = to;
            g->ex[at] = (float)(v[0] / len);
            g->ey[at] = (float)(v[1] / len);
            g->ez[at] = (float)(v[2] / len);
            g->half[at] = (float)(0.5 * len);
        }
    }
    free(fill);
    return 0;
}

/* The walk's rows: 1 when they would be more than uint32 row_at
 * names. */
static int make_rows(delaunay_graph *g, const ptreg_kdtree *t, char *why, size_t why_size)
{
    int rc = delaunay_make_rows(g, t);
    if (rc == 1)
        snprintf(why, why_size, "%zu walk rows of 64 bytes: more than the graph's uint32 row offsets name",
                 g->row_units);
    return rc;
}

int delaunay_make_rows(delaunay_graph *g, const ptreg_kdtree *t)
{
    const size_t unit = sizeof(dt_head);
    size_t units = 0;
    g->row_at = malloc(g->slots * sizeof *g->row_at);
    if (!g->row_at)
        return -1;
    for (size_t s = 0; s < g->slots; s++) {
        uint32_t deg = g->offset[s + 1] - g->offset[s];
        g->row_at[s] = deg ? (uint32_t)units : UINT32_MAX;
        if (deg)
            units += 1 + (deg + PTREG_DT_LANES - 1) / PTREG_DT_LANES * (sizeof(dt_block) / unit);
    }
    if (!delaunay_fits(0, units)) {
        g->row_units = units;
        return 1;
    }
    if (!(g->rows = aligned_alloc(64, (units ? units : 1) * unit)))
        return -1;
    g->row_units = units;
    for (size_t s = 0; s < g->slots; s++) {
        if (g->row_at[s] == UINT32_MAX)
            continue;
        dt_head *h = (dt_head *)(g->rows + (size_t)g->row_at[s] * unit);
        uint32_t first = g->offset[s], deg = g->offset[s + 1] - first;
        float p[3];
        kdtree_slot_point(t, (uint32_t)s, p);
        memset(h, 0, sizeof *h);
        h->x = p[0], h->y = p[1], h->z = p[2], h->degree = deg, h->nbr_first = first;
        dt_block *b = (dt_block *)(h + 1);
        for (uint32_t k = 0; k < (deg + PTREG_DT_LANES - 1) / PTREG_DT_LANES * PTREG_DT_LANES; k++) {
            dt_block *blk = &b[k / PTREG_DT_LANES];
            unsigned l = k % PTREG_DT_LANES;
            int real = k < deg;
            blk->ex[l] = real ? g->ex[first + k] : 0.0f;
            blk->ey[l] = real ? g->ey[first + k] : 0.0f;
            blk->ez[l] = real ? g->ez[first + k] : 0.0f;
            blk->half[l] = real ? g->half[first + k] : INFINITY;
        }
    }
    return 0;
}

/* The distinct point nearest the model's centroid: delaunay-zero's start. */
static uint32_t centre_point(const ptreg_kdtree *t, const distinct_points *d)
{
    double c[3] = {0, 0, 0};
    for (size_t i = 0; i < d->count; i++) {
        float p[3];
        kdtree_slot_point(t, d->slot[i], p);
        for (int k = 0; k < 3; k++)
            c[k] += p[k];
    }
    uint32_t best = d->slot[0];
    double best_d = INFINITY;
    for (size_t i = 0; i < d->count; i++) {
        float p[3];
        kdtree_slot_point(t, d->slot[i], p);
        double dd = 0.0;
        for (int k = 0; k < 3; k++) {
            double v = p[k] - c[k] / (double)d->count;
            dd += v * v;
        }
        if (dd < best_d)
            best_d = dd, best = d->slot[i];
    }
    return best;
}

ptreg_status delaunay_create(const ptreg_kdtree *t, delaunay_graph **out, ptreg_error *err)
{
    *out = NULL;
    distinct_points d = {0};
    edge_list edges = {0};
    delaunay_graph *g = calloc(1, sizeof *g);
    char why[256] = "";
    ptreg_status st = PTREG_OK;
    if (!g || find_distinct(t, &d)) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "Delaunay graph: out of memory");
        goto done;
    }
    g->slots = t->chunk_count * PTREG_KD_LANES;
    g->duplicates = d.duplicates;
    char merged[64] = "";
    if (d.duplicates)
        snprintf(merged, sizeof merged, " (%zu exact duplicates merged)", d.duplicates);
    if (d.count < 5) {
        st = ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%zu distinct points%s; a 3-D triangulation needs 5", d.count,
                             merged);
        goto done;
    }
    int rc = triangulate(t, &d, &edges, why, sizeof why);
    rc = rc ? rc : fill_rows(t, &edges, g, why, sizeof why);
    rc = rc ? rc : make_rows(g, t, why, sizeof why);
    if (rc == 1)
        st = ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s%s", why, merged);
    else if (rc < 0)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "Delaunay graph: out of memory");
    else
        g->start = centre_point(t, &d);
done:
    free(d.slot);
    free(edges.key);
    if (st) {
        delaunay_destroy(g);
        return st;
    }
    *out = g;
    return PTREG_OK;
}
