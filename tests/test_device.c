#define _POSIX_C_SOURCE 200809L /* setenv */
/* The device layer: device names, ptreg_device_resolve's rules, and on every
 * GPU-backend device found (in CI: POCL) the backend interface itself:
 * buffers, copies, fills, programs with -D options and their cache, kernels
 * with local memory and barriers, guard words, events and error messages,
 * graphs of launches, and the work each thread asked for
 * (ptreg_device_stats).
 * PTREG_TEST_DEVICE=opencl:0 (say) limits the device runs to one device. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "device/backend.h"
#include "device/engine.h"
#include "device/kernel_cache.h"
#include "ptreg/device.h"


static void test_names(void)
{
    ptreg_device d;
    char buf[32];
    const char *good[] = {"auto", "cpu", "cuda", "cuda:3", "opencl", "opencl:12"};
    const char *formatted[] = {"auto", "cpu", "cuda:0", "cuda:3", "opencl:0", "opencl:12"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_MSG(ptreg_device_parse(good[i], &d) == 0, "%s", good[i]);
        CHECK_MSG(!strcmp(ptreg_device_format(&d, buf, sizeof buf), formatted[i]), "%s -> %s", good[i], buf);
    }
    const char *bad[] = {"", "gpu", "cuda:", "cuda:x", "cpu:0", "opencl:-1", "cuda:1x", "CUDA", "auto:1", "cuda:99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(ptreg_device_parse(bad[i], &d) == -1, "'%s' parsed", bad[i]);
    ptreg_device zero;
    memset(&zero, 0, sizeof zero);
    CHECK(zero.backend == PTREG_BACKEND_AUTO);
}

static const unsigned cpu_only = PTREG_BACKEND_BIT(PTREG_BACKEND_CPU);
static const unsigned every = PTREG_BACKEND_BIT(PTREG_BACKEND_CPU) | PTREG_BACKEND_BIT(PTREG_BACKEND_CUDA) |
                              PTREG_BACKEND_BIT(PTREG_BACKEND_OPENCL);

static void test_resolve(void)
{
    ptreg_device req = {PTREG_BACKEND_AUTO, 0}, on;
    ptreg_error err;
    unsetenv("PTREG_DEVICE");
    CHECK(ptreg_device_resolve(&req, cpu_only, "op", &on, &err) == PTREG_OK && on.backend == PTREG_BACKEND_CPU);
    CHECK(ptreg_device_resolve(NULL, cpu_only, "op", &on, &err) == PTREG_OK && on.backend == PTREG_BACKEND_CPU);
    /* auto never takes a CPU OpenCL driver */
    CHECK(ptreg_device_resolve(&req, every, "op", &on, &err) == PTREG_OK);
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    CHECK(count >= 1 && list[0].device.backend == PTREG_BACKEND_CPU);
    for (size_t i = 0; i < count; i++)
        if (list[i].device.backend == on.backend && list[i].device.index == on.index)
            CHECK_MSG(!list[i].for_testing, "auto chose %s, a device for tests", list[i].name);
    /* a device the operation has no path for: an error naming both */
    req = (ptreg_device){PTREG_BACKEND_CUDA, 0};
    CHECK(ptreg_device_resolve(&req, cpu_only, "EM-ICP", &on, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "EM-ICP") && strstr(err.message, "cuda:0") && strstr(err.message, "CPU only"), "%s",
              err.message);
    req = (ptreg_device){PTREG_BACKEND_OPENCL, 99};
    CHECK(ptreg_device_resolve(&req, every, "ICP", &on, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "opencl:99"), "%s", err.message);
    req = (ptreg_device){PTREG_BACKEND_CPU, 0};
    CHECK(ptreg_device_resolve(&req, cpu_only, "op", &on, &err) == PTREG_OK && on.backend == PTREG_BACKEND_CPU);
    /* PTREG_DEVICE stands in for auto: a device it names must be valid and
     * found where the operation has a path on it; an operation without one
     * runs on the CPU (issue 47: one rule for every command and step) */
    req = (ptreg_device){PTREG_BACKEND_AUTO, 0};
    setenv("PTREG_DEVICE", "cpu", 1);
    CHECK(ptreg_device_resolve(&req, every, "op", &on, &err) == PTREG_OK && on.backend == PTREG_BACKEND_CPU);
    setenv("PTREG_DEVICE", "tpu", 1);
    CHECK(ptreg_device_resolve(&req, every, "op", &on, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "PTREG_DEVICE"), "%s", err.message);
    setenv("PTREG_DEVICE", "cuda:7", 1);
    on.backend = PTREG_BACKEND_CUDA;
    CHECK(ptreg_device_resolve(&req, cpu_only, "harris3d", &on, &err) == PTREG_OK && on.backend == PTREG_BACKEND_CPU);
    CHECK(ptreg_device_resolve(&req, every, "ICP", &on, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "PTREG_DEVICE") && strstr(err.message, "ICP"), "%s", err.message);
    unsetenv("PTREG_DEVICE");
    req = (ptreg_device){PTREG_BACKEND_CUDA, 7}; /* named in the call: the operation must serve it */
    CHECK(ptreg_device_resolve(&req, cpu_only, "harris3d", &on, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "harris3d"), "%s", err.message);
    CHECK(ptreg_backend_built(PTREG_BACKEND_CPU));
}

