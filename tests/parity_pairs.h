/* The device parity suite's all-pairs operations (included by
 * test_device_parity.c): the E-step's Gaussian sums, whole EM-ICP
 * registrations, and LDDMM's objective, gradient and warp, each against
 * the CPU path at sizes around the work-group (128): 1, tile - 1, tile + 1,
 * the study's 1847, and forced column splits. Tolerances:
 *   - E-step sums, normalised error over all five: fp64 <= 1e-10 against
 *     the CPU's fp64; fp32 and fp16 <= 1e-5 against the CPU's same mode;
 *   - EM-ICP: the transform within 1e-5 of the CPU's (same precision),
 *     the same iterations (5e-5 on a device without double precision,
 *     whose sums and moments are float);
 *   - LDDMM against the CPU's fp64 path: objective within 1e-5 relative,
 *     gradient normalised error <= 1e-8 for the device's fp64 (fp32 pair
 *     terms: <= 1e-6, the CPU's own fp32 path is reported beside it);
 *     warped points within 1e-5 (fp32) or 1e-10 (fp64) of the CPU's.
 * On a device without double precision the fp64 sums and LDDMM must be
 * refused with PTREG_ERR_UNSUPPORTED, naming double precision. */
#include "pair/pair_device.h"
#include "reg/emicp/emicp_impl.h"
#include "reg/lddmm/lddmm_impl.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

/* ---- E-step sums ---- */

typedef struct estep_case {
    size_t n, m;
    unsigned splits; /* 0: the device's choice */
    uint64_t seed;
} estep_case;

static const estep_case estep_cases[] = {
    {1, 1, 0, 71}, {127, 129, 0, 72}, {129, 127, 0, 73}, {1000, 3000, 3, 74}, {1847, 1847, 0, 75},
};

static const ptreg_precision all_precisions[] = {PTREG_PRECISION_FP32, PTREG_PRECISION_FP16, PTREG_PRECISION_FP64};

static void random_points(ptreg_rng *rng, size_t n, double extent, float *f, double *d)
{
    for (size_t i = 0; i < 3 * n; i++) {
        const double v = (ptreg_rng_uniform(rng) * 2.0 - 1.0) * extent;
        if (f)
            f[i] = (float)v;
        if (d)
            d[i] = f ? (double)(float)v : v;
    }
}

/* ||got - ref|| / ||ref|| over the five sums. */
static double sums_error(const double *ref, const double *got, size_t n)
{
    return normalised_error(ref, got, (int)(5 * n));
}

/* The five sums side by side: e, e^2 (n each), e b (3n). */
static int cpu_sums(const double *rows, size_t n, const float *cols, size_t m, double scale, ptreg_precision prec,
                    double *out)
{
    ptreg_pair_options o;
    ptreg_pair_options_default(&o);
    o.precision = prec;
    ptreg_pair_plan *plan;
    if (ptreg_pair_plan_create(cols, m, &o, &plan, NULL))
        return -1;
    int rc = ptreg_pair_gauss(plan, rows, n, scale, out, out + n, out + 2 * n, NULL) ? -1 : 0;
    ptreg_pair_plan_destroy(plan);
    return rc;
}

static ptreg_status device_sums(dev_handle *dev, const double *rows, size_t n, const float *cols, size_t m,
                                double scale, ptreg_precision prec, unsigned splits, double *out, unsigned *used,
                                ptreg_error *err)
{
    pair_device_state *pd;
    ptreg_status st = pair_device_create(dev, &emicp_kernels, cols, m, prec, NULL, n, splits, &pd, err);
    if (st)
        return st;
    st = pair_device_gauss(pd, rows, n, scale, out, out + n, out + 2 * n, err);
    *used = pd->splits;
    pair_device_free(pd);
    return st;
}

static void set_exp(const char *which)
{
    if (which)
        setenv("PTREG_PAIR_EXP", which, 1);
    else
        unsetenv("PTREG_PAIR_EXP");
}

/* One precision (and exp) of one case: device against CPU, twice for the
 * bits. Returns 1 ok, 0 failed. */
