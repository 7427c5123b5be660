/* ptreg report: one self-contained HTML page that shows a run in 3-D (clouds,
 * lines, paths, volume slices; orbit, zoom, point size, a toggle per layer),
 * with its per-iteration curves, a colour bar for values, a colour key and the
 * run's JSON numbers. The viewer (three.js, bundled at build time) is inside
 * the page: it opens without network. docs/REPORT.md has the page's format. */
#ifndef PTREG_REPORT_H
#define PTREG_REPORT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default cap on the points a page shows, over all its layers: beyond
 * it every layer is thinned by the same fraction, evenly along its order, and
 * the page says how many of how many points it shows. */
#define PTREG_REPORT_MAX_POINTS ((size_t)2000000)

typedef struct ptreg_report ptreg_report;

/* Whether this library was built with the viewer (three.js from web/'s npm
 * packages): without it the page cannot be made, and ptreg_report_html and
 * ptreg_report_write fail with PTREG_ERR_UNSUPPORTED, saying so. */
PTREG_API int ptreg_report_available(void);

/* An empty report titled `title` (the page's heading). */
PTREG_API ptreg_status ptreg_report_create(const char *title, ptreg_report **report, ptreg_error *err);
PTREG_API void ptreg_report_destroy(ptreg_report *report);
/* The cap on the points shown (0: PTREG_REPORT_MAX_POINTS). */
PTREG_API void ptreg_report_set_max_points(ptreg_report *report, size_t max_points);

/* A cloud of n points (x y z floats) in one colour (0xRRGGBB). The data are
 * copied (at most the cap of them, evenly thinned). */
PTREG_API ptreg_status ptreg_report_add_cloud(ptreg_report *report, const char *name, const float *xyz, size_t n,
                                              uint32_t color, ptreg_error *err);
/* A cloud coloured point by point: rgb holds 3 bytes a point. */
PTREG_API ptreg_status ptreg_report_add_cloud_rgb(ptreg_report *report, const char *name, const float *xyz, size_t n,
                                                  const uint8_t *rgb, ptreg_error *err);
/* A cloud coloured by a value per point through the page's colour map, with
 * a colour bar titled values_name from the smallest to the largest finite
 * value of all n (not only of the points shown). */
PTREG_API ptreg_status ptreg_report_add_cloud_values(ptreg_report *report, const char *name, const float *xyz, size_t n,
                                                     const float *values, const char *values_name, ptreg_error *err);
/* n line segments: ends holds 2n points (x y z), each segment's two ends. */
PTREG_API ptreg_status ptreg_report_add_lines(ptreg_report *report, const char *name, const float *ends, size_t n,
                                              uint32_t color, ptreg_error *err);
/* count paths of `length` points each (a point's trajectory): xyz holds the
 * paths one after another. */
PTREG_API ptreg_status ptreg_report_add_paths(ptreg_report *report, const char *name, const float *xyz, size_t count,
                                              size_t length, uint32_t color, ptreg_error *err);
/* A cloud coloured by curvature (layer "cloud"; the points without a
 * normal, NaN curvature, grey in "without a normal") and segments along
 * at most 20,000 of its normals (every stride-th finite one), each 2% of
 * the cloud's bounding-box diagonal long: what ptreg normals --html shows. */
PTREG_API ptreg_status ptreg_report_add_normals(ptreg_report *report, const float *xyz, size_t n, const float *normals,
                                                const float *curvature, ptreg_error *err);
/* A cloud coloured by how distinct each point's descriptor is (n rows of
 * `bins`): its Euclidean distance to the mean of the finite rows, in layer
 * "cloud" with a colour bar titled values_name; the points without a
 * descriptor (a NaN in their row) grey in "without a descriptor". */
PTREG_API ptreg_status ptreg_report_add_descriptors(ptreg_report *report, const float *xyz, size_t n, const float *rows,
                                                    int bins, const char *values_name, ptreg_error *err);
/* (lddmm.h's types, named here so that this header stands alone) */
struct ptreg_lddmm_options;
struct ptreg_lddmm_result;
struct ptreg_lddmm_model;
/* lddmm's page: the template's n landmarks q0 (orange), the target
 * (blue), each landmark's path along the flow of result->p0 (shot again
 * with opt; grey) and where the template ended (red). */
PTREG_API ptreg_status ptreg_report_add_lddmm(ptreg_report *report, const double *q0, const double *target, size_t n,
                                              const struct ptreg_lddmm_options *opt,
                                              const struct ptreg_lddmm_result *result, ptreg_error *err);
/* warp's page: the model's landmarks, the points before (green) and after
 * (blue), and the paths along the flow (ptreg_lddmm_warp_paths) of up to
 * 2,000 of them, evenly along their order (fewer for long flows: 400,000
 * path points at most). */
PTREG_API ptreg_status ptreg_report_add_warp(ptreg_report *report, const struct ptreg_lddmm_model *model,
                                             const struct ptreg_lddmm_options *opt, const ptreg_cloud *before,
                                             const double *after, ptreg_error *err);
/* A volume as three orthogonal slices through its centre (voxel centres
 * at origin + index * spacing), each sampled down to at most 512 pixels a
 * side (the voxel under each pixel's centre), in one grey from the 0.5%
 * to the 99.5% quantile of their finite pixels (their extremes when those
 * meet): what ptreg harris3d --html shows. */
PTREG_API ptreg_status ptreg_report_add_volume_slices(ptreg_report *report, const ptreg_volume *vol, ptreg_error *err);
/* A curve of n values, one a step (the measure per iteration), beside the view. */
PTREG_API ptreg_status ptreg_report_add_curve(ptreg_report *report, const char *title, const char *measure,
                                              const double *values, size_t n, ptreg_error *err);
/* A figure beside the view: SVG text (as ptreg_pole_figure_svg makes),
 * drawn as given under its title. */
PTREG_API ptreg_status ptreg_report_add_figure(ptreg_report *report, const char *title, const char *svg,
                                               ptreg_error *err);
/* A colour key the viewer draws for ptreg_orientation_color's maps: "ipf"
 * (cubic motifs: the inverse pole figure's standard triangle) or "axis"
 * (the others: the absolute components of the sample's z axis). */
PTREG_API ptreg_status ptreg_report_set_key(ptreg_report *report, const char *key, ptreg_error *err);
/* The run's numbers: the text of a JSON object (the command's --json),
 * shown beside the view and kept in the page for scripts. */
PTREG_API ptreg_status ptreg_report_set_json(ptreg_report *report, const char *json, ptreg_error *err);

/* The page: a NUL-terminated string the caller frees with free(). */
PTREG_API ptreg_status ptreg_report_html(const ptreg_report *report, char **html, size_t *size, ptreg_error *err);
/* The page written to path, atomically (nothing is left on failure). */
PTREG_API ptreg_status ptreg_report_write(const ptreg_report *report, const char *path, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
