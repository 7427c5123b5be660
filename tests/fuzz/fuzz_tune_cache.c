/* libFuzzer entry point for the tuner's cache (src/tune/cache.c): any
 * text either gives no winner (with a warning when it is unusable) or a
 * winner inside the kernel's space, every value one its parameter takes
 * and the point within the constraints: a winner is applied as options
 * (threads, tile sizes), so nothing else may get through. See run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/tune.h"
#include "../hooks.h"
#include "tune/tune_kernels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_space(void (*make)(ptreg_tune_space *), const char *text, const ptreg_tune_machine *m)
{
    ptreg_tune_space s;
    make(&s);
    double point[PTREG_TUNE_MAX_PARAMS];
    for (int p = 0; p < s.param_count; p++)
        point[p] = s.params[p].fallback;
    char cls[16];
    if (!ptreg_tune_cache_lookup_text(text, "fuzz", &s, m, "1e8", point, cls, sizeof cls))
        return;
    for (int p = 0; p < s.param_count; p++) {
        double values[PTREG_TUNE_MAX_VALUES];
        const int count = ptreg_tune_param_values(&s.params[p], values);
        int known = 0;
        for (int v = 0; v < count; v++)
            known |= values[v] == point[p];
        if (!known)
            abort();
    }
    if (!ptreg_tune_valid(&s, m, point))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ptreg_tune_machine m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "cpu: fuzz");
    m.l1_bytes = 32768, m.l2_bytes = 1 << 20, m.cores = 4;
    check_space(ptreg_tune_space_pair, text, &m);
    check_space(ptreg_tune_space_harris, text, &m);
    check_space(ptreg_tune_space_fpfh, text, &m);
    free(text);
    return 0;
}
