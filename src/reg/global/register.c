/* Global registration's pipeline (global.h, ptreg_register): from two
 * clouds to a refined transform through downsampling, normals, FPFH, the
 * matches (global_match.c), RANSAC (ransac.c) or FGR (fgr.c), and ICP. */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/global/global_impl.h"
#include "ptreg/features.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"
#include "reg/testing.h"

/* A cloud's voxel-grid centroids with normals from their hybrid (2 voxels,
 * 30) neighborhoods, turned to agree with the given normals' mean where
 * the cloud came with normals (Open3D's EstimateNormals does the same), else
 * to face the origin (a scan's sensor). */
static ptreg_status prepare_cloud(const char *which, const float *xyz, const float *normals, size_t n, double voxel,
                                  ptreg_cloud *down, double *normals_ms, ptreg_error *err)
{
    const ptreg_cloud in = {n, (float *)xyz, (float *)normals, NULL, 0, {0, 0, 0}, NULL, NULL, NULL};
    ptreg_status st = ptreg_voxel_downsample(&in, voxel, down, err);
    if (!st && down->n < 3)
        st = ptreg_error_set(err, PTREG_ERR_ARG,
                             "register: voxel %g leaves %zu point%s of the %s's %zu: at least 3 are needed", voxel,
                             down->n, down->n == 1 ? "" : "s", which, n);
    float *est = st ? NULL : malloc(3 * (down->n ? down->n : 1) * sizeof *est);
    if (!st && !est)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "register: out of memory");
    const double t0 = ptreg_time_ms();
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){30, 2.0 * voxel};
    no.device = (ptreg_device){PTREG_BACKEND_CPU, 0}; /* the pipeline runs on the CPU (global.h) */
    st = st ? st : ptreg_normals(down->xyz, down->n, &no, est, NULL, NULL, err);
    for (size_t i = 0; !st && down->normals && i < down->n; i++) {
        const float *g = down->normals + 3 * i;
        float *e = est + 3 * i;
        if (e[0] * g[0] + e[1] * g[1] + e[2] * g[2] < 0.0f)
            e[0] = -e[0], e[1] = -e[1], e[2] = -e[2];
    }
    *normals_ms += ptreg_time_ms() - t0;
    if (!st) {
        free(down->normals);
        down->normals = est;
    } else {
        free(est);
    }
    return st;
}

