/* ptreg._core: features: normals, FPFH, PFH, 3-D Harris. */
#include "_core.h"

ENUM_FROM_NAMES(parse_threshold_mode, "relative", "absolute")

static const field normals_fields[] = {
    OPT(ptreg_normals_options, "viewpoint", F_VEC3, viewpoint),
    OPT(ptreg_normals_options, "direction", F_VEC3, direction),
    OPT(ptreg_normals_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field feature_fields[] = {
    OPT(ptreg_features_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field harris_fields[] = {
    OPT_ENUM(ptreg_harris3d_options, "threshold_mode", threshold_mode, parse_threshold_mode),
    OPT(ptreg_harris3d_options, "threshold", F_DOUBLE, threshold),
    OPT(ptreg_harris3d_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

/* radius given without k: every point within it (k 0), as the command
 * line's --radius alone, not the k nearest of them. */
static void radius_alone(PyObject *kwargs, ptreg_neighborhood *nb)
{
    PyObject *r = kwargs ? PyDict_GetItemString(kwargs, "radius") : NULL;
    PyObject *k = kwargs ? PyDict_GetItemString(kwargs, "k") : NULL;
    if (r && r != Py_None && (!k || k == Py_None))
        nb->k = 0;
}

/* normals(points, out, curvature_out, **options) -> points without a normal */
PyObject *py_normals(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *xyz_obj, *out_obj, *curv_obj;
    if (!PyArg_ParseTuple(args, "OOO", &xyz_obj, &out_obj, &curv_obj))
        return NULL;
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("normals"), normals_fields, kwargs, "normals") < 0)
        return NULL;
    radius_alone(kwargs, &o.neighbors);
    Py_buffer xv, ov, cv;
    size_t n, no, nc;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(out_obj, &ov, 'f', 3, 1, 0, "normals out", &no) < 0) {
        py_release(&xv);
        return NULL;
    }
    if (get_rows(curv_obj, &cv, 'f', 1, 1, 1, "curvature out", &nc) < 0 || no != n || (cv.obj && nc != n)) {
        if (!PyErr_Occurred())
            PyErr_SetString(ARG_ERROR, "normals: the outputs must have one row per point");
        py_release(&xv), py_release(&ov), py_release(&cv);
        return NULL;
    }
    size_t missing = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_normals(xv.buf, n, &o, ov.buf, cv.obj ? cv.buf : NULL, &missing, &err));
    py_release(&xv);
    py_release(&ov), py_release(&cv);
    if (st)
        return raise_ptreg(st, &err);
    return PyLong_FromSize_t(missing);
}

typedef ptreg_status (*feature_fn)(const float *, const float *, size_t, const ptreg_features_options *, float *,
                                   size_t *, ptreg_error *);

static PyObject *run_feature(PyObject *args, PyObject *kwargs, feature_fn fn, size_t bins, const char *name)
{
    PyObject *xyz_obj, *n_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &xyz_obj, &n_obj, &out_obj))
        return NULL;
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("features"), feature_fields, kwargs, name) < 0)
        return NULL;
    radius_alone(kwargs, &o.neighbors);
    Py_buffer xv, nv, ov;
    size_t n, nn, no;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(n_obj, &nv, 'f', 3, 0, 0, "normals", &nn) < 0) {
        py_release(&xv);
        return NULL;
    }
    if (get_rows(out_obj, &ov, 'f', bins, 1, 0, "descriptors out", &no) < 0 || nn != n || no != n) {
        if (!PyErr_Occurred())
            PyErr_Format(ARG_ERROR, "%s: normals and output need one row per point", name);
        py_release(&xv), py_release(&nv), py_release(&ov);
        return NULL;
    }
    size_t missing = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = fn(xv.buf, nv.buf, n, &o, ov.buf, &missing, &err));
    py_release(&xv);
    py_release(&nv), py_release(&ov);
    if (st)
        return raise_ptreg(st, &err);
    return PyLong_FromSize_t(missing);
}

PyObject *py_fpfh(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return run_feature(args, kwargs, ptreg_fpfh, PTREG_FPFH_BINS, "fpfh");
}

PyObject *py_pfh(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return run_feature(args, kwargs, ptreg_pfh, PTREG_PFH_BINS, "pfh");
}

/* harris3d(data, (nx, ny, nz), dtype, spacing, origin, want_scores, **options) */
PyObject *py_harris3d(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *data, *spacing, *origin;
    Py_ssize_t nx, ny, nz;
    const char *type_name;
    int want_scores = 0, tune = 1;
    if (!PyArg_ParseTuple(args, "O(nnn)sOOpp", &data, &nx, &ny, &nz, &type_name, &spacing, &origin, &want_scores,
                          &tune))
        return NULL;
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("harris3d"), harris_fields, kwargs, "harris3d") < 0)
        return NULL;
    Py_buffer view;
    ptreg_volume v;
    if (volume_view(data, nx, ny, nz, type_name, spacing, origin, &view, &v) < 0)
        return NULL;
    ptreg_tune_choice choice;
    ptreg_harris3d_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_tune_variant("harris3d", &o, ptreg_volume_count(&v), 0, tune, &choice, &err);
                st = st ? st : ptreg_harris3d(&v, &o, &r, &err));
    PyBuffer_Release(&view);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    int bad = !d || py_put(d, "keypoints", bytes_of(r.keypoints, r.keypoint_count * sizeof(ptreg_keypoint))) ||
              result_into(d, ptreg_result_table_find("harris3d"), &r) < 0 ||
              py_put(d, "variant", variant_dict(&choice)) ||
              (want_scores && py_put(d, "scores", bytes_of(r.scores, ptreg_volume_count(&v) * sizeof(float))));
    ptreg_harris3d_result_free(&r);
    if (bad) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}
