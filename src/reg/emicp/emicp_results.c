/* EM-ICP's result table (ptreg/results.h): what ptreg emicp --json and
 * ptreg.emicp's result hold, declared once. */
#include "core/results_table.h"
#include "ptreg/emicp.h"

static const char *precision_name(int value) { return ptreg_precision_name((ptreg_precision)value); }

static const ptreg_result_field emicp_rows[] = {
    RESULT_ARRAY(ptreg_emicp_result, transformation, "transformation", TRANSFORM, 16, "",
                 "4 x 4, row-major: takes the source onto the target"),
    RESULT_FIELD(ptreg_emicp_result, rmse, DOUBLE, "the clouds' units",
                 "of the source points whose nearest target point is within 3 sigma_final"),
    RESULT_FIELD(ptreg_emicp_result, fitness, DOUBLE, "", "those points / source points"),
    RESULT_FIELD(ptreg_emicp_result, pairs, SIZE, "", "those points"),
    RESULT_FIELD(ptreg_emicp_result, iterations, INT, "", "E-steps (and transform updates) made"),
    RESULT_FIELD(ptreg_emicp_result, converged, BOOL, "", "stopped by tol"),
    RESULT_ENUM(ptreg_emicp_result, stop_reason, "stop_reason", result_stop_reason_name, "why it stopped"),
    RESULT_FIELD(ptreg_emicp_result, time_ms, DOUBLE, "ms", "clouds in memory to result"),
    RESULT_FIELD(ptreg_emicp_result, pair_ms, DOUBLE, "ms", "the part spent in the pair engine"),
    RESULT_FIELD(ptreg_emicp_result, pair_terms, DOUBLE, "", "source points x target points x iterations"),
    RESULT_FIELD(ptreg_emicp_result, gpts, DOUBLE, "1e9 / s", "pair_terms / time"),
    RESULT_FIELD(ptreg_emicp_result, sigma2_init, DOUBLE, "the clouds' units squared", "the first E-step's sigma^2"),
    RESULT_FIELD(ptreg_emicp_result, sigma2_final, DOUBLE, "the clouds' units squared", "the last E-step's sigma^2"),
    RESULT_FIELD(ptreg_emicp_result, d02, DOUBLE, "the clouds' units squared", "the outlier term used"),
    RESULT_FIELD(ptreg_emicp_result, radius, DOUBLE, "the clouds' units", "r, the scale of the defaults and of tol"),
    RESULT_ENUM(ptreg_emicp_result, precision, "precision", precision_name, "the pair engine's arithmetic"),
    RESULT_FIELD(ptreg_emicp_result, isa, STRING, "", "the engine's instruction set, or the device's name"),
    RESULT_FIELD(ptreg_emicp_result, device, DEVICE, "", "where the E-steps ran")};
RESULT_TABLE(ptreg_emicp_result_table, "EM-ICP", ptreg_emicp_result, emicp_rows)
