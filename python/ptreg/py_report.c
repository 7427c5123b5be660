/* ptreg._core: the HTML report. */
#include "_core.h"

/* ---- the report ----------------------------------------------------------- */

PyObject *py_report_available(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyBool_FromLong(ptreg_report_available());
}

/* ("cloud", name, xyz, 0xRRGGBB): one colour. */
static int report_cloud(ptreg_report *rep, const char *name, PyObject *xyz_obj, PyObject *color_obj)
{
    unsigned long color = PyLong_AsUnsignedLong(color_obj);
    if (color == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, name, &n) < 0)
        return -1;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_report_add_cloud(rep, name, xv.buf, n, (uint32_t)color, &err));
    py_release(&xv);
    return st ? (raise_ptreg(st, &err), -1) : 0;
}

/* ("values", name, xyz, values, values_name): coloured by a value a point. */
static int report_values(ptreg_report *rep, const char *name, PyObject *xyz_obj, PyObject *values_obj,
                         const char *values_name)
{
    Py_buffer xv, vv;
    size_t n, nv;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, name, &n) < 0)
        return -1;
    if (get_rows(values_obj, &vv, 'f', 1, 0, 0, values_name, &nv) < 0) {
        py_release(&xv);
        return -1;
    }
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (nv != n)
        PyErr_Format(ARG_ERROR, "%s: %zu values for %zu points", name, nv, n);
    else
        WITHOUT_GIL(st = ptreg_report_add_cloud_values(rep, name, xv.buf, n, vv.buf, values_name, &err));
    py_release(&xv);
    py_release(&vv);
    if (st)
        raise_ptreg(st, &err);
    return PyErr_Occurred() ? -1 : 0;
}

static int report_layer(ptreg_report *rep, PyObject *layer)
{
    const char *kind, *name, *values_name = NULL;
    PyObject *xyz, *fourth;
    if (!PyArg_ParseTuple(layer, "ssOO|s", &kind, &name, &xyz, &fourth, &values_name))
        return -1;
    if (!strcmp(kind, "cloud"))
        return report_cloud(rep, name, xyz, fourth);
    if (!strcmp(kind, "values") && values_name)
        return report_values(rep, name, xyz, fourth, values_name);
    PyErr_Format(ARG_ERROR, "report layer %s: kind %s is not (cloud, ..., color) or (values, ..., name)", name, kind);
    return -1;
}

/* (title, measure, float64 values): one value an iteration. */
static int report_curve(ptreg_report *rep, PyObject *curve)
{
    const char *title, *measure;
    PyObject *values;
    if (!PyArg_ParseTuple(curve, "ssO", &title, &measure, &values))
        return -1;
    Py_buffer v;
    size_t n;
    if (get_rows(values, &v, 'd', 1, 0, 0, measure, &n) < 0)
        return -1;
    ptreg_error err;
    ptreg_status st = ptreg_report_add_curve(rep, title, measure, v.buf, n, &err);
    py_release(&v);
    return st ? (raise_ptreg(st, &err), -1) : 0;
}

static int report_fill(ptreg_report *rep, PyObject *layers, PyObject *curves, const char *json)
{
    PyObject *seqs[2] = {PySequence_Fast(layers, "report layers: a list"),
                         PySequence_Fast(curves, "report curves: a list")};
    int bad = !seqs[0] || !seqs[1];
    for (Py_ssize_t i = 0; !bad && i < PySequence_Fast_GET_SIZE(seqs[0]); i++)
        bad = report_layer(rep, PySequence_Fast_GET_ITEM(seqs[0], i)) < 0;
    for (Py_ssize_t i = 0; !bad && i < PySequence_Fast_GET_SIZE(seqs[1]); i++)
        bad = report_curve(rep, PySequence_Fast_GET_ITEM(seqs[1], i)) < 0;
    Py_XDECREF(seqs[0]);
    Py_XDECREF(seqs[1]);
    ptreg_error err;
    ptreg_status st = bad ? PTREG_OK : ptreg_report_set_json(rep, json, &err);
    if (st)
        raise_ptreg(st, &err);
    return bad || st ? -1 : 0;
}

static PyObject *report_page(const ptreg_report *rep)
{
    char *page = NULL;
    size_t size = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_report_html(rep, &page, &size, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *s = PyUnicode_DecodeUTF8(page, (Py_ssize_t)size, "replace");
    free(page);
    return s;
}

/* report_html(title, layers, curves, json): the page of ptreg/report.h as a
 * str; layers and curves as report_layer and report_curve read them. */
PyObject *py_report_html(PyObject *self, PyObject *args)
{
    (void)self;
    const char *title, *json;
    PyObject *layers, *curves;
    if (!PyArg_ParseTuple(args, "sOOs", &title, &layers, &curves, &json))
        return NULL;
    ptreg_report *rep = NULL;
    ptreg_error err;
    ptreg_status st = ptreg_report_create(title, &rep, &err);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *page = report_fill(rep, layers, curves, json) < 0 ? NULL : report_page(rep);
    ptreg_report_destroy(rep);
    return page;
}