/* A GPU engine that runs options whose int is 1. */
static ptreg_status runs_ones(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    return *(const int *)options ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "not on %s", device->name);
}

/* The choice among engines (device/engine.h) on `gpu`: the engine asked;
 * auto, and PTREG_DEVICE's choice, fall back to the CPU; a device named
 * gets the engine's reason. */
static void test_engines(const ptreg_device *gpu, const char *name)
{
    const engine gpu_engine = {ENGINE_GPU_BACKENDS, runs_ones};
    const engine *const both[] = {&engine_cpu, &gpu_engine}, *const cpu[] = {&engine_cpu};
    const int yes = 1, no = 0;
    ptreg_device on;
    ptreg_error err;
    const engine *which = NULL; /* the engine chosen */
    CHECK_MSG(engine_choose(both, 2, gpu, &yes, "op", &on, &which, &err) == PTREG_OK && which == both[1] &&
                  on.backend == gpu->backend && on.index == gpu->index,
              "%s", name);
    CHECK_MSG(engine_choose(both, 2, gpu, &no, "op", &on, &which, &err) == PTREG_ERR_UNSUPPORTED &&
                  strstr(err.message, "not on"),
              "%s", name);
    CHECK_MSG(engine_choose(cpu, 1, gpu, &yes, "op", &on, &which, &err) == PTREG_ERR_ARG &&
                  strstr(err.message, "CPU only"),
              "%s: %s", name, err.message);
    const ptreg_device any = {PTREG_BACKEND_AUTO, 0};
    setenv("PTREG_DEVICE", name, 1);
    CHECK_MSG(engine_choose(both, 2, &any, &no, "op", &on, &which, &err) == PTREG_OK && which == both[0] &&
                  on.backend == PTREG_BACKEND_CPU,
              "%s", name);
    CHECK_MSG(engine_choose(both, 2, &any, &yes, "op", &on, &which, &err) == PTREG_OK && which == both[1] &&
                  on.backend == gpu->backend,
              "%s", name);
    unsetenv("PTREG_DEVICE");
}

/* The block sum's tree, in the kernel's order, on the host. */
static float tree_sum(const float *x, size_t n, size_t g, size_t wg)
{
    float tile[1024];
    for (size_t t = 0; t < wg; t++)
        tile[t] = g * wg + t < n ? x[g * wg + t] : 0.0f;
    for (size_t half = wg / 2; half > 0; half /= 2)
        for (size_t t = 0; t < half; t++)
            tile[t] += tile[t + half];
    return tile[0];
}

