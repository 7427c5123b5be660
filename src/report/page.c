/* The report's page (docs/REPORT.md): a JSON description of what is shown,
 * the data as base64 blocks, then the viewer's script, in one HTML file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"
#include "report/page.h"

/* A growing page; `failed` once an allocation failed (every later write is
 * then a no-op, the caller checks once). */
typedef struct page {
    char *text;
    size_t size, capacity;
    int failed;
} page;

static void put(page *p, const char *s, size_t n)
{
    if (p->failed)
        return;
    if (p->size + n + 1 > p->capacity) {
        size_t cap = p->capacity ? p->capacity : 1 << 16;
        while (cap < p->size + n + 1)
            cap *= 2;
        char *grown = realloc(p->text, cap);
        if (!grown) {
            p->failed = 1;
            return;
        }
        p->text = grown, p->capacity = cap;
    }
    memcpy(p->text + p->size, s, n);
    p->size += n;
    p->text[p->size] = '\0';
}

static void puts_page(page *p, const char *s) { put(p, s, strlen(s)); }

/* Text that goes inside a <script> element: '<' written as JSON's \u003c,
 * so no "</script" or "<!--" can end or change it (valid only in JSON
 * strings, the one place a '<' can be in JSON). */
static void put_script_safe(page *p, const char *s)
{
    for (const char *lt; (lt = strchr(s, '<')); s = lt + 1) {
        put(p, s, (size_t)(lt - s));
        puts_page(p, "\\u003c");
    }
    puts_page(p, s);
}

static void put_html_text(page *p, const char *s)
{
    for (; *s; s++) {
        const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
        e ? puts_page(p, e) : put(p, s, 1);
    }
}

static void put_base64(page *p, const void *data, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint8_t *b = data;
    char quad[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        quad[0] = digits[v >> 18], quad[1] = digits[(v >> 12) & 63];
        quad[2] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
        quad[3] = i + 2 < n ? digits[v & 63] : '=';
        put(p, quad, 4);
    }
}

/* A data block, named by its number; returns the number. */
static int put_blob(page *p, int *blobs, const void *data, size_t n)
{
    char head[96];
    snprintf(head, sizeof head, "<script type=\"application/octet-stream\" id=\"ptreg-blob-%d\">", *blobs);
    puts_page(p, head);
    put_base64(p, data, n);
    puts_page(p, "</script>\n");
    return (*blobs)++;
}

static void color_text(char buf[8], uint32_t c) { snprintf(buf, 8, "#%06x", (unsigned)(c & 0xffffffu)); }

/* Adds item to an object under name, or to an array (name NULL). A NULL
 * item or a failed add (memory) marks the page failed and frees the item:
 * a page never goes out with a field missing. */
static void put_item(page *p, cJSON *to, const char *name, cJSON *item)
{
    const int added = item && to && (name ? cJSON_AddItemToObject(to, name, item) : cJSON_AddItemToArray(to, item));
    if (!added) {
        cJSON_Delete(item);
        p->failed = 1;
    }
}

static void put_number(page *p, cJSON *to, const char *name, double v) { put_item(p, to, name, cJSON_CreateNumber(v)); }
static void put_string(page *p, cJSON *to, const char *name, const char *s)
{
    put_item(p, to, name, cJSON_CreateString(s));
}
static void put_doubles(page *p, cJSON *to, const char *name, const double *v, int n)
{
    put_item(p, to, name, cJSON_CreateDoubleArray(v, n));
}

/* The items of a layer shown: all, or when the points given are over the
 * cap, every layer's by the same fraction of what it was given (at least
 * one; never more than it kept, which is at most the cap). */
static size_t items_shown(const report_layer *l, size_t given_all, size_t cap)
{
    if (given_all <= cap || l->kept == 0)
        return l->kept;
    size_t n = (size_t)((double)l->total * (double)cap / (double)given_all);
    n = n ? n : 1;
    return n < l->kept ? n : l->kept;
}

