/* ptreg._core: global registration: register, multiway, evaluation, correspondences. */
#include "_core.h"

static const field register_fields[] = {
    OPT(ptreg_register_options, "mutual", F_INT, mutual),
    OPT(ptreg_register_options, "seed", F_U64, ransac.seed),
    OPT(ptreg_register_options, "no_refine", F_INT, no_refine),
    OPT(ptreg_register_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

PyObject *py_register(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *s, *t, *sn, *tn;
    if (!PyArg_ParseTuple(args, "OOOO", &s, &t, &sn, &tn))
        return NULL;
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("register"), register_fields, kwargs, "register") < 0)
        return NULL;
    cloud_pair p;
    if (get_pair(s, t, 0, sn, tn, &p) < 0)
        return NULL;
    ptreg_register_result r;
    ptreg_error err;
    ptreg_status st;
    const float *sn_buf = p.sn.obj ? p.sn.buf : NULL, *tn_buf = p.tn.obj ? p.tn.buf : NULL;
    WITHOUT_GIL(st = ptreg_register(p.s.buf, sn_buf, p.ns, p.t.buf, tn_buf, p.nt, &o, &r, &err));
    release_pair(&p);
    if (st)
        return raise_ptreg(st, &err);
    /* source_down, target_down and inliers: the names Python's result had
     * before it took the command line's keys (kept, as aliases) */
    PyObject *d = PyDict_New();
    if (!d || result_into(d, ptreg_result_table_find("register"), &r) < 0 ||
        py_put(d, "source_down", PyLong_FromSize_t(r.source_down)) ||
        py_put(d, "target_down", PyLong_FromSize_t(r.target_down)) ||
        py_put(d, "inliers", PyLong_FromSize_t(r.ransac.inliers)) ||
        py_put(d, "global_transformation",
               doubles_list(o.global == PTREG_GLOBAL_FGR ? r.fgr.transformation : r.ransac.transformation, 16))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static const field multiway_fields[] = {
    OPT(ptreg_multiway_options, "seed", F_U64, seed),
    {NULL, F_INT, 0, NULL},
};

/* The scans' views (and their normals'), released together. */
typedef struct scan_views {
    Py_buffer *xyz, *normals;
    ptreg_multiway_scan *scans;
    size_t count;
} scan_views;

static void release_scans(scan_views *v)
{
    for (size_t i = 0; i < v->count; i++)
        py_release(&v->xyz[i]), py_release(&v->normals[i]);
    PyMem_Free(v->xyz), PyMem_Free(v->normals), PyMem_Free(v->scans);
}

static int get_scans(PyObject *scans, PyObject *normals, scan_views *v)
{
    memset(v, 0, sizeof *v);
    PyObject *s = PySequence_Fast(scans, "multiway: scans must be a sequence of (N, 3) arrays");
    PyObject *n = s ? PySequence_Fast(normals, "multiway: normals must be a sequence") : NULL;
    if (!n || PySequence_Fast_GET_SIZE(n) != PySequence_Fast_GET_SIZE(s)) {
        if (n)
            PyErr_SetString(ARG_ERROR, "multiway: one normals entry (or None) per scan");
        Py_XDECREF(s), Py_XDECREF(n);
        return -1;
    }
    const size_t count = (size_t)PySequence_Fast_GET_SIZE(s);
    v->xyz = PyMem_Calloc(count ? count : 1, sizeof *v->xyz);
    v->normals = PyMem_Calloc(count ? count : 1, sizeof *v->normals);
    v->scans = PyMem_Calloc(count ? count : 1, sizeof *v->scans);
    int rc = v->xyz && v->normals && v->scans ? 0 : (PyErr_NoMemory(), -1);
    for (size_t i = 0; !rc && i < count; i++, v->count++) {
        size_t rows = 0, nrows = 0;
        rc = get_rows(PySequence_Fast_GET_ITEM(s, i), &v->xyz[i], 'f', 3, 0, 0, "scan", &rows);
        if (!rc)
            rc = get_rows(PySequence_Fast_GET_ITEM(n, i), &v->normals[i], 'f', 3, 0, 1, "normals", &nrows);
        if (!rc && v->normals[i].obj && nrows != rows) {
            PyErr_Format(ARG_ERROR, "multiway: scan %zu has %zu points and %zu normals", i, rows, nrows);
            rc = -1;
        }
        if (!rc)
            v->scans[i] = (ptreg_multiway_scan){v->xyz[i].buf, v->normals[i].obj ? v->normals[i].buf : NULL, rows};
    }
    Py_DECREF(s), Py_DECREF(n);
    if (rc)
        release_scans(v);
    return rc;
}

static PyObject *multiway_result_dict(const ptreg_multiway_result *r)
{
    PyObject *poses = PyList_New((Py_ssize_t)r->scan_count), *placed = PyList_New((Py_ssize_t)r->scan_count);
    for (size_t i = 0; poses && placed && i < r->scan_count; i++) {
        PyList_SET_ITEM(poses, (Py_ssize_t)i, doubles_list(r->poses + 16 * i, 16));
        PyList_SET_ITEM(placed, (Py_ssize_t)i, PyBool_FromLong(r->placed[i]));
    }
    PyObject *d = PyDict_New();
    if (!d || !poses || !placed || PyErr_Occurred() || py_put(d, "poses", poses) || py_put(d, "placed", placed) ||
        result_into(d, ptreg_result_table_find("multiway"), r) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* multiway(scans, normals, pairs, **options): pairs None or a uint64 (P, 2) array */
PyObject *py_multiway(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *scans, *normals, *pairs_obj;
    if (!PyArg_ParseTuple(args, "OOO", &scans, &normals, &pairs_obj))
        return NULL;
    ptreg_multiway_options o;
    ptreg_multiway_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("multiway"), multiway_fields, kwargs, "multiway") < 0)
        return NULL;
    Py_buffer pv;
    size_t npairs = 0;
    if (get_rows(pairs_obj, &pv, 'Q', 2, 0, 1, "pairs", &npairs) < 0)
        return NULL;
    scan_views v;
    if (get_scans(scans, normals, &v) < 0) {
        py_release(&pv);
        return NULL;
    }
    ptreg_scan_pair *pairs = pv.obj ? PyMem_Calloc(npairs ? npairs : 1, sizeof *pairs) : NULL;
    for (size_t k = 0; pairs && k < npairs; k++)
        pairs[k] = (ptreg_scan_pair){((const uint64_t *)pv.buf)[2 * k], ((const uint64_t *)pv.buf)[2 * k + 1]};
    ptreg_multiway_result r;
    ptreg_error err;
    ptreg_status st;
    if (pv.obj && !pairs)
        st = ptreg_error_set(&err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu pairs", npairs);
    else
        WITHOUT_GIL(st = ptreg_multiway(v.scans, v.count, pairs, npairs, &o, NULL, &r, &err));
    PyMem_Free(pairs);
    py_release(&pv);
    release_scans(&v);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = multiway_result_dict(&r);
    ptreg_multiway_result_free(&r);
    return d;
}

/* evaluate(source, target, T (16 float64), max_dist) -> the result table
 * "evaluation"'s fields and pairs (bytes: uint32 source, target interleaved) */
PyObject *py_evaluate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *s_obj, *t_obj, *T_obj;
    double max_dist, T[16];
    if (!PyArg_ParseTuple(args, "OOOd", &s_obj, &t_obj, &T_obj, &max_dist) || get_matrix16(T_obj, T) < 0)
        return NULL;
    Py_buffer sv, tv;
    size_t ns, nt;
    if (get_rows(s_obj, &sv, 'f', 3, 0, 0, "source", &ns) < 0)
        return NULL;
    if (get_rows(t_obj, &tv, 'f', 3, 0, 0, "target", &nt) < 0) {
        py_release(&sv);
        return NULL;
    }
    ptreg_evaluation e;
    ptreg_matches m = {0};
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_evaluate_registration(sv.buf, ns, tv.buf, nt, T, max_dist, &e, &m, &err));
    py_release(&sv), py_release(&tv);
    if (st)
        return raise_ptreg(st, &err);
    uint32_t *pairs = malloc((m.count ? m.count : 1) * 2 * sizeof *pairs);
    PyObject *res = NULL;
    if (!pairs)
        PyErr_NoMemory();
    else {
        for (size_t k = 0; k < m.count; k++)
            pairs[2 * k] = m.source[k], pairs[2 * k + 1] = m.target[k];
        res = PyDict_New();
        if (res && (result_into(res, ptreg_result_table_find("evaluation"), &e) < 0 ||
                    py_put(res, "pairs", bytes_of(pairs, 2 * m.count * sizeof *pairs)))) {
            Py_DECREF(res);
            res = NULL;
        }
        free(pairs);
    }
    ptreg_matches_free(&m);
    return res;
}

/* register_correspondences(source, target, pairs (uint32 rows of 2), weights
 * (float64) or None, ransac_dist (<= 0: none), ransac_iter, confidence, seed)
 * -> (T as 16 floats, inliers, hypotheses) */
PyObject *py_register_correspondences(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *s_obj, *t_obj, *p_obj, *w_obj;
    double dist, confidence;
    int iters;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OOOOdidK", &s_obj, &t_obj, &p_obj, &w_obj, &dist, &iters, &confidence, &seed))
        return NULL;
    Py_buffer sv, tv, pv, wv;
    size_t ns, nt, np_, nw;
    if (get_rows(s_obj, &sv, 'f', 3, 0, 0, "source", &ns) < 0)
        return NULL;
    if (get_rows(t_obj, &tv, 'f', 3, 0, 0, "target", &nt) < 0) {
        py_release(&sv);
        return NULL;
    }
    if (get_rows(p_obj, &pv, 'I', 2, 0, 0, "correspondences", &np_) < 0) {
        py_release(&sv), py_release(&tv);
        return NULL;
    }
    if (get_rows(w_obj, &wv, 'd', 1, 0, 1, "weights", &nw) < 0) {
        py_release(&sv), py_release(&tv), py_release(&pv);
        return NULL;
    }
    uint32_t *si = malloc((np_ ? np_ : 1) * sizeof *si), *ti = malloc((np_ ? np_ : 1) * sizeof *ti);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (!si || !ti)
        st = ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for %zu correspondences", np_);
    else if (wv.obj && nw != np_)
        st = ptreg_error_set(&err, PTREG_ERR_ARG, "weights: %zu for %zu correspondences", nw, np_);
    for (size_t k = 0; !st && k < np_; k++)
        si[k] = ((const uint32_t *)pv.buf)[2 * k], ti[k] = ((const uint32_t *)pv.buf)[2 * k + 1];
    ptreg_ransac_options ro;
    ptreg_ransac_options_default(&ro);
    ro.edge_length = 0.0, ro.check_distance = -1.0;
    ro.max_dist = dist, ro.max_iter = iters, ro.confidence = confidence, ro.seed = (uint64_t)seed;
    const ptreg_matches m = {np_, si, ti};
    ptreg_ransac_result r;
    if (!st)
        WITHOUT_GIL(st = ptreg_register_correspondences(sv.buf, ns, tv.buf, nt, &m, wv.obj ? wv.buf : NULL,
                                                        dist > 0.0 ? &ro : NULL, &r, &err));
    py_release(&sv), py_release(&tv), py_release(&pv), py_release(&wv);
    free(si), free(ti);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *T = doubles_list(r.transformation, 16);
    return T ? Py_BuildValue("(Nni)", T, (Py_ssize_t)r.inliers, r.hypotheses) : NULL;
}
