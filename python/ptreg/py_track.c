/* ptreg._core: tracking. */
#include "_core.h"

/* ---- tracking ------------------------------------------------------------- */

static const char *const TRACKER_CAPSULE = "ptreg.tracker";

/* The tracker and what it reads from: the model's index and normals. */
typedef struct py_tracker {
    ptreg_tracker *tracker;
    ptreg_model_index *index;
    float *normals;
} py_tracker;

static void tracker_capsule_free(PyObject *capsule)
{
    py_tracker *t = PyCapsule_GetPointer(capsule, TRACKER_CAPSULE);
    if (!t)
        return;
    ptreg_tracker_destroy(t->tracker);
    ptreg_model_index_destroy(t->index);
    PyMem_Free(t->normals);
    PyMem_Free(t);
}

/* the rest, ICP's among them, from ptreg_option_table_find("track") */
static const field track_fields[] = {
    OPT(ptreg_track_options, "init", F_MAT16, init),
    OPT(ptreg_track_options, "recover", F_INT, recover),
    OPT(ptreg_track_options, "device", F_DEVICE, icp.device),
    OPT(ptreg_track_options, "sensor_origin", F_VEC3, sensor_origin),
    {NULL, F_INT, 0, NULL},
};

/* tracker_create(model, normals, **options) */
PyObject *py_tracker_create(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *model, *normals;
    if (!PyArg_ParseTuple(args, "OO", &model, &normals))
        return NULL;
    ptreg_track_options o;
    ptreg_track_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("track"), track_fields, kwargs, "track") < 0)
        return NULL;
    cloud_pair p;
    if (get_pair(model, NULL, 0, normals, Py_None, &p) < 0)
        return NULL;
    py_tracker *t = PyMem_Calloc(1, sizeof *t);
    if (t && p.sn.obj && (t->normals = PyMem_Malloc(3 * p.ns * sizeof *t->normals)))
        memcpy(t->normals, p.sn.buf, 3 * p.ns * sizeof *t->normals);
    ptreg_error err;
    const int have = t && (!p.sn.obj || t->normals);
    ptreg_status st = have ? PTREG_OK : ptreg_error_set(&err, PTREG_ERR_NOMEM, "track: out of memory");
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    if (!st)
        WITHOUT_GIL(st = ptreg_model_index_create(p.s.buf, p.ns, &io, &t->index, &err));
    if (!st)
        WITHOUT_GIL(st = ptreg_tracker_create(t->index, t->normals, &o, &t->tracker, &err));
    release_pair(&p);
    PyObject *c = st ? NULL : PyCapsule_New(t, TRACKER_CAPSULE, tracker_capsule_free);
    if (!c && t) {
        ptreg_model_index_destroy(t->index);
        PyMem_Free(t->normals);
        PyMem_Free(t);
    }
    return st ? raise_ptreg(st, &err) : c;
}

