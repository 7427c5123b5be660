/* Concurrent callers: THREADS threads make CALLS mixed calls each (ICP by
 * every method and search, EM-ICP, normals, FPFH, Harris, LDDMM, global
 * registration, batch; ICP, FPFH and Harris also on a model index, a
 * resident model, a features model and a Harris volume that every thread
 * shares), on the CPU and on every device (POCL; the CUDA driver stand-in
 * under scripts/with-cuda-standin.sh), half on inputs every
 * thread shares and half on the thread's own copies; each result must have
 * the bits of the same call made alone beforehand. Each round first gives
 * the devices back (ptreg_devices_release): the shared handles open them
 * again, and the threads race to build every other program (from the
 * on-disk kernel cache).
 *
 *   test_concurrency [--repeat N] [--threads T] [--calls C] [--devices all|cpu|opencl|cuda]
 *
 * ThreadSanitizer's build runs it with PTREG_NUM_THREADS=1 (libgomp is not
 * instrumented: its threads' handovers would read as races). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"
#include "hooks.h"

#define MAX_THREADS 64
#define MAX_DEVICES 4

/* ---- the inputs ---- */

/* What one set of calls reads: the shared set, or a thread's own copy. */
typedef struct inputs {
    float *model, *model_normals; /* the target */
    size_t m;
    float *scan, *scan_normals; /* the source */
    size_t n;
    ptreg_volume volume;
    double *template_q, *target_q;
    size_t landmarks;
    float *atoms_source, *atoms_target;
    size_t *atoms_source_offset, *atoms_target_offset, atom_pairs;
} inputs;

/* Handles every thread uses at once, read-only or taking turns. */
typedef struct shared_handles {
    ptreg_model_index *index;
    ptreg_icp_model *models[MAX_DEVICES + 1]; /* one per device of the plan */
    ptreg_features_model *features[MAX_DEVICES + 1];
    ptreg_harris3d_volume *volumes[MAX_DEVICES + 1];
} shared_handles;

static float *floats_copy(const float *a, size_t count)
{
    float *c = malloc(count * sizeof *c);
    if (c)
        memcpy(c, a, count * sizeof *c);
    return c;
}

static double *doubles_copy(const double *a, size_t count)
{
    double *c = malloc(count * sizeof *c);
    if (c)
        memcpy(c, a, count * sizeof *c);
    return c;
}

static size_t *sizes_copy(const size_t *a, size_t count)
{
    size_t *c = malloc(count * sizeof *c);
    if (c)
        memcpy(c, a, count * sizeof *c);
    return c;
}

/* A smooth blob with a few bumps: corners for Harris. */
static int make_volume(ptreg_volume *v, ptreg_error *err)
{
    const size_t side = 24;
    ptreg_volume_init(v);
    if (ptreg_volume_alloc(v, side, side, side, PTREG_VOXEL_F32, err))
        return -1;
    float *d = v->data;
    for (size_t z = 0; z < side; z++)
        for (size_t y = 0; y < side; y++)
            for (size_t x = 0; x < side; x++) {
                double dx = x - 9.0, dy = y - 12.0, dz = z - 14.0, ex = x - 16.0, ey = y - 8.0, ez = z - 7.0;
                d[(z * side + y) * side + x] = (float)(exp(-(dx * dx + 2 * dy * dy + dz * dz) / 18.0) +
                                                       0.7 * exp(-(ex * ex + ey * ey + 3 * ez * ez) / 10.0));
            }
    return 0;
}

/* Landmarks on a curve and the same bent: LDDMM's pair. */
static void make_landmarks(inputs *in, size_t count)
{
    in->landmarks = count;
    in->template_q = malloc(3 * count * sizeof(double));
    in->target_q = malloc(3 * count * sizeof(double));
    for (size_t i = 0; in->template_q && in->target_q && i < count; i++) {
        double t = (double)i / (double)count * 6.283185307179586;
        double *q = in->template_q + 3 * i, *p = in->target_q + 3 * i;
        q[0] = cos(t), q[1] = sin(t), q[2] = 0.2 * sin(3 * t);
        p[0] = 1.1 * q[0] + 0.1 * q[1], p[1] = 0.9 * q[1], p[2] = q[2] + 0.15 * cos(2 * t);
    }
}

