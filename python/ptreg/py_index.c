/* ptreg._core: the model index and its k-d tree queries. */
#include "_core.h"

static const field index_fields[] = {
    OPT(ptreg_index_options, "delaunay", F_INT, delaunay),
    {NULL, F_INT, 0, NULL},
};

/* ---- the model index ------------------------------------------------------ */

static const char *const INDEX_CAPSULE = "ptreg.model_index";

static void index_capsule_free(PyObject *capsule)
{
    ptreg_model_index_destroy(PyCapsule_GetPointer(capsule, INDEX_CAPSULE));
}

static PyObject *index_capsule(ptreg_model_index *idx)
{
    PyObject *c = PyCapsule_New(idx, INDEX_CAPSULE, index_capsule_free);
    if (!c)
        ptreg_model_index_destroy(idx);
    return c;
}

PyObject *py_index_create(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *xyz_obj;
    if (!PyArg_ParseTuple(args, "O", &xyz_obj))
        return NULL;
    ptreg_index_options o;
    ptreg_index_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("index"), index_fields, kwargs, "ModelIndex") < 0)
        return NULL;
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    ptreg_model_index *idx = NULL;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_model_index_create(xv.buf, n, &o, &idx, &err));
    py_release(&xv);
    return st ? raise_ptreg(st, &err) : index_capsule(idx);
}

PyObject *py_index_load(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    ptreg_model_index *idx = NULL;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_model_index_load(path, &idx, &err));
    return st ? raise_ptreg(st, &err) : index_capsule(idx);
}

ptreg_model_index *index_of(PyObject *capsule) { return PyCapsule_GetPointer(capsule, INDEX_CAPSULE); }

PyObject *py_index_save(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule;
    const char *path;
    if (!PyArg_ParseTuple(args, "Os", &capsule, &path))
        return NULL;
    ptreg_model_index *idx = index_of(capsule);
    if (!idx)
        return NULL;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_model_index_save(idx, path, &err));
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

PyObject *py_index_info(PyObject *self, PyObject *capsule)
{
    (void)self;
    ptreg_model_index *idx = index_of(capsule);
    if (!idx)
        return NULL;
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    size_t n;
    const float *pts = ptreg_model_index_points(idx, &n);
    PyObject *d = PyDict_New();
    /* points: the model's points (the table's count is their length); duplicates and
     * has_delaunay: the names before the table's */
    if (!d || py_put(d, "points", bytes_of(pts, 3 * n * sizeof(float))) ||
        py_put(d, "duplicates", PyLong_FromSize_t(info.duplicates)) ||
        py_put(d, "has_delaunay", PyBool_FromLong(info.has_delaunay)) ||
        py_put(d, "delaunay_note", PyUnicode_FromString(info.delaunay_note)) ||
        result_into(d, ptreg_result_table_find("model_index_info"), &info) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* index_nearest(index, queries, nearest, dist2): each query's nearest model
 * point by the k-d tree, into the caller's uint32 and float32 arrays (the
 * report's distances to a target, ModelIndex.nearest). */
PyObject *py_index_nearest(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *q_obj, *i_obj, *d_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &capsule, &q_obj, &i_obj, &d_obj))
        return NULL;
    ptreg_model_index *idx = index_of(capsule);
    if (!idx)
        return NULL;
    Py_buffer qv, iv, dv;
    memset(&iv, 0, sizeof iv); /* released on every path, filled or not */
    memset(&dv, 0, sizeof dv);
    size_t nq, ni = 0, nd = 0;
    if (get_rows(q_obj, &qv, 'f', 3, 0, 0, "queries", &nq) < 0)
        return NULL;
    int bad = get_rows(i_obj, &iv, 'I', 1, 1, 0, "nearest", &ni) < 0;
    bad = bad || get_rows(d_obj, &dv, 'f', 1, 1, 0, "dist2", &nd) < 0;
    if (!bad && (ni != nq || nd != nq)) {
        PyErr_SetString(ARG_ERROR, "nearest, dist2: one entry per query is needed");
        bad = 1;
    }
    if (bad) {
        py_release(&qv);
        py_release(&iv);
        py_release(&dv);
        return NULL;
    }
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_model_index_nearest(idx, qv.buf, nq, PTREG_NN_KDTREE, NULL, iv.buf, dv.buf, NULL, &err));
    py_release(&qv);
    py_release(&iv);
    py_release(&dv);
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

/* ---- k-NN and radius queries (ModelIndex.knn, .radius) ------------------- */

static const char *const KDTREE_CAPSULE = "ptreg.kdtree";

static void kdtree_capsule_free(PyObject *capsule)
{
    ptreg_kdtree_destroy(PyCapsule_GetPointer(capsule, KDTREE_CAPSULE));
}

/* kdtree_create(index): a k-d tree over the index's points, for queries
 * that ask for more than the nearest (its indices are the model's order). */