/* The shown items (item_bytes each), copied evenly from the kept ones into
 * a fresh buffer (NULL when memory ran out). */
static void *thin(const void *data, size_t shown, size_t kept, size_t item_bytes)
{
    char *out = malloc(shown ? shown * item_bytes : 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < shown; i++)
        memcpy(out + i * item_bytes, (const char *)data + report_pick(i, shown, kept) * item_bytes, item_bytes);
    return out;
}

/* A blob of the shown items of one of the layer's arrays, named in the
 * layer's JSON under field. */
static void layer_blob(page *p, int *blobs, cJSON *o, const char *field, const void *data, size_t shown, size_t kept,
                       size_t item_bytes)
{
    void *t = thin(data, shown, kept, item_bytes);
    if (!t) {
        p->failed = 1;
        return;
    }
    put_number(p, o, field, put_blob(p, blobs, t, shown * item_bytes));
    free(t);
}

static void slice_json(page *p, int *blobs, const report_layer *l, cJSON *o)
{
    const double range[2] = {l->grey_lo, l->grey_hi};
    put_number(p, o, "width", (double)l->w);
    put_number(p, o, "height", (double)l->h);
    put_doubles(p, o, "corner", l->corner, 3);
    put_doubles(p, o, "across", l->across, 3);
    put_doubles(p, o, "down", l->down, 3);
    put_doubles(p, o, "greyRange", range, 2);
    put_number(p, o, "pixels", put_blob(p, blobs, l->grey, l->w * l->h));
}

/* One layer's description, its data written as blobs. */
static cJSON *layer_json(page *p, int *blobs, const report_layer *l, size_t given_all, size_t cap)
{
    cJSON *o = cJSON_CreateObject();
    put_string(p, o, "name", l->name);
    put_string(p, o, "kind", l->kind);
    if (!strcmp(l->kind, "slice")) {
        slice_json(p, blobs, l, o);
        return o;
    }
    size_t shown = items_shown(l, given_all, cap);
    char color[8];
    color_text(color, l->color);
    put_number(p, o, "count", (double)shown);
    put_number(p, o, "total", (double)l->total);
    put_number(p, o, "length", (double)l->length);
    put_string(p, o, "color", color);
    layer_blob(p, blobs, o, "positions", l->xyz, shown, l->kept, 3 * l->length * sizeof(float));
    if (l->rgb)
        layer_blob(p, blobs, o, "colors", l->rgb, shown, l->kept, 3);
    if (l->values) {
        const double range[2] = {l->lo, l->hi};
        layer_blob(p, blobs, o, "values", l->values, shown, l->kept, sizeof(float));
        put_string(p, o, "valuesName", l->values_name);
        put_doubles(p, o, "range", range, 2);
    }
    return o;
}

/* NaN and infinities have no JSON: null. */
static cJSON *curve_values(page *p, const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        put_item(p, a, NULL, isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
    return a;
}

static cJSON *curves_json(page *p, const ptreg_report *r, size_t count)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < count; i++) {
        const char *title, *measure;
        const double *values;
        size_t n;
        report_curve_view(r, i, &title, &measure, &values, &n);
        cJSON *c = cJSON_CreateObject();
        put_string(p, c, "title", title);
        put_string(p, c, "measure", measure);
        put_item(p, c, "values", curve_values(p, values, n));
        put_item(p, a, NULL, c);
    }
    return a;
}

static cJSON *figures_json(page *p, const ptreg_report *r, size_t count)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < count; i++) {
        const char *title, *svg;
        report_figure_view(r, i, &title, &svg);
        cJSON *f = cJSON_CreateObject();
        put_string(p, f, "title", title);
        put_string(p, f, "svg", svg);
        put_item(p, a, NULL, f);
    }
    return a;
}

static cJSON *shown_json(page *p, size_t shown, size_t given, size_t cap)
{
    cJSON *o = cJSON_CreateObject();
    put_number(p, o, "points", (double)shown);
    put_number(p, o, "of", (double)given);
    put_number(p, o, "cap", (double)cap);
    return o;
}