/* Atom neighbourhoods: each pair a small cloud and the same turned. */
static void make_atoms(inputs *in, size_t pairs, size_t per_pair)
{
    in->atom_pairs = pairs;
    in->atoms_source = malloc(3 * pairs * per_pair * sizeof(float));
    in->atoms_target = malloc(3 * pairs * per_pair * sizeof(float));
    in->atoms_source_offset = malloc((pairs + 1) * sizeof(size_t));
    in->atoms_target_offset = malloc((pairs + 1) * sizeof(size_t));
    if (!in->atoms_source || !in->atoms_target || !in->atoms_source_offset || !in->atoms_target_offset)
        return;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    for (size_t p = 0; p <= pairs; p++)
        in->atoms_source_offset[p] = in->atoms_target_offset[p] = p * per_pair;
    for (size_t p = 0; p < pairs; p++) {
        double angle = 0.05 * (double)(p % 7), c = cos(angle), s = sin(angle);
        for (size_t i = 0; i < per_pair; i++) {
            float *t = in->atoms_target + 3 * (p * per_pair + i), *src = in->atoms_source + 3 * (p * per_pair + i);
            for (int k = 0; k < 3; k++)
                t[k] = (float)(2.0 * ptreg_rng_uniform(&rng) - 1.0);
            src[0] = (float)(c * t[0] - s * t[1]), src[1] = (float)(s * t[0] + c * t[1]), src[2] = t[2];
        }
    }
}

static int make_inputs(inputs *in, ptreg_error *err)
{
    memset(in, 0, sizeof *in);
    ptreg_cloud model, scan;
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 1500, so.max_angle_deg = 8, so.seed = 3;
    double truth[16];
    if (ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 2000, 5, &model, err) ||
        ptreg_synth_scan(PTREG_SHAPE_AIRCRAFT, &so, &scan, truth, err))
        return -1;
    in->model = model.xyz, in->model_normals = model.normals, in->m = model.n;
    in->scan = scan.xyz, in->n = scan.n;
    model.xyz = model.normals = NULL, scan.xyz = NULL;
    ptreg_cloud_free(&model), ptreg_cloud_free(&scan);
    in->scan_normals = malloc(3 * in->n * sizeof(float));
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors.k = 12;
    if (!in->scan_normals || ptreg_normals(in->scan, in->n, &no, in->scan_normals, NULL, NULL, err))
        return -1;
    make_landmarks(in, 40);
    make_atoms(in, 40, 16);
    return make_volume(&in->volume, err) || !in->template_q || !in->target_q || !in->atoms_source_offset ? -1 : 0;
}

/* A thread's own copy of every array. */
static int copy_inputs(const inputs *a, inputs *c, ptreg_error *err)
{
    memset(c, 0, sizeof *c);
    c->m = a->m, c->n = a->n, c->landmarks = a->landmarks, c->atom_pairs = a->atom_pairs;
    c->model = floats_copy(a->model, 3 * a->m);
    c->model_normals = floats_copy(a->model_normals, 3 * a->m);
    c->scan = floats_copy(a->scan, 3 * a->n);
    c->scan_normals = floats_copy(a->scan_normals, 3 * a->n);
    c->template_q = doubles_copy(a->template_q, 3 * a->landmarks);
    c->target_q = doubles_copy(a->target_q, 3 * a->landmarks);
    size_t atoms = a->atoms_source_offset[a->atom_pairs];
    c->atoms_source = floats_copy(a->atoms_source, 3 * atoms);
    c->atoms_target = floats_copy(a->atoms_target, 3 * atoms);
    c->atoms_source_offset = sizes_copy(a->atoms_source_offset, a->atom_pairs + 1);
    c->atoms_target_offset = sizes_copy(a->atoms_target_offset, a->atom_pairs + 1);
    ptreg_volume_init(&c->volume);
    if (ptreg_volume_alloc(&c->volume, a->volume.nx, a->volume.ny, a->volume.nz, a->volume.type, err))
        return -1;
    memcpy(c->volume.data, a->volume.data, ptreg_volume_count(&a->volume) * sizeof(float));
    return c->model && c->model_normals && c->scan && c->scan_normals && c->template_q && c->target_q &&
                   c->atoms_source && c->atoms_target && c->atoms_source_offset && c->atoms_target_offset
               ? 0
               : -1;
}

