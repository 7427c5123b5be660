/* ptreg._core: LiDAR odometry, and trajectories read as ptreg eval reads them. */
#include "_core.h"

static const char *const ODOMETRY_CAPSULE = "ptreg.odometry";

static void odometry_capsule_free(PyObject *capsule)
{
    ptreg_odometry *od = PyCapsule_GetPointer(capsule, ODOMETRY_CAPSULE);
    ptreg_odometry_destroy(od);
}

/* the rest from ptreg_option_table_find("odometry") */
static const field odometry_fields[] = {
    OPT(ptreg_odometry_options, "deskew", F_INT, deskew),
    OPT(ptreg_odometry_options, "keep_all", F_INT, keep_all),
    OPT(ptreg_odometry_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

/* odometry_create(**options) */
PyObject *py_odometry_create(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self, (void)args;
    ptreg_odometry_options o;
    ptreg_odometry_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("odometry"), odometry_fields, kwargs, "odometry") < 0)
        return NULL;
    ptreg_odometry *od;
    ptreg_error err;
    ptreg_status st = ptreg_odometry_create(&o, &od, &err);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *c = PyCapsule_New(od, ODOMETRY_CAPSULE, odometry_capsule_free);
    if (!c)
        ptreg_odometry_destroy(od);
    return c;
}

/* odometry_push(odometry, frame, times or None) */
PyObject *py_odometry_push(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *frame, *times;
    if (!PyArg_ParseTuple(args, "OOO", &capsule, &frame, &times))
        return NULL;
    ptreg_odometry *od = PyCapsule_GetPointer(capsule, ODOMETRY_CAPSULE);
    if (!od)
        return NULL;
    Py_buffer fv, tv = {0};
    size_t n, nt = 0;
    if (get_rows(frame, &fv, 'f', 3, 0, 0, "frame", &n) < 0)
        return NULL;
    if (times != Py_None && get_rows(times, &tv, 'f', 1, 0, 0, "times", &nt) < 0) {
        py_release(&fv);
        return NULL;
    }
    if (times != Py_None && nt != n) {
        py_release(&fv), py_release(&tv);
        return PyErr_Format(ARG_ERROR, "odometry: %zu times for %zu points", nt, n);
    }
    ptreg_odometry_frame out;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_odometry_push(od, fv.buf, n, times == Py_None ? NULL : tv.buf, &out, &err));
    py_release(&fv);
    if (times != Py_None)
        py_release(&tv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || py_put(d, "transformation", doubles_list(out.pose, 16)) ||
        result_into(d, ptreg_result_table_find("odometry_frame"), &out) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* odometry_map(odometry, whole): (xyz float32 bytes, origin) */
PyObject *py_odometry_map(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule;
    int whole;
    if (!PyArg_ParseTuple(args, "Op", &capsule, &whole))
        return NULL;
    ptreg_odometry *od = PyCapsule_GetPointer(capsule, ODOMETRY_CAPSULE);
    if (!od)
        return NULL;
    ptreg_cloud map;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_odometry_map(od, whole ? PTREG_ODOMETRY_WHOLE_MAP : PTREG_ODOMETRY_LOCAL_MAP, &map, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *r = Py_BuildValue("(N(ddd))", bytes_of(map.xyz, 3 * map.n * sizeof *map.xyz), map.origin[0],
                                map.origin[1], map.origin[2]);
    ptreg_cloud_free(&map);
    return r;
}

/* odometry_summary(odometry) */
PyObject *py_odometry_summary(PyObject *self, PyObject *capsule)
{
    (void)self;
    ptreg_odometry *od = PyCapsule_GetPointer(capsule, ODOMETRY_CAPSULE);
    if (!od)
        return NULL;
    ptreg_odometry_summary s;
    ptreg_error err;
    ptreg_status st = ptreg_odometry_summarize(od, &s, &err);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || result_into(d, ptreg_result_table_find("odometry_summary"), &s) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* read_trajectory(path): (times, poses (n x 16), "tum" or "kitti") */
PyObject *py_read_trajectory(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    ptreg_trajectory tr;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_trajectory_read(path, &tr, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *r = Py_BuildValue("(NNs)", doubles_list(tr.t, tr.n), doubles_list(tr.pose, 16 * tr.n),
                                tr.format == PTREG_TRAJECTORY_KITTI ? "kitti" : "tum");
    ptreg_trajectory_free(&tr);
    return r;
}

/* ---- localization in a tiled prior map ---- */

static const char *const TILED_MAP_CAPSULE = "ptreg.tiled_map";

static void tiled_map_capsule_free(PyObject *capsule)
{
    ptreg_tiled_map_close(PyCapsule_GetPointer(capsule, TILED_MAP_CAPSULE));
}

/* the rest from ptreg_option_table_find("localize") */
static const field localize_fields[] = {
    OPT(ptreg_localize_options, "init", F_MAT16, init),
    OPT(ptreg_localize_options, "recover", F_INT, recover),
    OPT(ptreg_localize_options, "deskew", F_INT, odometry.deskew),
    OPT(ptreg_localize_options, "device", F_DEVICE, odometry.device),
    {NULL, F_INT, 0, NULL},
};

/* localizer_create(prior, save_tiles or None, tile, voxel, max_points_per_voxel, **options): (the
 * localizer, an odometry capsule; the map's capsule, which must outlive it). A prior that is not a .ptm
 * is tiled with tile, voxel and max_points_per_voxel (ptreg_tiled_map_load). */
PyObject *py_localizer_create(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    const char *path, *save;
    ptreg_tiled_map_options mo;
    if (!PyArg_ParseTuple(args, "szddi", &path, &save, &mo.tile, &mo.voxel, &mo.max_points_per_voxel))
        return NULL;
    ptreg_localize_options o;
    ptreg_localize_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("localize"), localize_fields, kwargs, "localize") < 0)
        return NULL;
    ptreg_tiled_map *map;
    ptreg_odometry *od;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_tiled_map_load(path, NULL, &mo, save, &map, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *mc = PyCapsule_New(map, TILED_MAP_CAPSULE, tiled_map_capsule_free);
    if (!mc) {
        ptreg_tiled_map_close(map);
        return NULL;
    }
    if ((st = ptreg_odometry_create_localizer(&o, map, &od, &err))) {
        Py_DECREF(mc);
        return raise_ptreg(st, &err);
    }
    PyObject *oc = PyCapsule_New(od, ODOMETRY_CAPSULE, odometry_capsule_free);
    if (!oc) {
        ptreg_odometry_destroy(od);
        Py_DECREF(mc);
        return NULL;
    }
    return Py_BuildValue("(NN)", oc, mc);
}
