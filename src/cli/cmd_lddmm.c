/* ptreg lddmm: landmark matching by geodesic shooting (ptreg warp carries
 * other points along its result's flow, cmd_warp.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/lddmm_device.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "ptreg/device.h"
#include "ptreg/lddmm.h"

static const cli_option lddmm_options[] = {
    {"output", 'o', "RESULT",
     "write the template and its initial momenta: .vtk (POLYDATA, point data "
     "InitialMomentum, field data sigma/time_points/integrator) or .csv",
     "vtk csv txt"},
    {"init", 0, "RULE",
     "initial momenta: scaled (default: (target - q0) / sum_j K(q_i, q_j)), displacement "
     "(target - q0), zero, or a file (a result of ptreg lddmm, or points read as momenta)"},
    {"preset", 0, "NAME", "mtl: the optic-nerve-head study's sigma 1.5, T 40, 400 iterations, lambda 500000"},
    {"template-row", 0, "R",
     "read TEMPLATE as a landmark table (a header with columns like Sx Sy Sz ..., "
     "one landmark set per row) and take data row R (1 = the first)"},
    {"target-row", 0, "R", "the same for TARGET"},
    {"moved", 0, "FILE", "write the template shot to t = 1 (a cloud: .ply, .pcd, .xyz/.csv)", CLI_WRITES_CLOUD},
    {"trajectory", 0, "DIR", "write the landmarks at every time point as DIR/t_000.ply ...", CLI_WRITES_FOLDER},
    CLI_OPT_PLOT("the objective"),
    CLI_OPT_HTML,
    CLI_OPT_QUIET,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    {"no-tune", 0, NULL,
     "on a GPU: ignore `ptreg tune --kernel lddmm --device`'s winner (work-groups, exp, "
     "column splits)"},
    CLI_OPT_JSON,
};

const cli_command cli_cmd_lddmm = CLI_COMMAND_LIBRARY(
    "lddmm", "TEMPLATE TARGET [-o RESULT] [options]",
    "Match template landmarks onto target landmarks (by index) with an LDDMM geodesic shooting.",
    "The template q0 and momenta p0 flow by Hamilton's equations with a Gaussian kernel\n"
    "K(x, y) = exp(-|x - y|^2 / (2 sigma^2)) (KeOps and Deformetrica write exp(-|x - y|^2 / sigma^2):\n"
    "their sigma is ours times sqrt 2): dq/dt = dH/dp, dp/dt = -dH/dq, H = 1/2 sum K_ij p_i.p_j,\n"
    "over t in [0, 1] by Euler or RK2 steps. L-BFGS (liblbfgs) minimises\n"
    "gamma H(q0, p0) + lambda/2 sum |q_i(1) - target_i|^2 over p0 with the exact gradient of the\n"
    "discrete flow. Landmarks: CSV/TXT, PLY, PCD or VTK POLYDATA (2-D sets have z = 0), or a\n"
    "row of a landmark table (--template-row, --target-row: optical_nerves.txt's layout); both\n"
    "must hold the same number of finite points.\n\n"
    "JSON: H, objective, iterations, evaluations, avg/max_distance_before/after, time_ms,\n"
    "pair_terms (kernel pair terms evaluated), pair_terms_per_s and device.\n\n"
    "On a GPU (--device cuda[:N] or opencl[:N]; auto takes one when there is one) the whole\n"
    "time loop and its adjoint run on the device, the trajectory kept there: the pair sums\n"
    "in local-memory tiles (never an n x n matrix), the states in double (the device needs\n"
    "double precision); only p0, the objective and the gradient cross per evaluation, and\n"
    "L-BFGS stays here. The kernels' work-group size, exp and column splits are `ptreg tune\n"
    "--kernel lddmm --device`'s winner for the device and landmark count when there is one\n"
    "(JSON: variant; --no-tune: the defaults). Every run on one device with one variant gives\n"
    "the same bits.\n\n"
    "--html FILE: the template, the target, each template landmark's path along the flow\n"
    "and where it ended (the template shot to t = 1), the objective per L-BFGS iteration,\n"
    "and the JSON's numbers.",
    lddmm_options, 2, 2, "lddmm");

/* A cloud's points as doubles; every point must be finite (landmarks
 * correspond by index, so a dropped point would shift them all). */
