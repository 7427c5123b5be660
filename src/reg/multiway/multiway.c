/* Multiway registration (multiway.h): every scan prepared once, candidate
 * pairs registered (shared among ranks), the best edges' spanning tree
 * for the first poses and the certain edges, the pose graph solved, then
 * the joint refinement. docs/ALGORITHMS.md, "Multiway registration". */
#include "ptreg/multiway.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "ptreg/features.h"
#include "ptreg/nn.h"
#include "reg/icp/icp_impl.h"
#include "reg/multiway/multiway_impl.h"

void ptreg_multiway_options_default(ptreg_multiway_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->global = PTREG_GLOBAL_RANSAC;
    opt->refine = PTREG_ICP_PLANE;
    opt->refine_iter = 30;
    opt->min_fitness = 0.3;
    opt->joint_refine = 1;
    opt->seed = 1;
    ptreg_pose_graph_options_default(&opt->graph);
    opt->graph.max_dist = 0.0;
}

static const ptreg_option_name global_names[] = {{"ransac", PTREG_GLOBAL_RANSAC}, {"fgr", PTREG_GLOBAL_FGR}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_multiway_options, global);
OPTION_ENUM_IS_INT(ptreg_multiway_options, refine);
static const ptreg_option multiway_rows[] = {
    OPTION_FIELD(ptreg_multiway_options, voxel, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "V",
                 "the downsampling cube; the features' neighborhoods scale with it; default the first scan's "
                 "bounding-box diagonal / 80"),
    OPTION_FIELD(ptreg_multiway_options, pair_neighbors, NULL, INT, 0, 1000000, 0, "K",
                 "candidate pairs: 0 every pair; K each scan with its K most similar scans (mean FPFH) and its "
                 "successor"),
    OPTION_ENUM(ptreg_multiway_options, global, "method", "global", global_names, 0,
                "each pair's global registration: ransac or fgr"),
    OPTION_ENUM(ptreg_multiway_options, refine, "refine", "method", icp_method_names, 0,
                "each pair's ICP (plane, gicp, symmetric or point)"),
    OPTION_FIELD(ptreg_multiway_options, refine_dist, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO,
                 "D", "the pairs' ICP distance; default 1.5 voxels"),
    OPTION_FIELD(ptreg_multiway_options, refine_iter, NULL, INT, 1, 1000000, 0, "N", "the pairs' ICP iterations"),
    OPTION_FIELD(ptreg_multiway_options, min_fitness, NULL, DOUBLE, 0, 1, 0, "F",
                 "a pair whose fitness both ways (the smaller share of either scan's points within the ICP "
                 "distance of the other) ends below is no edge"),
    OPTION_FIELD(ptreg_multiway_options, anchor, NULL, SIZE, 0, (double)SIZE_MAX, 0, "I",
                 "the scan whose frame the poses are in (0-based)"),
    OPTION_FIELD(ptreg_multiway_options, joint_refine, NULL, INT, 0, 100, 0, "N",
                 "rounds of the joint refinement: every kept edge's ICP again from the solved poses, finer, the "
                 "graph solved again"),
    OPTION_NUMBER(ptreg_multiway_options, graph.edge_prune_threshold, "edge_prune_threshold", NULL, DOUBLE, 0, 1, 0,
                  "C", "a loop closure whose line-process confidence ends at or below is removed"),
    OPTION_NUMBER(ptreg_multiway_options, graph.preference_loop_closure, "preference_loop_closure", NULL, DOUBLE, 0,
                  1e30, PTREG_OPTION_OPEN_LO, "W", "the weight of loop closures against the spanning tree's edges"),
    OPTION_NUMBER(ptreg_multiway_options, graph.max_iter, "graph_iter", NULL, INT, 1, 1000000, 0, "N",
                  "the pose graph's Levenberg-Marquardt iterations"),
};
OPTION_TABLE(ptreg_multiway_option_table, "multiway", ptreg_multiway_options, ptreg_multiway_options_default,
             multiway_rows)

