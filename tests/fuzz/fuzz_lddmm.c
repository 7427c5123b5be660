/* libFuzzer entry point for the LDDMM result reader (VTK and CSV forms)
 * and the landmark-table reader.
 * Any broken contract aborts. See run.sh. */
#include "ptreg/lddmm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A read gives n finite landmarks and momenta and usable flow parameters,
 * or an error naming the input and a line, with nothing left allocated. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptreg_lddmm_model m;
    ptreg_error err;
    ptreg_status s = ptreg_lddmm_model_read_memory(data, size, "fuzz.vtk", &m, &err);
    if (s == PTREG_OK) {
        if (!m.n || !m.q0 || !m.p0 || !(m.sigma > 0) || m.time_points < 2)
            abort();
        for (size_t i = 0; i < 3 * m.n; i++)
            if (!isfinite(m.q0[i]) || !isfinite(m.p0[i]))
                abort();
    } else {
        if (m.q0 || m.p0 || m.n || !strstr(err.message, "fuzz.vtk"))
            abort();
        if (s == PTREG_ERR_FORMAT && !strstr(err.message, ": line "))
            abort();
    }
    ptreg_lddmm_model_free(&m);
    /* the same bytes as a landmark table, rows 1 and 2 */
    for (size_t row = 1; row <= 2; row++) {
        double *xyz;
        size_t n;
        s = ptreg_landmark_table_read_memory(data, size, "fuzz.tsv", row, &xyz, &n, &err);
        if (s == PTREG_OK) {
            if (!n || !xyz)
                abort();
            for (size_t i = 0; i < 3 * n; i++)
                if (!isfinite(xyz[i]))
                    abort();
            free(xyz);
        } else if (xyz || n || !strstr(err.message, "fuzz.tsv") ||
                   (s == PTREG_ERR_FORMAT && !strstr(err.message, ": line "))) {
            abort();
        }
    }
    return 0;
}
