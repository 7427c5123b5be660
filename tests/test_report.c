/* HTML reports (ptreg/report.h): the page's description and data read back
 * (layers, thinning to the cap, ranges, curves, slices), text that could end
 * a <script> kept inside it, and the errors. The page in a browser:
 * tests/html/. */
#define _POSIX_C_SOURCE 200809L /* strndup */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "ptreg/lddmm.h"
#include "ptreg/report.h"
#include "report/report_impl.h"

/* The page's description (the JSON of id ptreg-report), parsed. */
static cJSON *description(const char *html)
{
    const char *open = "<script type=\"application/json\" id=\"ptreg-report\">";
    const char *start = strstr(html, open), *end = start ? strstr(start, "</script>") : NULL;
    if (!end)
        return NULL;
    start += strlen(open);
    char *text = strndup(start, (size_t)(end - start));
    cJSON *d = cJSON_Parse(text);
    free(text);
    return d;
}

static int digit_value(char c)
{
    const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *at = strchr(digits, c);
    return c && at ? (int)(at - digits) : -1;
}

/* Blob `id` decoded from base64 into a fresh buffer; its size in *n. */
static uint8_t *blob(const char *html, int id, size_t *n)
{
    char open[96];
    snprintf(open, sizeof open, "id=\"ptreg-blob-%d\">", id);
    const char *s = strstr(html, open);
    if (!s)
        return NULL;
    s += strlen(open);
    const char *end = strchr(s, '<');
    uint8_t *out = malloc((size_t)(end - s) * 3 / 4 + 3);
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (; s < end && *s != '='; s++) {
        acc = acc << 6 | (uint32_t)digit_value(*s);
        if ((bits += 6) >= 8)
            out[k++] = (uint8_t)(acc >> (bits -= 8));
    }
    *n = k;
    return out;
}

static cJSON *layer(cJSON *d, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(d, "layers"), i); }
static double number(cJSON *o, const char *name) { return cJSON_GetNumberValue(cJSON_GetObjectItem(o, name)); }

static char *page_of(ptreg_report *r)
{
    char *html = NULL;
    size_t size = 0;
    ptreg_error err;
    ptreg_status st = ptreg_report_html(r, &html, &size, &err);
    CHECK_MSG(st == PTREG_OK, "%s", err.message);
    CHECK(!html || strlen(html) == size);
    return html;
}

static float *line_of_points(size_t n)
{
    float *xyz = malloc(3 * n * sizeof *xyz);
    for (size_t i = 0; i < n; i++)
        xyz[3 * i] = (float)i, xyz[3 * i + 1] = 0.5f * (float)i, xyz[3 * i + 2] = -1.0f;
    return xyz;
}

/* Layer `i`'s x coordinates (line_of_points' index) as shown, into xs. */
static size_t shown_x(const char *html, cJSON *d, int i, float *xs, size_t most)
{
    size_t n;
    float *xyz = (float *)blob(html, (int)number(layer(d, i), "positions"), &n);
    n = xyz ? n / (3 * sizeof(float)) : 0;
    for (size_t k = 0; k < n && k < most; k++)
        xs[k] = xyz[3 * k];
    free(xyz);
    return n;
}

/* Over the cap, every layer keeps the same fraction of its points, evenly,
 * the first always; the page says how many of how many it shows. */
static void test_thinning(void)
{
    ptreg_report *r;
    ptreg_error err;
    REQUIRE(ptreg_report_create("thinning", &r, &err) == PTREG_OK);
    ptreg_report_set_max_points(r, 300);
    float *a = line_of_points(300), *b = line_of_points(100), *c = line_of_points(3000), xs[300];
    CHECK(ptreg_report_add_cloud(r, "a", a, 300, 0x123456u, &err) == PTREG_OK);
    CHECK(ptreg_report_add_cloud(r, "b", b, 100, 0xabcdefu, &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    CHECK(number(layer(d, 0), "count") == 225 && number(layer(d, 0), "total") == 300);
    CHECK(number(layer(d, 1), "count") == 75 && number(layer(d, 1), "total") == 100);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, 1), "color")), "#abcdef"));
    cJSON *shown = cJSON_GetObjectItem(d, "shown");
    CHECK(number(shown, "points") == 300 && number(shown, "of") == 400 && number(shown, "cap") == 300);
    CHECK(shown_x(html, d, 0, xs, 300) == 225);
    int even = 1;
    for (size_t i = 0; i < 225; i++)
        even &= xs[i] == (float)(i * 300 / 225);
    CHECK_MSG(even, "layer a is not thinned evenly");
    cJSON_Delete(d);
    free(html);
    ptreg_report_destroy(r);
    /* one cloud ten times the cap: every tenth point */
    REQUIRE(ptreg_report_create("big", &r, &err) == PTREG_OK);
    ptreg_report_set_max_points(r, 300);
    CHECK(ptreg_report_add_cloud(r, "c", c, 3000, 0, &err) == PTREG_OK);
    html = page_of(r);
    d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    CHECK(shown_x(html, d, 0, xs, 300) == 300);
    even = 1;
    for (size_t i = 0; i < 300; i++)
        even &= xs[i] == (float)(10 * i);
    CHECK_MSG(even, "layer c is not every tenth point");
    cJSON_Delete(d);
    free(html);
    free(a), free(b), free(c);
    ptreg_report_destroy(r);
}