static int load_points(const char *cmd, const char *path, double **xyz, size_t *n)
{
    ptreg_cloud c;
    int rc = cli_load_cloud(cmd, path, &c, 1);
    if (rc)
        return rc;
    if (c.dropped_nonfinite) {
        cli_error(cmd,
                  "%s: %zu points have non-finite coordinates (NaN or inf); landmarks correspond by index, "
                  "so none may be dropped",
                  path, c.dropped_nonfinite);
        ptreg_cloud_free(&c);
        return EXIT_BAD_INPUT;
    }
    *n = c.n;
    *xyz = malloc(3 * c.n * sizeof **xyz);
    for (size_t i = 0; *xyz && i < 3 * c.n; i++)
        (*xyz)[i] = c.xyz[i];
    ptreg_cloud_free(&c);
    if (!*xyz) {
        cli_error(cmd, "out of memory");
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* Landmarks from a cloud file, or from row --NAME-row of a landmark table. */
static int load_landmarks(const cli_args *a, const char *row_option, const char *path, double **xyz, size_t *n)
{
    if (!cli_has(a, row_option))
        return load_points("lddmm", path, xyz, n);
    size_t row = 0;
    int rc = cli_size(a, row_option, 1, SIZE_MAX, &row);
    if (rc)
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_landmark_table_read(path, row, xyz, n, &err);
    if (st) {
        cli_error("lddmm", "%s", err.message);
        return cli_exit_code(st, 1);
    }
    return EXIT_OK;
}

/* --preset first, then the library's options over it. */
static int read_lddmm_options(const cli_args *a, ptreg_lddmm_options *o)
{
    const char *preset = cli_string(a, "preset", NULL);
    if (preset && strcmp(preset, "mtl")) {
        cli_error("lddmm", "--preset: '%s' is not mtl", preset);
        return EXIT_USAGE;
    }
    if (preset)
        ptreg_lddmm_options_mtl(o);
    return cli_read_library(a, o);
}

/* --init: a rule, or a file of momenta (an lddmm result, or any cloud). */
static int read_init(const cli_args *a, ptreg_lddmm_options *o, size_t n, double **p0)
{
    static const char *const rules[] = {"scaled", "displacement", "zero"};
    const char *v = cli_string(a, "init", "scaled");
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, rules[i])) {
            o->init = (ptreg_lddmm_init)i;
            return EXIT_OK;
        }
    ptreg_lddmm_model m;
    ptreg_error err;
    size_t count = 0;
    int rc = EXIT_OK;
    ptreg_status st = ptreg_lddmm_model_read(v, &m, &err);
    if (!st) {
        *p0 = m.p0, count = m.n;
        m.p0 = NULL;
        ptreg_lddmm_model_free(&m);
    } else if (st == PTREG_ERR_NOMEM) {
        cli_error("lddmm", "%s", err.message);
        return EXIT_RUNTIME;
    } else if ((rc = load_points("lddmm", v, p0, &count))) {
        return rc;
    }
    if (count != n) {
        cli_error("lddmm", "--init %s: %zu momenta for %zu landmarks", v, count, n);
        free(*p0);
        *p0 = NULL;
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

/* Landmarks (doubles) written as a cloud. */
static int write_moved(const char *path, const double *q1, size_t n)
{
    ptreg_cloud c;
    ptreg_error err;
    if (ptreg_cloud_alloc(&c, n, 0, &err)) {
        cli_error("lddmm", "%s", err.message);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < 3 * n; i++)
        c.xyz[i] = (float)q1[i];
    int rc = cli_write_cloud("lddmm", path, &c, 0);
    ptreg_cloud_free(&c);
    return rc;
}

static int write_trajectory(const char *dir, const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *o)
{
    if (mkdir(dir, 0755) && errno != EEXIST) {
        cli_error("lddmm", "--trajectory %s: %s", dir, strerror(errno));
        return EXIT_RUNTIME;
    }
    size_t T = (size_t)o->time_points;
    double *traj = malloc(T * 3 * n * sizeof *traj);
    ptreg_error err;
    ptreg_status st = traj ? ptreg_lddmm_shoot(q0, p0, n, o, NULL, NULL, traj, &err)
                           : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for the trajectory");
    int rc = st ? EXIT_RUNTIME : EXIT_OK;
    if (st)
        cli_error("lddmm", "--trajectory: %s", err.message);
    for (size_t t = 0; !rc && t < T; t++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/t_%03zu.ply", dir, t);
        rc = write_moved(path, traj + t * 3 * n, n);
    }
    free(traj);
    return rc;
}

/* The engine that ran: the CPU's instruction set (or its double reference)
 * or the device's name. */
static const char *engine_of(const ptreg_lddmm_options *o, const ptreg_device *on)
{
    if (on->backend == PTREG_BACKEND_CPU)
        return o->precision == PTREG_PRECISION_FP64 ? "reference" : ptreg_cpu_isa_name();
    return ptreg_device_name(on);
}

static int report(const cli_args *a, const ptreg_lddmm_options *o, const ptreg_lddmm_result *r, const cJSON *variant)
{
    const ptreg_device on = cli_lddmm_device_of(o);
    char device[32];
    ptreg_device_format(&on, device, sizeof device);
    static const char *const integrators[] = {"euler", "rk2"};
    double rate = r->time_ms > 0 ? r->pair_terms / (r->time_ms * 1e-3) : 0;
    if (!cli_has(a, "json")) {
        printf("ptreg lddmm: %zu landmarks, sigma %g, %d time points (%s), lambda %g, gamma %g, %s\n", r->n, o->sigma,
               o->time_points, integrators[o->integrator], o->lambda, o->gamma, ptreg_precision_name(o->precision));
        printf("  average distance %.6g -> %.6g (%.1f-fold), max %.6g -> %.6g\n", r->avg_distance_before,
               r->avg_distance_after, r->avg_distance_after > 0 ? r->avg_distance_before / r->avg_distance_after : 0,
               r->max_distance_before, r->max_distance_after);
        printf("  objective %.8g, H %.8g, %d iterations, %d evaluations (%s)\n", r->objective, r->hamiltonian,
               r->iterations, r->evaluations, r->stop_detail);
        printf("  time %.1f ms, %.3g pair terms (%.3g per s), on %s (%s), %d threads\n", r->time_ms, r->pair_terms,
               rate, device, engine_of(o, &on), ptreg_get_num_threads());
    }
    if (!cli_has(a, "json") && !cli_report()) /* with --html the page holds the JSON */
        return EXIT_OK;
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "lddmm");
    cli_json_string(j, "template", a->positional[0]);
    cli_json_string(j, "target", a->positional[1]);
    cli_json_number(j, "sigma", o->sigma);
    cli_json_number(j, "time_points", o->time_points);
    cli_json_number(j, "lambda", o->lambda);
    cli_json_number(j, "gamma", o->gamma);
    cli_json_string(j, "integrator", integrators[o->integrator]);
    cli_json_string(j, "precision", ptreg_precision_name(o->precision));
    cli_json_result(j, ptreg_result_table_find("lddmm"), r);
    cli_json_number(j, "pair_terms_per_s", rate);
    cli_json_string(j, "isa", engine_of(o, &on));
    cli_json_string(j, "device", device);
    if (variant)
        cli_json_put(j, "variant", cJSON_Duplicate(variant, 1));
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

/* ---- --html ---- */

/* With --html: the template, the target, the landmarks' paths along the
 * flow and the ends (ptreg_report_add_lddmm). */
static int report_lddmm(const double *q0, const double *target, size_t n, const ptreg_lddmm_options *o,
                        const ptreg_lddmm_result *res)
{
    ptreg_report *r = cli_report();
    ptreg_error err;
    return r ? cli_report_check(ptreg_report_add_lddmm(r, q0, target, n, o, res, &err), &err) : EXIT_OK;
}

static int write_outputs(const cli_args *a, double *q0, size_t n, const ptreg_lddmm_options *o,
                         const ptreg_lddmm_result *r)
{
    ptreg_error err;
    const ptreg_lddmm_model model = {n, q0, r->p0, o->sigma, o->time_points, o->integrator};
    if (cli_has(a, "output") && ptreg_lddmm_model_write(cli_string(a, "output", NULL), &model, &err)) {
        cli_error("lddmm", "%s", err.message);
        return EXIT_RUNTIME;
    }
    int rc = cli_has(a, "moved") ? write_moved(cli_string(a, "moved", NULL), r->q1, n) : EXIT_OK;
    if (!rc && cli_has(a, "trajectory"))
        rc = write_trajectory(cli_string(a, "trajectory", NULL), q0, r->p0, n, o);
    return rc;
}

int cli_run_lddmm(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_lddmm, argc, argv, &a, &rc))
        return rc;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if ((rc = read_lddmm_options(&a, &o)) || (rc = cli_apply_threads(&a)) || (rc = cli_lddmm_read_device(&a, &o)) ||
        (rc = cli_report_begin(&a, "lddmm")))
        return rc;
    double *q0 = NULL, *target = NULL, *p0 = NULL;
    size_t n = 0, m = 0;
    if ((rc = load_landmarks(&a, "template-row", a.positional[0], &q0, &n)) ||
        (rc = load_landmarks(&a, "target-row", a.positional[1], &target, &m)))
        goto done;
    if (n != m) {
        cli_error("lddmm", "%s has %zu landmarks, %s has %zu: they must correspond one to one", a.positional[0], n,
                  a.positional[1], m);
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    if ((rc = read_init(&a, &o, n, &p0)))
        goto done;
    cJSON *variant = cli_lddmm_tuned_gpu(&a, &o, n);
    ptreg_lddmm_result r;
    ptreg_error err;
    cli_progress progress;
    cli_progress_begin(&progress, &a, "lddmm", "iteration", "objective");
    o.progress = cli_progress_hook(&progress);
    cli_device_call_start();
    ptreg_status st = ptreg_lddmm_register(q0, target, n, p0, &o, &r, &err);
    cli_device_call_stop();
    const int plot_rc = cli_progress_end(&progress, &a, !st);
    if (st) {
        cli_error("lddmm", "%s", err.message);
        rc = st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 0);
    } else {
        rc = plot_rc ? plot_rc : write_outputs(&a, q0, n, &o, &r);
        rc = rc ? rc : report_lddmm(q0, target, n, &o, &r);
        rc = rc ? rc : report(&a, &o, &r, variant);
        ptreg_lddmm_result_free(&r);
    }
    cJSON_Delete(variant);
done:
    free(q0);
    free(target);
    free(p0);
    return rc;
}