static void free_inputs(inputs *in)
{
    free(in->model), free(in->model_normals), free(in->scan), free(in->scan_normals);
    free(in->template_q), free(in->target_q);
    free(in->atoms_source), free(in->atoms_target), free(in->atoms_source_offset), free(in->atoms_target_offset);
    ptreg_volume_free(&in->volume);
}

/* ---- the calls, each reduced to a digest of its output's bits ---- */

static uint64_t fnv(uint64_t h, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#define FNV_START 0xcbf29ce484222325ull

/* What a call reads: its own arrays or a handle every thread shares. */
typedef enum reads { READS_ARRAYS = 0, READS_INDEX, READS_SHARED_HANDLE } reads;

typedef struct call_kind call_kind;

typedef struct call_context {
    const call_kind *kind;
    const inputs *in;
    const shared_handles *shared;
    ptreg_device device;
    int device_slot; /* into shared_handles' per-device arrays */
} call_context;

typedef ptreg_status (*call_fn)(const call_context *c, uint64_t *digest, ptreg_error *err);

struct call_kind {
    const char *name;
    call_fn fn;
    int on_devices; /* also run on each device */
    reads from;
    ptreg_icp_method method; /* ICP's */
    ptreg_nn_method nn;
};

static uint64_t icp_digest(const ptreg_icp_result *r)
{
    uint64_t h = fnv(FNV_START, r->transformation, sizeof r->transformation);
    h = fnv(h, &r->rmse, sizeof r->rmse);
    h = fnv(h, &r->fitness, sizeof r->fitness);
    h = fnv(h, &r->pairs, sizeof r->pairs);
    h = fnv(h, &r->iterations, sizeof r->iterations);
    return fnv(h, r->mse, (size_t)(r->iterations + 1) * sizeof *r->mse);
}

/* ICP by the kind's method and search, onto the clouds, the shared index or
 * the shared resident model (on a GPU: taking turns). */
static ptreg_status icp_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    o.max_iter = 15, o.max_dist = 0.3, o.method = c->kind->method, o.nn = c->kind->nn, o.device = c->device;
    if (o.method != PTREG_ICP_POINT)
        o.target_normals = c->in->model_normals, o.source_normals = c->in->scan_normals;
    const inputs *in = c->in;
    ptreg_icp_result r;
    ptreg_status st = c->kind->from == READS_SHARED_HANDLE
                          ? ptreg_icp_model_run(c->shared->models[c->device_slot], in->scan, in->n, &o, &r, err)
                      : c->kind->from == READS_INDEX ? ptreg_icp_indexed(in->scan, in->n, c->shared->index, &o, &r, err)
                                                     : ptreg_icp(in->scan, in->n, in->model, in->m, &o, &r, err);
    if (!st)
        *digest = icp_digest(&r);
    ptreg_icp_result_free(&r);
    return st;
}

static ptreg_status emicp_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    o.device = c->device, o.max_iter = 40;
    ptreg_emicp_result r;
    /* every fifth point: EM-ICP's pairs are all n x m */
    ptreg_status st = ptreg_emicp(c->in->scan, c->in->n / 5, c->in->model, c->in->m / 4, &o, &r, err);
    if (!st) {
        uint64_t h = fnv(FNV_START, r.transformation, sizeof r.transformation);
        h = fnv(h, &r.rmse, sizeof r.rmse);
        *digest = fnv(h, &r.iterations, sizeof r.iterations);
    }
    return st;
}

