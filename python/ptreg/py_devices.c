/* ptreg._core: the library itself: version, threads, devices. */
#include "_core.h"

PyObject *py_version(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyUnicode_FromString(ptreg_version());
}

PyObject *py_set_num_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > 4096)
        return PyErr_Format(ARG_ERROR, "threads: %ld is not 0 (all cores) .. 4096", n);
    ptreg_set_num_threads((int)n);
    Py_RETURN_NONE;
}

PyObject *py_get_num_threads(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyLong_FromLong(ptreg_get_num_threads());
}

PyObject *py_devices(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    const ptreg_device_info *list;
    size_t count;
    WITHOUT_GIL(ptreg_devices(&list, &count));
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < count; i++) {
        const ptreg_device_info *d = &list[i];
        PyObject *e = PyDict_New();
        /* is_gpu: the name before the table's "gpu" */
        int bad = !e || result_into(e, ptreg_result_table_find("device_info"), d) < 0 ||
                  py_put(e, "standin", PyBool_FromLong(d->standin)) ||
                  py_put(e, "is_gpu", PyBool_FromLong(d->is_gpu)) || PyList_Append(out, e);
        Py_XDECREF(e);
        if (bad)
            Py_CLEAR(out);
    }
    return out;
}