/* A values layer: its colour bar's range is of every finite value given,
 * not only of the points shown; curves keep NaN as null. */
static void test_values_and_curves(void)
{
    ptreg_report *r;
    ptreg_error err;
    REQUIRE(ptreg_report_create("values", &r, &err) == PTREG_OK);
    ptreg_report_set_max_points(r, 3);
    float *xyz = line_of_points(9), values[9] = {5, 2, 3, 9, 4, NAN, 6, -1.5f, 8};
    CHECK(ptreg_report_add_cloud_values(r, "v", xyz, 9, values, "distance", &err) == PTREG_OK);
    const double curve[4] = {1.0, 0.5, NAN, 0.25};
    CHECK(ptreg_report_add_curve(r, "MSE per iteration", "MSE", curve, 4, &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    cJSON *range = cJSON_GetObjectItem(layer(d, 0), "range");
    CHECK(cJSON_GetNumberValue(cJSON_GetArrayItem(range, 0)) == -1.5);
    CHECK(cJSON_GetNumberValue(cJSON_GetArrayItem(range, 1)) == 9.0);
    size_t n;
    float *shown = (float *)blob(html, (int)number(layer(d, 0), "values"), &n);
    REQUIRE(shown != NULL);
    CHECK(n == 3 * sizeof(float) && shown[0] == 5.0f && shown[1] == 9.0f && shown[2] == 6.0f);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "curves"), 0);
    cJSON *cv = cJSON_GetObjectItem(c, "values");
    CHECK(cJSON_GetArraySize(cv) == 4 && cJSON_IsNull(cJSON_GetArrayItem(cv, 2)));
    CHECK(cJSON_GetNumberValue(cJSON_GetArrayItem(cv, 3)) == 0.25);
    free(shown);
    cJSON_Delete(d);
    free(html);
    free(xyz);
    ptreg_report_destroy(r);
}

/* Text from files and users (names, the JSON) cannot end the page's
 * scripts: '<' is escaped, and the names read back whole. */
static void test_script_safe(void)
{
    ptreg_report *r;
    ptreg_error err;
    const char *name = "</script><script>alert(1)</script><!--";
    REQUIRE(ptreg_report_create(name, &r, &err) == PTREG_OK);
    float p[3] = {0, 0, 0};
    CHECK(ptreg_report_add_cloud(r, name, p, 1, 0, &err) == PTREG_OK);
    CHECK(ptreg_report_set_json(r, "{\"source\": \"</script>x\"}", &err) == PTREG_OK);
    char *html = page_of(r);
    REQUIRE(html != NULL);
    CHECK(!strstr(html, "<script>alert"));
    CHECK(strstr(html, "<title>&lt;/script&gt;&lt;script&gt;") != NULL);
    cJSON *d = description(html);
    REQUIRE(d != NULL);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, 0), "name")), name));
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "result"), "source")), "</script>x"));
    cJSON_Delete(d);
    free(html);
    ptreg_report_destroy(r);
}