static ptreg_status normals_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.neighbors.k = 15, o.device = c->device;
    size_t n = c->in->n, missing = 0;
    float *normals = malloc(3 * n * sizeof *normals), *curvature = malloc(n * sizeof *curvature);
    ptreg_status st = normals && curvature ? ptreg_normals(c->in->scan, n, &o, normals, curvature, &missing, err)
                                           : ptreg_error_set(err, PTREG_ERR_NOMEM, "normals: out of memory");
    if (!st)
        *digest = fnv(fnv(fnv(FNV_START, normals, 3 * n * sizeof *normals), curvature, n * sizeof *curvature), &missing,
                      sizeof missing);
    free(normals), free(curvature);
    return st;
}

static ptreg_status fpfh_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    o.neighbors.k = 20, o.neighbors.radius = 0.15, o.device = c->device;
    size_t n = c->in->m, missing = 0;
    float *out = malloc(n * PTREG_FPFH_BINS * sizeof *out);
    ptreg_features_model *shared = c->kind->from == READS_SHARED_HANDLE ? c->shared->features[c->device_slot] : NULL;
    ptreg_status st = !out     ? ptreg_error_set(err, PTREG_ERR_NOMEM, "fpfh: out of memory")
                      : shared ? ptreg_features_model_fpfh(shared, &o, NULL, 0, out, &missing, err)
                               : ptreg_fpfh(c->in->model, c->in->model_normals, n, &o, out, &missing, err);
    if (!st)
        *digest = fnv(fnv(FNV_START, out, n * PTREG_FPFH_BINS * sizeof *out), &missing, sizeof missing);
    free(out);
    return st;
}

static void harris_options(const ptreg_device *device, ptreg_harris3d_options *o)
{
    ptreg_harris3d_options_default(o);
    o->device = *device, o->border = PTREG_HARRIS_BORDER_CLAMP;
}

static ptreg_status harris_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_harris3d_options o;
    harris_options(&c->device, &o);
    ptreg_harris3d_result r;
    ptreg_status st = c->kind->from == READS_SHARED_HANDLE
                          ? ptreg_harris3d_volume_run(c->shared->volumes[c->device_slot], &o, 1, &r, err)
                          : ptreg_harris3d(&c->in->volume, &o, &r, err);
    if (!st) {
        uint64_t h = fnv(FNV_START, r.scores, ptreg_volume_count(&c->in->volume) * sizeof *r.scores);
        *digest = fnv(h, r.keypoints, r.keypoint_count * sizeof *r.keypoints);
        ptreg_harris3d_result_free(&r);
    }
    return st;
}

static ptreg_status lddmm_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.device = c->device, o.max_iter = 25, o.time_points = 8, o.sigma = 0.5;
    ptreg_lddmm_result r;
    ptreg_status st = ptreg_lddmm_register(c->in->template_q, c->in->target_q, c->in->landmarks, NULL, &o, &r, err);
    if (!st) {
        uint64_t h = fnv(FNV_START, r.p0, 3 * r.n * sizeof *r.p0);
        h = fnv(h, r.q1, 3 * r.n * sizeof *r.q1);
        *digest = fnv(fnv(h, &r.objective, sizeof r.objective), &r.iterations, sizeof r.iterations);
        ptreg_lddmm_result_free(&r);
    }
    return st;
}

static ptreg_status register_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    o.ransac.max_iter = 3000, o.refine_iter = 10;
    ptreg_register_result r;
    ptreg_status st = ptreg_register(c->in->scan, c->in->scan_normals, c->in->n, c->in->model, c->in->model_normals,
                                     c->in->m, &o, &r, err);
    if (!st) {
        uint64_t h = fnv(FNV_START, r.transformation, sizeof r.transformation);
        h = fnv(h, &r.fitness, sizeof r.fitness);
        *digest = fnv(fnv(h, &r.rmse, sizeof r.rmse), &r.matches, sizeof r.matches);
    }
    return st;
}