/* The layers' blobs, then the description that names them (NULL, or the
 * page marked failed, when memory ran out). */
static cJSON *description(page *p, const ptreg_report *r, const report_contents *c)
{
    cJSON *d = cJSON_CreateObject(), *layers = cJSON_CreateArray();
    put_item(p, d, "layers", layers);
    size_t given_all = report_points_given(r), shown_all = 0;
    int blobs = 0;
    for (size_t i = 0; i < c->layer_count && !p->failed; i++) {
        report_layer l;
        report_layer_view(r, i, &l);
        put_item(p, layers, NULL, layer_json(p, &blobs, &l, given_all, c->max_points));
        shown_all += strcmp(l.kind, "slice") ? items_shown(&l, given_all, c->max_points) * l.length : 0;
    }
    put_string(p, d, "format", "ptreg-report 1");
    put_string(p, d, "title", c->title);
    put_string(p, d, "version", PTREG_VERSION_STRING);
    put_item(p, d, "shown", shown_json(p, shown_all, report_points_given(r), c->max_points));
    put_item(p, d, "curves", curves_json(p, r, c->curve_count));
    put_item(p, d, "figures", figures_json(p, r, c->figure_count));
    put_item(p, d, "key", c->key ? cJSON_CreateString(c->key) : cJSON_CreateNull());
    put_item(p, d, "result", c->json ? cJSON_Parse(c->json) : cJSON_CreateNull()); /* valid: set_json checked it */
    return d;
}

static const char *const page_head = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                                     "<meta name=\"generator\" content=\"ptreg " PTREG_VERSION_STRING "\">\n<title>";

static ptreg_status write_page(page *p, const ptreg_report *r, const char *script, ptreg_error *err)
{
    report_contents c;
    report_view(r, &c);
    puts_page(p, page_head);
    put_html_text(p, c.title);
    puts_page(p, "</title>\n</head>\n<body>\n");
    cJSON *d = description(p, r, &c);
    char *text = d && !p->failed ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    if (!text) {
        p->failed = 1;
    } else {
        puts_page(p, "<script type=\"application/json\" id=\"ptreg-report\">");
        put_script_safe(p, text);
        puts_page(p, "</script>\n<script>");
        puts_page(p, script);
        puts_page(p, "</script>\n</body>\n</html>\n");
        cJSON_free(text);
    }
    if (p->failed) {
        err->status = PTREG_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "report: out of memory");
        return PTREG_ERR_NOMEM;
    }
    return PTREG_OK;
}

int ptreg_report_available(void) { return report_viewer_script() != NULL; }

ptreg_status ptreg_report_html(const ptreg_report *r, char **html, size_t *size, ptreg_error *err)
{
    ptreg_error local;
    err = err ? err : &local;
    *html = NULL;
    if (size)
        *size = 0;
    const char *script = report_viewer_script();
    if (!script) {
        err->status = PTREG_ERR_UNSUPPORTED;
        snprintf(err->message, sizeof err->message,
                 "report: this ptreg was built without the viewer (three.js): run `make deps` (npm packages "
                 "in web/) and build again");
        return PTREG_ERR_UNSUPPORTED;
    }
    page p = {0};
    ptreg_status st = write_page(&p, r, script, err);
    if (st) {
        free(p.text);
        return st;
    }
    *html = p.text;
    if (size)
        *size = p.size;
    return PTREG_OK;
}

ptreg_status ptreg_report_write(const ptreg_report *r, const char *path, ptreg_error *err)
{
    ptreg_error local;
    err = err ? err : &local;
    char *html;
    size_t size;
    ptreg_status st = ptreg_report_html(r, &html, &size, err);
    if (st)
        return st;
    ptreg_atomic_file af;
    st = ptreg_atomic_open(path, &af, err);
    if (!st) {
        fwrite(html, 1, size, af.fp);
        st = ptreg_atomic_commit(&af, err);
    }
    free(html);
    return st;
}
