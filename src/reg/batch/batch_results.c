/* Batch registration's result table (ptreg/results.h): what ptreg batch
 * --json and ptreg.batch's result hold of ptreg_batch_stats, declared once
 * (the pairs' transforms, iterations and stops are arrays each front end
 * writes its own way; the command line's stats are every rank's, its atoms'
 * those of the orientations' registrations). */
#include "core/results_table.h"
#include "ptreg/batch.h"

#define R ptreg_batch_stats
static const ptreg_result_field batch_rows[] = {
    RESULT_AT(R, time_ms, "register_ms", DOUBLE, "ms", "the registrations (on a device, packing and copies included)"),
    RESULT_FIELD(R, pairs_per_s, DOUBLE, "1/s", "pairs registered per second"),
    RESULT_FIELD(R, gpts, DOUBLE, "1e9 / s", "pair_terms / time"),
    RESULT_FIELD(R, pair_terms, DOUBLE, "", "source points x target points x iterations, summed over the pairs"),
    RESULT_FIELD(R, isa, STRING, "", "the CPU's instruction set, or the device's name")};
#undef R
RESULT_TABLE(ptreg_batch_stats_table, "batch", ptreg_batch_stats, batch_rows)
