/* LDDMM's results on disk: the model a warp needs (the template landmarks,
 * their initial momenta, the flow's parameters) and landmark tables. The
 * formats layer (src/io) implements them; apart from ptreg/lddmm.h so that
 * it needs none of the algorithm's types (docs/DESIGN.md, layers). */
#ifndef PTREG_LDDMM_MODEL_H
#define PTREG_LDDMM_MODEL_H

#include <stddef.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_lddmm_integrator {
    PTREG_LDDMM_EULER = 0, /* explicit Euler */
    PTREG_LDDMM_RK2        /* Ralston's second-order Runge-Kutta */
} ptreg_lddmm_integrator;

/* What a warp needs: the template landmarks, their initial momenta and the
 * flow's parameters. */
typedef struct ptreg_lddmm_model {
    size_t n;
    double *q0, *p0; /* n x 3 each */
    double sigma;
    int time_points;
    ptreg_lddmm_integrator integrator;
} ptreg_lddmm_model;

/* Writes, atomically, by extension: .vtk, legacy ASCII POLYDATA of the
 * template with point data VECTORS InitialMomentum and dataset field data
 * sigma, time_points, integrator (0 Euler, 1 RK2); or .csv/.txt, a line
 * "# ptreg lddmm sigma S time_points T integrator euler|rk2", a header
 * x,y,z,px,py,pz and one row per landmark. Numbers in %.17g. */
PTREG_API ptreg_status ptreg_lddmm_model_write(const char *path, const ptreg_lddmm_model *model, ptreg_error *err);
/* Reads either form back; bad input is PTREG_ERR_FORMAT naming the line. */
PTREG_API ptreg_status ptreg_lddmm_model_read(const char *path, ptreg_lddmm_model *model, ptreg_error *err);
PTREG_API void ptreg_lddmm_model_free(ptreg_lddmm_model *model);

/* A landmark table (../shared/data/landmarks/optical_nerves.txt): a header
 * of column names (quotes allowed), then one landmark set per row; columns
 * STEMx STEMy STEMz side by side make one landmark, in column order, and
 * other columns (a file name ...) are skipped. Tabs, blanks or commas
 * separate. Reads data row `row` (1 = the first after the header) into
 * *xyz (n x 3, malloc'ed). */
PTREG_API ptreg_status ptreg_landmark_table_read(const char *path, size_t row, double **xyz, size_t *n,
                                                 ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
