/* The report's own calls, which its other files draw with: not public
 * (docs/API.md, "Tiers"). */
#ifndef PTREG_REPORT_IMPL_H
#define PTREG_REPORT_IMPL_H

#include "ptreg/report.h"

/* A grey image of w x h values (row-major: x fastest) between lo (black) and
 * hi (white), on the rectangle with corner `corner` whose rows run along
 * `across` (the whole width) and whose columns along `down` (the whole
 * height): a slice of a volume in the clouds' frame. */
ptreg_status ptreg_report_add_slice(ptreg_report *report, const char *name, const float *values, size_t w, size_t h,
                                    float lo, float hi, const double corner[3], const double across[3],
                                    const double down[3], ptreg_error *err);

#endif