/* Lines, paths and a slice: their data and geometry read back. */
static void test_lines_paths_slice(void)
{
    ptreg_report *r;
    ptreg_error err;
    REQUIRE(ptreg_report_create("shapes", &r, &err) == PTREG_OK);
    float *xyz = line_of_points(12);
    CHECK(ptreg_report_add_lines(r, "segments", xyz, 6, 0xff0000u, &err) == PTREG_OK);
    CHECK(ptreg_report_add_paths(r, "paths", xyz, 3, 4, 0x00ff00u, &err) == PTREG_OK);
    const float img[6] = {0, 1, 2, 3, 4, 100};
    const double corner[3] = {1, 2, 3}, across[3] = {4, 0, 0}, down[3] = {0, 0, 2};
    CHECK(ptreg_report_add_slice(r, "z", img, 3, 2, 0.0f, 4.0f, corner, across, down, &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    CHECK(number(layer(d, 0), "count") == 6 && number(layer(d, 0), "length") == 2);
    CHECK(number(layer(d, 1), "count") == 3 && number(layer(d, 1), "length") == 4);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, 2), "kind")), "slice"));
    CHECK(number(layer(d, 2), "width") == 3 && number(layer(d, 2), "height") == 2);
    size_t n;
    uint8_t *grey = blob(html, (int)number(layer(d, 2), "pixels"), &n);
    REQUIRE(grey != NULL);
    CHECK(n == 6 && grey[0] == 0 && grey[2] == 128 && grey[4] == 255 && grey[5] == 255);
    CHECK(cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(layer(d, 2), "across"), 0)) == 4.0);
    free(grey);
    cJSON_Delete(d);
    free(html);
    free(xyz);
    ptreg_report_destroy(r);
}

static void test_errors(void)
{
    ptreg_report *r;
    ptreg_error err;
    CHECK(ptreg_report_create(NULL, &r, &err) == PTREG_ERR_ARG && r == NULL);
    REQUIRE(ptreg_report_create("errors", &r, &err) == PTREG_OK);
    CHECK(ptreg_report_set_json(r, "[1, 2]", &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_set_json(r, "{\"a\": ", &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_set_key(r, "rainbow", &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_add_cloud(r, NULL, NULL, 0, 0, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_add_cloud(r, "x", NULL, 5, 0, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_add_paths(r, "p", (float[3]){0}, 1, 1, 0, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_report_add_slice(r, "s", (float[1]){0}, 0, 1, 0, 1, (double[3]){0}, (double[3]){0}, (double[3]){0},
                                 &err) == PTREG_ERR_ARG);
    const char *path = "/nonexistent-folder-of-ptreg/report.html";
    CHECK(ptreg_report_write(r, path, &err) != PTREG_OK);
    CHECK(access(path, F_OK) != 0);
    char *html = page_of(r); /* nothing added: still a page */
    cJSON *d = html ? description(html) : NULL;
    CHECK(d && cJSON_GetArraySize(cJSON_GetObjectItem(d, "layers")) == 0 &&
          cJSON_IsNull(cJSON_GetObjectItem(d, "result")));
    cJSON_Delete(d);
    free(html);
    ptreg_report_destroy(r);
}

/* A volume's three central slices: sizes sampled down to 512 a side, the
 * fixed axis's middle named, and one grey over the quantiles. */
static void test_volume_slices(void)
{
    ptreg_report *r;
    ptreg_error err;
    ptreg_volume vol;
    REQUIRE(ptreg_report_create("volume", &r, &err) == PTREG_OK);
    REQUIRE(ptreg_volume_alloc(&vol, 1030, 4, 3, PTREG_VOXEL_F32, &err) == PTREG_OK);
    float *v = vol.data;
    for (size_t i = 0; i < ptreg_volume_count(&vol); i++)
        v[i] = (float)(i % 1030); /* x itself */
    CHECK(ptreg_report_add_volume_slices(r, &vol, &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    static const char *const names[3] = {"slice xy (z = 1)", "slice xz (y = 2)", "slice yz (x = 515)"};
    static const double widths[3] = {344, 344, 4}, heights[3] = {4, 3, 3}; /* 1030 in steps of 3 */
    for (int k = 0; k < 3; k++) {
        CHECK_MSG(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, k), "name")), names[k]), "%s",
                  cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, k), "name")));
        CHECK(number(layer(d, k), "width") == widths[k] && number(layer(d, k), "height") == heights[k]);
    }
    size_t n;
    uint8_t *grey = blob(html, (int)number(layer(d, 0), "pixels"), &n);
    REQUIRE(grey != NULL);
    CHECK(n == 344 * 4 && grey[0] == 0 && grey[343] == 255); /* the ends beyond the quantiles */
    free(grey);
    cJSON_Delete(d);
    free(html);
    ptreg_volume_free(&vol);
    ptreg_report_destroy(r);
}

/* The feature pages' layers: a point without a value goes grey in its own
 * layer; normals become segments; a descriptor's distance to the mean. */
static void test_feature_layers(void)
{
    ptreg_report *r;
    ptreg_error err;
    REQUIRE(ptreg_report_create("features", &r, &err) == PTREG_OK);
    const float xyz[9] = {0, 0, 0, 3, 0, 0, 0, 4, 0}, normals[9] = {0, 0, 1, NAN, 0, 0, 0, 0, 1};
    const float curvature[3] = {0.1f, NAN, 0.3f};
    CHECK(ptreg_report_add_normals(r, xyz, 3, normals, curvature, &err) == PTREG_OK);
    const float rows[6] = {0, 0, 2, 0, NAN, 1}; /* 2 bins: the mean of the finite rows is (1, 0) */
    CHECK(ptreg_report_add_descriptors(r, xyz, 3, rows, 2, "distance", &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    static const char *const names[5] = {"cloud", "without a normal", "normals", "cloud", "without a descriptor"};
    static const double counts[5] = {2, 1, 2, 2, 1};
    for (int k = 0; k < 5; k++) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, k), "name"));
        CHECK_MSG(name && !strcmp(name, names[k]), "layer %d: %s", k, name ? name : "(none)");
        CHECK_MSG(number(layer(d, k), "count") == counts[k], "layer %d: count %g", k, number(layer(d, k), "count"));
    }
    cJSON_Delete(d);
    free(html);
    ptreg_report_destroy(r);
}

