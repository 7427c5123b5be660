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