static void test_block_sums(dev_handle *dev, const char *name)
{
    const size_t wg = 64, sizes[] = {1, wg - 1, wg, wg + 1, 1000};
    dprogram *prog;
    dkernel *sum, *total;
    ptreg_error err;
    const int built = dev_program(dev, &basics_kernels, "-DWG=64", &prog, &err) == PTREG_OK;
    CHECK_MSG(built, "%s: %s", name, err.message);
    if (!built)
        return;
    REQUIRE(dev_kernel(prog, "ptreg_basics_block_sum", &sum, &err) == PTREG_OK);
    int fp64 = dev->info.fp64 && dev_kernel(prog, "ptreg_basics_total", &total, &err) == PTREG_OK;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], groups = (n + wg - 1) / wg;
        float *x = malloc(n * sizeof *x), *partial = malloc(groups * sizeof *partial);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)((i * 2654435761u) % 1000u) / 7.0f - 60.0f;
        dbuf *bx, *bp, *bt = NULL;
        CHECK(dbuf_upload(dev, x, n * sizeof *x, &bx, &err) == PTREG_OK);
        CHECK(dbuf_alloc(dev, groups * sizeof(float), &bp, &err) == PTREG_OK);
        karg args[] = {KARG_BUF(bx), KARG_U32(n), KARG_BUF(bp)};
        CHECK_MSG(dev_launch(sum, n, wg, 3, args, &err) == PTREG_OK, "%s", err.message);
        CHECK(dbuf_read(bp, 0, partial, groups * sizeof *partial, &err) == PTREG_OK);
        size_t bad = 0;
        double host_total = 0.0;
        for (size_t g = 0; g < groups; g++) {
            float expect = tree_sum(x, n, g, wg);
            bad += memcmp(&expect, &partial[g], sizeof expect) != 0;
            host_total += expect;
        }
        CHECK_MSG(bad == 0, "%s: block sums of %zu differ from the host's tree in %zu of %zu groups", name, n, bad,
                  groups);
        if (fp64) {
            double got = 0.0;
            CHECK(dbuf_alloc(dev, sizeof(double), &bt, &err) == PTREG_OK);
            karg targs[] = {KARG_BUF(bp), KARG_U32(groups), KARG_BUF(bt)};
            CHECK(dev_launch(total, 1, 1, 3, targs, &err) == PTREG_OK);
            CHECK(dbuf_read(bt, 0, &got, sizeof got, &err) == PTREG_OK);
            CHECK_MSG(got == host_total, "%s: total %.17g, host %.17g", name, got, host_total);
        }
        dbuf_free(bx);
        dbuf_free(bp);
        dbuf_free(bt);
        free(x);
        free(partial);
    }
}

static void test_buffers(dev_handle *dev, const char *name)
{
    ptreg_error err;
    uint32_t in[100], out[100];
    for (int i = 0; i < 100; i++)
        in[i] = 3u * (uint32_t)i + 7u;
    dbuf *a, *b;
    CHECK(dbuf_upload(dev, in, sizeof in, &a, &err) == PTREG_OK);
    CHECK(dbuf_alloc(dev, sizeof in, &b, &err) == PTREG_OK);
    CHECK(dbuf_fill(b, 0, sizeof in, 0xdeadbeefu, &err) == PTREG_OK);
    CHECK(dbuf_copy(b, 40, a, 0, 80, &err) == PTREG_OK);
    CHECK(dbuf_read(b, 0, out, sizeof out, &err) == PTREG_OK);
    int ok = 1;
    for (int i = 0; i < 100; i++)
        ok &= out[i] == (i >= 10 && i < 30 ? in[i - 10] : 0xdeadbeefu);
    CHECK_MSG(ok, "%s: fill and copy", name);
    CHECK(dbuf_write(b, 4, in, 8, &err) == PTREG_OK);
    CHECK(dbuf_read(b, 0, out, 12, &err) == PTREG_OK);
    CHECK(out[0] == 0xdeadbeefu && out[1] == in[0] && out[2] == in[1]);
    /* out of range is refused before the backend sees it */
    CHECK(dbuf_read(b, 396, out, 8, &err) == PTREG_ERR_ARG);
    CHECK(dbuf_write(b, 401, in, 0, &err) == PTREG_ERR_ARG);
    dbuf_free(a);
    dbuf_free(b);
}

/* ptreg_device_stats: test_buffers' work counted exactly (copies within the
 * device, fills and refused calls not), a launch counted, and each thread
 * counting only its own. */
typedef struct stats_job {
    dev_handle *dev;
    const char *name;
    ptreg_device_stats delta;
} stats_job;