static int estep_precision(dev_handle *dev, const estep_case *ec, ptreg_precision prec, const char *exp_name,
                           const double *rows, const float *cols, const double *ref64, char *detail, size_t size)
{
    const size_t n = ec->n, m = ec->m;
    const double scale = 10.0; /* sigma^2 = 0.05 in a box of side 2 */
    double *ref = malloc(5 * n * sizeof *ref), *got = malloc(5 * n * sizeof *got),
           *again = malloc(5 * n * sizeof *again);
    ptreg_error err;
    unsigned splits = 0;
    int ok = 0;
    set_exp(exp_name);
    ptreg_status st = ref && got && again ? PTREG_OK : PTREG_ERR_NOMEM;
    if (!st && cpu_sums(rows, n, cols, m, scale, prec, ref))
        st = PTREG_ERR_RUNTIME;
    if (!st)
        st = device_sums(dev, rows, n, cols, m, scale, prec, ec->splits, got, &splits, &err);
    if (!st)
        st = device_sums(dev, rows, n, cols, m, scale, prec, ec->splits, again, &splits, &err);
    set_exp(NULL);
    const char *label = exp_name ? exp_name : "default exp";
    if (st == PTREG_ERR_UNSUPPORTED && prec == PTREG_PRECISION_FP64 && !dev->info.fp64) {
        ok = strstr(err.message, "double precision") != NULL;
        snprintf(detail, size, "%s: refused: %s", ptreg_precision_name(prec), err.message);
    } else if (st) {
        snprintf(detail, size, "%s (%s): %s", ptreg_precision_name(prec), label,
                 st == PTREG_ERR_NOMEM || st == PTREG_ERR_RUNTIME ? "CPU or memory failed" : err.message);
    } else {
        digest(got, 5 * n * sizeof *got);
        const double e = sums_error(ref, got, n), e64 = sums_error(ref64, got, n);
        const double tol = prec == PTREG_PRECISION_FP64 ? 1e-10 : 1e-5;
        const int same = !memcmp(got, again, 5 * n * sizeof *got);
        ok = e <= tol && same;
        snprintf(detail, size, "%s (%s, %u splits): error %.2g vs the CPU's %s (tol %.0g), %.2g vs fp64%s",
                 ptreg_precision_name(prec), label, splits, e, ptreg_precision_name(prec), tol, e64,
                 same ? "" : ", NOT REPEATABLE");
    }
    free(ref), free(got), free(again);
    return ok;
}

static void run_estep_cases(dev_handle *dev, int *passed, int *failed)
{
    for (size_t k = 0; k < sizeof estep_cases / sizeof estep_cases[0]; k++) {
        const estep_case *ec = &estep_cases[k];
        ptreg_rng rng;
        ptreg_rng_seed(&rng, ec->seed);
        float *cols = malloc(3 * ec->m * sizeof *cols);
        double *rows = malloc(3 * ec->n * sizeof *rows), *ref64 = malloc(5 * ec->n * sizeof *ref64);
        if (!cols || !rows || !ref64) {
            free(cols), free(rows), free(ref64);
            ++*failed;
            continue;
        }
        random_points(&rng, ec->m, 1.0, cols, NULL);
        random_points(&rng, ec->n, 1.1, NULL, rows);
        cpu_sums(rows, ec->n, cols, ec->m, 10.0, PTREG_PRECISION_FP64, ref64);
        const char *exps[] = {"engine", "native"};
        for (size_t p = 0; p < 4; p++) {
            const ptreg_precision prec = all_precisions[p < 3 ? p : 0];
            char detail[PTREG_ERROR_MESSAGE_MAX + 160] = "";
            const double t0 = ptreg_time_ms();
            const int ok = estep_precision(dev, ec, prec,
                                           p == 3   ? exps[1]
                                           : p == 0 ? exps[0]
                                                    : NULL,
                                           rows, cols, ref64, detail, sizeof detail);
            printf("%s estep      n=%zu m=%zu seed=%llu: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL", ec->n,
                   ec->m, (unsigned long long)ec->seed, detail, ptreg_time_ms() - t0, take_digest());
            *passed += ok;
            *failed += !ok;
        }
        free(cols), free(rows), free(ref64);
    }
}