static ptreg_status batch_call(const call_context *c, uint64_t *digest, ptreg_error *err)
{
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = c->device, o.max_iter = 60;
    const inputs *in = c->in;
    ptreg_pair_set pairs = {in->atom_pairs,   in->atoms_source,        in->atoms_source_offset,
                            in->atoms_target, in->atoms_target_offset, 0};
    double *transform = malloc(16 * in->atom_pairs * sizeof *transform);
    int *iterations = malloc(in->atom_pairs * sizeof *iterations), *stop = malloc(in->atom_pairs * sizeof *stop);
    ptreg_status st = transform && iterations && stop
                          ? ptreg_batch_register(&pairs, &o, transform, iterations, stop, NULL, err)
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory");
    if (!st) {
        uint64_t h = fnv(FNV_START, transform, 16 * in->atom_pairs * sizeof *transform);
        h = fnv(h, iterations, in->atom_pairs * sizeof *iterations);
        *digest = fnv(h, stop, in->atom_pairs * sizeof *stop);
    }
    free(transform), free(iterations), free(stop);
    return st;
}

static const call_kind call_kinds[] = {
    {"icp point brute", icp_call, 1, READS_ARRAYS, PTREG_ICP_POINT, PTREG_NN_BRUTE},
    {"icp point kdtree", icp_call, 1, READS_ARRAYS, PTREG_ICP_POINT, PTREG_NN_KDTREE},
    {"icp point zero", icp_call, 1, READS_INDEX, PTREG_ICP_POINT, PTREG_NN_DELAUNAY_ZERO},
    {"icp point kdann", icp_call, 1, READS_INDEX, PTREG_ICP_POINT, PTREG_NN_DELAUNAY_KDANN},
    {"icp point pnn", icp_call, 1, READS_INDEX, PTREG_ICP_POINT, PTREG_NN_DELAUNAY_PNN},
    {"icp point pnnopt", icp_call, 1, READS_INDEX, PTREG_ICP_POINT, PTREG_NN_DELAUNAY_PNNOPT},
    {"icp point auto", icp_call, 0, READS_INDEX, PTREG_ICP_POINT, PTREG_NN_AUTO},
    {"icp plane", icp_call, 0, READS_ARRAYS, PTREG_ICP_PLANE, PTREG_NN_KDTREE},
    {"icp gicp", icp_call, 0, READS_INDEX, PTREG_ICP_GICP, PTREG_NN_KDTREE},
    {"icp symmetric", icp_call, 0, READS_ARRAYS, PTREG_ICP_SYMMETRIC, PTREG_NN_AUTO},
    {"icp shared model", icp_call, 1, READS_SHARED_HANDLE, PTREG_ICP_POINT, PTREG_NN_DELAUNAY_PNNOPT},
    {"emicp", emicp_call, 1, READS_ARRAYS, 0, 0},
    {"normals", normals_call, 0, READS_ARRAYS, 0, 0},
    {"fpfh", fpfh_call, 1, READS_ARRAYS, 0, 0},
    {"fpfh shared model", fpfh_call, 1, READS_SHARED_HANDLE, 0, 0},
    {"harris3d", harris_call, 1, READS_ARRAYS, 0, 0},
    {"harris3d shared volume", harris_call, 1, READS_SHARED_HANDLE, 0, 0},
    {"lddmm", lddmm_call, 1, READS_ARRAYS, 0, 0},
    {"register", register_call, 0, READS_ARRAYS, 0, 0},
    {"batch", batch_call, 1, READS_ARRAYS, 0, 0},
};
#define CALL_KINDS (sizeof call_kinds / sizeof call_kinds[0])

/* ---- the plan: every (kind, device) pair, with its result made alone ---- */

typedef struct planned_call {
    const call_kind *kind;
    ptreg_device device;
    int device_slot;
    uint64_t alone; /* the digest of the call made alone */
} planned_call;

typedef struct plan {
    planned_call calls[CALL_KINDS * (MAX_DEVICES + 1)];
    size_t count;
    ptreg_device devices[MAX_DEVICES + 1]; /* the CPU first, with --devices all */
    int device_count;
} plan;

