/* ptreg._core: ICP and EM-ICP. */
#include "_core.h"

static const field icp_fields[] = {
    OPT(ptreg_icp_options, "init", F_MAT16, init),
    OPT(ptreg_icp_options, "no_tune", F_INT, no_tune),
    OPT(ptreg_icp_options, "scale", F_INT, scale),
    OPT(ptreg_icp_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field emicp_fields[] = {
    OPT(ptreg_emicp_options, "init", F_MAT16, init),
    OPT(ptreg_emicp_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static PyObject *icp_result_dict(const ptreg_icp_result *r)
{
    PyObject *d = PyDict_New();
    if (d && result_into(d, ptreg_result_table_find("icp"), r) < 0)
        Py_CLEAR(d);
    return d;
}

/* icp_normals(method): (source, target), whether the method reads that
 * cloud's normals (ptreg_icp_method_normals) */
PyObject *py_icp_normals(PyObject *self, PyObject *name)
{
    (void)self;
    const char *s = PyUnicode_AsUTF8(name);
    ptreg_icp_method method;
    if (!s)
        return NULL;
    /* an unknown name reads none: icp() names it as its other keywords */
    const unsigned reads = ptreg_icp_method_parse(s, &method) ? 0u : ptreg_icp_method_normals(method);
    return Py_BuildValue("(OO)", reads & PTREG_ICP_NORMALS_SOURCE ? Py_True : Py_False,
                         reads & PTREG_ICP_NORMALS_TARGET ? Py_True : Py_False);
}

/* icp(source, target, source_normals, target_normals, **options); target
 * an array, or a model index's capsule */
PyObject *py_icp(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *s, *t, *sn, *tn;
    if (!PyArg_ParseTuple(args, "OOOO", &s, &t, &sn, &tn))
        return NULL;
    ptreg_model_index *idx = PyCapsule_CheckExact(t) ? index_of(t) : NULL;
    if (PyCapsule_CheckExact(t) && !idx)
        return NULL;
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("icp"), icp_fields, kwargs, "icp") < 0)
        return NULL;
    size_t m = 0;
    if (idx)
        ptreg_model_index_points(idx, &m);
    cloud_pair p;
    if (get_pair(s, idx ? NULL : t, m, sn, tn, &p) < 0)
        return NULL;
    o.source_normals = p.sn.obj ? p.sn.buf : NULL;
    o.target_normals = p.tn.obj ? p.tn.buf : NULL;
    ptreg_icp_result r;
    ptreg_error err;
    ptreg_status st;
    if (idx)
        WITHOUT_GIL(st = ptreg_icp_indexed(p.s.buf, p.ns, idx, &o, &r, &err));
    else
        WITHOUT_GIL(st = ptreg_icp(p.s.buf, p.ns, p.t.buf, p.nt, &o, &r, &err));
    release_pair(&p);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = icp_result_dict(&r);
    ptreg_icp_result_free(&r);
    return d;
}

/* emicp(source, target, tune, **options): with tune, the engine's knobs
 * are the tuner's cache's winner for this machine (ptreg_tune_variant); the
 * same for harris3d's tiling (ptreg_tune_variant). */
PyObject *py_emicp(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *s, *t;
    int tune = 1;
    if (!PyArg_ParseTuple(args, "OOp", &s, &t, &tune))
        return NULL;
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("emicp"), emicp_fields, kwargs, "emicp") < 0)
        return NULL;
    cloud_pair p;
    if (get_pair(s, t, 0, Py_None, Py_None, &p) < 0)
        return NULL;
    ptreg_tune_choice choice;
    ptreg_emicp_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_tune_variant("emicp", &o, p.ns, p.nt, tune, &choice, &err);
                st = st ? st : ptreg_emicp(p.s.buf, p.ns, p.t.buf, p.nt, &o, &r, &err));
    release_pair(&p);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || result_into(d, ptreg_result_table_find("emicp"), &r) < 0 || py_put(d, "variant", variant_dict(&choice))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}