PyObject *py_kdtree_create(PyObject *self, PyObject *capsule)
{
    (void)self;
    ptreg_model_index *idx = index_of(capsule);
    if (!idx)
        return NULL;
    size_t n;
    const float *pts = ptreg_model_index_points(idx, &n);
    ptreg_kdtree_options o;
    ptreg_kdtree_options_default(&o);
    ptreg_kdtree *tree = NULL;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_kdtree_create(pts, n, &o, &tree, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *c = PyCapsule_New(tree, KDTREE_CAPSULE, kdtree_capsule_free);
    if (!c)
        ptreg_kdtree_destroy(tree);
    return c;
}

/* kdtree_knn(tree, queries, index_out, dist2_out): each query's k nearest
 * (k the outputs' width), sorted by (distance, index); rows past the
 * model's size are PTREG_NO_NEIGHBOR and +inf. */
PyObject *py_kdtree_knn(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *q_obj, *i_obj, *d_obj;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOnOO", &capsule, &q_obj, &k, &i_obj, &d_obj))
        return NULL;
    ptreg_kdtree *tree = PyCapsule_GetPointer(capsule, KDTREE_CAPSULE);
    if (!tree)
        return NULL;
    if (k < 1)
        return PyErr_Format(ARG_ERROR, "knn: k %zd must be at least 1", k);
    Py_buffer qv, iv, dv;
    memset(&iv, 0, sizeof iv);
    memset(&dv, 0, sizeof dv);
    size_t nq, ni = 0, nd = 0;
    if (get_rows(q_obj, &qv, 'f', 3, 0, 0, "queries", &nq) < 0)
        return NULL;
    int bad = get_rows(i_obj, &iv, 'I', (size_t)k, 1, 0, "indices", &ni) < 0 ||
              get_rows(d_obj, &dv, 'f', (size_t)k, 1, 0, "dist2", &nd) < 0;
    if (!bad && (ni != nq || nd != nq)) {
        PyErr_SetString(ARG_ERROR, "knn: one row per query is needed");
        bad = 1;
    }
    if (!bad) {
        const float *q = qv.buf;
        uint32_t *index = iv.buf;
        float *dist2 = dv.buf;
        const size_t kk = (size_t)k;
        Py_BEGIN_ALLOW_THREADS for (size_t i = 0; i < nq; i++)
        {
            const size_t found = ptreg_kdtree_knn(tree, q + 3 * i, kk, index + kk * i, dist2 + kk * i);
            for (size_t j = found; j < kk; j++)
                index[kk * i + j] = PTREG_NO_NEIGHBOR, dist2[kk * i + j] = INFINITY;
        }
        Py_END_ALLOW_THREADS
    }
    py_release(&qv), py_release(&iv), py_release(&dv);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

/* The radius search's answers, all queries' in one list. */
typedef struct radius_lists {
    uint64_t *offsets; /* nq + 1 */
    uint32_t *index;
    float *dist2;
    size_t count, capacity;
} radius_lists;

static ptreg_status radius_append(radius_lists *out, const ptreg_neighbors *nb, size_t take, ptreg_error *err)
{
    if (out->count + take > out->capacity) {
        size_t cap = out->capacity ? out->capacity : 1024;
        while (cap < out->count + take)
            cap *= 2;
        uint32_t *i = realloc(out->index, cap * sizeof *i);
        if (i)
            out->index = i;
        float *d = i ? realloc(out->dist2, cap * sizeof *d) : NULL;
        if (!d)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "radius: out of memory for %zu neighbors", cap);
        out->dist2 = d, out->capacity = cap;
    }
    memcpy(out->index + out->count, nb->index, take * sizeof *out->index);
    memcpy(out->dist2 + out->count, nb->dist2, take * sizeof *out->dist2);
    out->count += take;
    return PTREG_OK;
}

static ptreg_status radius_search(const ptreg_kdtree *tree, const float *q, size_t nq, float r, size_t max_nn,
                                  radius_lists *out, ptreg_error *err)
{
    ptreg_neighbors nb = {NULL, NULL, 0, 0};
    ptreg_status st = out->offsets ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "radius: out of memory");
    for (size_t i = 0; !st && i < nq; i++) {
        out->offsets[i] = out->count;
        st = ptreg_kdtree_radius(tree, q + 3 * i, r, &nb, err);
        if (!st)
            st = radius_append(out, &nb, max_nn && nb.count > max_nn ? max_nn : nb.count, err);
    }
    if (!st)
        out->offsets[nq] = out->count;
    ptreg_neighbors_free(&nb);
    return st;
}

/* kdtree_radius(tree, queries, r, max_nn) -> (offsets uint64 nq + 1,
 * indices uint32, dist2 float32): every model point with d^2 <= r^2 of each
 * query, nearest first, the first max_nn of them (0: all). */
PyObject *py_kdtree_radius(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *q_obj;
    double r;
    Py_ssize_t max_nn;
    if (!PyArg_ParseTuple(args, "OOdn", &capsule, &q_obj, &r, &max_nn))
        return NULL;
    ptreg_kdtree *tree = PyCapsule_GetPointer(capsule, KDTREE_CAPSULE);
    if (!tree)
        return NULL;
    if (!(r > 0) || !isfinite(r) || max_nn < 0)
        return PyErr_Format(ARG_ERROR, "radius: r %g must be positive and finite, max_nn at least 1", r);
    Py_buffer qv;
    size_t nq;
    if (get_rows(q_obj, &qv, 'f', 3, 0, 0, "queries", &nq) < 0)
        return NULL;
    radius_lists out = {malloc((nq + 1) * sizeof(uint64_t)), NULL, NULL, 0, 0};
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = radius_search(tree, qv.buf, nq, (float)r, (size_t)max_nn, &out, &err));
    py_release(&qv);
    PyObject *res = NULL;
    if (st)
        raise_ptreg(st, &err);
    else
        res = Py_BuildValue("(NNN)", bytes_of(out.offsets, (nq + 1) * sizeof(uint64_t)),
                            bytes_of(out.index, out.count * sizeof(uint32_t)),
                            bytes_of(out.dist2, out.count * sizeof(float)));
    free(out.offsets), free(out.index), free(out.dist2);
    return res;
}
