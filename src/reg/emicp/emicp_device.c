/* EM-ICP on a GPU device (emicp_impl.h): the target's columns resident
 * (pair_device.c), the source uploaded once; per iteration the host writes
 * the pose (22 numbers), three launches move the rows, sum the pairs and
 * reduce each group's moments (emicp.cl), and the groups' moments come back
 * in one small copy, added in group order on the host. */
#include <stdlib.h>
#include <string.h>

#include "pair/pair_device.h"
#include "reg/emicp/emicp_impl.h"
#include "core/numeric.h"

static const char *const emicp_files[] = {"device/reduce.cl",           "pair/exp.cl",        "pair/pair.cl",
                                          "reg/emicp/emicp_weights.cl", "reg/emicp/emicp.cl", NULL};
const kernel_program emicp_kernels = {"emicp", emicp_files};

/* emicp.cl's layouts */
#define POSE_WORDS 22
#define POSE_CENTER 12
#define POSE_REF_P 15
#define POSE_REF_Q 18
#define POSE_OUTLIER 21
#define MOMENTS 16

struct emicp_device_state {
    pair_device_state *pd;
    size_t n, groups;
    double source_c[3], target_c[3];
    dkernel *move, *moments;
    dbuf *source, *pose, *group_moments;
    void *host_moments; /* groups * MOMENTS acc_t */
};

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    const ptreg_pair_options *pair = &((const ptreg_emicp_options *)options)->pair;
    pair_device_config c;
    pair_device_config_of(&pair->gpu, &c);
    return pair_device_supports(&c, pair->precision == PTREG_PRECISION_FP64 ? PAIR_FP64_NEED : NULL, device, err);
}

void emicp_device_close(emicp_device_state *ed)
{
    if (!ed)
        return;
    pair_device_free(ed->pd);
    dbuf_free(ed->source);
    dbuf_free(ed->pose);
    dbuf_free(ed->group_moments);
    free(ed->host_moments);
    free(ed);
}

ptreg_status emicp_device_open(const ptreg_device *device, const float *source, size_t n, const float *target, size_t m,
                               const ptreg_pair_options *pair, const double source_c[3], const double target_c[3],
                               emicp_device_state **out, const char **name, ptreg_error *err)
{
    *out = NULL;
    *name = ptreg_device_name(device);
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    if (st)
        return st;
    emicp_device_state *ed = calloc(1, sizeof *ed);
    if (!ed)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "EM-ICP: out of memory");
    ed->n = n;
    memcpy(ed->source_c, source_c, sizeof ed->source_c);
    memcpy(ed->target_c, target_c, sizeof ed->target_c);
    pair_device_config cfg;
    pair_device_config_of(&pair->gpu, &cfg);
    st = pair_device_create(dev, &emicp_kernels, target, m, pair->precision, &cfg, n, 0, &ed->pd, err);
    if (!st) {
        ed->groups = pair_device_npad(ed->pd, n) / ed->pd->wg;
        if (!(ed->host_moments = malloc(ed->groups * MOMENTS * ed->pd->acc)))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "EM-ICP: out of memory for %zu points", n);
    }
    st = st ? st : dev_kernel(ed->pd->program, "ptreg_emicp_move", &ed->move, err);
    st = st ? st : dev_kernel(ed->pd->program, "ptreg_emicp_moments", &ed->moments, err);
    st = st ? st : dbuf_upload(dev, source, 3 * n * sizeof(float), &ed->source, err);
    st = st ? st : dbuf_alloc(dev, POSE_WORDS * ed->pd->acc, &ed->pose, err);
    st = st ? st : dbuf_alloc(dev, ed->groups * MOMENTS * ed->pd->acc, &ed->group_moments, err);
    if (st) {
        emicp_device_close(ed);
        return st;
    }
    *out = ed;
    return PTREG_OK;
}

static void put(const emicp_device_state *ed, void *array, size_t i, double v)
{
    if (ed->pd->acc == sizeof(double))
        ((double *)array)[i] = v;
    else
        ((float *)array)[i] = (float)v;
}

