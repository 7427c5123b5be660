/* Every kernel program compiles for sm_90 (the H100) through NVRTC, on a
 * machine without a GPU, and ptxas's resource report per kernel is printed:
 * registers, spill stores and loads, stack frame, shared memory. Every
 * embedded .cl file must belong to a program compiled here. Skips (77) when
 * the build has no CUDA backend or NVRTC cannot be loaded. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "check.h"
#include "device/backend.h"
#include "device/nvrtc.h"
#include "nn/nn_device.h"
#include "reg/batch/batch_device.h"
#include "pair/pair_device.h"
#include "reg/emicp/emicp_impl.h"
#include "reg/icp/icp_impl.h"
#include "reg/global/match_device.h"
#include "reg/global/ransac_device.h"
#include "reg/lddmm/lddmm_impl.h"
#include "feat/harris3d_impl.h"
#include "feat/pfh_impl.h"
#include "feat/normals_device.h"
#include "feat/voxel_device.h"
#include "reg/odometry/odometry_device.h"

#define ARCH 90

static const kernel_program *const programs[] = {&basics_kernels, &nn_kernels,      &icp_kernels,      &batch_kernels,
                                                 &emicp_kernels,  &lddmm_kernels,   &harris3d_kernels, &knn_kernels,
                                                 &feat_kernels,   &normals_kernels, &voxel_kernels,    &probe_kernels,
                                                 &ransac_kernels, &match_kernels,   &odometry_kernels};
/* the first three take the nearest-neighbor layout */
#define NN_LAYOUT_PROGRAMS 3
#define PROGRAMS (sizeof programs / sizeof programs[0])

/* The builds compiled: the programs of nearest neighbors and ICP with
 * their layout, the batch program in the layouts its device path picks
 * (pairs of 16, 32 and 64 points; shared and per-pair targets), EM-ICP's
 * in each precision (fp32 with both exps), LDDMM's in both, and 3-D
 * Harris's per method and input type (W = 5, 256 x 256 x 128, the H100's
 * 48 KiB of shared memory per block and 132 units). */
typedef struct build {
    const kernel_program *program;
    char label[24];
    char defines[1024];
    size_t kernels; /* the build's kernels, where #if leaves some out; 0: every KERNEL */
} build;