/* lddmm's and warp's pages: their layers, the paths one a landmark (or a
 * point) of time_points each; at rest (zero momenta) a path stays put. */
static void test_lddmm_layers(void)
{
    ptreg_report *r;
    ptreg_error err;
    REQUIRE(ptreg_report_create("lddmm", &r, &err) == PTREG_OK);
    double q0[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, target[9] = {0, 0, 1, 1, 0, 1, 0, 1, 1}, p0[9] = {0};
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.time_points = 5;
    ptreg_lddmm_result res;
    memset(&res, 0, sizeof res);
    res.n = 3, res.p0 = p0, res.q1 = q0;
    CHECK(ptreg_report_add_lddmm(r, q0, target, 3, &o, &res, &err) == PTREG_OK);
    ptreg_lddmm_model model = {3, q0, p0, o.sigma, o.time_points, o.integrator};
    ptreg_cloud before;
    REQUIRE(ptreg_cloud_alloc(&before, 2, 0, &err) == PTREG_OK);
    for (int k = 0; k < 6; k++)
        before.xyz[k] = (float)k;
    const double after[6] = {0, 1, 2, 3, 4, 5};
    CHECK(ptreg_report_add_warp(r, &model, &o, &before, after, &err) == PTREG_OK);
    char *html = page_of(r);
    cJSON *d = html ? description(html) : NULL;
    REQUIRE(d != NULL);
    static const char *const names[8] = {"template",  "target",        "paths",        "template at t = 1",
                                         "landmarks", "points before", "points after", "paths"};
    static const double counts[8] = {3, 3, 3, 3, 3, 2, 2, 2};
    for (int k = 0; k < 8; k++) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(layer(d, k), "name"));
        CHECK_MSG(name && !strcmp(name, names[k]), "layer %d: %s", k, name ? name : "(none)");
        CHECK_MSG(number(layer(d, k), "count") == counts[k], "layer %d: count %g", k, number(layer(d, k), "count"));
    }
    CHECK(number(layer(d, 2), "length") == 5 && number(layer(d, 7), "length") == 5);
    cJSON_Delete(d);
    free(html);
    ptreg_cloud_free(&before);
    ptreg_report_destroy(r);
}

int main(void)
{
    if (!ptreg_report_available()) {
        /* a build without web/'s packages: the page is refused, saying why */
        ptreg_report *r;
        ptreg_error err;
        char *html;
        CHECK(ptreg_report_create("t", &r, &err) == PTREG_OK);
        CHECK(ptreg_report_html(r, &html, NULL, &err) == PTREG_ERR_UNSUPPORTED && strstr(err.message, "make deps"));
        ptreg_report_destroy(r);
        return check_exit();
    }
    test_thinning();
    test_values_and_curves();
    test_script_safe();
    test_volume_slices();
    test_feature_layers();
    test_lddmm_layers();
    test_lines_paths_slice();
    test_errors();
    return check_exit();
}