static double get(const emicp_device_state *ed, const void *array, size_t i)
{
    return ed->pd->acc == sizeof(double) ? ((const double *)array)[i] : ((const float *)array)[i];
}

static ptreg_status write_pose(emicp_device_state *ed, const double T[16], double outlier, ptreg_error *err)
{
    unsigned char pose[POSE_WORDS * sizeof(double)];
    for (size_t k = 0; k < 12; k++)
        put(ed, pose, k, T[k]);
    for (size_t k = 0; k < 3; k++) {
        put(ed, pose, POSE_CENTER + k, ed->pd->center[k]);
        put(ed, pose, POSE_REF_P + k, ed->source_c[k]);
        put(ed, pose, POSE_REF_Q + k, ed->target_c[k]);
    }
    put(ed, pose, POSE_OUTLIER, outlier);
    return dbuf_write(ed->pose, 0, pose, POSE_WORDS * ed->pd->acc, err);
}

/* The groups' moments added in group order into mom. */
static void add_group_moments(const emicp_device_state *ed, ptreg_moments *mom)
{
    for (size_t g = 0; g < ed->groups; g++) {
        const size_t at = g * MOMENTS;
        mom->w += get(ed, ed->host_moments, at);
        for (size_t k = 0; k < 3; k++) {
            mom->sp[k] += get(ed, ed->host_moments, at + 1 + k);
            mom->sq[k] += get(ed, ed->host_moments, at + 4 + k);
        }
        for (size_t k = 0; k < 9; k++)
            mom->spq[k] += get(ed, ed->host_moments, at + 7 + k);
    }
}

ptreg_status emicp_device_estep(void *ctx, const double T[16], double sigma2, double outlier, ptreg_moments *mom,
                                double *pair_ms, ptreg_error *err)
{
    emicp_device_state *ed = ctx;
    pair_device_state *pd = ed->pd;
    const double t0 = ptreg_time_ms();
    ptreg_status st = write_pose(ed, T, outlier, err);
    const karg move[] = {KARG_BUF(ed->source), KARG_U32(ed->n), KARG_BUF(ed->pose), KARG_U32(pd->rows_cap),
                         KARG_BUF(pd->rows)};
    st = st ? st : dev_launch(ed->move, ed->n, pd->wg, sizeof move / sizeof move[0], move, err);
    st = st ? st : pair_device_run(pd, ed->n, 0.5 / sigma2, err);
    if (!st) {
        const karg args[] = {KARG_BUF(ed->source),
                             KARG_U32(ed->n),
                             KARG_BUF(pd->partial),
                             KARG_U32(pd->splits),
                             KARG_U32(pair_device_npad(pd, ed->n)),
                             KARG_BUF(ed->pose),
                             KARG_BUF(ed->group_moments)};
        st = dev_launch(ed->moments, ed->n, pd->wg, sizeof args / sizeof args[0], args, err);
    }
    st = st ? st : dbuf_read(ed->group_moments, 0, ed->host_moments, ed->groups * MOMENTS * pd->acc, err);
    if (!st)
        add_group_moments(ed, mom);
    *pair_ms += ptreg_time_ms() - t0;
    return st;
}

static void device_close(void *ctx) { emicp_device_close(ctx); }

/* The pair options checked, then the target resident and the source up. */
static ptreg_status device_open(const ptreg_device *on, const float *source, size_t n, const float *target, size_t m,
                                const ptreg_emicp_options *opt, const double source_c[3], const double target_c[3],
                                void **ctx, const char **isa, ptreg_error *err)
{
    emicp_device_state *ed = NULL;
    ptreg_status st = ptreg_pair_options_check(&opt->pair, err);
    st = st ? st : emicp_device_open(on, source, n, target, m, &opt->pair, source_c, target_c, &ed, isa, err);
    *ctx = ed;
    return st;
}

const emicp_engine emicp_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .open = device_open,
    .estep = emicp_device_estep,
    .close = device_close,
};