static size_t make_builds(build *b, size_t cap)
{
    size_t n = 0;
    for (size_t p = 0; p < NN_LAYOUT_PROGRAMS && n < cap; p++, n++) {
        b[n].program = programs[p];
        snprintf(b[n].label, sizeof b[n].label, "%.20s", programs[p]->name);
        nn_device_layout(NULL, b[n].defines, sizeof b[n].defines);
    }
    static const struct {
        size_t points;
        int shared;
    } batch[] = {{12, 1}, {14, 0}, {32, 1}, {32, 0}, {64, 1}, {64, 0}};
    for (size_t k = 0; k < sizeof batch / sizeof batch[0] && n < cap; k++, n++) {
        batch_layout l;
        CHECK(batch_device_layout(batch[k].points, batch[k].shared, &l, NULL) == PTREG_OK);
        b[n].program = &batch_kernels;
        snprintf(b[n].label, sizeof b[n].label, "b%u/%ux%u%s", l.cap, l.pairs, l.threads, l.shared ? "s" : "");
        batch_device_defines(&l, b[n].defines, sizeof b[n].defines);
    }
    dev_handle h100 = {0};
    h100.info.fp64 = 1;
    h100.info.max_work_group = 1024;
    h100.info.local_memory_bytes = 227 * 1024;
    h100.info.device.backend = PTREG_BACKEND_CUDA;
    /* the defaults, and the tuner's largest work-group (the most local memory) */
    static const struct {
        const char *label, *exp;
        ptreg_precision precision;
        int lddmm, wg;
    } pairs[] = {
        {"emicp/fp32", NULL, PTREG_PRECISION_FP32, 0, 0},       {"emicp/fp32e", "engine", PTREG_PRECISION_FP32, 0, 0},
        {"emicp/fp16", NULL, PTREG_PRECISION_FP16, 0, 0},       {"emicp/fp64", NULL, PTREG_PRECISION_FP64, 0, 0},
        {"emicp/fp32/256", NULL, PTREG_PRECISION_FP32, 0, 256}, {"lddmm/fp32", NULL, PTREG_PRECISION_FP32, 1, 0},
        {"lddmm/fp64", NULL, PTREG_PRECISION_FP64, 1, 0},       {"lddmm/fp64/256", NULL, PTREG_PRECISION_FP64, 1, 256}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0] && n < cap; k++, n++) {
        if (pairs[k].exp)
            setenv("PTREG_PAIR_EXP", pairs[k].exp, 1);
        b[n].program = pairs[k].lddmm ? &lddmm_kernels : &emicp_kernels;
        snprintf(b[n].label, sizeof b[n].label, "%s", pairs[k].label);
        const ptreg_pair_gpu gpu = {pairs[k].wg, -1, 0};
        pair_device_config cfg;
        pair_device_config_of(&gpu, &cfg);
        if (pairs[k].lddmm)
            CHECK(lddmm_device_defines(&h100, pairs[k].precision, &gpu, b[n].defines, sizeof b[n].defines, NULL) ==
                  PTREG_OK);
        else
            CHECK(pair_device_defines(&h100, pairs[k].precision, &cfg, b[n].defines, sizeof b[n].defines, NULL) ==
                  PTREG_OK);
        unsetenv("PTREG_PAIR_EXP");
    }
    static const int inputs[] = {8, 16, 32};
    const size_t dims[3] = {256, 256, 128};
    for (int m = 0; m < PTREG_HARRIS_METHODS; m++)
        for (int i = 0; i < 3 && n < cap; i++, n++) {
            b[n].program = &harris3d_kernels;
            snprintf(b[n].label, sizeof b[n].label, "harris/%.9s/%d", harris3d_method_name(m), inputs[i]);
            CHECK(harris3d_device_defines(m, inputs[i], 2, 48 << 10, 1024, 132, dims, b[n].defines, sizeof b[n].defines,
                                          &b[n].kernels, NULL) == PTREG_OK);
        }
    /* the point features' neighborhoods (the nearest-neighbor layout),
     * and their descriptors for lists of up to 64 and of the most */
    if (n < cap) {
        b[n].program = &knn_kernels;
        snprintf(b[n].label, sizeof b[n].label, "knn");
        nn_device_layout(NULL, b[n].defines, sizeof b[n].defines);
        n++;
    }
    static const struct {
        size_t cap;
        int wg;
    } feats[] = {{64, 0}, {PTREG_FEAT_DEVICE_CAP_MAX, 0}, {PTREG_FEAT_DEVICE_CAP_MAX, 256}};
    for (size_t k = 0; k < sizeof feats / sizeof feats[0] && n < cap; k++, n++) {
        b[n].program = &feat_kernels;
        snprintf(b[n].label, sizeof b[n].label, "feat/%zu/%d", feats[k].cap, feats[k].wg);
        CHECK(feat_device_defines(feats[k].cap, feats[k].wg, 48 << 10, b[n].defines, sizeof b[n].defines, NULL) ==
              PTREG_OK);
    }
    /* the contraction probe at device open, as written and made to fuse */
    for (int fused = 0; fused < 2 && n < cap; fused++, n++) {
        b[n].program = &probe_kernels;
        snprintf(b[n].label, sizeof b[n].label, fused ? "probe/fused" : "probe");
        snprintf(b[n].defines, sizeof b[n].defines, "%s", fused ? "-DPTREG_PROBE_FUSED=1" : "");
    }
    if (n < cap) {
        b[n].program = &ransac_kernels;
        snprintf(b[n].label, sizeof b[n].label, "ransac");
        ransac_device_defines(b[n].defines, sizeof b[n].defines);
        n++;
    }
    if (n < cap) {
        b[n].program = &match_kernels;
        snprintf(b[n].label, sizeof b[n].label, "match");
        match_device_defines(PTREG_FPFH_BINS, b[n].defines, sizeof b[n].defines);
        n++;
    }
    /* the normals' estimate (no -D options of its own) */
    if (n < cap) {
        b[n].program = &normals_kernels;
        snprintf(b[n].label, sizeof b[n].label, "normals");
        b[n].defines[0] = '\0';
        n++;
    }
    /* the voxel grid */
    if (n < cap) {
        b[n].program = &voxel_kernels;
        snprintf(b[n].label, sizeof b[n].label, "voxel");
        snprintf(b[n].defines, sizeof b[n].defines, "%s", VOXEL_DEVICE_DEFINES);
        n++;
    }
    /* odometry's ICP step */
    if (n < cap) {
        b[n].program = &odometry_kernels;
        snprintf(b[n].label, sizeof b[n].label, "odometry");
        snprintf(b[n].defines, sizeof b[n].defines, "%s", ODOMETRY_DEVICE_DEFINES);
        n++;
    }
    return n;
}

typedef struct kernel_report {
    char name[64];
    long registers, spill_stores, spill_loads, stack, shared;
} kernel_report;

static long number_before(const char *line, const char *what)
{
    const char *at = strstr(line, what);
    if (!at)
        return -1;
    while (at > line && (at[-1] == ' '))
        at--;
    while (at > line && at[-1] >= '0' && at[-1] <= '9')
        at--;
    return strtol(at, NULL, 10);
}

/* Reads ptxas's verbose log: an entry line names the kernel, the next
 * lines give its stack frame, spills, registers and shared memory. */