void ptreg_multiway_result_free(ptreg_multiway_result *r)
{
    if (!r)
        return;
    free(r->poses);
    free(r->placed);
    free(r->edges);
    ptreg_pose_graph_free(&r->graph);
    memset(r, 0, sizeof *r);
}

/* ---- the scans, prepared once ---- */

void multiway_prepared_free(multiway_prepared *p, size_t count)
{
    for (size_t i = 0; p && i < count; i++) {
        ptreg_register_cloud_free(&p[i].features);
        ptreg_cloud_free(&p[i].fine);
    }
    free(p);
}

/* The joint refinement's cloud: centroids of cubes of half a voxel, with
 * the scan's normals averaged or, where it has none, estimated from 10
 * neighbors. A cube's centroid lies on the surface it samples, so ICP
 * loses no accuracy (the noise averages out) and runs on several times
 * fewer points than the scan's. */
static ptreg_status fine_cloud(const ptreg_multiway_scan *s, double voxel, ptreg_cloud *fine, ptreg_error *err)
{
    const ptreg_cloud in = {s->n, (float *)s->xyz, (float *)s->normals, NULL, 0, {0, 0, 0}, NULL, NULL, NULL};
    ptreg_status st = ptreg_voxel_downsample(&in, 0.5 * voxel, fine, err);
    if (st || fine->normals)
        return st;
    if (!(fine->normals = malloc(3 * (fine->n ? fine->n : 1) * sizeof *fine->normals)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu normals", fine->n);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){10, 0.0};
    no.device = (ptreg_device){PTREG_BACKEND_CPU, 0}; /* the pipeline runs on the CPU (multiway.h) */
    return ptreg_normals(fine->xyz, fine->n, &no, fine->normals, NULL, NULL, err);
}

/* Each scan's features (not for a caller's graph, which brings its pairs)
 * and its joint refinement's cloud, made once for every pair. */
ptreg_status multiway_prepare(const ptreg_multiway_scan *scans, size_t count, double voxel, int features,
                              multiway_prepared **out, ptreg_error *err)
{
    multiway_prepared *p = calloc(count, sizeof *p);
    if (!p)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu scans", count);
    for (size_t i = 0; i < count; i++)
        ptreg_cloud_init(&p[i].fine);
    ptreg_status st = PTREG_OK;
    for (size_t i = 0; !st && i < count; i++) {
        const ptreg_multiway_scan *s = &scans[i];
        if (features)
            st = ptreg_register_cloud_prepare(s->xyz, s->normals, s->n, voxel, &p[i].features, err);
        st = st ? st : fine_cloud(s, voxel, &p[i].fine, err);
        if (st) {
            char why[PTREG_ERROR_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", err ? err->message : "");
            st = ptreg_error_set(err, st, "multiway: scan %zu: %s", i, why);
        }
    }
    if (st) {
        multiway_prepared_free(p, count);
        return st;
    }
    *out = p;
    return PTREG_OK;
}

/* ---- candidate pairs ---- */

static int pair_less(const ptreg_scan_pair *a, const ptreg_scan_pair *b)
{
    return a->source < b->source || (a->source == b->source && a->target < b->target);
}

static int pair_cmp(const void *a, const void *b)
{
    const ptreg_scan_pair *x = a, *y = b;
    return pair_less(x, y) ? -1 : pair_less(y, x) ? 1 : 0;
}

/* Sorted, without repeats. */
static size_t unique_pairs(ptreg_scan_pair *p, size_t n)
{
    qsort(p, n, sizeof *p, pair_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || pair_cmp(&p[k - 1], &p[i]))
            p[k++] = p[i];
    return k;
}

static void mean_descriptor(const ptreg_register_cloud *c, double mean[PTREG_FPFH_BINS])
{
    memset(mean, 0, PTREG_FPFH_BINS * sizeof *mean);
    size_t used = 0;
    for (size_t i = 0; i < c->down.n; i++) {
        const float *row = c->fpfh + i * PTREG_FPFH_BINS;
        if (isnan(row[0]))
            continue;
        for (int b = 0; b < PTREG_FPFH_BINS; b++)
            mean[b] += row[b];
        used++;
    }
    for (int b = 0; used && b < PTREG_FPFH_BINS; b++)
        mean[b] /= (double)used;
}

/* Scan i's k most similar scans by the distance of their mean descriptors
 * (ties to the lower index). */
static void most_similar(const double *means, size_t count, size_t i, int k, ptreg_scan_pair *out, size_t *n)
{
    unsigned char *taken = calloc(count, 1);
    for (int round = 0; taken && round < k && round < (int)count - 1; round++) {
        size_t best = SIZE_MAX;
        double best_d = DBL_MAX;
        for (size_t j = 0; j < count; j++) {
            if (j == i || taken[j])
                continue;
            double d = 0.0;
            for (int b = 0; b < PTREG_FPFH_BINS; b++) {
                const double e = means[i * PTREG_FPFH_BINS + b] - means[j * PTREG_FPFH_BINS + b];
                d += e * e;
            }
            if (d < best_d)
                best_d = d, best = j;
        }
        if (best == SIZE_MAX)
            break;
        taken[best] = 1;
        out[(*n)++] = (ptreg_scan_pair){i < best ? i : best, i < best ? best : i};
    }
    free(taken);
}

ptreg_status multiway_candidates(const multiway_prepared *p, size_t count, int k, ptreg_scan_pair **pairs, size_t *n,
                                 ptreg_error *err)
{
    const size_t most = k <= 0 ? count * (count - 1) / 2 : count * ((size_t)k + 1);
    ptreg_scan_pair *out = malloc(most * sizeof *out);
    double *means = k > 0 ? malloc(count * PTREG_FPFH_BINS * sizeof *means) : NULL;
    if (!out || (k > 0 && !means)) {
        free(out), free(means);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu candidate pairs", most);
    }
    *n = 0;
    if (k <= 0) {
        for (size_t i = 0; i < count; i++)
            for (size_t j = i + 1; j < count; j++)
                out[(*n)++] = (ptreg_scan_pair){i, j};
    } else {
        for (size_t i = 0; i < count; i++)
            mean_descriptor(&p[i].features, means + i * PTREG_FPFH_BINS);
        for (size_t i = 0; i < count; i++) {
            most_similar(means, count, i, k, out, n);
            if (i + 1 < count)
                out[(*n)++] = (ptreg_scan_pair){i, i + 1};
        }
        *n = unique_pairs(out, *n);
    }
    free(means);
    *pairs = out;
    return PTREG_OK;
}

/* ---- one pair ---- */

static void icp_options_for(const ptreg_multiway_options *opt, double dist, const double init[16], const float *sn,
                            const float *tn, ptreg_icp_options *io)
{
    ptreg_icp_options_default(io);
    memcpy(io->init, init, sizeof io->init);
    io->method = opt->refine;
    io->max_iter = opt->refine_iter;
    io->max_dist = dist;
    io->source_normals = sn;
    io->target_normals = tn;
    io->device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    /* Open3D's ICP criteria: from a close start most pairs settle in a few steps */
    io->relative_fitness = io->relative_rmse = 1e-6;
}

/* The edge's record: what a rank sends to the others. */
static void record_edge(const ptreg_icp_result *ir, const double info[36], size_t pairs, double rec[MW_RECORD])
{
    memcpy(rec, ir->transformation, 16 * sizeof *rec);
    memcpy(rec + 16, info, 36 * sizeof *rec);
    rec[MW_FITNESS] = ir->fitness;
    rec[MW_RMSE] = ir->rmse;
    rec[MW_PAIRS] = (double)pairs;
    rec[MW_VALID] = 1.0;
    rec[MW_SHARP] = 1.0;
}

/* How many of a's points (moved by T) have their nearest point of b within
 * dist, and (b_normals given) how many of those lie within dist / 8 of its
 * plane: a right pose of real scans puts nearly all of them there (the
 * scans' noise), a wrong one that happens to overlap spreads them over
 * the whole distance (measured on the bunny's slabs: 0.88-0.99 against
 * 0.18-0.27). */
static ptreg_status overlap(const ptreg_multiway_scan *a, const ptreg_multiway_scan *b, const float *b_normals,
                            const double T[16], double dist, size_t *within, size_t *sharp, ptreg_error *err)
{
    ptreg_kdtree *tree = NULL;
    float *moved = malloc(3 * a->n * sizeof *moved), *d2 = malloc(a->n * sizeof *d2);
    uint32_t *nn = malloc(a->n * sizeof *nn);
    ptreg_status st = moved && d2 && nn ? ptreg_kdtree_create(b->xyz, b->n, NULL, &tree, err)
                                        : ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory");
    if (!st) {
        ptreg_transform_points(T, a->xyz, moved, a->n);
        ptreg_kdtree_nearest(tree, moved, a->n, NULL, nn, d2);
    }
    size_t w = 0, sh = 0;
    const double d2max = dist * dist, plane = dist / 8.0;
    for (size_t i = 0; !st && i < a->n; i++) {
        if (!(d2[i] <= d2max))
            continue;
        w++;
        if (!b_normals)
            continue;
        const float *q = b->xyz + 3 * (size_t)nn[i], *n = b_normals + 3 * (size_t)nn[i], *x = moved + 3 * i;
        const double r = (double)n[0] * (x[0] - q[0]) + (double)n[1] * (x[1] - q[1]) + (double)n[2] * (x[2] - q[2]);
        sh += fabs(r) <= plane;
    }
    *within = w;
    if (sharp)
        *sharp = sh;
    ptreg_kdtree_destroy(tree);
    free(moved), free(d2), free(nn);
    return st;
}

/* Scan i as a pair's ICP sees it: its voxel-grid centroids with their
 * normals (the pairs' stage, as Open3D's), or its joint refinement's
 * finer ones. */
static ptreg_multiway_scan view_of(const multiway_prepared *p, size_t i, int fine)
{
    const ptreg_cloud *d = fine ? &p[i].fine : &p[i].features.down;
    return (ptreg_multiway_scan){d->xyz, d->normals, d->n};
}

/* ICP of a onto b from init at dist / 2^first, ..., dist / 2^last: a wide
 * distance pairs a thin part's two sides (a wing's top with its bottom)
 * and holds the pose up to a degree off, a narrow one from a close start
 * does not. The information matrix, the fitness and the share on the
 * surface are taken at dist, so that every edge is weighed alike; the
 * fitness both ways (the smaller share of either scan's points within dist
 * of the other): a small scan lying on part of a large one, or an
 * unrelated object on part of the scan, is then no good pair. */
static ptreg_status refine_pair(const ptreg_multiway_scan *a, const ptreg_multiway_scan *b, const double init[16],
                                const ptreg_multiway_options *opt, double dist, int first, int last,
                                double rec[MW_RECORD], ptreg_error *err)
{
    double T[16];
    memcpy(T, init, sizeof T);
    ptreg_icp_result ir;
    ptreg_status st = PTREG_OK;
    for (int stage = first; !st && stage <= last; stage++) {
        ptreg_icp_options io;
        icp_options_for(opt, ldexp(dist, -stage), T, a->normals, b->normals, &io);
        st = ptreg_icp(a->xyz, a->n, b->xyz, b->n, &io, &ir, err);
        if (!st)
            memcpy(T, ir.transformation, sizeof T);
        if (!st && stage < last)
            ptreg_icp_result_free(&ir);
    }
    if (st)
        return st;
    double info[36], inv[16];
    size_t pairs = 0, ahead = 0, back = 0, sharp = 0;
    ptreg_transform_invert_rigid(T, inv);
    st = ptreg_information_matrix(a->xyz, a->n, b->xyz, b->n, T, dist, info, &pairs, err);
    st = st ? st : overlap(a, b, b->normals, T, dist, &ahead, &sharp, err);
    st = st ? st : overlap(b, a, NULL, inv, dist, &back, NULL, err);
    if (!st) {
        ir.fitness = fmin((double)ahead / (double)a->n, (double)back / (double)b->n);
        record_edge(&ir, info, pairs, rec);
        rec[MW_SHARP] = ahead ? (double)sharp / (double)ahead : 0.0;
    }
    ptreg_icp_result_free(&ir);
    return st;
}

/* Global registration of the pair's prepared clouds, then the ICP. */
static ptreg_status register_pair(const multiway_prepared *p, size_t s, size_t t, const ptreg_multiway_options *opt,
                                  double voxel, double dist, double rec[MW_RECORD], ptreg_error *err)
{
    ptreg_register_options ro;
    ptreg_register_options_default(&ro);
    ro.voxel = voxel;
    ro.global = opt->global;
    ro.ransac.seed = opt->seed;
    ro.no_refine = 1;                                 /* refine_pair's ICP refines */
    ro.device = (ptreg_device){PTREG_BACKEND_CPU, 0}; /* the pipeline runs on the CPU (multiway.h) */
    const ptreg_multiway_scan a = view_of(p, s, 0), b = view_of(p, t, 0);
    ptreg_register_result rr;
    ptreg_status st = ptreg_register_prepared(a.xyz, a.normals, a.n, &p[s].features, b.xyz, b.normals, b.n,
                                              &p[t].features, &ro, &rr, err);
    return st ? st : refine_pair(&a, &b, rr.transformation, opt, dist, 0, 0, rec, err);
}

/* This rank's share of the pairs (every size-th), then every rank's records
 * added up: each slot is one rank's values and zeros, so the sum is exact. */
ptreg_status multiway_register_pairs(const multiway_prepared *p, const ptreg_scan_pair *pairs, size_t n,
                                     const ptreg_multiway_options *opt, double voxel, double dist, const double *starts,
                                     const ptreg_ranks *ranks, double *records, ptreg_error *err)
{
    memset(records, 0, n * MW_RECORD * sizeof *records);
    const int rank = ranks ? ranks->rank : 0, size = ranks ? ranks->size : 1;
    ptreg_status st = PTREG_OK;
    for (size_t k = (size_t)rank; !st && k < n; k += (size_t)size) {
        const size_t s = pairs[k].source, t = pairs[k].target;
        double *rec = records + k * MW_RECORD;
        if (starts && !isfinite(starts[16 * k]))
            continue;
        if (starts) {
            const ptreg_multiway_scan a = view_of(p, s, 1), b = view_of(p, t, 1);
            st = refine_pair(&a, &b, starts + 16 * k, opt, dist, 1, MW_JOINT_FINER, rec, err);
        } else {
            st = register_pair(p, s, t, opt, voxel, dist, rec, err);
        }
        if (st) {
            char why[PTREG_ERROR_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", err ? err->message : "");
            st = ptreg_error_set(err, st, "multiway: scans %zu onto %zu: %s", s, t, why);
        }
    }
    if (size > 1)
        st = multiway_agree(ranks, st, err);
    if (!st && size > 1)
        st = ranks->sum_doubles(records, n * MW_RECORD, ranks->ctx, err);
    return st;
}

ptreg_status multiway_agree(const ptreg_ranks *ranks, ptreg_status st, ptreg_error *err)
{
    const int worst = ranks->max_of_all((int)st, ranks->ctx);
    if (worst && !st)
        return ptreg_error_set(err, (ptreg_status)worst, "multiway: another rank failed");
    return (ptreg_status)worst;
}
