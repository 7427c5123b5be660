/* Options declared once (ptreg/options.h): finding, parsing, setting,
 * checking and describing options through the library's tables, and the
 * tables' own consistency. */
#include <ctype.h>
#include <math.h>

#include "check.h"
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
#include "pair/pair_engine.h"

typedef const ptreg_option_table *(*table_fn)(void);
static const table_fn tables[] = {ptreg_emicp_option_table, ptreg_batch_option_table, ptreg_pair_option_table,
                                  ptreg_icp_option_table, ptreg_lddmm_option_table, ptreg_harris3d_option_table,
                                  ptreg_normals_option_table, ptreg_features_option_table, ptreg_register_option_table,
                                  ptreg_tune_option_table, ptreg_index_option_table};
#define TABLES (sizeof tables / sizeof tables[0])

static const ptreg_option *find(const ptreg_option_table *t, const char *name)
{
    return ptreg_option_find(t, name, strlen(name));
}

static void test_find(void)
{
    const ptreg_option_table *t = ptreg_emicp_option_table();
    CHECK(find(t, "sigma_factor") && find(t, "sigma_factor") == find(t, "sigma-factor"));
    CHECK(find(t, "sigma2") == find(t, "sigma2_init")); /* the command line's spelling */
    CHECK(find(t, "tile") == find(t, "col_tile"));
    CHECK(!find(t, "sigma") && !find(t, "device") && !find(t, ""));
    CHECK(ptreg_option_find(t, "tol=3", 3) == find(t, "tol")); /* a length, not a terminator */
    char buf[32];
    CHECK(!strcmp(ptreg_option_cli_name(find(t, "sigma2_init"), buf, sizeof buf), "sigma2"));
    CHECK(!strcmp(ptreg_option_cli_name(find(t, "max_iter"), buf, sizeof buf), "max-iter"));
}

/* parse(name, text) on defaults: the status, and the message in *msg */
static ptreg_status parse(const char *name, const char *text, ptreg_emicp_options *o, const char **msg)
{
    static ptreg_error err;
    err.message[0] = '\0';
    ptreg_emicp_options_default(o);
    const ptreg_status st = ptreg_option_parse(find(ptreg_emicp_option_table(), name), o, text, &err);
    *msg = err.message;
    return st;
}

/* register's Python keyword "method" is the command line's --global, and
 * its --method the keyword "refine": the command line's spelling wins. */
static void test_crossed_names(void)
{
    const ptreg_option_table *t = ptreg_register_option_table();
    CHECK(!strcmp(find(t, "method")->name, "refine") && !strcmp(find(t, "global")->name, "method"));
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    ptreg_error err;
    CHECK(ptreg_option_parse(find(t, "global"), &o, "fgr", &err) == PTREG_OK && o.global == PTREG_GLOBAL_FGR);
    CHECK(ptreg_option_parse(find(t, "method"), &o, "gicp", &err) == PTREG_OK && o.refine == PTREG_ICP_GICP);
}

/* A neighborhood's k 0 (none) and radius 0 (none) are "not set" to the
 * check; a caller sets them only from a number (the command line leaves
 * them out); enum names take '-' and '_' alike. */
static void test_neighborhood_rows(void)
{
    const ptreg_option_table *t = ptreg_normals_option_table();
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    ptreg_error err;
    CHECK(ptreg_option_set(find(t, "k"), &o, 0, &err) == PTREG_OK && o.neighbors.k == 0);
    CHECK(ptreg_option_parse(find(t, "k"), &o, "0", &err) == PTREG_ERR_ARG);
    CHECK(ptreg_option_parse(find(t, "radius"), &o, "0.5", &err) == PTREG_OK && o.neighbors.radius == 0.5);
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    CHECK(ptreg_option_parse(find(t, "orient"), &o, "tangent_plane", &err) == PTREG_OK &&
          o.orientation == PTREG_ORIENT_TANGENT_PLANE);
    o.neighbors.radius = -1;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "radius"));
}

static void test_parse(void)
{
    ptreg_emicp_options o;
    const char *msg;
    CHECK(parse("sigma_factor", "0.5", &o, &msg) == PTREG_OK && o.sigma_factor == 0.5);
    CHECK(parse("sigma_factor", "1", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "in (0, 1)") && o.sigma_factor == 0.9);
    CHECK(parse("sigma_factor", "0", &o, &msg) == PTREG_ERR_ARG);
    CHECK(parse("sigma_factor", "x", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "not a number"));
    CHECK(parse("tol", "nan", &o, &msg) == PTREG_ERR_ARG && parse("tol", "inf", &o, &msg) == PTREG_ERR_ARG);
    CHECK(parse("tol", "0", &o, &msg) == PTREG_OK && o.tol == 0);
    CHECK(parse("max_iter", "20", &o, &msg) == PTREG_OK && o.max_iter == 20);
    CHECK(parse("max_iter", "2.5", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "not an integer"));
    CHECK(parse("max_iter", "-1", &o, &msg) == PTREG_ERR_ARG && strstr(msg, ">= 0"));
    CHECK(parse("max_iter", "1000000000000", &o, &msg) == PTREG_ERR_ARG);
    /* AUTO: the library takes <= 0 as "derived", a caller sets only values in range */
    CHECK(parse("sigma2_init", "0", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "> 0"));
    CHECK(parse("sigma2_init", "0.01", &o, &msg) == PTREG_OK && o.sigma2_init == 0.01);
    CHECK(parse("d02", "0", &o, &msg) == PTREG_OK && o.d02 == 0);
    CHECK(parse("row_vectors", "4", &o, &msg) == PTREG_OK && o.pair.row_vectors == 4);
    CHECK(parse("row_vectors", "3", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "power of two"));
    CHECK(parse("row_vectors", "8", &o, &msg) == PTREG_ERR_ARG);
    CHECK(parse("precision", "fp16", &o, &msg) == PTREG_OK && o.pair.precision == PTREG_PRECISION_FP16);
    CHECK(parse("precision", "fp8", &o, &msg) == PTREG_ERR_ARG && strstr(msg, "fp8") && strstr(msg, "fp32|fp64|fp16"));
    CHECK(parse("order", "tiles-outside", &o, &msg) == PTREG_OK && o.pair.order == PTREG_PAIR_TILES_OUTSIDE);
}