static ptreg_status fpfh_of(const ptreg_cloud *c, double voxel, float **out, ptreg_error *err)
{
    ptreg_features_options fo;
    ptreg_features_options_default(&fo);
    fo.neighbors = (ptreg_neighborhood){100, 5.0 * voxel};
    fo.convention = PTREG_FPFH_OPEN3D;
    fo.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    if (!(*out = malloc((c->n ? c->n : 1) * PTREG_FPFH_BINS * sizeof **out)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "register: out of memory for %zu descriptors", c->n);
    return ptreg_fpfh(c->xyz, c->normals, c->n, &fo, *out, NULL, err);
}

/* The bounding-box diagonal of n points. */
static double diagonal(const float *xyz, size_t n)
{
    double centre[3], d2;
    icp_target_extent(xyz, n, centre, &d2);
    return sqrt(d2);
}

/* ICP from RANSAC's transform on all points (max_iter 0 with no_refine:
 * only the fitness and rmse there). */
static ptreg_status refine(const float *source, const float *source_normals, size_t ns, const float *target,
                           const float *target_normals, size_t nt, const ptreg_register_options *opt,
                           ptreg_register_result *r, ptreg_error *err)
{
    ptreg_icp_options io;
    ptreg_icp_options_default(&io);
    memcpy(io.init, opt->global == PTREG_GLOBAL_FGR ? r->fgr.transformation : r->ransac.transformation, sizeof io.init);
    io.method = opt->no_refine ? PTREG_ICP_POINT : opt->refine;
    io.max_iter = opt->no_refine ? 0 : opt->refine_iter;
    io.max_dist = opt->refine_dist > 0.0 ? opt->refine_dist : 0.4 * r->voxel;
    io.target_normals = target_normals;
    io.source_normals = source_normals;
    io.device = opt->device;
    ptreg_icp_result ir;
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_icp(source, ns, target, nt, &io, &ir, err);
    r->refine_ms = ptreg_time_ms() - t0;
    if (st)
        return st;
    memcpy(r->transformation, ir.transformation, sizeof r->transformation);
    r->fitness = ir.fitness;
    r->rmse = ir.rmse;
    ptreg_icp_result_free(&ir);
    return PTREG_OK;
}

void register_target_free(register_target *t)
{
    if (!t)
        return;
    ptreg_cloud_free(&t->down);
    free(t->fpfh);
    memset(t, 0, sizeof *t);
    ptreg_cloud_init(&t->down);
}

void ptreg_register_cloud_free(ptreg_register_cloud *c) { register_target_free(c); }

/* One cloud's centroids, normals and descriptors at the voxel. */
static ptreg_status prepare_side(const char *which, const float *xyz, const float *normals, size_t n, double voxel,
                                 register_target *c, ptreg_error *err)
{
    memset(c, 0, sizeof *c);
    ptreg_cloud_init(&c->down);
    c->voxel = voxel;
    double t0 = ptreg_time_ms();
    ptreg_status st = prepare_cloud(which, xyz, normals, n, voxel, &c->down, &c->normals_ms, err);
    c->downsample_ms = ptreg_time_ms() - t0 - c->normals_ms;
    t0 = ptreg_time_ms();
    st = st ? st : fpfh_of(&c->down, voxel, &c->fpfh, err);
    c->features_ms = ptreg_time_ms() - t0;
    if (st)
        register_target_free(c);
    return st;
}

static ptreg_register_options options_or_default(const ptreg_register_options *opt_in)
{
    ptreg_register_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        ptreg_register_options_default(&opt);
    return opt;
}

ptreg_status register_target_prepare(const float *target, const float *target_normals, size_t nt,
                                     const ptreg_register_options *opt_in, register_target *t, ptreg_error *err)
{
    memset(t, 0, sizeof *t);
    ptreg_cloud_init(&t->down);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the target", target, nt, err);
    if (st || (st = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return st;
    const double voxel = opt.voxel > 0.0 ? opt.voxel : diagonal(target, nt) / 80.0;
    if (!(voxel > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "register: the target has no extent to scale a voxel by");
    return prepare_side("target", target, target_normals, nt, voxel, t, err);
}

/* Matches of the two prepared clouds' descriptors, then RANSAC or FGR:
 * r->transformation is its transform. */
static ptreg_status global_stage(const register_target *s, const register_target *t, ptreg_register_options opt,
                                 ptreg_register_result *r, ptreg_error *err)
{
    const ptreg_cloud *ds = &s->down, *dt = &t->down;
    ptreg_matches m = {0, NULL, NULL};
    double t1 = ptreg_time_ms();
    ptreg_device on;
    ptreg_status st = match_choose_device(&opt.device, &on, err);
    r->device = on;
    st = st ? st
            : match_features_on(&on, s->fpfh, ds->n, t->fpfh, dt->n, PTREG_FPFH_BINS, opt.mutual, opt.ratio, &m, err);
    r->match_ms = ptreg_time_ms() - t1;
    r->matches = m.count;
    if (opt.ransac.max_dist <= 0.0)
        opt.ransac.max_dist = 1.5 * r->voxel;
    opt.ransac.device = opt.device;
    if (opt.global == PTREG_GLOBAL_FGR) {
        st = st ? st : ptreg_fgr(ds->xyz, ds->n, dt->xyz, dt->n, &m, &opt.fgr, &r->fgr, err);
        r->global_ms = r->fgr.time_ms;
        if (!st)
            memcpy(r->transformation, r->fgr.transformation, sizeof r->transformation);
    } else {
        st = st ? st
                : ptreg_ransac(ds->xyz, ds->normals, ds->n, dt->xyz, dt->normals, dt->n, &m, &opt.ransac, &r->ransac,
                               err);
        r->global_ms = r->ransac.time_ms;
        if (!st)
            memcpy(r->transformation, r->ransac.transformation, sizeof r->transformation);
    }
    ptreg_matches_free(&m);
    return st;
}

/* The stage times and sizes of the two prepared clouds into r. */
static void add_prepared(ptreg_register_result *r, const register_target *s, const register_target *t)
{
    r->voxel = t->voxel;
    r->source_down = s->down.n, r->target_down = t->down.n;
    r->downsample_ms = s->downsample_ms + t->downsample_ms;
    r->normals_ms = s->normals_ms + t->normals_ms;
    r->features_ms = s->features_ms + t->features_ms;
}

ptreg_status register_global_prepared(const float *source, const float *source_normals, size_t ns,
                                      const register_target *t, const ptreg_register_options *opt_in,
                                      ptreg_register_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the source", source, ns, err);
    if (st || (st = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return st;
    register_target s;
    if (!(st = prepare_side("source", source, source_normals, ns, t->voxel, &s, err))) {
        /* the source's stage times only: the target's were spent once, before */
        add_prepared(r, &s, t);
        r->downsample_ms = s.downsample_ms, r->normals_ms = s.normals_ms, r->features_ms = s.features_ms;
        st = global_stage(&s, t, opt, r, err);
        register_target_free(&s);
    }
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}

ptreg_status ptreg_register(const float *source, const float *source_normals, size_t ns, const float *target,
                            const float *target_normals, size_t nt, const ptreg_register_options *opt_in,
                            ptreg_register_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status shape = ptreg_check_shape("register: the source", source, ns, err);
    if (shape || (shape = ptreg_check_shape("register: the target", target, nt, err)))
        return shape;
    if ((shape = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return shape;
    r->voxel = opt.voxel > 0.0 ? opt.voxel : diagonal(target, nt) / 80.0;
    if (!(r->voxel > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "register: the target has no extent to scale a voxel by");
    register_target s, t;
    ptreg_status st = prepare_side("source", source, source_normals, ns, r->voxel, &s, err);
    if (!st && (st = prepare_side("target", target, target_normals, nt, r->voxel, &t, err)))
        register_target_free(&s);
    if (!st) {
        add_prepared(r, &s, &t);
        st = global_stage(&s, &t, opt, r, err);
        register_target_free(&s), register_target_free(&t);
    }
    st = st ? st : refine(source, source_normals, ns, target, target_normals, nt, &opt, r, err);
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}

ptreg_status ptreg_register_cloud_prepare(const float *xyz, const float *normals, size_t n, double voxel,
                                          ptreg_register_cloud *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    ptreg_cloud_init(&out->down);
    ptreg_status st = ptreg_check_shape("register: the cloud", xyz, n, err);
    if (!st && (!(voxel > 0.0) || !isfinite(voxel)))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "register: voxel %g: must be > 0", voxel);
    return st ? st : prepare_side("cloud", xyz, normals, n, voxel, out, err);
}

ptreg_status ptreg_register_prepared(const float *source, const float *source_normals, size_t ns,
                                     const ptreg_register_cloud *sp, const float *target, const float *target_normals,
                                     size_t nt, const ptreg_register_cloud *tp, const ptreg_register_options *opt_in,
                                     ptreg_register_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the source", source, ns, err);
    st = st ? st : ptreg_check_shape("register: the target", target, nt, err);
    st = st ? st : ptreg_options_check(ptreg_register_option_table(), &opt, err);
    if (!st && (!sp || !tp || !sp->fpfh || !tp->fpfh || sp->voxel != tp->voxel))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "register: the prepared clouds are missing or of two voxels");
    if (st)
        return st;
    add_prepared(r, sp, tp);
    /* the preparation's times are the caller's, spent once for many pairs */
    r->downsample_ms = r->normals_ms = r->features_ms = 0.0;
    st = global_stage(sp, tp, opt, r, err);
    st = st ? st : refine(source, source_normals, ns, target, target_normals, nt, &opt, r, err);
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}
