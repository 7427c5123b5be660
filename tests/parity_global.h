/* The device parity suite's global registration (included by
 * test_device_parity.c): the nearest descriptors both ways against a plain
 * loop (NaN rows, ties); ptreg_register of the built-in aircraft onto itself
 * from 20 random poses (any rotation), RANSAC's hypotheses
 * scored on the device and the refinement run there, against the CPU:
 *   - the same matches (the device's nearest descriptors are the CPU's);
 *   - the same RANSAC run: hypotheses drawn, passed the checkers, the
 *     winner's inliers (the device's counts are the CPU's exactly);
 *   - RANSAC's transform the same bits (the winner refit on the host);
 *   - the refined transform within 1e-6 (the device's ICP sums in another
 *     order).
 * Then a device without double precision is refused for RANSAC by name
 * (the engine's answer, and ptreg_register's under PTREG_DEVICE_NO_FP64). */

#define GLOBAL_POSES 20
#define GLOBAL_QUICK_POSES 4

static int run_register_pose(const ptreg_device *device, const ptreg_cloud *model, uint64_t seed, char *detail,
                             size_t size)
{
    /* the model itself under a random pose (any rotation, a unit's shift):
     * the features then match well, and RANSAC has inliers to count */
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    double axis[3], t[3], truth[16];
    for (int k = 0; k < 3; k++) {
        axis[k] = ptreg_rng_uniform(&rng) - 0.5;
        t[k] = ptreg_rng_uniform(&rng) - 0.5;
    }
    ptreg_transform_from_axis_angle(axis, 360.0 * ptreg_rng_uniform(&rng) - 180.0, t, truth);
    ptreg_cloud scan = {0};
    scan.n = model->n;
    if (!(scan.xyz = malloc(3 * scan.n * sizeof(float)))) {
        snprintf(detail, size, "no scan");
        return 0;
    }
    ptreg_transform_points(truth, model->xyz, scan.xyz, scan.n);
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    o.ransac.max_iter = 2048; /* eight batches: enough to tell runs apart, in the suite's time */
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_register_result cpu, dev;
    ptreg_error err;
    int ok = 0;
    if (ptreg_register(scan.xyz, NULL, scan.n, model->xyz, NULL, model->n, &o, &cpu, &err)) {
        snprintf(detail, size, "CPU: %s", err.message);
        goto done;
    }
    o.device = *device;
    if (ptreg_register(scan.xyz, NULL, scan.n, model->xyz, NULL, model->n, &o, &dev, &err)) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    const int same_run = cpu.matches == dev.matches && cpu.ransac.hypotheses == dev.ransac.hypotheses &&
                         cpu.ransac.checked == dev.ransac.checked && cpu.ransac.inliers == dev.ransac.inliers;
    const int same_winner = !memcmp(cpu.ransac.transformation, dev.ransac.transformation,
                                    sizeof cpu.ransac.transformation);
    const double dT = check_max_abs_diff(cpu.transformation, dev.transformation, 16);
    ok = same_run && same_winner && dT <= 1e-6;
    digest(dev.ransac.transformation, sizeof dev.ransac.transformation);
    snprintf(detail, size,
             "pose %llu: %zu matches, %d hypotheses, %d checked, %zu inliers (CPU %zu, %d, %d, %zu)%s; refined |dT| "
             "%.2g (tol 1e-6)",
             (unsigned long long)seed, dev.matches, dev.ransac.hypotheses, dev.ransac.checked, dev.ransac.inliers,
             cpu.matches, cpu.ransac.hypotheses, cpu.ransac.checked, cpu.ransac.inliers,
             same_winner ? ", the same winner" : ", ANOTHER WINNER", dT);
done:
    ptreg_cloud_free(&scan);
    return ok;
}

/* Without double precision (PTREG_DEVICE_NO_FP64), or on a device that
 * fuses a*b+c, ptreg_register on the device is refused by name, never
 * approximated. */
static int register_refused(const ptreg_device *device, const ptreg_cloud *model, char *detail, size_t size)
{
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    o.device = *device;
    ptreg_register_result r;
    ptreg_error err;
    ptreg_status st = ptreg_register(model->xyz, NULL, model->n, model->xyz, NULL, model->n, &o, &r, &err);
    snprintf(detail, size, "not the CPU's arithmetic: %s", st ? err.message : "NOT REFUSED");
    return st == PTREG_ERR_UNSUPPORTED && strstr(err.message, "RANSAC on ") != NULL;
}

/* The nearest descriptor both ways (match_device_nearest), and each row's
 * second least distance (the ratio test's), against a plain loop with the
 * CPU's sum and ties: 33 random bins a row, every fifth target row
 * repeated (ties to the lower index; a second equal to the nearest), NaN
 * rows on both sides. */