/* The devices the plan runs on: "all" (the CPU first), or one backend's. */
static int find_devices(plan *p, const char *which)
{
    ptreg_backend only = PTREG_BACKEND_CPU;
    int all = !strcmp(which, "all");
    if (!all && strcmp(which, "cpu") && strcmp(which, "opencl") && strcmp(which, "cuda"))
        return -1;
    if (!all)
        only = !strcmp(which, "cuda") ? PTREG_BACKEND_CUDA : !strcmp(which, "opencl") ? PTREG_BACKEND_OPENCL : only;
    p->device_count = 0;
    if (all || only == PTREG_BACKEND_CPU)
        p->devices[p->device_count++] = (ptreg_device){PTREG_BACKEND_CPU, 0};
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    for (size_t i = 0; i < count && p->device_count <= MAX_DEVICES; i++)
        if (list[i].device.backend != PTREG_BACKEND_CPU && (all || list[i].device.backend == only))
            p->devices[p->device_count++] = list[i].device;
    return p->device_count ? 0 : -1;
}

static void make_plan(plan *p)
{
    p->count = 0;
    for (int d = 0; d < p->device_count; d++)
        for (size_t k = 0; k < CALL_KINDS; k++)
            if (p->devices[d].backend == PTREG_BACKEND_CPU || call_kinds[k].on_devices)
                p->calls[p->count++] = (planned_call){&call_kinds[k], p->devices[d], d, 0};
}

static int make_shared(const plan *p, const inputs *in, shared_handles *s, ptreg_error *err)
{
    memset(s, 0, sizeof *s);
    if (ptreg_model_index_create(in->model, in->m, NULL, &s->index, err))
        return -1;
    ptreg_features_options fo;
    ptreg_features_options_default(&fo);
    ptreg_harris3d_options ho;
    for (int d = 0; d < p->device_count; d++) {
        fo.device = p->devices[d];
        harris_options(&p->devices[d], &ho);
        if (ptreg_icp_model_create(s->index, &p->devices[d], &s->models[d], err) ||
            ptreg_features_model_create(in->model, in->model_normals, in->m, &fo, &s->features[d], err) ||
            ptreg_harris3d_volume_create(&in->volume, &ho, &s->volumes[d], err))
            return -1;
    }
    return 0;
}

static void free_shared(shared_handles *s)
{
    for (int d = 0; d <= MAX_DEVICES; d++) {
        ptreg_icp_model_destroy(s->models[d]);
        ptreg_features_model_destroy(s->features[d]);
        ptreg_harris3d_volume_destroy(s->volumes[d]);
    }
    ptreg_model_index_destroy(s->index);
}

/* ---- the concurrent rounds ---- */

typedef struct worker {
    pthread_t thread;
    int id, calls;
    const plan *plan;
    const inputs *shared_inputs;
    const shared_handles *shared;
    inputs own; /* the thread's copy */
    pthread_barrier_t *start;
    size_t *picked;   /* per call: the plan's entry */
    uint64_t *digest; /* per call */
    ptreg_status *status;
    char first_error[PTREG_ERROR_MESSAGE_MAX];
} worker;

/* Thread t's call i: a walk through the plan that differs per thread, so
 * that different calls overlap in every round. */
static size_t pick(const worker *w, int i, unsigned round)
{
    return ((size_t)w->id * 7 + (size_t)i * 5 + round * 3) % w->plan->count;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int i = 0; i < w->calls; i++) {
        const planned_call *pc = &w->plan->calls[w->picked[i]];
        call_context c = {pc->kind, (i & 1) ? &w->own : w->shared_inputs, w->shared, pc->device, pc->device_slot};
        ptreg_error err;
        ptreg_error_clear(&err);
        w->digest[i] = 0;
        w->status[i] = pc->kind->fn(&c, &w->digest[i], &err);
        if (w->status[i] && !w->first_error[0])
            snprintf(w->first_error, sizeof w->first_error, "%s", err.message);
    }
    return NULL;
}

