/* The report's page: what report.c gathered, as page.c writes it. */
#ifndef PTREG_REPORT_PAGE_H
#define PTREG_REPORT_PAGE_H

#include "ptreg/report.h"

typedef struct report_contents {
    const char *title, *key, *json;
    size_t max_points, layer_count, curve_count, figure_count;
} report_contents;

/* One layer as kept (report.c's layer, read only). */
typedef struct report_layer {
    const char *kind, *name;
    size_t total, kept, length;
    const float *xyz;
    const uint8_t *rgb;
    const float *values;
    const char *values_name;
    float lo, hi;
    uint32_t color;
    size_t w, h;
    const uint8_t *grey;
    double corner[3], across[3], down[3];
    float grey_lo, grey_hi;
} report_layer;

/* Item i of `kept` evenly spread over `total`. */
size_t report_pick(size_t i, size_t kept, size_t total);
size_t report_points_given(const ptreg_report *r);
void report_view(const ptreg_report *r, report_contents *c);
void report_layer_view(const ptreg_report *r, size_t i, report_layer *v);
void report_figure_view(const ptreg_report *r, size_t i, const char **title, const char **svg);
void report_curve_view(const ptreg_report *r, size_t i, const char **title, const char **measure, const double **values,
                       size_t *n);

/* The viewer's script (three.js and web/viewer.js, bundled at build time),
 * NUL-terminated; NULL in a build without it. */
const char *report_viewer_script(void);

#endif
