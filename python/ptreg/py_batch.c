/* ptreg._core: batch registration of many small pairs. */
#include "_core.h"

static const field batch_fields[] = {
    OPT(ptreg_batch_options, "translation", F_INT, translation),
    OPT(ptreg_batch_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

/* batch(source, source_offset, target, target_offset, transforms, iterations,
 * stops, **options): many small pairs (ptreg_batch_register); the outputs
 * preallocated (count x 16 float64, count int32 twice); the stats back. */
PyObject *py_batch(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *s_obj, *so_obj, *t_obj, *to_obj, *T_obj, *it_obj, *stop_obj;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &s_obj, &so_obj, &t_obj, &to_obj, &T_obj, &it_obj, &stop_obj))
        return NULL;
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("batch"), batch_fields, kwargs, "batch") < 0)
        return NULL;
    Py_buffer v[7];
    memset(v, 0, sizeof v);
    size_t ns, nso, nt, nto, nT, nit, nstop;
    int bad = get_rows(s_obj, &v[0], 'f', 3, 0, 0, "sources", &ns) < 0 ||
              get_rows(so_obj, &v[1], 'Q', 1, 0, 0, "source offsets", &nso) < 0 ||
              get_rows(t_obj, &v[2], 'f', 3, 0, 0, "targets", &nt) < 0 ||
              get_rows(to_obj, &v[3], 'Q', 1, 0, 1, "target offsets", &nto) < 0 ||
              get_rows(T_obj, &v[4], 'd', 16, 1, 0, "transforms out", &nT) < 0 ||
              get_rows(it_obj, &v[5], 'i', 1, 1, 0, "iterations out", &nit) < 0 ||
              get_rows(stop_obj, &v[6], 'i', 1, 1, 0, "stops out", &nstop) < 0;
    const size_t count = nso ? nso - 1 : 0;
    if (!bad && (!nso || (v[3].obj && nto != nso) || nT != count || nit != count || nstop != count)) {
        PyErr_SetString(ARG_ERROR, "batch: the offsets and outputs disagree on the number of pairs");
        bad = 1;
    }
    const size_t *so = v[1].buf, *to = v[3].obj ? v[3].buf : NULL;
    if (!bad && (so[count] != ns || (to && to[count] != nt))) {
        PyErr_SetString(ARG_ERROR, "batch: the last offset must be the number of points");
        bad = 1;
    }
    ptreg_batch_stats stats;
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (!bad) {
        const ptreg_pair_set set = {count, v[0].buf, so, v[2].buf, to, nt};
        WITHOUT_GIL(st = ptreg_batch_register(&set, &o, v[4].buf, v[5].buf, v[6].buf, &stats, &err));
    }
    for (int k = 0; k < 7; k++)
        py_release(&v[k]);
    if (bad)
        return NULL;
    if (st)
        return raise_ptreg(st, &err);
    /* time_ms: Python's name before the table's register_ms */
    PyObject *d = PyDict_New();
    if (!d || result_into(d, ptreg_result_table_find("batch_stats"), &stats) < 0 ||
        py_put(d, "time_ms", PyFloat_FromDouble(stats.time_ms))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

PyObject *py_stop_reason_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(ptreg_stop_reason_name((ptreg_stop_reason)v));
}