/* One round; returns the calls whose bits differ from the call made alone. */
static int run_round(worker *workers, int threads, unsigned round)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        worker *w = &workers[t];
        w->start = &start;
        w->first_error[0] = '\0';
        for (int i = 0; i < w->calls; i++)
            w->picked[i] = pick(w, i, round);
    }
    for (int t = 0; t < threads; t++)
        if (pthread_create(&workers[t].thread, NULL, worker_main, &workers[t])) {
            fprintf(stderr, "cannot start thread %d\n", t); /* the others wait at the barrier */
            exit(1);
        }
    for (int t = 0; t < threads; t++)
        pthread_join(workers[t].thread, NULL);
    pthread_barrier_destroy(&start);
    int wrong = 0;
    for (int t = 0; t < threads; t++) {
        const worker *w = &workers[t];
        for (int i = 0; i < w->calls; i++) {
            const planned_call *pc = &w->plan->calls[w->picked[i]];
            char dev[64];
            CHECK_MSG(w->status[i] == PTREG_OK, "round %u thread %d call %d (%s on %s): %s", round, t, i,
                      pc->kind->name, ptreg_device_format(&pc->device, dev, sizeof dev), w->first_error);
            int same = w->status[i] == PTREG_OK && w->digest[i] == pc->alone;
            CHECK_MSG(!w->status[i] ? same : 1,
                      "round %u thread %d call %d (%s on %s): bits differ from the call "
                      "made alone (%s inputs)",
                      round, t, i, pc->kind->name, ptreg_device_format(&pc->device, dev, sizeof dev),
                      (i & 1) ? "own" : "shared");
            wrong += !same;
        }
    }
    return wrong;
}

/* ---- the atomic files' journal under threads ---- */

#define JOURNAL_FILES 4

typedef struct journal_writer {
    pthread_t thread;
    const char *dir;
    int id, failures;
    pthread_barrier_t *all_open;
} journal_writer;

/* Opens all its files before any thread commits one: every commit must
 * still find room in the journal. */
static void *journal_writer_main(void *arg)
{
    journal_writer *w = arg;
    ptreg_atomic_file files[JOURNAL_FILES];
    ptreg_error err;
    int opened = 0;
    for (int f = 0; f < JOURNAL_FILES; f++) {
        char path[256];
        snprintf(path, sizeof path, "%s/out-%d-%d.txt", w->dir, w->id, f);
        opened += ptreg_atomic_open(path, &files[opened], &err) == PTREG_OK;
    }
    pthread_barrier_wait(w->all_open);
    for (int f = 0; f < opened; f++) {
        fprintf(files[f].fp, "thread %d file %d\n", w->id, f);
        w->failures += ptreg_atomic_commit(&files[f], &err) != PTREG_OK;
    }
    w->failures += JOURNAL_FILES - opened;
    return NULL;
}

static size_t files_in(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    if (p && fscanf(p, "%zu", &n) != 1)
        n = (size_t)-1;
    if (p)
        pclose(p);
    return n;
}

/* A run's outputs written by many threads at once are all removed when
 * the run fails (the journal's promise, ptreg/io.h). */
static void check_journal_under_threads(int threads)
{
    char dir[] = "/tmp/ptreg-journal-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    journal_writer w[MAX_THREADS];
    pthread_barrier_t all_open;
    pthread_barrier_init(&all_open, NULL, (unsigned)threads);
    ptreg_atomic_journal_begin();
    for (int t = 0; t < threads; t++) {
        w[t] = (journal_writer){.dir = dir, .id = t, .all_open = &all_open};
        REQUIRE(pthread_create(&w[t].thread, NULL, journal_writer_main, &w[t]) == 0);
    }
    int failures = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(w[t].thread, NULL);
        failures += w[t].failures;
    }
    pthread_barrier_destroy(&all_open);
    CHECK_MSG(failures == 0, "%d files of the journal's threads not written", failures);
    CHECK_MSG(files_in(dir) == (size_t)threads * JOURNAL_FILES, "%zu files written, %d expected", files_in(dir),
              threads * JOURNAL_FILES);
    ptreg_atomic_journal_end(1);
    CHECK_MSG(files_in(dir) == 0, "%zu of the failed run's files left after the journal's end", files_in(dir));
    rmdir(dir);
}

/* ---- main ---- */

typedef struct settings {
    int repeat, threads, calls;
    const char *devices; /* all, cpu, opencl or cuda */
} settings;