static size_t parse_log(const char *log, kernel_report *out, size_t cap)
{
    size_t count = 0;
    const char *line = log;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), line);
        const char *entry = strstr(buf, "Compiling entry function '");
        if (entry && count < cap) {
            kernel_report *k = &out[count++];
            memset(k, 0, sizeof *k);
            sscanf(entry + strlen("Compiling entry function '"), "%63[^']", k->name);
        } else if (count && strstr(buf, "stack frame")) {
            out[count - 1].stack = number_before(buf, "bytes stack frame");
            out[count - 1].spill_stores = number_before(buf, "bytes spill stores");
            out[count - 1].spill_loads = number_before(buf, "bytes spill loads");
        } else if (count && strstr(buf, "registers")) {
            out[count - 1].registers = number_before(buf, "registers");
            long smem = number_before(buf, "bytes smem");
            out[count - 1].shared = smem < 0 ? 0 : smem;
        }
        line = end ? end + 1 : NULL;
    }
    return count;
}

/* The number of KERNEL definitions in a program's source. */
static size_t count_kernels(const char *source)
{
    size_t n = 0;
    for (const char *p = source; (p = strstr(p, "\nKERNEL ")); p++)
        n++;
    return n;
}

static int in_some_program(const char *file)
{
    for (size_t p = 0; p < PROGRAMS; p++)
        for (const char *const *f = programs[p]->files; *f; f++)
            if (!strcmp(*f, file))
                return 1;
    return 0;
}

/* Every -D option reaches NVRTC, however many (ICP's program has 51): the
 * hundredth decides whether this compiles. */
static void test_many_options(void)
{
    char defines[2048] = "", source[256];
    size_t used = 0;
    for (int i = 0; i < 100; i++)
        used += (size_t)snprintf(defines + used, sizeof defines - used, "%s-DD%d=%d", i ? " " : "", i, i);
    snprintf(source, sizeof source,
             "#if !defined(D99) || D99 != 99\n#error the 100th option was lost\n#endif\n"
             "extern \"C\" __global__ void k(unsigned *o) { o[0] = D99; }\n");
    nvrtc_output out;
    ptreg_error err;
    CHECK_MSG(nvrtc_compile(source, defines, "options", ARCH, 0, 0, &out, &err) == PTREG_OK, "%s", err.message);
    nvrtc_output_free(&out);
}

int main(void)
{
    char note[400];
    if (!nvrtc_available(note, sizeof note)) {
        printf("NVRTC not available (%s): skipped\n", note);
        return CHECK_EXIT_SKIP;
    }
    test_many_options();
    for (size_t i = 0; kernel_source_name(i); i++) {
        const char *name = kernel_source_name(i);
        if (strstr(name, ".cl"))
            CHECK_MSG(in_some_program(name), "%s is in no program: add it to one, and here", name);
    }
    build builds[48] = {0}; /* (.kernels 0 where a build does not set it: every KERNEL) */
    size_t count = make_builds(builds, 48);
    printf("%-28s %12s %5s %8s %8s %6s %6s\n", "kernel (sm_90)", "program", "regs", "spill-st", "spill-ld", "stack",
           "smem");
    for (size_t b = 0; b < count; b++) {
        char *source = NULL;
        ptreg_error err;
        nvrtc_output out;
        CHECK(kernel_program_source(builds[b].program, &source, &err) == PTREG_OK);
        if (!source)
            continue;
        /* as an H100 builds them: the layer adds double precision (device.c) */
        char defines[1100];
        snprintf(defines, sizeof defines, "-DPTREG_FP64=1 %s", builds[b].defines);
        double t0 = ptreg_time_ms();
        ptreg_status st = nvrtc_compile(source, defines, builds[b].label, ARCH, 0, 1, &out, &err);
        CHECK_MSG(st == PTREG_OK, "%s: %s", builds[b].label, err.message);
        if (!st) {
            kernel_report k[64];
            size_t found = parse_log(out.log ? out.log : "", k, 64),
                   expected = builds[b].kernels ? builds[b].kernels : count_kernels(source);
            for (size_t i = 0; i < found; i++) {
                printf("%-28s %12.12s %5ld %8ld %8ld %6ld %6ld\n", k[i].name, builds[b].label, k[i].registers,
                       k[i].spill_stores, k[i].spill_loads, k[i].stack, k[i].shared);
                /* the batch kernel keeps its 4x4 solve in registers, the
                 * pair sums their accumulators */
                if (builds[b].program == &batch_kernels || builds[b].program == &emicp_kernels ||
                    builds[b].program == &lddmm_kernels || builds[b].program == &harris3d_kernels ||
                    builds[b].program == &feat_kernels)
                    CHECK_MSG(k[i].spill_stores == 0 && k[i].spill_loads == 0 && k[i].stack == 0,
                              "%s (%s): %ld-byte stack frame, %ld/%ld bytes of spills", k[i].name, builds[b].label,
                              k[i].stack, k[i].spill_stores, k[i].spill_loads);
            }
            CHECK_MSG(found == expected && out.size > 0, "%s: ptxas reported %zu kernels, the source has %zu",
                      builds[b].label, found, expected);
            printf("  %s: %zu-byte cubin in %.0f ms\n", builds[b].label, out.size, ptreg_time_ms() - t0);
            nvrtc_output_free(&out);
        }
        free(source);
    }
    return check_exit();
}
