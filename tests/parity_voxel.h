/* The device parity suite's voxel grid (included by test_device_parity.c
 * after parity_normals.h): ptreg_voxel_downsample on the device against
 * the CPU, on the bunny and LiDAR scans (skipped without ../shared/data)
 * with voxels from fine (a few points each) to one voxel holding the whole
 * cloud (the device's per-voxel sort at its longest), with normals (some
 * cancelling: NaN) and colours, and on a synthetic cloud of repeated
 * points. The output must be the CPU's: the same count, the same order,
 * the same bits of every centroid, normal and colour; 6 launches; a second
 * run the same bits. Bad input gets the CPU's error: a non-finite point,
 * a voxel that makes 2^21 cells along an axis. */
#include "feat/voxel_device.h"

typedef struct voxel_case {
    normals_cloud cloud;
    double voxel;
    int attributes; /* normals and colours */
} voxel_case;

static const voxel_case voxel_cases[] = {
    {NC_SYNTH, 0.5, 1},  {NC_SYNTH, 1e6, 0},  {NC_BUNNY, 0.002, 1}, {NC_BUNNY, 0.01, 0},
    {NC_BUNNY, 10.0, 1}, {NC_LIDAR, 0.25, 1}, {NC_LIDAR, 1.0, 0},
};

/* The case's cloud, with normals (every 7th reversed, so that some voxels'
 * cancel) and colours made up from the index. */
static int voxel_cloud(const voxel_case *vc, ptreg_cloud *c)
{
    ptreg_cloud_init(c);
    float *xyz = NULL;
    size_t n = 0;
    const int loaded = normals_load(vc->cloud, &xyz, &n);
    if (loaded <= 0)
        return loaded;
    c->xyz = xyz, c->n = n;
    if (!vc->attributes)
        return 1;
    c->normals = malloc(3 * n * sizeof(float));
    c->rgb = malloc(3 * n);
    if (!c->normals || !c->rgb)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const float s = i % 7 == 3 ? -1.0f : 1.0f;
        c->normals[3 * i] = s * 0.6f, c->normals[3 * i + 1] = s * 0.0f, c->normals[3 * i + 2] = s * 0.8f;
        if (i % 5 == 0) /* a pair that cancels when they share a voxel */
            c->normals[3 * i] = -0.6f, c->normals[3 * i + 2] = -0.8f;
        for (int k = 0; k < 3; k++)
            c->rgb[3 * i + (size_t)k] = (uint8_t)((i * (3 + (size_t)k) * 37) & 0xff);
    }
    return 1;
}

static int voxel_same_bits(const float *a, const float *b, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (memcmp(a + i, b + i, sizeof *a) && !(isnan(a[i]) && isnan(b[i])))
            return 0;
    return 1;
}

/* 1 passed, 0 failed, -1 skipped. */
static int run_voxel_case(const ptreg_device *device, const voxel_case *vc, char *detail, size_t size)
{
    ptreg_cloud in, cpu, dev1, dev2;
    ptreg_cloud_init(&cpu), ptreg_cloud_init(&dev1), ptreg_cloud_init(&dev2);
    const int loaded = voxel_cloud(vc, &in);
    if (loaded <= 0) {
        ptreg_cloud_free(&in);
        snprintf(detail, size, loaded ? "the cloud did not load" : "no ../shared/data: skipped");
        return loaded ? 0 : -1;
    }
    ptreg_error err = {0};
    ptreg_device_stats before, used = {0};
    ptreg_status st = ptreg_voxel_downsample(&in, vc->voxel, &cpu, &err);
    ptreg_device_stats_get(&before);
    st = st ? st : voxel_device_downsample_host(device, &in, vc->voxel, &dev1, &err);
    ptreg_device_stats_since(&before, &used);
    st = st ? st : voxel_device_downsample_host(device, &in, vc->voxel, &dev2, &err);
    int ok = 0;
    if (st) {
        snprintf(detail, size, "%s", err.message);
    } else {
        const size_t v = cpu.n;
        const int same_n = dev1.n == v;
        const int xyz = same_n && voxel_same_bits(dev1.xyz, cpu.xyz, 3 * v);
        const int nrm = same_n && (!cpu.normals || (dev1.normals && voxel_same_bits(dev1.normals, cpu.normals, 3 * v)));
        const int rgb = same_n && (!cpu.rgb || (dev1.rgb && !memcmp(dev1.rgb, cpu.rgb, 3 * v)));
        const int repeat = dev2.n == dev1.n && voxel_same_bits(dev2.xyz, dev1.xyz, 3 * v);
        size_t nan_normals = 0;
        for (size_t i = 0; cpu.normals && i < v; i++)
            nan_normals += isnan(cpu.normals[3 * i]) != 0;
        ok = xyz && nrm && rgb && repeat && used.launches == 6;
        snprintf(detail, size,
                 "%zu points -> %zu voxels (cpu %zu), centroids %s, normals %s (%zu NaN), colours %s, repeat %s, "
                 "%llu launches (expected 6), %llu bytes back",
                 in.n, dev1.n, v, xyz ? "same bits" : "DIFFER", cpu.normals ? (nrm ? "same bits" : "DIFFER") : "none",
                 nan_normals, cpu.rgb ? (rgb ? "same" : "DIFFER") : "none", repeat ? "same" : "DIFFERS",
                 (unsigned long long)used.launches, (unsigned long long)used.bytes_from);
        if (same_n)
            digest(dev1.xyz, 3 * v * sizeof(float));
    }
    ptreg_cloud_free(&in), ptreg_cloud_free(&cpu), ptreg_cloud_free(&dev1), ptreg_cloud_free(&dev2);
    return ok;
}