static void *buffers_counted(void *arg)
{
    stats_job *job = arg;
    ptreg_device_stats before;
    ptreg_device_stats_get(&before);
    test_buffers(job->dev, job->name);
    ptreg_device_stats_since(&before, &job->delta);
    return NULL;
}

static void test_stats(dev_handle *dev, const char *name)
{
    stats_job here = {dev, name, {0}}, there = here;
    buffers_counted(&here);
    CHECK_MSG(here.delta.launches == 0 && here.delta.allocs == 2 && here.delta.bytes_to == 408 &&
                  here.delta.bytes_from == 412,
              "%s: counted %llu launches, %llu allocs, %llu bytes to, %llu from", name,
              (unsigned long long)here.delta.launches, (unsigned long long)here.delta.allocs,
              (unsigned long long)here.delta.bytes_to, (unsigned long long)here.delta.bytes_from);
    ptreg_device_stats before, mine;
    ptreg_device_stats_get(&before);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, buffers_counted, &there) == 0 && pthread_join(thread, NULL) == 0);
    ptreg_device_stats_since(&before, &mine);
    CHECK_MSG(!memcmp(&there.delta, &here.delta, sizeof here.delta) && mine.allocs == 0 && mine.bytes_to == 0,
              "%s: another thread's work is its own", name);
    test_block_sums(dev, name);
    ptreg_device_stats_since(&before, &mine);
    CHECK_MSG(mine.launches > 0, "%s: a launch is counted", name);
}

/* Graphs: launches recorded (not run, and the thread's copies, fills,
 * allocations and waits refused meanwhile, while another thread launches
 * as usual), then run twice with one call each, as the launches made
 * directly; counted as one graph and its kernels. */
typedef struct graph_side {
    dkernel *iota;
    dbuf *out;
    ptreg_status st;
} graph_side;

static void *launch_beside(void *arg)
{
    graph_side *side = arg;
    ptreg_error err;
    const karg args[] = {KARG_BUF(side->out), KARG_U32(64), KARG_U32(5), KARG_U32(2)};
    side->st = dev_launch(side->iota, 64, 64, 4, args, &err);
    return NULL;
}