static int run_match_case(const ptreg_device *device, size_t ns, size_t nt, uint64_t seed, char *detail, size_t size)
{
    enum { DIM = 33 };
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    float *a = malloc(ns * DIM * sizeof *a), *b = malloc(nt * DIM * sizeof *b);
    unsigned char *a_nan = calloc(ns, 1), *b_nan = calloc(nt, 1);
    uint32_t *rows = malloc(ns * sizeof *rows), *cols = malloc(nt * sizeof *cols);
    float *seconds = malloc(ns * sizeof *seconds);
    int ok = 0;
    if (!a || !b || !a_nan || !b_nan || !rows || !cols || !seconds) {
        snprintf(detail, size, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < ns * DIM; i++)
        a[i] = (float)(100.0 * ptreg_rng_uniform(&rng));
    for (size_t j = 0; j < nt * DIM; j++)
        b[j] = (float)(100.0 * ptreg_rng_uniform(&rng));
    for (size_t j = 0; j < nt; j += 5) /* a target row equal to another: ties */
        memcpy(b + (j + 1 < nt ? j + 1 : j) * DIM, b + j * DIM, DIM * sizeof *b);
    for (size_t i = 3; i < ns; i += 97)
        a[i * DIM + 7] = NAN, a_nan[i] = 1;
    for (size_t j = 11; j < nt; j += 89)
        b[j * DIM + 2] = NAN, b_nan[j] = 1;
    ptreg_error err;
    if (match_device_nearest(device, a, ns, a_nan, b, nt, b_nan, DIM, rows, cols, seconds, &err)) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    size_t row_diff = 0, col_diff = 0, second_diff = 0;
    for (size_t i = 0; i < ns; i++) {
        uint32_t arg = UINT32_MAX;
        float best = INFINITY, second = INFINITY;
        for (size_t j = 0; !a_nan[i] && j < nt; j++) {
            float d = 0.0f;
            for (int k = 0; k < DIM; k++) {
                const float diff = a[i * DIM + k] - b[j * DIM + k];
                d += diff * diff;
            }
            d = b_nan[j] ? INFINITY : d;
            if (d < best)
                second = best, best = d, arg = (uint32_t)j;
            else if (d < second)
                second = d;
        }
        row_diff += rows[i] != arg;
        second_diff += !(seconds[i] == second);
    }
    for (size_t j = 0; j < nt; j++) {
        uint32_t arg = UINT32_MAX;
        float best = INFINITY;
        for (size_t i = 0; !b_nan[j] && i < ns; i++) {
            float d = 0.0f;
            for (int k = 0; !a_nan[i] && k < DIM; k++) {
                const float diff = a[i * DIM + k] - b[j * DIM + k];
                d += diff * diff;
            }
            if (!a_nan[i] && d < best)
                best = d, arg = (uint32_t)i;
        }
        col_diff += cols[j] != arg;
    }
    ok = row_diff == 0 && col_diff == 0 && second_diff == 0;
    digest(rows, ns * sizeof *rows);
    digest(cols, nt * sizeof *cols);
    digest(seconds, ns * sizeof *seconds);
    snprintf(detail, size,
             "%zu x %zu descriptors: %zu rows, %zu columns and %zu second distances differ from the plain loop", ns, nt,
             row_diff, col_diff, second_diff);
done:
    free(a), free(b), free(a_nan), free(b_nan), free(rows), free(cols), free(seconds);
    return ok;
}

static void run_global_operations(const ptreg_device_info *info, int fp64, int quick, int *passed, int *failed)
{
    static const size_t match_sizes[][2] = {{1, 1}, {300, 257}, {1000, 2049}};
    for (size_t k = 0; k < sizeof match_sizes / sizeof *match_sizes && device_exact; k++) {
        char detail[PTREG_ERROR_MESSAGE_MAX + 96] = "";
        const int ok = run_match_case(&info->device, match_sizes[k][0], match_sizes[k][1], 200 + k, detail,
                                      sizeof detail);
        printf("%s match      fpfh-like  %s [bits %016llx]\n", ok ? "ok  " : "FAIL", detail, take_digest());
        *passed += ok;
        *failed += !ok;
    }
    ptreg_cloud model;
    if (ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 4000, 91, &model, NULL)) {
        printf("FAIL register   no model\n");
        ++*failed;
        return;
    }
    const int exact = fp64 && device_exact;
    const int poses = !exact ? 0 : quick ? GLOBAL_QUICK_POSES : GLOBAL_POSES;
    if (!exact) {
        char detail[PTREG_ERROR_MESSAGE_MAX + 64];
        const int ok = register_refused(&info->device, &model, detail, sizeof detail);
        printf("%s register   refusal    %s\n", ok ? "ok  " : "FAIL", detail);
        *passed += ok;
        *failed += !ok;
    }
    for (int k = 0; k < poses; k++) {
        char detail[PTREG_ERROR_MESSAGE_MAX + 160] = "";
        double t0 = ptreg_time_ms();
        int ok = run_register_pose(&info->device, &model, 100 + (uint64_t)k, detail, sizeof detail);
        printf("%s register   aircraft   %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL", detail,
               ptreg_time_ms() - t0, take_digest());
        *passed += ok;
        *failed += !ok;
    }
    ptreg_cloud_free(&model);
    /* without double precision the counts could differ from the CPU's: refused by name, never approximated */
    ptreg_device_info single = *info;
    single.fp64 = 0;
    ptreg_error err;
    const int refused = ransac_device_engine.supports(NULL, &single, &err) == PTREG_ERR_UNSUPPORTED &&
                        strstr(err.message, "double precision") != NULL;
    printf("%s register   refusal    a device without double precision: %s\n", refused ? "ok  " : "FAIL",
           refused ? err.message : "not refused");
    *passed += refused;
    *failed += !refused;
}
