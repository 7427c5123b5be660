/* HTML reports (ptreg/report.h): what the page shows is gathered here, then
 * written as one page: a JSON description, the layers' data as base64
 * blocks of little-endian float32 (positions, values) or bytes (colours,
 * slices), and the viewer's script. docs/REPORT.md has the format. */
#include "ptreg/report.h"
#include "report/report_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"
#include "report/page.h"

typedef enum layer_kind { LAYER_POINTS, LAYER_LINES, LAYER_PATHS, LAYER_SLICE } layer_kind;

/* One thing drawn. Points (kept evenly when over the cap): xyz, and rgb or
 * values or one colour; lines: 2 points a segment; paths: `length` points
 * each; a slice: a w x h grey image on a rectangle. */
typedef struct layer {
    layer_kind kind;
    char *name;
    size_t total;  /* items given: points, segments or paths */
    size_t kept;   /* items copied */
    size_t length; /* points per item: 1, 2 (segments) or the path's length */
    float *xyz;    /* kept * length points */
    uint8_t *rgb;  /* points: 3 bytes a point, or NULL */
    float *values; /* points: a value each, or NULL */
    char *values_name;
    float lo, hi; /* values: their finite range over all given */
    uint32_t color;
    size_t w, h; /* slice */
    uint8_t *grey;
    double corner[3], across[3], down[3];
    float grey_lo, grey_hi;
} layer;

typedef struct curve {
    char *title, *measure;
    double *values;
    size_t n;
} curve;

typedef struct figure {
    char *title, *svg;
} figure;

struct ptreg_report {
    char *title;
    size_t max_points;
    layer *layers;
    size_t layer_count;
    curve *curves;
    size_t curve_count;
    figure *figures;
    size_t figure_count;
    char *key;
    char *json;
};

static ptreg_status report_error(ptreg_error *err, ptreg_status st, const char *what)
{
    if (err) {
        err->status = st;
        snprintf(err->message, sizeof err->message, "report: %s", what);
    }
    return st;
}

static ptreg_status out_of_memory(ptreg_error *err) { return report_error(err, PTREG_ERR_NOMEM, "out of memory"); }

static char *copy_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

ptreg_status ptreg_report_create(const char *title, ptreg_report **report, ptreg_error *err)
{
    *report = NULL;
    if (!title)
        return report_error(err, PTREG_ERR_ARG, "a report needs a title");
    ptreg_report *r = calloc(1, sizeof *r);
    if (!r || !(r->title = copy_text(title))) {
        free(r);
        return out_of_memory(err);
    }
    r->max_points = PTREG_REPORT_MAX_POINTS;
    *report = r;
    return PTREG_OK;
}

static void free_layer(layer *l)
{
    free(l->name);
    free(l->xyz);
    free(l->rgb);
    free(l->values);
    free(l->values_name);
    free(l->grey);
}

void ptreg_report_destroy(ptreg_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->layer_count; i++)
        free_layer(&r->layers[i]);
    for (size_t i = 0; i < r->curve_count; i++) {
        free(r->curves[i].title);
        free(r->curves[i].measure);
        free(r->curves[i].values);
    }
    free(r->layers);
    free(r->curves);
    for (size_t i = 0; i < r->figure_count; i++) {
        free(r->figures[i].title);
        free(r->figures[i].svg);
    }
    free(r->figures);
    free(r->title);
    free(r->key);
    free(r->json);
    free(r);
}

void ptreg_report_set_max_points(ptreg_report *r, size_t max_points)
{
    r->max_points = max_points ? max_points : PTREG_REPORT_MAX_POINTS;
}

/* The item kept in place i of `kept` out of `total`: evenly along the
 * order, the first always (kept <= total < 2^42, so no overflow). */
size_t report_pick(size_t i, size_t kept, size_t total)
{
    return kept == total ? i : (size_t)((uint64_t)i * total / kept);
}

