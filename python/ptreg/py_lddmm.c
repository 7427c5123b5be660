/* ptreg._core: LDDMM: register and warp. */
#include "_core.h"

/* in each enum's order (lddmm.h, harris3d.h) */
ENUM_FROM_NAMES(parse_lddmm_init, "scaled", "displacement", "zero")

static const field lddmm_fields[] = {
    OPT_ENUM(ptreg_lddmm_options, "init", init, parse_lddmm_init),
    OPT(ptreg_lddmm_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

/* lddmm_register(template, target, **options) over float64 n x 3 rows */
PyObject *py_lddmm_register(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *q_obj, *t_obj;
    if (!PyArg_ParseTuple(args, "OO", &q_obj, &t_obj))
        return NULL;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("lddmm"), lddmm_fields, kwargs, "lddmm") < 0)
        return NULL;
    Py_buffer qv, tv;
    size_t n, m;
    if (get_rows(q_obj, &qv, 'd', 3, 0, 0, "template", &n) < 0)
        return NULL;
    if (get_rows(t_obj, &tv, 'd', 3, 0, 0, "target", &m) < 0) {
        py_release(&qv);
        return NULL;
    }
    if (n != m) {
        py_release(&qv), py_release(&tv);
        return PyErr_Format(ARG_ERROR, "lddmm: %zu template landmarks against %zu target landmarks", n, m);
    }
    ptreg_lddmm_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_lddmm_register(qv.buf, tv.buf, n, NULL, &o, &r, &err));
    py_release(&qv);
    py_release(&tv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    int bad = !d || py_put(d, "p0", bytes_of(r.p0, 3 * r.n * sizeof(double))) ||
              py_put(d, "q1", bytes_of(r.q1, 3 * r.n * sizeof(double))) ||
              py_put(d, "hamiltonian", PyFloat_FromDouble(r.hamiltonian)) || /* the name before the table's "H" */
              result_into(d, ptreg_result_table_find("lddmm"), &r) < 0;
    ptreg_lddmm_result_free(&r);
    if (bad) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* lddmm_warp(q0, p0, points, out, **options): points (float64 m x 3) moved
 * by the flow of (q0, p0) into out */
PyObject *py_lddmm_warp(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *q_obj, *p_obj, *x_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &q_obj, &p_obj, &x_obj, &out_obj))
        return NULL;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("lddmm"), lddmm_fields, kwargs, "warp") < 0)
        return NULL;
    Py_buffer qv, pv, xv, ov;
    size_t n = 0, np = 0, m = 0, mo = 0;
    memset(&pv, 0, sizeof pv), memset(&xv, 0, sizeof xv), memset(&ov, 0, sizeof ov);
    int bad = get_rows(q_obj, &qv, 'd', 3, 0, 0, "q0", &n) < 0 || get_rows(p_obj, &pv, 'd', 3, 0, 0, "p0", &np) < 0 ||
              get_rows(x_obj, &xv, 'd', 3, 0, 0, "points", &m) < 0 ||
              get_rows(out_obj, &ov, 'd', 3, 1, 0, "out", &mo) < 0;
    if (!bad && (np != n || mo != m)) {
        PyErr_SetString(ARG_ERROR, "warp: p0 needs one row per landmark and out one per point");
        bad = 1;
    }
    ptreg_status st = PTREG_OK;
    ptreg_error err;
    if (!bad)
        WITHOUT_GIL(st = ptreg_lddmm_warp(qv.buf, pv.buf, n, &o, xv.buf, m, ov.buf, &err));
    py_release(&qv), py_release(&pv), py_release(&xv), py_release(&ov);
    if (bad)
        return NULL;
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}
