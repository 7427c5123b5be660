/* CPD's result table (ptreg/results.h): what ptreg cpd --json and
 * ptreg.cpd's result hold, declared once. The moved points and the field
 * are arrays the front ends write as files. */
#include "core/results_table.h"
#include "ptreg/cpd.h"
#include "reg/cpd/cpd_impl.h"

static const char *precision_name(int value) { return ptreg_precision_name((ptreg_precision)value); }

static const ptreg_result_field cpd_rows[] = {
    RESULT_ENUM(ptreg_cpd_result, transform, "transform", cpd_transform_name, "the transform fitted"),
    RESULT_ARRAY(ptreg_cpd_result, transformation, "transformation", TRANSFORM, 16, "",
                 "4 x 4, row-major: takes the source onto the target (deformable: the identity)"),
    RESULT_FIELD(ptreg_cpd_result, scale, DOUBLE, "", "similarity's scale s (1 otherwise)"),
    RESULT_FIELD(ptreg_cpd_result, m, SIZE, "", "source points"),
    RESULT_FIELD(ptreg_cpd_result, beta, DOUBLE, "the clouds' units", "the field's Gaussian width"),
    RESULT_FIELD(ptreg_cpd_result, sigma2_init, DOUBLE, "the clouds' units squared", "the first sigma^2"),
    RESULT_FIELD(ptreg_cpd_result, sigma2, DOUBLE, "the clouds' units squared", "the last sigma^2"),
    RESULT_FIELD(ptreg_cpd_result, objective, DOUBLE, "", "the bound Q at the last iteration"),
    RESULT_FIELD(ptreg_cpd_result, np, DOUBLE, "", "the posterior's sum: source points matched, in expectation"),
    RESULT_FIELD(ptreg_cpd_result, iterations, INT, "", "EM iterations made"),
    RESULT_FIELD(ptreg_cpd_result, converged, BOOL, "", "stopped by tol"),
    RESULT_ENUM(ptreg_cpd_result, stop_reason, "stop_reason", result_stop_reason_name, "why it stopped"),
    RESULT_FIELD(ptreg_cpd_result, cg_iterations, INT, "", "deformable: conjugate-gradient steps in all"),
    RESULT_FIELD(ptreg_cpd_result, time_ms, DOUBLE, "ms", "clouds in memory to result"),
    RESULT_FIELD(ptreg_cpd_result, pair_ms, DOUBLE, "ms", "the part spent in Gauss transforms"),
    RESULT_FIELD(ptreg_cpd_result, pair_terms, DOUBLE, "", "point pairs evaluated"),
    RESULT_FIELD(ptreg_cpd_result, gpts, DOUBLE, "1e9 / s", "pair_terms / time"),
    RESULT_FIELD(ptreg_cpd_result, culled, DOUBLE, "", "the share of pair tiles skipped (all terms below float32)"),
    RESULT_ENUM(ptreg_cpd_result, precision, "precision", precision_name, "the pair terms' arithmetic"),
    RESULT_FIELD(ptreg_cpd_result, isa, STRING, "", "the engine's instruction set"),
    RESULT_FIELD(ptreg_cpd_result, device, DEVICE, "", "where it ran")};
RESULT_TABLE(ptreg_cpd_result_table, "CPD", ptreg_cpd_result, cpd_rows)