/* ---- EM-ICP registrations ---- */

static int run_emicp_case(const ptreg_device_info *info, int fp64, ptreg_precision prec, char *detail, size_t size)
{
    ptreg_cloud model, scan;
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 300;
    so.seed = 81;
    so.max_angle_deg = 15.0;
    double truth[16];
    if (ptreg_synth_model(PTREG_SHAPE_BLOB, 500, 81, &model, NULL) ||
        ptreg_synth_scan(PTREG_SHAPE_BLOB, &so, &scan, truth, NULL)) {
        snprintf(detail, size, "set-up failed");
        return 0;
    }
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    o.pair.precision = prec;
    o.max_iter = 40;
    ptreg_emicp_result ref, got, again;
    ptreg_error err;
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_status st = ptreg_emicp(scan.xyz, scan.n, model.xyz, model.n, &o, &ref, &err);
    o.device = info->device;
    st = st ? st : ptreg_emicp(scan.xyz, scan.n, model.xyz, model.n, &o, &got, &err);
    st = st ? st : ptreg_emicp(scan.xyz, scan.n, model.xyz, model.n, &o, &again, &err);
    int ok = 0;
    if (st == PTREG_ERR_UNSUPPORTED && prec == PTREG_PRECISION_FP64 && !fp64) {
        ok = strstr(err.message, "double precision") != NULL;
        snprintf(detail, size, "%s: refused: %s", ptreg_precision_name(prec), err.message);
    } else if (st) {
        snprintf(detail, size, "%s: %s", ptreg_precision_name(prec), err.message);
    } else {
        double d = 0.0;
        for (int k = 0; k < 12; k++)
            d = check_worse(d, fabs(ref.transformation[k] - got.transformation[k]) / (k % 4 == 3 ? ref.radius : 1.0));
        digest(got.transformation, sizeof got.transformation);
        const int same = !memcmp(got.transformation, again.transformation, sizeof got.transformation);
        const int named = !strcmp(got.isa, info->name) && got.device.backend == info->device.backend;
        const double tol = fp64 ? 1e-5 : 5e-5;
        ok = d <= tol && got.iterations == ref.iterations && same && named && got.gpts > 0;
        snprintf(detail, size,
                 "%s, %zu x %zu: transform within %.2g of the CPU's (tol %.0g), %d iterations (CPU %d)%s%s",
                 ptreg_precision_name(prec), scan.n, model.n, d, tol, got.iterations, ref.iterations,
                 same ? "" : ", NOT REPEATABLE", named ? "" : ", result names the wrong device");
    }
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return ok;
}

/* ---- LDDMM ---- */

typedef struct lddmm_case {
    size_t n;
    int time_points;
    unsigned splits;
    uint64_t seed;
    int large; /* left out by PTREG_PARITY_QUICK */
} lddmm_case;

static const lddmm_case lddmm_cases[] = {
    {1, 6, 0, 91, 0}, {127, 6, 0, 92, 0}, {129, 6, 0, 93, 0}, {300, 6, 3, 94, 0}, {1847, 4, 0, 95, 1},
};

/* Landmarks in a box about 3 sigma across, momenta and targets near them. */
static void lddmm_inputs(const lddmm_case *lc, double *q0, double *p0, double *target)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, lc->seed);
    random_points(&rng, lc->n, 1.5, NULL, q0);
    random_points(&rng, lc->n, 0.05, NULL, p0);
    for (size_t i = 0; i < 3 * lc->n; i++)
        target[i] = q0[i] * 1.1 + 0.2 + (ptreg_rng_uniform(&rng) - 0.5) * 0.1;
}

static void lddmm_opts(const lddmm_case *lc, ptreg_lddmm_integrator integ, ptreg_precision prec,
                       const ptreg_device *device, ptreg_lddmm_options *o)
{
    ptreg_lddmm_options_default(o);
    o->sigma = 1.0;
    o->time_points = lc->time_points;
    o->integrator = integ;
    o->precision = prec;
    o->device = *device;
}

/* Objective and gradient on the device, through the public call or, with
 * splits forced, the device session itself. */