/* tracker_push(tracker, frame, t) */
PyObject *py_tracker_push(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *frame;
    double when;
    if (!PyArg_ParseTuple(args, "OOd", &capsule, &frame, &when))
        return NULL;
    py_tracker *t = PyCapsule_GetPointer(capsule, TRACKER_CAPSULE);
    if (!t)
        return NULL;
    Py_buffer fv;
    size_t n;
    if (get_rows(frame, &fv, 'f', 3, 0, 0, "frame", &n) < 0)
        return NULL;
    ptreg_track_frame out;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_tracker_push(t->tracker, fv.buf, n, when, &out, &err));
    py_release(&fv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || py_put(d, "transformation", doubles_list(out.pose, 16)) ||
        py_put(d, "predicted", doubles_list(out.predicted, 16)) ||
        result_into(d, ptreg_result_table_find("track_frame"), &out) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* ---- evaluating trajectories ---------------------------------------------- */

/* A trajectory from a path (read as ptreg eval reads it) or from a tuple
 * (times: n float64, poses: n x 16 float64, timed: whether the times are
 * timestamps, else indices as KITTI's); tr is the caller's to free (its
 * arrays are copies). -1 with the error set. */
static int trajectory_of(PyObject *obj, const char *what, ptreg_trajectory *tr)
{
    memset(tr, 0, sizeof *tr);
    if (PyUnicode_Check(obj)) {
        const char *path = PyUnicode_AsUTF8(obj);
        ptreg_error err;
        ptreg_status st = path ? ptreg_trajectory_read(path, tr, &err) : PTREG_ERR_ARG;
        if (!path)
            return -1;
        return st ? (raise_ptreg(st, &err), -1) : 0;
    }
    PyObject *times, *poses;
    int timed;
    if (!PyArg_ParseTuple(obj, "OOp", &times, &poses, &timed))
        return -1;
    Py_buffer tv, pv;
    size_t n, m;
    if (get_rows(times, &tv, 'd', 1, 0, 0, what, &n) < 0)
        return -1;
    if (get_rows(poses, &pv, 'd', 16, 0, 0, what, &m) < 0) {
        py_release(&tv);
        return -1;
    }
    int rc = 0;
    if (n != m || !n) {
        PyErr_Format(ARG_ERROR, "%s: %zu times and %zu poses: one each, at least one", what, n, m);
        rc = -1;
    } else if (!(tr->t = malloc(n * sizeof *tr->t)) || !(tr->pose = malloc(16 * n * sizeof *tr->pose))) {
        PyErr_NoMemory();
        rc = -1;
    } else {
        memcpy(tr->t, tv.buf, n * sizeof *tr->t);
        memcpy(tr->pose, pv.buf, 16 * n * sizeof *tr->pose);
        tr->n = n;
        tr->format = timed ? PTREG_TRAJECTORY_TUM : PTREG_TRAJECTORY_KITTI;
    }
    py_release(&tv);
    py_release(&pv);
    return rc;
}

static int kitti_lengths_of(PyObject *lengths, ptreg_eval_options *o)
{
    if (lengths == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(lengths, "eval_trajectory: kitti_lengths must be a sequence of numbers");
    if (!seq)
        return -1;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (n < 1 || n > PTREG_EVAL_MAX_LENGTHS) {
        PyErr_Format(ARG_ERROR, "eval_trajectory: 1 to %d kitti_lengths", PTREG_EVAL_MAX_LENGTHS);
        rc = -1;
    }
    for (Py_ssize_t k = 0; !rc && k < n; k++) {
        o->kitti_length[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
        rc = PyErr_Occurred() ? -1 : 0;
    }
    o->kitti_lengths = rc ? o->kitti_lengths : (size_t)n;
    Py_DECREF(seq);
    return rc;
}

static PyObject *sizes_list(const size_t *v, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t k = 0; l && k < n; k++) {
        PyObject *x = PyLong_FromSize_t(v[k]);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)k, x);
    }
    return l;
}

static PyObject *eval_dict(const ptreg_eval_result *r)
{
    const size_t n = r->association->pairs;
    PyObject *d = PyDict_New();
    if (!d || result_into(d, ptreg_result_table_find("trajectory_eval"), r) < 0 ||
        (!r->rpe && PyDict_SetItemString(d, "rpe", Py_None) < 0) ||
        (!r->kitti && PyDict_SetItemString(d, "kitti", Py_None) < 0) ||
        py_put(d, "estimate_index", sizes_list(r->estimate_index, n)) ||
        py_put(d, "reference_index", sizes_list(r->reference_index, n)) ||
        py_put(d, "aligned_xyz", doubles_list(r->aligned_xyz, 3 * n)) ||
        py_put(d, "reference_xyz", doubles_list(r->reference_xyz, 3 * n))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* eval_trajectory(estimate, reference, kitti_lengths, **options) */
PyObject *py_eval_trajectory(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *est_obj, *ref_obj, *lengths;
    if (!PyArg_ParseTuple(args, "OOO", &est_obj, &ref_obj, &lengths))
        return NULL;
    ptreg_eval_options o;
    ptreg_eval_options_default(&o);
    static const field eval_fields[] = {{NULL, F_INT, 0, NULL}};
    if (apply_options(&o, ptreg_option_table_find("eval"), eval_fields, kwargs, "eval_trajectory") < 0 ||
        kitti_lengths_of(lengths, &o) < 0)
        return NULL;
    ptreg_trajectory tr[2];
    if (trajectory_of(est_obj, "estimate", &tr[0]) < 0)
        return NULL;
    if (trajectory_of(ref_obj, "reference", &tr[1]) < 0) {
        ptreg_trajectory_free(&tr[0]);
        return NULL;
    }
    ptreg_eval_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_trajectory_eval(&tr[0], &tr[1], &o, &r, &err));
    ptreg_trajectory_free(&tr[0]);
    ptreg_trajectory_free(&tr[1]);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = eval_dict(&r);
    ptreg_eval_result_free(&r);
    return d;
}
