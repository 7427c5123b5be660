/* ptreg._core: filters: voxel, statistical, radius, random and uniform downsampling. */
#include "_core.h"

PyObject *py_voxel_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj, *normals_obj;
    double voxel;
    if (!PyArg_ParseTuple(args, "OOd", &xyz_obj, &normals_obj, &voxel))
        return NULL;
    Py_buffer xv, nv;
    size_t n;
    if (get_points_normals(xyz_obj, normals_obj, &xv, &nv, &n) < 0)
        return NULL;
    ptreg_cloud in = {n, xv.buf, nv.obj ? nv.buf : NULL, NULL, 0, {0, 0, 0}, NULL, NULL, NULL}, out;
    ptreg_cloud_init(&out);
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_voxel_downsample(&in, voxel, &out, &err));
    py_release(&xv);
    py_release(&nv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *x = bytes_of(out.xyz, 3 * out.n * sizeof(float));
    PyObject *nrm = out.normals ? bytes_of(out.normals, 3 * out.n * sizeof(float)) : (Py_INCREF(Py_None), Py_None);
    PyObject *res = x && nrm ? Py_BuildValue("(OO)", x, nrm) : NULL;
    Py_XDECREF(x), Py_XDECREF(nrm);
    ptreg_cloud_free(&out);
    return res;
}

/* The mask a filter made, as bytes (ptreg/__init__.py selects with it). */
static PyObject *mask_result(ptreg_status st, const ptreg_error *err, unsigned char *keep, size_t n)
{
    PyObject *res = st ? raise_ptreg(st, err) : bytes_of(keep, n);
    free(keep);
    return res;
}

static unsigned char *mask_alloc(size_t n)
{
    unsigned char *keep = malloc(n ? n : 1);
    if (!keep)
        PyErr_NoMemory();
    return keep;
}

/* The two outlier filters' library calls, in one shape: a count (k, or
 * the least number of neighbours) and a limit (the std ratio, or the
 * radius), so that one binding body serves both. */
typedef ptreg_status (*outlier_fn)(const float *xyz, size_t n, size_t count, double limit, unsigned char *keep,
                                   ptreg_error *err);

static ptreg_status statistical_call(const float *xyz, size_t n, size_t k, double ratio, unsigned char *keep,
                                     ptreg_error *err)
{
    return ptreg_statistical_outliers(xyz, n, k, ratio, keep, NULL, err);
}

static ptreg_status radius_call(const float *xyz, size_t n, size_t min, double radius, unsigned char *keep,
                                ptreg_error *err)
{
    return ptreg_radius_outliers(xyz, n, radius, min, keep, err);
}

/* The keep mask of filter over the points xyz_obj; a count below 1 goes to
 * the library as 0, which refuses it with its own message. */
static PyObject *outlier_mask(PyObject *xyz_obj, Py_ssize_t count, double limit, outlier_fn filter)
{
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    unsigned char *keep = mask_alloc(n);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (keep)
        WITHOUT_GIL(st = filter(xv.buf, n, count < 1 ? 0 : (size_t)count, limit, keep, &err));
    py_release(&xv);
    return keep ? mask_result(st, &err, keep, n) : NULL;
}

/* statistical_outliers(points, k, std_ratio) -> keep mask */
PyObject *py_statistical_outliers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj;
    Py_ssize_t k;
    double ratio;
    if (!PyArg_ParseTuple(args, "Ond", &xyz_obj, &k, &ratio))
        return NULL;
    return outlier_mask(xyz_obj, k, ratio, statistical_call);
}

/* radius_outliers(points, radius, min_neighbors) -> keep mask */
PyObject *py_radius_outliers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj;
    double radius;
    Py_ssize_t min;
    if (!PyArg_ParseTuple(args, "Odn", &xyz_obj, &radius, &min))
        return NULL;
    return outlier_mask(xyz_obj, min, radius, radius_call);
}

/* random_downsample(n, fraction, count, seed) -> keep mask: count when
 * fraction < 0, else floor(fraction n) */
PyObject *py_random_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n, count;
    double fraction;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "ndnK", &n, &fraction, &count, &seed))
        return NULL;
    ptreg_error err;
    if (n < 0 || (fraction < 0.0 && count < 0) || (fraction >= 0.0 && !(fraction <= 1.0)))
        return raise_ptreg(
            ptreg_error_set(&err, PTREG_ERR_ARG, "random_downsample: a fraction in [0, 1] or a count >= 0 is needed"),
            &err);
    const size_t take = fraction >= 0.0 ? ptreg_random_downsample_count((size_t)n, fraction) : (size_t)count;
    unsigned char *keep = mask_alloc((size_t)n);
    if (!keep)
        return NULL;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_random_downsample((size_t)n, take, (uint64_t)seed, keep, &err));
    return mask_result(st, &err, keep, (size_t)n);
}

/* uniform_downsample(n, every) -> keep mask */
PyObject *py_uniform_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n, every;
    if (!PyArg_ParseTuple(args, "nn", &n, &every))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "uniform_downsample: %zd points", n);
    unsigned char *keep = mask_alloc((size_t)n);
    if (!keep)
        return NULL;
    ptreg_error err;
    const ptreg_status st = ptreg_uniform_downsample((size_t)n, every < 1 ? 0 : (size_t)every, keep, &err);
    return mask_result(st, &err, keep, (size_t)n);
}