static void test_graphs(dev_handle *dev, const char *name)
{
    enum { N = 1000, WGS = 64, GROUPS = (N + WGS - 1) / WGS };
    ptreg_error err;
    dprogram *prog;
    dkernel *iota, *sum;
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &prog, &err) == PTREG_OK);
    REQUIRE(dev_kernel(prog, "ptreg_basics_iota", &iota, &err) == PTREG_OK);
    REQUIRE(dev_kernel(prog, "ptreg_basics_block_sum", &sum, &err) == PTREG_OK);
    dbuf *x, *partial, *beside, *more = NULL;
    REQUIRE(dbuf_alloc(dev, N * 4, &x, &err) == PTREG_OK && dbuf_alloc(dev, GROUPS * 4, &partial, &err) == PTREG_OK &&
            dbuf_alloc(dev, 64 * 4, &beside, &err) == PTREG_OK);
    const karg a1[] = {KARG_BUF(x), KARG_U32(N), KARG_U32(3), KARG_U32(0x3f800000u)};
    const karg a2[] = {KARG_BUF(x), KARG_U32(N), KARG_BUF(partial)};
    float direct[GROUPS], replay[GROUPS];
    CHECK(dev_launch(iota, N, WGS, 4, a1, &err) == PTREG_OK && dev_launch(sum, N, WGS, 3, a2, &err) == PTREG_OK);
    CHECK(dbuf_read(partial, 0, direct, sizeof direct, &err) == PTREG_OK);
    CHECK(dbuf_fill(x, 0, N * 4, 0, &err) == PTREG_OK && dbuf_fill(partial, 0, GROUPS * 4, 0, &err) == PTREG_OK);

    ptreg_device_stats before, used;
    ptreg_device_stats_get(&before);
    dgraph *g = NULL;
    CHECK(dev_record_begin(dev, &err) == PTREG_OK);
    CHECK(dev_record_begin(dev, &err) == PTREG_ERR_RUNTIME);
    CHECK(dev_launch(iota, N, WGS, 4, a1, &err) == PTREG_OK && dev_launch(sum, N, WGS, 3, a2, &err) == PTREG_OK);
    CHECK(dbuf_read(partial, 0, replay, sizeof replay, &err) == PTREG_ERR_RUNTIME && strstr(err.message, "graph"));
    CHECK(dbuf_alloc(dev, 4, &more, &err) == PTREG_ERR_RUNTIME && !more);
    CHECK(dbuf_fill(x, 0, 4, 0, &err) == PTREG_ERR_RUNTIME && dev_finish(dev, &err) == PTREG_ERR_RUNTIME);
    graph_side side = {iota, beside, PTREG_ERR_RUNTIME};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, launch_beside, &side) == 0 && pthread_join(thread, NULL) == 0);
    CHECK_MSG(side.st == PTREG_OK, "%s: another thread launches while this one records", name);
    dgraph *none = NULL;
    REQUIRE(dev_record_end(dev, &g, &err) == PTREG_OK && g && dev_graph_kernels(g) == 2);
    CHECK(dev_record_end(dev, &none, &err) == PTREG_ERR_RUNTIME && !none);
    ptreg_device_stats_since(&before, &used);
    CHECK_MSG(used.launches == 0 && used.graphs == 0, "%s: recording runs nothing", name);
    uint32_t word = 1, side_word = 0;
    CHECK(dbuf_read(partial, 0, &word, 4, &err) == PTREG_OK && word == 0);
    CHECK(dbuf_read(beside, 4, &side_word, 4, &err) == PTREG_OK && side_word == 7);
    for (int run = 0; run < 2; run++) {
        CHECK(dbuf_fill(partial, 0, GROUPS * 4, 0, &err) == PTREG_OK);
        ptreg_device_stats_get(&before);
        CHECK_MSG(dev_graph_launch(g, &err) == PTREG_OK, "%s: %s", name, err.message);
        ptreg_device_stats_since(&before, &used);
        CHECK(dbuf_read(partial, 0, replay, sizeof replay, &err) == PTREG_OK);
        CHECK_MSG(!memcmp(direct, replay, sizeof direct), "%s: graph run %d as the launches", name, run);
        CHECK_MSG(used.graphs == 1 && used.launches == 2, "%s: a graph counts %llu graphs, %llu launches", name,
                  (unsigned long long)used.graphs, (unsigned long long)used.launches);
    }
    dev_graph_free(g);
    CHECK(dev_record_begin(dev, &err) == PTREG_OK && dev_record_end(dev, &none, &err) == PTREG_OK && !none);
    dbuf_free(x);
    dbuf_free(partial);
    dbuf_free(beside);
}

/* A kernel that writes one word past its buffer is caught by the guard. */
static void test_guards(dev_handle *dev, const char *name)
{
    ptreg_error err;
    dprogram *prog;
    dkernel *iota;
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &prog, &err) == PTREG_OK);
    REQUIRE(dev_kernel(prog, "ptreg_basics_iota", &iota, &err) == PTREG_OK);
    int was = dev->check_guards;
    uint64_t before = dev->guard_violations;
    dev->check_guards = 1;
    for (uint32_t extra = 0; extra < 2; extra++) {
        dbuf *b;
        uint32_t out[50];
        CHECK(dbuf_alloc(dev, sizeof out, &b, &err) == PTREG_OK);
        karg args[] = {KARG_BUF(b), KARG_U32(50 + extra), KARG_U32(5), KARG_U32(1)};
        CHECK(dev_launch(iota, 50 + extra, 64, 4, args, &err) == PTREG_OK);
        CHECK(dbuf_read(b, 0, out, sizeof out, &err) == PTREG_OK);
        int ok = 1;
        for (uint32_t i = 0; i < 50; i++)
            ok &= out[i] == 5 * i + 1;
        CHECK_MSG(ok, "%s: iota", name);
        dbuf_free(b);
        CHECK_MSG(dev->guard_violations == before + extra, "%s: %llu guard violations after %u words too many", name,
                  (unsigned long long)(dev->guard_violations - before), extra);
    }
    dev->guard_violations = before;
    dev->check_guards = was;
}

