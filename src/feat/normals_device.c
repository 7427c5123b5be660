/* Normals on a GPU device (normals_device.h): the neighbor lists of the
 * feature code (feat_device_model_lists: one launch for k-NN and hybrid,
 * two for a radius), then one launch of normals.cl's estimate, a thread
 * per point. */
#include "feat/normals_device.h"

#include <stdlib.h>
#include <string.h>

#include "feat/pfh_impl.h"
#include "nn/kdtree_query.h"

static const char *const normals_files[] = {"feat/normals.cl", NULL};
const kernel_program normals_kernels = {"normals", normals_files};

/* The work-groups of the searches and of the estimate. */
#define NORMALS_WG PTREG_FEAT_SEARCH_WG

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    const ptreg_normals_options *o = options;
    if (o->orientation == PTREG_ORIENT_TANGENT_PLANE)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "normals on %s: orientation tangent-plane (a spanning tree grown edge by edge) runs on "
                               "the CPU only: use viewpoint, direction or none, or the CPU",
                               device->name);
    if (NORMALS_WG > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "normals on %s: work-groups of %d threads; the device "
                               "takes %zu",
                               device->name, NORMALS_WG, device->max_work_group);
    return PTREG_OK;
}

const engine normals_device_engine = {ENGINE_GPU_BACKENDS, device_supports};

/* The viewpoint or the direction, in the kernel's acc_t (double where the
 * device has it). */
static ptreg_status upload_toward(dev_handle *dev, const ptreg_normals_options *opt, dbuf **out, ptreg_error *err)
{
    const double *v = opt->orientation == PTREG_ORIENT_DIRECTION ? opt->direction : opt->viewpoint;
    if (dev->info.fp64)
        return dbuf_upload(dev, v, 3 * sizeof(double), out, err);
    const float f[3] = {(float)v[0], (float)v[1], (float)v[2]};
    return dbuf_upload(dev, f, sizeof f, out, err);
}

/* The estimate's kernel, and its work-group: NORMALS_WG or what the kernel
 * takes on this device, if less. */
static ptreg_status pca_kernel(dev_handle *dev, dkernel **k, size_t *wg, ptreg_error *err)
{
    dprogram *p;
    ptreg_status st = dev_program(dev, &normals_kernels, "", &p, err);
    st = st ? st : dev_kernel(p, "ptreg_normals_pca", k, err);
    if (!st)
        *wg = (*k)->max_threads && (*k)->max_threads < NORMALS_WG ? (*k)->max_threads : NORMALS_WG;
    return st;
}

/* The estimate over lists that are on the device. */
static ptreg_status estimate(dev_handle *dev, const dbuf *xyz, size_t n, const dbuf *start, const dbuf *count,
                             const dbuf *index, const ptreg_normals_options *opt, dbuf *normals, dbuf *curvature,
                             size_t *missing, ptreg_error *err)
{
    dkernel *k;
    size_t wg = 0;
    dbuf *toward = NULL, *lacking = NULL;
    ptreg_status st = pca_kernel(dev, &k, &wg, err);
    st = st ? st : upload_toward(dev, opt, &toward, err);
    st = st ? st : dbuf_alloc(dev, sizeof(uint32_t), &lacking, err);
    st = st ? st : dbuf_fill(lacking, 0, sizeof(uint32_t), 0, err);
    if (!st) {
        karg args[] = {KARG_BUF(xyz),
                       KARG_U32(n),
                       KARG_BUF(start),
                       KARG_BUF(count),
                       KARG_BUF(index),
                       KARG_U32(opt->orientation),
                       KARG_BUF(toward),
                       KARG_BUF(normals),
                       KARG_U32(curvature != NULL),
                       KARG_BUF(curvature ? curvature : normals),
                       KARG_BUF(lacking)};
        st = dev_launch(k, n, wg, sizeof args / sizeof args[0], args, err);
    }
    uint32_t m = 0;
    if (!st && missing && !(st = dbuf_read(lacking, 0, &m, sizeof m, err)))
        *missing = m;
    dbuf_free(toward);
    dbuf_free(lacking);
    return st;
}

ptreg_status feat_device_normals(dev_handle *dev, const dbuf *xyz, const nn_device_tree *tree, size_t n,
                                 const ptreg_normals_options *opt, dbuf **normals_out, dbuf **curvature_out,
                                 size_t *missing, ptreg_error *err)
{
    *normals_out = NULL;
    if (curvature_out)
        *curvature_out = NULL;
    feat_device_model *m = NULL;
    const dbuf *start, *count, *index;
    dbuf *normals = NULL, *curvature = NULL;
    ptreg_status st = feat_device_model_borrow(dev, xyz, tree, n, &m, err);
    st = st ? st : feat_device_model_lists(m, &opt->neighbors, NORMALS_WG, &start, &count, &index, err);
    st = st ? st : dbuf_alloc(dev, 3 * n * sizeof(float), &normals, err);
    if (!st && curvature_out)
        st = dbuf_alloc(dev, n * sizeof(float), &curvature, err);
    st = st ? st : estimate(dev, xyz, n, start, count, index, opt, normals, curvature, missing, err);
    feat_device_model_free(m);
    if (st) {
        dbuf_free(normals);
        dbuf_free(curvature);
        return st;
    }
    *normals_out = normals;
    if (curvature_out)
        *curvature_out = curvature;
    return PTREG_OK;
}

ptreg_status feat_device_normals_host(const ptreg_device *device, const float *xyz, size_t n,
                                      const ptreg_normals_options *opt, float *normals, float *curvature,
                                      size_t *missing, ptreg_error *err)
{
    dev_handle *dev;
    ptreg_kdtree *tree = NULL;
    nn_device_tree on_device;
    memset(&on_device, 0, sizeof on_device);
    dbuf *points = NULL, *normals_buf = NULL, *curvature_buf = NULL;
    ptreg_status st = dev_get(device, &dev, err);
    st = st ? st : ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    st = st ? st : nn_device_tree_upload(dev, tree, 0, &on_device, err);
    ptreg_kdtree_destroy(tree);
    st = st ? st : dbuf_upload(dev, xyz, 3 * n * sizeof(float), &points, err);
    st = st ? st
            : feat_device_normals(dev, points, &on_device, n, opt, &normals_buf, curvature ? &curvature_buf : NULL,
                                  missing, err);
    st = st ? st : dbuf_read(normals_buf, 0, normals, 3 * n * sizeof(float), err);
    if (!st && curvature)
        st = dbuf_read(curvature_buf, 0, curvature, n * sizeof(float), err);
    dbuf_free(normals_buf);
    dbuf_free(curvature_buf);
    dbuf_free(points);
    nn_device_tree_free(&on_device);
    return st;
}
