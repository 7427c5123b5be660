/* ptreg._core: the autotuner. */
#include "_core.h"

static PyObject *point_dict(const ptreg_tune_space *s, const double *point)
{
    PyObject *d = PyDict_New();
    for (int p = 0; d && p < s->param_count; p++)
        if (py_put(d, s->params[p].name, PyFloat_FromDouble(point[p]))) {
            Py_DECREF(d);
            return NULL;
        }
    return d;
}

static PyObject *tune_result_dict(const ptreg_tune_space *s, const ptreg_tune_result *r)
{
    PyObject *cands = PyList_New(0);
    for (size_t i = 0; cands && i < r->count; i++) {
        const ptreg_tune_candidate *c = &r->candidates[i];
        if (c->rounds == 0)
            continue; /* enumerated, never measured */
        PyObject *e = PyDict_New();
        int bad = !e || py_put(e, "point", point_dict(s, c->point)) ||
                  py_put(e, "seconds", PyFloat_FromDouble(c->seconds)) ||
                  py_put(e, "error", PyFloat_FromDouble(c->error)) || py_put(e, "passed", PyBool_FromLong(c->passed)) ||
                  PyList_Append(cands, e);
        Py_XDECREF(e);
        if (bad)
            Py_CLEAR(cands);
    }
    PyObject *d = cands ? PyDict_New() : NULL;
    if (!d || py_put(d, "candidates", (Py_INCREF(cands), cands)) ||
        py_put(d, "winner",
               r->best < r->count ? point_dict(s, r->candidates[r->best].point) : (Py_INCREF(Py_None), Py_None)) ||
        py_put(d, "winner_seconds", PyFloat_FromDouble(r->best < r->count ? r->candidates[r->best].seconds : NAN)) ||
        py_put(d, "default_seconds",
               PyFloat_FromDouble(r->fallback < r->count ? r->candidates[r->fallback].seconds : NAN)) ||
        py_put(d, "gain", PyFloat_FromDouble(r->gain)) || py_put(d, "default_kept", PyBool_FromLong(r->default_kept)) ||
        py_put(d, "method", PyUnicode_FromString(ptreg_tune_method_name(r->method))) ||
        py_put(d, "valid_points", PyFloat_FromDouble(r->stats.valid)) ||
        py_put(d, "measurements", PyLong_FromSize_t(r->measurements)) ||
        py_put(d, "elapsed_s", PyFloat_FromDouble(r->elapsed_s))) {
        Py_XDECREF(d);
        d = NULL;
    }
    Py_XDECREF(cands);
    return d;
}

static const field tune_fields[] = {
    OPT(ptreg_tune_options, "seed", F_U64, seed),
    {NULL, F_INT, 0, NULL},
};

/* tune(kernel, size, fp16, **options): the CPU kernel's space searched on
 * this machine (ptreg_tune_search); nothing is cached (`ptreg tune` does). */
PyObject *py_tune(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    const char *kernel;
    Py_ssize_t size;
    int fp16 = 0;
    if (!PyArg_ParseTuple(args, "snp", &kernel, &size, &fp16))
        return NULL;
    ptreg_tune_options o;
    ptreg_tune_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("tune"), tune_fields, kwargs, "tune") < 0)
        return NULL;
    if (size < 1)
        return PyErr_Format(ARG_ERROR, "tune: size %zd must be positive", size);
    ptreg_tune_space space;
    ptreg_tune_machine machine;
    ptreg_tune_machine_cpu(&machine);
    /* the library's registry: its CPU kernels (lddmm has none) */
    const ptreg_tune_kernel *k = ptreg_tune_kernel_find(kernel);
    if (!k || !k->space)
        return PyErr_Format(ARG_ERROR, "tune: kernel '%s' is not pair, harris or fpfh", kernel);
    k->space(&space);
    void *job = NULL;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = k->job_create(NULL, (size_t)size, fp16 ? PTREG_PRECISION_FP16 : PTREG_PRECISION_FP32, &job, &err));
    ptreg_tune_result r;
    memset(&r, 0, sizeof r);
    if (!st)
        WITHOUT_GIL(st = ptreg_tune_search(&space, &machine, k->measure, job, &o, &r, &err));
    k->job_destroy(job);
    PyObject *d = st ? raise_ptreg(st, &err) : tune_result_dict(&space, &r);
    if (d && py_put(d, "machine", PyUnicode_FromString(machine.name))) {
        Py_DECREF(d);
        d = NULL;
    }
    ptreg_tune_result_free(&r);
    return d;
}