static void test_set(void)
{
    const ptreg_option_table *t = ptreg_emicp_option_table();
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    ptreg_error err;
    CHECK(ptreg_option_set(find(t, "tol"), &o, 1e-3, &err) == PTREG_OK && o.tol == 1e-3);
    CHECK(ptreg_option_set(find(t, "sigma2_init"), &o, NAN, &err) == PTREG_ERR_ARG && strstr(err.message, "NaN"));
    CHECK(ptreg_option_set(find(t, "max_iter"), &o, 2.5, &err) == PTREG_ERR_ARG && o.max_iter == 1000);
    CHECK(ptreg_option_set(find(t, "max_iter"), &o, 7, &err) == PTREG_OK && o.max_iter == 7);
    CHECK(ptreg_option_set(find(t, "precision"), &o, 1, &err) == PTREG_ERR_ARG); /* an enum is set by name */
    /* "not set" may be set from a number (not from a command line's text) */
    CHECK(ptreg_option_set(find(t, "sigma2_init"), &o, 0, &err) == PTREG_OK && o.sigma2_init == 0);
    CHECK(ptreg_option_set(find(t, "d02"), &o, -1, &err) == PTREG_OK && o.d02 == -1);
    CHECK(ptreg_option_set(find(t, "sigma_factor"), &o, 0, &err) == PTREG_ERR_ARG);
}

static void test_check(void)
{
    const ptreg_option_table *t = ptreg_emicp_option_table();
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    ptreg_error err;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    o.sigma2_init = -1; /* derived */
    o.d02 = -5;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    o.sigma2_init = INFINITY;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "sigma2_init"));
    o.sigma2_init = 0;
    o.sigma_factor = 1;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "EM-ICP: sigma_factor 1"));
    o.sigma_factor = 0.9;
    o.pair.order = (ptreg_pair_order)7;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "order"));
    o.pair.order = PTREG_PAIR_TILES_INSIDE;
    o.tol = NAN;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "tol is NaN"));
}

static void test_describe(void)
{
    const ptreg_option_table *t = ptreg_emicp_option_table();
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    char buf[160];
    ptreg_option_range(find(t, "sigma_factor"), buf, sizeof buf);
    CHECK(!strcmp(buf, "in (0, 1)"));
    ptreg_option_range(find(t, "row_vectors"), buf, sizeof buf);
    CHECK(!strcmp(buf, "a power of two in [1, 4]"));
    ptreg_option_range(find(t, "row_block"), buf, sizeof buf);
    CHECK(!strcmp(buf, "in [1, 1048576]"));
    ptreg_option_range(find(t, "tol"), buf, sizeof buf);
    CHECK(!strcmp(buf, ">= 0"));
    ptreg_option_range(find(t, "loop"), buf, sizeof buf); /* the command line's spelling */
    CHECK(!strcmp(buf, "tiles-inside|tiles-outside"));
    ptreg_option_format(find(t, "precision"), &o, buf, sizeof buf);
    CHECK(!strcmp(buf, "fp32"));
    ptreg_option_format(find(t, "sigma_factor"), &o, buf, sizeof buf);
    CHECK(!strcmp(buf, "0.9"));
    CHECK(ptreg_option_explicit(find(t, "max_iter"), &o) && !ptreg_option_explicit(find(t, "sigma2_init"), &o));
}

/* Every table: names unique in either spelling and written snake_case, a
 * help and a placeholder each, defaults that pass the table's check. */
static void test_tables(void)
{
    for (size_t k = 0; k < TABLES; k++) {
        const ptreg_option_table *t = tables[k]();
        void *defaults = calloc(1, t->size);
        REQUIRE(defaults != NULL);
        t->defaults(defaults);
        ptreg_error err;
        CHECK_MSG(ptreg_options_check(t, defaults, &err) == PTREG_OK, "%s", err.message);
        for (size_t i = 0; i < t->count; i++) {
            const ptreg_option *o = &t->options[i];
            char cli[48], other[48];
            CHECK_MSG(find(t, ptreg_option_cli_name(o, cli, sizeof cli)) == o, "%s: %s", t->owner, cli);
            /* a name finds its row, but where another row is spelled so on the command line */
            const ptreg_option *named = find(t, o->name);
            CHECK_MSG(named == o || !strcmp(ptreg_option_cli_name(named, other, sizeof other), o->name), "%s: %s",
                      t->owner, o->name);
            for (size_t j = 0; j < i; j++)
                CHECK_MSG(strcmp(t->options[j].name, o->name) &&
                              strcmp(ptreg_option_cli_name(&t->options[j], other, sizeof other), cli),
                          "%s: %s twice", t->owner, o->name);
            for (const char *c = o->name; *c; c++)
                CHECK_MSG(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_', "%s", o->name);
            CHECK(o->help && o->help[0] && o->placeholder && o->placeholder[0]);
            CHECK(o->type != PTREG_OPTION_ENUM || (o->names && o->names[0].name));
            CHECK(o->offset < t->size);
        }
        free(defaults);
    }
}

int main(void)
{
    test_find();
    test_crossed_names();
    test_neighborhood_rows();
    test_parse();
    test_set();
    test_check();
    test_describe();
    test_tables();
    return check_exit();
}
