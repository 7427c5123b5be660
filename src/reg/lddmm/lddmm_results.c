/* LDDMM's result table (ptreg/results.h): what ptreg lddmm --json and
 * ptreg.lddmm_register's result hold, declared once. */
#include "core/results_table.h"
#include "ptreg/lddmm.h"

#define R ptreg_lddmm_result
static const ptreg_result_field lddmm_rows[] = {
    RESULT_AT(R, n, "landmarks", SIZE, "", "template points (and momenta)"),
    RESULT_AT(R, hamiltonian, "H", DOUBLE, "", "H(q0, p0)"),
    RESULT_FIELD(R, objective, DOUBLE, "", "the objective at the end"),
    RESULT_FIELD(R, iterations, INT, "", "L-BFGS iterations"),
    RESULT_FIELD(R, evaluations, INT, "", "objective and gradient evaluations"),
    RESULT_ENUM(R, stop_reason, "stop_reason", result_stop_reason_name, "why it stopped"),
    RESULT_FIELD(R, stop_detail, STRING, "", "liblbfgs's reason in words"),
    RESULT_FIELD(R, avg_distance_before, DOUBLE, "the clouds' units", "mean |q0 - target|"),
    RESULT_FIELD(R, avg_distance_after, DOUBLE, "the clouds' units", "mean |q1 - target|"),
    RESULT_FIELD(R, max_distance_before, DOUBLE, "the clouds' units", "largest |q0 - target|"),
    RESULT_FIELD(R, max_distance_after, DOUBLE, "the clouds' units", "largest |q1 - target|"),
    RESULT_FIELD(R, time_ms, DOUBLE, "ms", "the registration"),
    RESULT_FIELD(R, pair_terms, DOUBLE, "", "kernel pair terms evaluated")};
#undef R
RESULT_TABLE(ptreg_lddmm_result_table, "LDDMM", ptreg_lddmm_result, lddmm_rows)
