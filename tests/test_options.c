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
#include "ptreg/multiway.h"
#include "ptreg/nn.h"
#include "ptreg/options.h"
#include "ptreg/pair.h"
#include "ptreg/posegraph.h"
#include "ptreg/track.h"
#include "ptreg/tune.h"
#include "core/options_table.h"
#include "pair/pair_engine.h"

typedef const ptreg_option_table *(*table_fn)(void);
static const table_fn tables[] = {
    ptreg_emicp_option_table,     ptreg_batch_option_table,    ptreg_pair_option_table,
    ptreg_icp_option_table,       ptreg_lddmm_option_table,    ptreg_harris3d_option_table,
    ptreg_normals_option_table,   ptreg_features_option_table, ptreg_register_option_table,
    ptreg_tune_option_table,      ptreg_index_option_table,    ptreg_multiway_option_table,
    ptreg_track_option_table,     ptreg_ransac_option_table,   ptreg_fgr_option_table,
    ptreg_pose_graph_option_table};
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

/* ICP's rules (its table's check): a kernel without its scale, and one of
 * Open3D's two stops without the other, are refused with the options
 * named in the caller's spelling; the owner only in the library's. */
static void test_icp_rules(void)
{
    const ptreg_option_table *t = ptreg_icp_option_table();
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    ptreg_error err;
    REQUIRE(t->check != NULL);
    o.kernel = PTREG_KERNEL_HUBER;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "ICP: the huber kernel needs kernel_scale (> 0") == err.message, "%s", err.message);
    CHECK(ptreg_options_check_as(t, &o, PTREG_OPTION_SPELL_CLI, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "the huber kernel needs --kernel-scale (> 0") == err.message, "%s", err.message);
    o.kernel_scale = 0.1;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    o.relative_fitness = 1e-6;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "relative_fitness and relative_rmse go together"));
    CHECK(ptreg_options_check_as(t, &o, PTREG_OPTION_SPELL_CLI, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "--relative-fitness and --relative-rmse go together"));
    o.relative_fitness = 0, o.relative_rmse = 1e-6;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "go together"));
    o.relative_fitness = 1e-6;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    /* a range error comes first, as the command line parses one option at a time */
    o.kernel_scale = -1;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "kernel_scale -1"));
}

/* track's table: its own rows, then ICP's moved into its icp field, and
 * ICP's rules through its check. */
static void test_track_table(void)
{
    const ptreg_option_table *t = ptreg_track_option_table();
    ptreg_track_options o;
    ptreg_track_options_default(&o);
    ptreg_error err;
    CHECK(find(t, "max-turn") == find(t, "max_turn_deg") && find(t, "max_turn_deg") != NULL);
    CHECK(ptreg_option_parse(find(t, "kernel"), &o, "cauchy", &err) == PTREG_OK && o.icp.kernel == PTREG_KERNEL_CAUCHY);
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "track: the cauchy kernel needs kernel_scale") == err.message, "%s", err.message);
    CHECK(ptreg_options_check_as(t, &o, PTREG_OPTION_SPELL_CLI, &err) == PTREG_ERR_ARG &&
          strstr(err.message, "--kernel-scale"));
    CHECK(ptreg_option_parse(find(t, "kernel-scale"), &o, "0.5", &err) == PTREG_OK && o.icp.kernel_scale == 0.5);
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_OK);
    o.icp.relative_rmse = 1e-3;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "go together"));
    ptreg_track_options_default(&o);
    CHECK(ptreg_option_parse(find(t, "max-rmse"), &o, "0", &err) == PTREG_ERR_ARG); /* 0 is "the default" */
    o.max_speed = -1;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "max_speed"));
    o.max_speed = 0;
    o.predict = (ptreg_track_predict)7;
    CHECK(ptreg_options_check(t, &o, &err) == PTREG_ERR_ARG && strstr(err.message, "predict"));
}

/* The normals each ICP method reads, the one statement of it. */
static void test_icp_normals(void)
{
    CHECK(ptreg_icp_method_normals(PTREG_ICP_POINT) == 0);
    CHECK(ptreg_icp_method_normals(PTREG_ICP_PLANE) == PTREG_ICP_NORMALS_TARGET);
    CHECK(ptreg_icp_method_normals(PTREG_ICP_GICP) == (PTREG_ICP_NORMALS_TARGET | PTREG_ICP_NORMALS_SOURCE));
    CHECK(ptreg_icp_method_normals(PTREG_ICP_SYMMETRIC) == (PTREG_ICP_NORMALS_TARGET | PTREG_ICP_NORMALS_SOURCE));
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

/* The public lookup (ptreg_option_table_find): each name its module's
 * table, every table but the pair engine's (private: its rows are EM-ICP's
 * and batch's) found under one name, nothing for another name. */
static void test_table_find(void)
{
    static const char *const names[] = {"icp",   "emicp",    "register",   "ransac",  "fgr",
                                        "lddmm", "harris3d", "features",   "normals", "index",
                                        "batch", "multiway", "pose_graph", "track",   "tune"};
    const size_t count = sizeof names / sizeof names[0];
    for (size_t k = 0; k < TABLES; k++) {
        const ptreg_option_table *t = tables[k]();
        size_t found = 0;
        for (size_t i = 0; i < count; i++)
            found += ptreg_option_table_find(names[i]) == t;
        CHECK_MSG(found == (t == ptreg_pair_option_table() ? 0u : 1u), "%s: found under %zu names", t->owner, found);
    }
    CHECK(ptreg_option_table_find("icp") == ptreg_icp_option_table());
    CHECK(ptreg_option_table_find("pose_graph") == ptreg_pose_graph_option_table());
    CHECK(!ptreg_option_table_find("pair") && !ptreg_option_table_find("ICP") && !ptreg_option_table_find("") &&
          !ptreg_option_table_find(NULL));
    CHECK(count + 1 == TABLES); /* a new table is listed here and in src/api/tables.c */
}

int main(void)
{
    test_table_find();
    test_find();
    test_crossed_names();
    test_neighborhood_rows();
    test_parse();
    test_set();
    test_check();
    test_icp_rules();
    test_icp_normals();
    test_track_table();
    test_describe();
    test_tables();
    return check_exit();
}