static int parse_settings(int argc, char **argv, settings *s)
{
    *s = (settings){1, 8, 50, "all"};
    for (int i = 1; i < argc; i++) {
        int *value = !strcmp(argv[i], "--repeat")    ? &s->repeat
                     : !strcmp(argv[i], "--threads") ? &s->threads
                     : !strcmp(argv[i], "--calls")   ? &s->calls
                                                     : NULL;
        if (!strcmp(argv[i], "--devices") && i + 1 < argc)
            s->devices = argv[++i];
        else if (value && i + 1 < argc && atoi(argv[i + 1]) > 0)
            *value = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--repeat N] [--threads T (<= %d)] [--calls C] "
                    "[--devices all|cpu|opencl|cuda]\n",
                    argv[0], MAX_THREADS);
            return -1;
        }
    }
    return s->threads <= MAX_THREADS ? 0 : -1;
}

/* Every planned call once, alone: the bits the rounds must give. */
static int run_alone(plan *p, const inputs *in, const shared_handles *shared)
{
    for (size_t i = 0; i < p->count; i++) {
        planned_call *pc = &p->calls[i];
        call_context c = {pc->kind, in, shared, pc->device, pc->device_slot};
        ptreg_error err;
        ptreg_error_clear(&err);
        char dev[64];
        ptreg_status st = pc->kind->fn(&c, &pc->alone, &err);
        CHECK_MSG(st == PTREG_OK, "%s on %s alone: %s", pc->kind->name,
                  ptreg_device_format(&pc->device, dev, sizeof dev), err.message);
        if (st)
            return -1;
    }
    return 0;
}

static int setup_workers(worker *workers, const settings *s, const plan *p, const inputs *in,
                         const shared_handles *shared)
{
    for (int t = 0; t < s->threads; t++) {
        worker *w = &workers[t];
        memset(w, 0, sizeof *w);
        w->id = t, w->calls = s->calls, w->plan = p, w->shared_inputs = in, w->shared = shared;
        w->picked = calloc((size_t)s->calls, sizeof *w->picked);
        w->digest = calloc((size_t)s->calls, sizeof *w->digest);
        w->status = calloc((size_t)s->calls, sizeof *w->status);
        ptreg_error err;
        if (!w->picked || !w->digest || !w->status || copy_inputs(in, &w->own, &err))
            return -1;
    }
    return 0;
}

static void free_workers(worker *workers, int threads)
{
    for (int t = 0; t < threads; t++) {
        free(workers[t].picked), free(workers[t].digest), free(workers[t].status);
        free_inputs(&workers[t].own);
    }
}

int main(int argc, char **argv)
{
    settings s;
    if (parse_settings(argc, argv, &s))
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a long --repeat shows its rounds as they end */
    static inputs in;
    static plan p;
    static shared_handles shared;
    static worker workers[MAX_THREADS];
    ptreg_error err;
    if (make_inputs(&in, &err)) {
        fprintf(stderr, "inputs: %s\n", err.message);
        return 1;
    }
    if (find_devices(&p, s.devices)) {
        fprintf(stderr, "--devices %s: none found (all, cpu, opencl or cuda)\n", s.devices);
        return 1;
    }
    make_plan(&p);
    if (make_shared(&p, &in, &shared, &err)) {
        fprintf(stderr, "shared handles: %s\n", err.message);
        return 1;
    }
    if (run_alone(&p, &in, &shared) || setup_workers(workers, &s, &p, &in, &shared)) {
        check_exit();
        return 1;
    }
    check_journal_under_threads(s.threads);
    printf("%zu kinds of call on %d device(s): %zu calls planned; %d threads x %d calls, %d round(s)\n", CALL_KINDS,
           p.device_count, p.count, s.threads, s.calls, s.repeat);
    int wrong = 0;
    for (int round = 0; round < s.repeat && !wrong; round++) {
        /* the devices closed: the threads open them again and build their programs */
        free_shared(&shared);
        ptreg_devices_release();
        if (make_shared(&p, &in, &shared, &err)) {
            CHECK_MSG(0, "round %d: shared handles: %s", round, err.message);
            break;
        }
        wrong = run_round(workers, s.threads, (unsigned)round);
        if (s.repeat > 1)
            printf("round %d: %s\n", round + 1, wrong ? "FAILED" : "same bits");
    }
    free_workers(workers, s.threads);
    free_shared(&shared);
    free_inputs(&in);
    ptreg_devices_release();
    return check_exit();
}