static void test_programs(dev_handle *dev, const char *name)
{
    ptreg_error err;
    dprogram *p1, *p2, *p3;
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &p1, &err) == PTREG_OK);
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &p2, &err) == PTREG_OK);
    CHECK_MSG(p1 == p2, "%s: the same program and options were built twice", name);
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=128", &p3, &err) == PTREG_OK);
    CHECK(p3 != p1);
    dkernel *k1, *k2;
    REQUIRE(dev_kernel(p1, "ptreg_basics_iota", &k1, &err) == PTREG_OK);
    CHECK(dev_kernel(p1, "ptreg_basics_iota", &k2, &err) == PTREG_OK && k1 == k2);
    /* errors name the device and what failed */
    CHECK(dev_kernel(p1, "no_such_kernel", &k2, &err) == PTREG_ERR_RUNTIME);
    CHECK_MSG(strstr(err.message, "no_such_kernel") && strstr(err.message, dev->label), "%s", err.message);
    CHECK(dev_program(dev, &basics_kernels, "-DWG=", &p2, &err) == PTREG_ERR_RUNTIME);
    CHECK_MSG(strstr(err.message, "basics"), "%s", err.message);
    static const char *const missing_files[] = {"nn/missing.cl", NULL};
    static const kernel_program missing = {"missing", missing_files};
    CHECK(dev_program(dev, &missing, "", &p2, &err) == PTREG_ERR_RUNTIME);
    CHECK_MSG(strstr(err.message, "nn/missing.cl"), "%s", err.message);
}

/* A kernel's own work-group limit (its registers and local memory
 * decide) is asked of the device, and a launch past it refused by ptreg
 * with a message, before the driver fails it; a buffer larger than an
 * OpenCL device's largest allocation is refused as such, not as memory
 * running out. */
static void test_limits(dev_handle *dev, const char *name)
{
    ptreg_error err;
    dprogram *p;
    dkernel *k;
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &p, &err) == PTREG_OK);
    REQUIRE(dev_kernel(p, "ptreg_basics_iota", &k, &err) == PTREG_OK);
    CHECK_MSG(k->max_threads >= 64 && k->max_threads <= (dev->info.max_work_group > 64 ? dev->info.max_work_group : 64),
              "%s: iota runs in groups of up to %zu", name, k->max_threads);
    const size_t real = k->max_threads;
    dbuf *out;
    CHECK(dbuf_alloc(dev, 64 * 4, &out, &err) == PTREG_OK);
    const karg args[] = {KARG_BUF(out), KARG_U32(64), KARG_U32(1), KARG_U32(0)};
    k->max_threads = 32;
    CHECK(dev_launch(k, 64, 64, 4, args, &err) == PTREG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "ptreg_basics_iota") && strstr(err.message, "at most 32"), "%s", err.message);
    char device_limit[64]; /* both limits named: the kernel's below the device's */
    snprintf(device_limit, sizeof device_limit, "the device's: %zu", dev->info.max_work_group);
    CHECK_MSG(strstr(err.message, device_limit), "%s", err.message);
    CHECK(dev_kernel_limit(k) == 32 && dev_kernel_fits(k, 32, &err) == PTREG_OK);
    CHECK(dev_kernel_fits(k, 33, &err) == PTREG_ERR_UNSUPPORTED);
    k->max_threads = real;
    CHECK(dev_launch(k, 64, 64, 4, args, &err) == PTREG_OK);
    dbuf_free(out);
    dbuf *huge = NULL;
    const ptreg_status st = dbuf_alloc(dev, (size_t)1 << 34, &huge, &err);
    if (dev->info.device.backend == PTREG_BACKEND_OPENCL && st == PTREG_ERR_UNSUPPORTED)
        CHECK_MSG(strstr(err.message, "largest allocation"), "%s", err.message);
    else
        CHECK_MSG(st == PTREG_OK || st == PTREG_ERR_NOMEM, "%s: 16 GiB: %s", name, err.message);
    if (!st)
        dbuf_free(huge);
    if (strstr(dev->info.platform, "Portable Computing Language")) /* POCL's largest is 1 GiB or so */
        CHECK_MSG(st == PTREG_ERR_UNSUPPORTED, "%s: 16 GiB: %d", name, (int)st);
}

