/* libFuzzer entry point for option values given as text (ptreg_option_parse,
 * what the command line hands the library's options tables) and for option
 * names (ptreg_option_find). The first byte picks a table and a row; the rest
 * is the value. A value taken must leave every field in its range (only
 * the table's cross-field rules may refuse it) and must read back as the
 * text it came from would; a value refused must leave the options as they
 * were, with a message. See run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/batch.h"
#include "ptreg/emicp.h"
#include "ptreg/features.h"
#include "ptreg/global.h"
#include "ptreg/harris3d.h"
#include "ptreg/icp.h"
#include "ptreg/lddmm.h"
#include "ptreg/nn.h"
#include "ptreg/options.h"
#include "ptreg/pair.h"
#include "ptreg/tune.h"
#include "core/options_table.h"
#include "pair/pair_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef const ptreg_option_table *(*table_fn)(void);
static const table_fn tables[] = {ptreg_emicp_option_table,   ptreg_batch_option_table,    ptreg_pair_option_table,
                                  ptreg_icp_option_table,     ptreg_lddmm_option_table,    ptreg_harris3d_option_table,
                                  ptreg_normals_option_table, ptreg_features_option_table, ptreg_register_option_table,
                                  ptreg_tune_option_table,    ptreg_index_option_table};

static void value_taken(const ptreg_option_table *t, const ptreg_option *o, const void *opt)
{
    ptreg_error err;
    char text[64];
    if (!ptreg_option_explicit(o, opt))
        abort();
    /* A value in range may still be refused, but only by a rule that ties
     * fields together (the table's check: ICP's relative stops go together),
     * and with a message. */
    if (ptreg_options_check(t, opt, &err) != PTREG_OK) {
        ptreg_error rule;
        if (!t->check || t->check(opt, PTREG_OPTION_SPELL_NAME, &rule) == PTREG_OK || !err.message[0])
            abort();
    }
    ptreg_option_format(o, opt, text, sizeof text); /* must not overrun, whatever the value */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const ptreg_option_table *t = tables[data[0] % (sizeof tables / sizeof tables[0])]();
    const ptreg_option *o = &t->options[(data[0] / 8) % t->count];
    char *text = malloc(size);
    void *opt = malloc(t->size), *before = malloc(t->size);
    if (!text || !opt || !before)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    t->defaults(opt);
    memcpy(before, opt, t->size);
    ptreg_error err;
    err.message[0] = '\0';
    if (ptreg_option_parse(o, opt, text, &err) == PTREG_OK)
        value_taken(t, o, opt);
    else if (memcmp(before, opt, t->size) != 0 || !err.message[0])
        abort();
    const ptreg_option *found = ptreg_option_find(t, text, strlen(text));
    if (found && (found < t->options || found >= t->options + t->count))
        abort();
    free(text);
    free(opt);
    free(before);
    return 0;
}
