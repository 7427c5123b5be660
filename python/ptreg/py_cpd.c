/* ptreg._core: Coherent Point Drift, and moving other points by its result. */
#include "_core.h"

static const field cpd_fields[] = {
    OPT(ptreg_cpd_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

/* cpd(source, target, moved, centres, coefficients, **options): moved
 * (M x 3 float32) receives the moved source; centres and coefficients
 * (M x 3 float64, or None) a deformable result's field. */
PyObject *py_cpd(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *s, *t, *moved_obj, *centres_obj, *coef_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &s, &t, &moved_obj, &centres_obj, &coef_obj))
        return NULL;
    ptreg_cpd_options o;
    ptreg_cpd_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("cpd"), cpd_fields, kwargs, "cpd") < 0)
        return NULL;
    cloud_pair p;
    if (get_pair(s, t, 0, Py_None, Py_None, &p) < 0)
        return NULL;
    Py_buffer mv, cv, wv;
    size_t nm = 0, nc = 0, nw = 0;
    memset(&mv, 0, sizeof mv), memset(&cv, 0, sizeof cv), memset(&wv, 0, sizeof wv);
    int bad = get_rows(moved_obj, &mv, 'f', 3, 1, 0, "moved", &nm) < 0 ||
              get_rows(centres_obj, &cv, 'd', 3, 1, 1, "centres", &nc) < 0 ||
              get_rows(coef_obj, &wv, 'd', 3, 1, 1, "coefficients", &nw) < 0;
    if (!bad && (nm != p.ns || (cv.buf && nc != p.ns) || (wv.buf && nw != p.ns))) {
        PyErr_SetString(ARG_ERROR, "cpd: moved, centres and coefficients need one row per source point");
        bad = 1;
    }
    ptreg_cpd_result r;
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (!bad)
        WITHOUT_GIL(st = ptreg_cpd(p.s.buf, p.ns, p.t.buf, p.nt, &o, &r, &err));
    release_pair(&p);
    PyObject *d = NULL;
    if (!bad && st) {
        raise_ptreg(st, &err);
    } else if (!bad) {
        memcpy(mv.buf, r.moved, 3 * r.m * sizeof(float));
        if (r.centres && cv.buf && wv.buf) {
            memcpy(cv.buf, r.centres, 3 * r.m * sizeof(double));
            memcpy(wv.buf, r.coefficients, 3 * r.m * sizeof(double));
        }
        d = PyDict_New();
        if (d && result_into(d, ptreg_result_table_find("cpd"), &r) < 0)
            Py_CLEAR(d);
        ptreg_cpd_result_free(&r);
    }
    py_release(&mv), py_release(&cv), py_release(&wv);
    return d;
}

/* cpd_warp(transform, transformation, beta, centres, coefficients, points,
 * out): the result rebuilt from its parts, points (float32) moved into out. */
PyObject *py_cpd_warp(PyObject *self, PyObject *args)
{
    (void)self;
    const char *kind;
    PyObject *T_obj, *centres_obj, *coef_obj, *x_obj, *out_obj;
    double beta;
    if (!PyArg_ParseTuple(args, "sOdOOOO", &kind, &T_obj, &beta, &centres_obj, &coef_obj, &x_obj, &out_obj))
        return NULL;
    ptreg_cpd_result r;
    memset(&r, 0, sizeof r);
    ptreg_cpd_options parse; /* the transform's name through the options table */
    ptreg_cpd_options_default(&parse);
    ptreg_error err;
    const ptreg_option *row = ptreg_option_find(ptreg_option_table_find("cpd"), "transform", 9);
    if (ptreg_option_parse(row, &parse, kind, &err))
        return raise_ptreg(PTREG_ERR_ARG, &err);
    r.transform = parse.transform;
    r.beta = beta;
    if (get_matrix16(T_obj, r.transformation) < 0)
        return NULL;
    Py_buffer cv, wv, xv, ov;
    size_t nc = 0, nw = 0, nx = 0, no = 0;
    memset(&cv, 0, sizeof cv), memset(&wv, 0, sizeof wv), memset(&xv, 0, sizeof xv), memset(&ov, 0, sizeof ov);
    int bad = get_rows(centres_obj, &cv, 'd', 3, 0, 1, "centres", &nc) < 0 ||
              get_rows(coef_obj, &wv, 'd', 3, 0, 1, "coefficients", &nw) < 0 ||
              get_rows(x_obj, &xv, 'f', 3, 0, 0, "points", &nx) < 0 ||
              get_rows(out_obj, &ov, 'f', 3, 1, 0, "out", &no) < 0;
    if (!bad && (nc != nw || nx != no)) {
        PyErr_SetString(ARG_ERROR, "cpd warp: one coefficient row per centre, one output row per point");
        bad = 1;
    }
    ptreg_status st = PTREG_OK;
    if (!bad) {
        r.m = nc;
        r.centres = cv.buf;
        r.coefficients = wv.buf;
        WITHOUT_GIL(st = ptreg_cpd_warp(&r, xv.buf, nx, ov.buf, &err));
    }
    py_release(&cv), py_release(&wv), py_release(&xv), py_release(&ov);
    if (bad)
        return NULL;
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}