/* An image the driver refused is forgotten: the next process compiles
 * afresh rather than loading it again. */
static void test_kernel_cache(void)
{
    char dir[] = "/tmp/ptreg-cache-test-XXXXXX", *was = getenv("PTREG_KERNEL_CACHE");
    was = was ? strdup(was) : NULL; /* the CUDA stand-in's own cache comes back after */
    CHECK(mkdtemp(dir) != NULL);
    setenv("PTREG_KERNEL_CACHE", dir, 1);
    const char *const parts[] = {"source", "-DWG=64", "sm_90", "driver 13000 nvrtc 13.0"};
    const char image[] = "not really a cubin";
    void *got = NULL;
    size_t size = 0;
    CHECK(!kernel_cache_load("cubin", parts, 4, &got, &size));
    kernel_cache_store("cubin", parts, 4, image, sizeof image);
    CHECK(kernel_cache_load("cubin", parts, 4, &got, &size) && size == sizeof image && !memcmp(got, image, size));
    free(got);
    kernel_cache_forget("cubin", parts, 4);
    CHECK(!kernel_cache_load("cubin", parts, 4, &got, &size));
    if (was)
        setenv("PTREG_KERNEL_CACHE", was, 1);
    else
        unsetenv("PTREG_KERNEL_CACHE");
    free(was);
    CHECK(rmdir(dir) == 0);
}

/* OpenCL times kernels by their own events: not the host's wait before a
 * launch (a marker command's time would hold it: the first mark is stamped
 * when it is queued, on POCL), and nothing at all without a kernel. */
static void test_kernel_times(dev_handle *dev, const char *name)
{
    ptreg_error err;
    dprogram *prog;
    dkernel *iota;
    dbuf *out;
    REQUIRE(dev_program(dev, &basics_kernels, "-DWG=64", &prog, &err) == PTREG_OK);
    REQUIRE(dev_kernel(prog, "ptreg_basics_iota", &iota, &err) == PTREG_OK);
    REQUIRE(dbuf_alloc(dev, 64 * 4, &out, &err) == PTREG_OK);
    const karg args[] = {KARG_BUF(out), KARG_U32(64), KARG_U32(1), KARG_U32(0)};
    devent a, b, c;
    double idle = -1.0, ms = -1.0;
    CHECK(dev_launch(iota, 64, 64, 4, args, &err) == PTREG_OK && dev_finish(dev, &err) == PTREG_OK);
    CHECK(dev_event_record(dev, &a, &err) == PTREG_OK);
    const struct timespec wait = {0, 300 * 1000 * 1000};
    nanosleep(&wait, NULL);
    CHECK(dev_event_record(dev, &b, &err) == PTREG_OK);
    CHECK(dev_event_elapsed(&a, &b, &idle, &err) == PTREG_OK);
    CHECK(dev_launch(iota, 64, 64, 4, args, &err) == PTREG_OK);
    CHECK(dev_event_record(dev, &c, &err) == PTREG_OK);
    CHECK_MSG(dev_event_elapsed(&a, &c, &ms, &err) == PTREG_OK, "%s", err.message);
    CHECK_MSG(idle == 0.0, "%s: %g ms timed between two marks with no kernel between", name, idle);
    CHECK_MSG(ms >= 0.0 && ms < 150.0, "%s: one small kernel after a 300 ms wait timed at %g ms", name, ms);
    dev_event_free(&a);
    dev_event_free(&b);
    dev_event_free(&c);
    dbuf_free(out);
}

static void test_events(dev_handle *dev, const char *name)
{
    ptreg_error err;
    devent a, b;
    double ms = -1.0;
    CHECK(dev_event_record(dev, &a, &err) == PTREG_OK);
    test_buffers(dev, name);
    CHECK(dev_event_record(dev, &b, &err) == PTREG_OK);
    CHECK_MSG(dev_event_elapsed(&a, &b, &ms, &err) == PTREG_OK, "%s", err.message);
    CHECK_MSG(ms >= 0.0 && ms < 60000.0, "%s: %g ms between events", name, ms);
    dev_event_free(&a);
    dev_event_free(&b);
    CHECK(dev_finish(dev, &err) == PTREG_OK);
    if (dev->info.device.backend == PTREG_BACKEND_OPENCL)
        test_kernel_times(dev, name);
}