/* Bad input: the CPU's errors. */
static int run_voxel_refusals(const ptreg_device *device, char *detail, size_t size)
{
    size_t n = 0;
    float *xyz = normals_synthetic(&n);
    if (!xyz)
        return 0;
    ptreg_cloud in;
    ptreg_cloud_init(&in);
    in.xyz = xyz, in.n = n;
    ptreg_cloud out;
    ptreg_error ec = {0}, ed = {0};
    int ok = 1;
    /* a voxel too small for the extent */
    ptreg_status sc = ptreg_voxel_downsample(&in, 1e-6, &out, &ec);
    ptreg_cloud_free(&out);
    ptreg_status sd = voxel_device_downsample_host(device, &in, 1e-6, &out, &ed);
    ptreg_cloud_free(&out);
    ok = ok && sc == PTREG_ERR_ARG && sd == sc && !strcmp(ec.message, ed.message);
    /* a non-finite point */
    xyz[3 * 17 + 1] = NAN;
    sc = ptreg_voxel_downsample(&in, 0.5, &out, &ec);
    ptreg_cloud_free(&out);
    sd = voxel_device_downsample_host(device, &in, 0.5, &out, &ed);
    ptreg_cloud_free(&out);
    ok = ok && sc == PTREG_ERR_ARG && sd == sc && !strcmp(ec.message, ed.message);
    snprintf(detail, size, "%s (last: %.200s)", ok ? "the CPU's errors" : "NOT the CPU's errors", ed.message);
    ptreg_cloud_free(&in);
    return ok;
}

static void run_voxel_operations(const ptreg_device_info *info, int fp64, int *passed, int *failed)
{
    if (!fp64) { /* refused there, never run in float */
        size_t n = 0;
        ptreg_cloud in, out;
        ptreg_cloud_init(&in);
        in.xyz = normals_synthetic(&n), in.n = n;
        ptreg_error err = {0};
        const int ok = in.xyz &&
                       voxel_device_downsample_host(&info->device, &in, 0.5, &out, &err) == PTREG_ERR_UNSUPPORTED &&
                       strstr(err.message, "double");
        ptreg_cloud_free(&in);
        printf("%s voxel      no double precision: %s (%.200s)\n", ok ? "ok  " : "FAIL", ok ? "refused" : "NOT REFUSED",
               err.message);
        *passed += ok;
        *failed += !ok;
        return;
    }
    for (size_t k = 0; k < sizeof voxel_cases / sizeof voxel_cases[0]; k++) {
        const voxel_case *vc = &voxel_cases[k];
        char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
        double t0 = ptreg_time_ms();
        int ok = run_voxel_case(&info->device, vc, detail, sizeof detail);
        printf("%s voxel      %-9s v=%g%s: %s (%.0f ms) [bits %016llx]\n",
               ok > 0   ? "ok  "
               : ok < 0 ? "skip"
                        : "FAIL",
               normals_cloud_name(vc->cloud), vc->voxel, vc->attributes ? " +normals+rgb" : "", detail,
               ptreg_time_ms() - t0, take_digest());
        *passed += ok > 0; /* nan-ok: an int */
        *failed += ok == 0;
    }
    char detail[PTREG_ERROR_MESSAGE_MAX + 400] = "";
    int ok = run_voxel_refusals(&info->device, detail, sizeof detail);
    printf("%s voxel      refusals: %s\n", ok ? "ok  " : "FAIL", detail);
    *passed += ok;
    *failed += !ok;
}
