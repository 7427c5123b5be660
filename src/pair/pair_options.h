/* The pair engine's options as table rows (ptreg/options.h), for its own
 * table (ptreg_pair_option_table) and for those of the algorithms that
 * carry a ptreg_pair_options (EM-ICP's `pair`). */
#ifndef PTREG_PAIR_OPTIONS_H
#define PTREG_PAIR_OPTIONS_H

#include "core/options_table.h"
#include "pair/pair_kernels.h"
#include "ptreg/pair.h"
#include "pair/pair_engine.h"

extern const ptreg_option_name pair_precision_names[];
extern const ptreg_option_name pair_order_names[];

/* The precision changes results; the rest are the tuner's knobs (col_tile
 * also sets where float32 tile sums enter float64). `base`: the offset of
 * the ptreg_pair_options in the struct the table is of. */
#define PAIR_AT(base, member) ((base) + offsetof(ptreg_pair_options, member))
#define PAIR_OPTION_ROWS(base)                                                                                   \
    OPTION_ENUM_AT(PAIR_AT(base, precision), "precision", NULL, pair_precision_names, 0,                         \
                   "pair arithmetic: fp32 (float32, float64 sums), fp64 (the reference), fp16 (points "          \
                   "stored as half)"),                                                                           \
        OPTION_NUMBER_AT(PAIR_AT(base, col_tile), "col_tile", "tile", INT, 16, PTREG_PAIR_MAX_COL_TILE,          \
                         PTREG_OPTION_KNOB, "N", "pair engine: columns per tile"),                               \
        OPTION_NUMBER_AT(PAIR_AT(base, row_block), "row_block", NULL, INT, 1, 1 << 20, PTREG_OPTION_KNOB, "N",   \
                         "pair engine: rows per parallel work item"),                                            \
        OPTION_NUMBER_AT(PAIR_AT(base, row_vectors), "row_vectors", NULL, INT, 1, 4,                             \
                         PTREG_OPTION_KNOB | PTREG_OPTION_POW2, "N", "pair engine: row vectors swept together"), \
        OPTION_ENUM_AT(PAIR_AT(base, order), "order", "loop", pair_order_names, PTREG_OPTION_KNOB,               \
                       "pair engine: the loop order over row groups and column tiles")

#endif