/* The contraction probe at device open (device.c): POCL and the stand-in
 * keep a*b + c unfused as the kernels ask; a probe kernel made to fuse
 * (PTREG_DEVICE_PROBE_FUSED=1: fma, as a device that ignores the rule
 * computes) is seen. The list says -1 until a device is opened, and the
 * probe is no computation of the caller's: no launch counted. Closes the
 * devices. */
static void test_fma_probe(const ptreg_device_info *listed, const char *name)
{
    ptreg_error err;
    ptreg_device_info info;
    ptreg_device_stats before, delta;
    CHECK_MSG(listed->fma_contracts == -1, "%s: the list says fma_contracts %d before an opening", name,
              listed->fma_contracts);
    ptreg_devices_release();
    ptreg_device_stats_get(&before);
    CHECK_MSG(ptreg_device_probe(&listed->device, &info, &err) == PTREG_OK, "%s: %s", name, err.message);
    ptreg_device_stats_since(&before, &delta);
    CHECK_MSG(info.fma_contracts == 0, "%s: the probe says a*b+c is fused (%d)", name, info.fma_contracts);
    CHECK_MSG(delta.launches == 0 && delta.allocs == 0 && delta.bytes_from == 0, "%s: the probe counted %llu launches",
              name, (unsigned long long)delta.launches);
    ptreg_devices_release();
    setenv("PTREG_DEVICE_PROBE_FUSED", "1", 1);
    CHECK_MSG(ptreg_device_probe(&listed->device, &info, &err) == PTREG_OK, "%s: %s", name, err.message);
    CHECK_MSG(info.fma_contracts == 1, "%s: the probe missed a fused a*b+c (%d)", name, info.fma_contracts);
    unsetenv("PTREG_DEVICE_PROBE_FUSED");
    ptreg_devices_release();
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    CHECK(ptreg_device_probe(&cpu, &info, &err) == PTREG_OK && info.fma_contracts == 0);
}

static int wanted(const ptreg_device_info *d)
{
    const char *only = getenv("PTREG_TEST_DEVICE");
    ptreg_device want;
    if (!only || !*only || ptreg_device_parse(only, &want))
        return 1;
    return want.backend == d->device.backend && want.index == d->device.index;
}

int main(void)
{
    test_names();
    test_resolve();
    test_kernel_cache();
    const ptreg_device_info *list;
    size_t count, ran = 0;
    ptreg_devices(&list, &count);
    for (size_t i = 0; i < count; i++) {
        if (list[i].device.backend == PTREG_BACKEND_CPU || !wanted(&list[i]))
            continue;
        dev_handle *dev;
        ptreg_error err;
        char name[32];
        ptreg_device_format(&list[i].device, name, sizeof name);
        if (dev_get(&list[i].device, &dev, &err)) {
            CHECK_MSG(0, "%s: %s", name, err.message);
            continue;
        }
        printf("device %s: %s\n", name, list[i].name);
        test_engines(&list[i].device, name);
        test_buffers(dev, name);
        test_stats(dev, name);
        test_graphs(dev, name);
        test_programs(dev, name);
        test_block_sums(dev, name);
        test_guards(dev, name);
        test_limits(dev, name);
        test_events(dev, name);
        test_fma_probe(&list[i], name);
        /* closed, then opened again on the next use */
        ptreg_devices_release();
        CHECK_MSG(dev_get(&list[i].device, &dev, &err) == PTREG_OK, "%s: reopening: %s", name, err.message);
        test_buffers(dev, name);
        test_block_sums(dev, name);
        ptreg_devices_release();
        ran++;
    }
    if (!ran) {
        char why[512];
        snprintf(why, sizeof why, "no CUDA or OpenCL device found (%s; %s): the device runs",
                 ptreg_backend_note(PTREG_BACKEND_CUDA), ptreg_backend_note(PTREG_BACKEND_OPENCL));
        check_skip("PTREG_TEST_REQUIRE_DEVICE", why);
    }
    return check_exit();
}