static ptreg_status device_objective(const lddmm_case *lc, const ptreg_lddmm_options *o, const double *q0,
                                     const double *p0, const double *target, double *f, double *grad, ptreg_error *err)
{
    if (!lc->splits)
        return ptreg_lddmm_objective(q0, target, lc->n, p0, o, f, grad, NULL, err);
    lddmm_device_run *d;
    ptreg_status st = lddmm_device_open(&o->device, q0, lc->n, o, lc->splits, &d, err);
    st = st ? st : lddmm_device_evaluate(d, target, p0, f, grad, NULL, err);
    lddmm_device_close(d);
    return st;
}

/* Evaluated again on one session after a warp of m points: with more
 * points than landmarks the pair sums' buffers grow, under the recorded
 * evaluation's graph (recorded afresh: it must not launch on the freed
 * ones; the CUDA stand-in calls that a violation). */
static ptreg_status objective_after_warp(const lddmm_case *lc, const ptreg_lddmm_options *o, const double *q0,
                                         const double *p0, const double *target, const double *x, size_t m, double *f,
                                         double *grad, double *warped, ptreg_error *err)
{
    lddmm_device_run *d;
    ptreg_status st = lddmm_device_open(&o->device, q0, lc->n, o, lc->splits, &d, err);
    st = st ? st : lddmm_device_evaluate(d, target, p0, f, grad, NULL, err);
    st = st ? st : lddmm_device_warp(d, p0, x, m, warped, err);
    st = st ? st : lddmm_device_evaluate(d, target, p0, f, grad, NULL, err);
    lddmm_device_close(d);
    return st;
}

static int run_lddmm_case(const ptreg_device_info *info, int fp64, const lddmm_case *lc, ptreg_lddmm_integrator integ,
                          ptreg_precision prec, char *detail, size_t size)
{
    const size_t n3 = 3 * lc->n, m = 200;
    double *q0 = malloc(n3 * sizeof *q0), *p0 = malloc(n3 * sizeof *p0), *target = malloc(n3 * sizeof *target);
    double *g64 = malloc(n3 * sizeof *g64), *g32 = malloc(n3 * sizeof *g32), *gd = malloc(n3 * sizeof *gd);
    double *gd2 = malloc(n3 * sizeof *gd2), *x = malloc(3 * m * sizeof *x), *wc = malloc(3 * m * sizeof *wc);
    double *wd = malloc(3 * m * sizeof *wd), *wd2 = malloc(3 * m * sizeof *wd2);
    int ok = 0;
    if (!q0 || !p0 || !target || !g64 || !g32 || !gd || !gd2 || !x || !wc || !wd || !wd2) {
        snprintf(detail, size, "out of memory");
        goto done;
    }
    lddmm_inputs(lc, q0, p0, target);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, lc->seed + 1000);
    random_points(&rng, m, 2.0, NULL, x);
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    ptreg_lddmm_options o64, o32, od;
    lddmm_opts(lc, integ, PTREG_PRECISION_FP64, &cpu, &o64);
    lddmm_opts(lc, integ, PTREG_PRECISION_FP32, &cpu, &o32);
    lddmm_opts(lc, integ, prec, &info->device, &od);
    double f64, f32, fd, fd2;
    ptreg_error err;
    ptreg_status st = ptreg_lddmm_objective(q0, target, lc->n, p0, &o64, &f64, g64, NULL, &err);
    st = st ? st : ptreg_lddmm_objective(q0, target, lc->n, p0, &o32, &f32, g32, NULL, &err);
    st = st ? st : ptreg_lddmm_warp(q0, p0, lc->n, od.precision == PTREG_PRECISION_FP64 ? &o64 : &o32, x, m, wc, &err);
    if (st) {
        snprintf(detail, size, "CPU: %s", err.message);
        goto done;
    }
    st = device_objective(lc, &od, q0, p0, target, &fd, gd, &err);
    st = st ? st : objective_after_warp(lc, &od, q0, p0, target, x, m, &fd2, gd2, wd2, &err);
    st = st ? st : ptreg_lddmm_warp(q0, p0, lc->n, &od, x, m, wd, &err);
    if (st == PTREG_ERR_UNSUPPORTED && !fp64) {
        ok = strstr(err.message, "double precision") != NULL;
        snprintf(detail, size, "refused: %s", err.message);
        goto done;
    }
    if (st) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    digest(&fd, sizeof fd);
    digest(gd, n3 * sizeof *gd);
    digest(wd, 3 * m * sizeof *wd);
    const int dev64 = prec == PTREG_PRECISION_FP64;
    /* nan-ok: fmax only keeps the scale from 0; a NaN fd or f64 makes rel NaN */
    const double rel = fabs(fd - f64) / fmax(fabs(f64), 1e-300), ge = normalised_error(g64, gd, (int)n3);
    const double ge32 = normalised_error(g64, g32, (int)n3), gtol = dev64 ? 1e-8 : 1e-6;
    const double wtol = dev64 ? 1e-10 : 1e-5, we = check_max_abs_diff(wc, wd, 3 * m);
    /* the evaluation after the session's warp: the same bits */
    const int same = fd == fd2 && !memcmp(gd, gd2, n3 * sizeof *gd);
    const double we2 = check_max_abs_diff(wc, wd2, 3 * m);
    ok = rel <= 1e-5 && ge <= gtol && we <= wtol && we2 <= wtol && same;
    snprintf(detail, size,
             "%s %s: objective %.2g relative (tol 1e-5), gradient %.2g (tol %.0g; the CPU's fp32 %.2g) against the "
             "CPU's fp64; warp %.2g, on the session %.2g (tol %.0g)%s",
             integ == PTREG_LDDMM_RK2 ? "rk2" : "euler", ptreg_precision_name(prec), rel, ge, gtol, ge32, we, we2, wtol,
             same ? "" : ", NOT REPEATABLE (again after a warp on the same session)");
