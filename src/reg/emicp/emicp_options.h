/* EM-ICP's annealing schedule as options-table rows (ptreg/options.h):
 * in EM-ICP's table and in batched EM-ICP's, whose options struct has the
 * same fields. */
#ifndef PTREG_REG_EMICP_OPTIONS_H
#define PTREG_REG_EMICP_OPTIONS_H

#include "core/options_table.h"

#define EMICP_SCHEDULE_ROWS(type)                                                                                 \
    OPTION_NUMBER(type, sigma2_init, "sigma2_init", "sigma2", DOUBLE, 0, DBL_MAX,                                 \
                  PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "S",                                                  \
                  "first sigma^2; default 3 r^2, r the target's RMS radius"),                                     \
        OPTION_NUMBER(type, sigma2_final, "sigma2_final", NULL, DOUBLE, 0, DBL_MAX,                               \
                      PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "S",                                              \
                      "stop once sigma^2 is at or below S; default 3e-3 r^2"),                                    \
        OPTION_NUMBER(type, sigma_factor, "sigma_factor", NULL, DOUBLE, 0, 1,                                     \
                      PTREG_OPTION_OPEN_LO | PTREG_OPTION_OPEN_HI, "F", "sigma^2 <- sigma^2 * F each iteration"), \
        OPTION_NUMBER(type, d02, "d02", NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_AUTO, "D",                         \
                      "outlier distance^2 d0^2; default the first sigma^2"),                                      \
        OPTION_NUMBER(type, max_iter, "max_iter", NULL, INT, 0, INT_MAX, 0, "N", "most iterations"),              \
        OPTION_NUMBER(type, tol, "tol", NULL, DOUBLE, 0, DBL_MAX, 0, "T",                                         \
                      "stop when the pose changes by less than T (radians + translation / r); 0 never stops early")

#endif
