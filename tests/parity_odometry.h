/* The device parity suite's LiDAR odometry (included by
 * test_device_parity.c after parity_voxel.h): a generated drive (16 beams,
 * a street with turns) registered by odometry with its ICP steps on the
 * device against the same drive on the CPU. The poses must be the CPU's
 * within rounding (1e-4 m, 1e-3 degrees a frame), every frame's step
 * count within one and its pairs within 1%, the steps must have run there
 * (launches counted), and a second run must give the same bits. A device
 * without double precision is refused, naming it. */
#include "ptreg/odometry.h"
#include "ptreg/synth.h"

#define ODO_PARITY_FRAMES 12

typedef struct odo_run {
    double pose[ODO_PARITY_FRAMES][16];
    int iterations[ODO_PARITY_FRAMES];
    size_t pairs[ODO_PARITY_FRAMES];
} odo_run;

static ptreg_status odo_parity_run(const ptreg_synth_lidar *w, const ptreg_device *device, odo_run *r, ptreg_error *err)
{
    ptreg_odometry_options o;
    ptreg_odometry_options_default(&o);
    o.device = *device;
    ptreg_odometry *od;
    ptreg_status st = ptreg_odometry_create(&o, &od, err);
    for (size_t i = 0; !st && i < ODO_PARITY_FRAMES; i++) {
        ptreg_cloud c;
        double T[16], t;
        ptreg_odometry_frame f;
        st = ptreg_synth_lidar_frame(w, i, &c, T, &t, err);
        st = st ? st : ptreg_odometry_push(od, c.xyz, c.n, NULL, &f, err);
        if (!st) {
            memcpy(r->pose[i], f.pose, sizeof f.pose);
            r->iterations[i] = f.iterations, r->pairs[i] = f.pairs;
        }
        ptreg_cloud_free(&c);
    }
    ptreg_odometry_destroy(od);
    return st;
}

/* 1 passed, 0 failed. */
static int run_odometry_case(const ptreg_device *device, char *detail, size_t size)
{
    ptreg_synth_lidar_options so;
    ptreg_synth_lidar_options_default(&so);
    so.frames = ODO_PARITY_FRAMES;
    so.beams = 16;
    so.azimuth_step_deg = 0.5;
    ptreg_synth_lidar *w = NULL;
    ptreg_error err = {0};
    static odo_run cpu, dev1, dev2;
    const ptreg_device on_cpu = {PTREG_BACKEND_CPU, 0};
    ptreg_device_stats before, used = {0};
    ptreg_status st = ptreg_synth_lidar_create(&so, &w, &err);
    st = st ? st : odo_parity_run(w, &on_cpu, &cpu, &err);
    ptreg_device_stats_get(&before);
    st = st ? st : odo_parity_run(w, device, &dev1, &err);
    ptreg_device_stats_since(&before, &used);
    st = st ? st : odo_parity_run(w, device, &dev2, &err);
    ptreg_synth_lidar_destroy(w);
    if (st) {
        snprintf(detail, size, "%s", err.message);
        return 0;
    }
    double worst_m = 0.0, worst_deg = 0.0, worst_pairs = 0.0;
    int worst_steps = 0;
    for (size_t i = 0; i < ODO_PARITY_FRAMES; i++) {
        double deg, dist;
        ptreg_transform_difference(cpu.pose[i], dev1.pose[i], &deg, &dist);
        worst_m = check_worse(worst_m, dist), worst_deg = check_worse(worst_deg, deg);
        const int steps = abs(cpu.iterations[i] - dev1.iterations[i]);
        worst_steps = steps > worst_steps ? steps : worst_steps;
        const double pairs = fabs((double)cpu.pairs[i] - (double)dev1.pairs[i]) / (double)(cpu.pairs[i] + 1);
        worst_pairs = check_worse(worst_pairs, pairs);
    }
    const int same = !memcmp(&dev1, &dev2, sizeof dev1);
    digest(&dev1, sizeof dev1);
    snprintf(detail, size,
             "%d frames: poses %.2g m and %.2g deg from the CPU's, steps within %d, pairs within %.2g%%; "
             "%llu launches; a second run %s",
             ODO_PARITY_FRAMES, worst_m, worst_deg, worst_steps, 100.0 * worst_pairs, (unsigned long long)used.launches,
             same ? "the same bits" : "OTHER BITS");
    return !(worst_m > 1e-4) && !(worst_deg > 1e-3) && worst_steps <= 1 && !(worst_pairs > 0.01) && used.launches > 0 &&
           same;
}

static void run_odometry_operations(const ptreg_device_info *info, int fp64, int *passed, int *failed)
{
    char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
    int ok;
    const double t0 = ptreg_time_ms();
    if (!fp64) { /* refused there, never run in float */
        ptreg_odometry_options o;
        ptreg_odometry_options_default(&o);
        o.device = info->device;
        ptreg_odometry *od = NULL;
        ptreg_error err = {0};
        ok = ptreg_odometry_create(&o, &od, &err) == PTREG_ERR_UNSUPPORTED && !od && strstr(err.message, "double");
        snprintf(detail, sizeof detail, "no double precision: %s (%.200s)", ok ? "refused" : "NOT REFUSED",
                 err.message);
    } else {
        ok = run_odometry_case(&info->device, detail, sizeof detail);
    }
    printf("%s odometry   drive      %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL", detail, ptreg_time_ms() - t0,
           take_digest());
    *passed += ok;
    *failed += !ok;
}