done:
    free(q0), free(p0), free(target), free(g64), free(g32), free(gd), free(gd2), free(x), free(wc), free(wd);
    free(wd2);
    return ok;
}

/* LDDMM's cases: each integrator and precision (splits_only: in double,
 * the cases whose row blocks take several groups, whose pair sums pass
 * partials between groups). */
static void run_lddmm_cases(const ptreg_device_info *info, dev_handle *dev, int quick, int splits_only, int *passed,
                            int *failed)
{
    for (size_t k = 0; k < sizeof lddmm_cases / sizeof lddmm_cases[0]; k++)
        for (int v = 0; v < 4 && !(quick && lddmm_cases[k].large); v++) {
            const lddmm_case *lc = &lddmm_cases[k];
            const ptreg_lddmm_integrator integ = v % 2 ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER;
            const ptreg_precision prec = v / 2 ? PTREG_PRECISION_FP64 : PTREG_PRECISION_FP32;
            if (splits_only && (prec != PTREG_PRECISION_FP64 || lc->n <= PTREG_PAIR_DEVICE_WG))
                continue;
            char detail[PTREG_ERROR_MESSAGE_MAX + 256] = "";
            const double t0 = ptreg_time_ms();
            const int ok = run_lddmm_case(info, dev->info.fp64, lc, integ, prec, detail, sizeof detail);
            printf("%s lddmm      n=%zu T=%d splits=%u seed=%llu: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL",
                   lc->n, lc->time_points, lc->splits, (unsigned long long)lc->seed, detail, ptreg_time_ms() - t0,
                   take_digest());
            *passed += ok;
            *failed += !ok;
        }
}

/* Every all-pairs operation on one device (quick: not the study's 1847
 * landmarks). */
static void run_pair_operations(const ptreg_device_info *info, dev_handle *dev, int quick, int *passed, int *failed)
{
    run_estep_cases(dev, passed, failed);
    for (size_t p = 0; p < 3; p++) {
        char detail[PTREG_ERROR_MESSAGE_MAX + 160] = "";
        const double t0 = ptreg_time_ms();
        const int ok = run_emicp_case(info, dev->info.fp64, all_precisions[p], detail, sizeof detail);
        printf("%s emicp      blob: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t0,
               take_digest());
        *passed += ok;
        *failed += !ok;
    }
    run_lddmm_cases(info, dev, quick, 0, passed, failed);
}