/* A new layer at the end (zeroed), or NULL when memory ran out. */
static layer *new_layer(ptreg_report *r, layer_kind kind, const char *name)
{
    layer *grown = realloc(r->layers, (r->layer_count + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    r->layers = grown;
    layer *l = &grown[r->layer_count];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    if (!(l->name = copy_text(name)))
        return NULL;
    r->layer_count++;
    return l;
}

static void drop_last_layer(ptreg_report *r) { free_layer(&r->layers[--r->layer_count]); }

static ptreg_status check_items(const char *name, const void *data, size_t n, ptreg_error *err)
{
    if (!name)
        return report_error(err, PTREG_ERR_ARG, "a layer needs a name");
    if (n > 0 && !data)
        return report_error(err, PTREG_ERR_ARG, "a layer's data is NULL");
    return PTREG_OK;
}

/* Copies the kept items' points (item i of `length` points picked from the
 * total) into l->xyz. */
static int keep_points(layer *l, const float *xyz)
{
    size_t per = 3 * l->length;
    l->xyz = malloc((l->kept ? l->kept : 1) * per * sizeof *l->xyz);
    if (!l->xyz)
        return -1;
    for (size_t i = 0; i < l->kept; i++)
        memcpy(l->xyz + i * per, xyz + report_pick(i, l->kept, l->total) * per, per * sizeof *xyz);
    return 0;
}

/* A layer of n items of `length` points each, at most the cap's points. */
static ptreg_status add_items(ptreg_report *r, layer_kind kind, const char *name, const float *xyz, size_t n,
                              size_t length, layer **out, ptreg_error *err)
{
    ptreg_status st = check_items(name, xyz, n, err);
    if (st)
        return st;
    layer *l = new_layer(r, kind, name);
    if (!l)
        return out_of_memory(err);
    l->total = n, l->length = length;
    size_t cap_items = r->max_points / length ? r->max_points / length : 1;
    l->kept = n < cap_items ? n : cap_items;
    if (keep_points(l, xyz)) {
        drop_last_layer(r);
        return out_of_memory(err);
    }
    *out = l;
    return PTREG_OK;
}

ptreg_status ptreg_report_add_cloud(ptreg_report *r, const char *name, const float *xyz, size_t n, uint32_t color,
                                    ptreg_error *err)
{
    layer *l;
    ptreg_status st = add_items(r, LAYER_POINTS, name, xyz, n, 1, &l, err);
    if (!st)
        l->color = color & 0xffffffu;
    return st;
}

ptreg_status ptreg_report_add_cloud_rgb(ptreg_report *r, const char *name, const float *xyz, size_t n,
                                        const uint8_t *rgb, ptreg_error *err)
{
    if (n > 0 && !rgb)
        return report_error(err, PTREG_ERR_ARG, "a cloud's colours are NULL");
    layer *l;
    ptreg_status st = add_items(r, LAYER_POINTS, name, xyz, n, 1, &l, err);
    if (st)
        return st;
    if (!(l->rgb = malloc(3 * (l->kept ? l->kept : 1)))) {
        drop_last_layer(r);
        return out_of_memory(err);
    }
    for (size_t i = 0; i < l->kept; i++)
        memcpy(l->rgb + 3 * i, rgb + 3 * report_pick(i, l->kept, n), 3);
    return PTREG_OK;
}

/* The finite range of v[0..n) into lo, hi (0, 0 when none is finite). */
static void finite_range(const float *v, size_t n, float *lo, float *hi)
{
    float a = INFINITY, b = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            a = v[i] < a ? v[i] : a, b = v[i] > b ? v[i] : b;
    *lo = a <= b ? a : 0.0f, *hi = a <= b ? b : 0.0f;
}

ptreg_status ptreg_report_add_cloud_values(ptreg_report *r, const char *name, const float *xyz, size_t n,
                                           const float *values, const char *values_name, ptreg_error *err)
{
    if ((n > 0 && !values) || !values_name)
        return report_error(err, PTREG_ERR_ARG, "a cloud's values (or their name) are NULL");
    layer *l;
    ptreg_status st = add_items(r, LAYER_POINTS, name, xyz, n, 1, &l, err);
    if (st)
        return st;
    l->values = malloc((l->kept ? l->kept : 1) * sizeof *l->values);
    l->values_name = copy_text(values_name);
    if (!l->values || !l->values_name) {
        drop_last_layer(r);
        return out_of_memory(err);
    }
    for (size_t i = 0; i < l->kept; i++)
        l->values[i] = values[report_pick(i, l->kept, n)];
    finite_range(values, n, &l->lo, &l->hi);
    return PTREG_OK;
}

ptreg_status ptreg_report_add_lines(ptreg_report *r, const char *name, const float *ends, size_t n, uint32_t color,
                                    ptreg_error *err)
{
    layer *l;
    ptreg_status st = add_items(r, LAYER_LINES, name, ends, n, 2, &l, err);
    if (!st)
        l->color = color & 0xffffffu;
    return st;
}

ptreg_status ptreg_report_add_paths(ptreg_report *r, const char *name, const float *xyz, size_t count, size_t length,
                                    uint32_t color, ptreg_error *err)
{
    if (length < 2)
        return report_error(err, PTREG_ERR_ARG, "a path needs at least 2 points");
    layer *l;
    ptreg_status st = add_items(r, LAYER_PATHS, name, xyz, count, length, &l, err);
    if (!st)
        l->color = color & 0xffffffu;
    return st;
}

/* A value's grey level between lo (0) and hi (255). */
static uint8_t grey_of(float v, float lo, float hi)
{
    if (!(hi > lo))
        return v >= hi ? 255 : 0;
    float t = (v - lo) / (hi - lo);
    return !(t > 0.0f) ? 0 : t >= 1.0f ? 255 : (uint8_t)lrintf(255.0f * t);
}

ptreg_status ptreg_report_add_slice(ptreg_report *r, const char *name, const float *values, size_t w, size_t h,
                                    float lo, float hi, const double corner[3], const double across[3],
                                    const double down[3], ptreg_error *err)
{
    ptreg_status st = check_items(name, values, w * h, err);
    if (st)
        return st;
    if (w == 0 || h == 0 || w > 8192 || h > 8192)
        return report_error(err, PTREG_ERR_ARG, "a slice's sides must be 1 to 8192 pixels");
    layer *l = new_layer(r, LAYER_SLICE, name);
    if (!l || !(l->grey = malloc(w * h))) {
        if (l)
            drop_last_layer(r);
        return out_of_memory(err);
    }
    for (size_t i = 0; i < w * h; i++)
        l->grey[i] = grey_of(values[i], lo, hi);
    l->w = w, l->h = h, l->grey_lo = lo, l->grey_hi = hi;
    memcpy(l->corner, corner, sizeof l->corner);
    memcpy(l->across, across, sizeof l->across);
    memcpy(l->down, down, sizeof l->down);
    return PTREG_OK;
}

ptreg_status ptreg_report_add_curve(ptreg_report *r, const char *title, const char *measure, const double *values,
                                    size_t n, ptreg_error *err)
{
    if (!title || !measure || (n > 0 && !values))
        return report_error(err, PTREG_ERR_ARG, "a curve needs a title, a measure and its values");
    curve *grown = realloc(r->curves, (r->curve_count + 1) * sizeof *grown);
    if (!grown)
        return out_of_memory(err);
    r->curves = grown;
    curve c = {copy_text(title), copy_text(measure), malloc((n ? n : 1) * sizeof(double)), n};
    if (!c.title || !c.measure || !c.values) {
        free(c.title), free(c.measure), free(c.values);
        return out_of_memory(err);
    }
    if (n)
        memcpy(c.values, values, n * sizeof *values);
    r->curves[r->curve_count++] = c;
    return PTREG_OK;
}

ptreg_status ptreg_report_add_figure(ptreg_report *r, const char *title, const char *svg, ptreg_error *err)
{
    if (!title || !svg || strncmp(svg, "<svg", 4))
        return report_error(err, PTREG_ERR_ARG, "a figure needs a title and SVG text (<svg ...>)");
    figure *grown = realloc(r->figures, (r->figure_count + 1) * sizeof *grown);
    if (!grown)
        return out_of_memory(err);
    r->figures = grown;
    figure f = {copy_text(title), copy_text(svg)};
    if (!f.title || !f.svg) {
        free(f.title), free(f.svg);
        return out_of_memory(err);
    }
    r->figures[r->figure_count++] = f;
    return PTREG_OK;
}

static ptreg_status replace_text(char **slot, const char *text, ptreg_error *err)
{
    char *c = copy_text(text);
    if (!c)
        return out_of_memory(err);
    free(*slot);
    *slot = c;
    return PTREG_OK;
}

ptreg_status ptreg_report_set_key(ptreg_report *r, const char *key, ptreg_error *err)
{
    if (!key || (strcmp(key, "ipf") && strcmp(key, "axis")))
        return report_error(err, PTREG_ERR_ARG, "the colour keys are: ipf, axis");
    return replace_text(&r->key, key, err);
}

ptreg_status ptreg_report_set_json(ptreg_report *r, const char *json, ptreg_error *err)
{
    cJSON *parsed = json ? cJSON_Parse(json) : NULL;
    int object = cJSON_IsObject(parsed);
    cJSON_Delete(parsed);
    if (!object)
        return report_error(err, PTREG_ERR_ARG, "the numbers must be a JSON object's text");
    return replace_text(&r->json, json, err);
}

/* ---- accessors for the page writer (page.h) ---- */

size_t report_points_given(const ptreg_report *r)
{
    size_t sum = 0;
    for (size_t i = 0; i < r->layer_count; i++)
        sum += r->layers[i].kind == LAYER_SLICE ? 0 : r->layers[i].total * r->layers[i].length;
    return sum;
}

/* The page is written by page.c from this view of the report. */
void report_view(const ptreg_report *r, report_contents *c)
{
    c->title = r->title;
    c->max_points = r->max_points;
    c->key = r->key;
    c->json = r->json;
    c->layer_count = r->layer_count;
    c->curve_count = r->curve_count;
    c->figure_count = r->figure_count;
}

void report_layer_view(const ptreg_report *r, size_t i, report_layer *v)
{
    const layer *l = &r->layers[i];
    static const char *const kinds[] = {"points", "lines", "paths", "slice"};
    *v = (report_layer){
        kinds[l->kind], l->name,  l->total, l->kept, l->length, l->xyz, l->rgb, l->values, l->values_name, l->lo,
        l->hi,          l->color, l->w,     l->h,    l->grey,   {0},    {0},    {0},       l->grey_lo,     l->grey_hi};
    memcpy(v->corner, l->corner, sizeof v->corner);
    memcpy(v->across, l->across, sizeof v->across);
    memcpy(v->down, l->down, sizeof v->down);
}

void report_figure_view(const ptreg_report *r, size_t i, const char **title, const char **svg)
{
    *title = r->figures[i].title, *svg = r->figures[i].svg;
}

void report_curve_view(const ptreg_report *r, size_t i, const char **title, const char **measure, const double **values,
                       size_t *n)
{
    *title = r->curves[i].title, *measure = r->curves[i].measure;
    *values = r->curves[i].values, *n = r->curves[i].n;
}
