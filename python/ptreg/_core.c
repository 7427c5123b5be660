/* ptreg._core: the CPython binding of libptreg that ptreg/__init__.py wraps.
 *
 * Arrays cross as buffers: the Python layer hands over C-contiguous float32
 * (float64 for LDDMM) arrays, read in place (no copy), and preallocated
 * NumPy outputs the library writes into. Options arrive as keyword
 * arguments, set on the library's own *_options_default structs through a
 * table per struct (one place each option's name and type live). Every
 * library call runs without the GIL; a ptreg_error becomes a ptreg.Error
 * (or a subclass) with the library's message. */

/* The binding is split by topic (issue 49), as small_gicp's: py_common.c the helpers
 * they share (py_common.h); each py_*.c one topic's module functions (_core.h);
 * this file the module: its method table and ptreg.Error's classes. */
#include "_core.h"

#define TOOLS_METHODS                                                      \
    {"statistical_outliers", py_statistical_outliers, METH_VARARGS, NULL}, \
        {"radius_outliers", py_radius_outliers, METH_VARARGS, NULL},       \
        {"random_downsample", py_random_downsample, METH_VARARGS, NULL},   \
        {"uniform_downsample", py_uniform_downsample, METH_VARARGS, NULL}, \
        {"evaluate", py_evaluate, METH_VARARGS, NULL},                     \
        {"register_correspondences", py_register_correspondences, METH_VARARGS, NULL},

/* ---- the module ----------------------------------------------------------- */

#define KW (PyCFunction)(void (*)(void))

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, NULL},
    {"set_num_threads", py_set_num_threads, METH_O, NULL},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, NULL},
    {"devices", py_devices, METH_NOARGS, NULL},
    {"read_cloud", py_read_cloud, METH_VARARGS, NULL},
    {"write_cloud", py_write_cloud, METH_VARARGS, NULL},
    {"read_transform", py_read_transform, METH_VARARGS, NULL},
    {"write_transform", py_write_transform, METH_VARARGS, NULL},
    {"read_volume", py_read_volume, METH_VARARGS, NULL},
    {"write_volume", py_write_volume, METH_VARARGS, NULL},
    {"voxel_downsample", py_voxel_downsample, METH_VARARGS, NULL},
    {"normals", KW py_normals, METH_VARARGS | METH_KEYWORDS, NULL},
    {"fpfh", KW py_fpfh, METH_VARARGS | METH_KEYWORDS, NULL},
    {"pfh", KW py_pfh, METH_VARARGS | METH_KEYWORDS, NULL},
    {"icp", KW py_icp, METH_VARARGS | METH_KEYWORDS, NULL},
    {"icp_normals", py_icp_normals, METH_O, NULL},
    {"register", KW py_register, METH_VARARGS | METH_KEYWORDS, NULL},
    {"emicp", KW py_emicp, METH_VARARGS | METH_KEYWORDS, NULL},
    {"cpd", KW py_cpd, METH_VARARGS | METH_KEYWORDS, NULL},
    {"cpd_warp", py_cpd_warp, METH_VARARGS, NULL},
    {"harris3d", KW py_harris3d, METH_VARARGS | METH_KEYWORDS, NULL},
    {"lddmm_register", KW py_lddmm_register, METH_VARARGS | METH_KEYWORDS, NULL},
    {"lddmm_warp", KW py_lddmm_warp, METH_VARARGS | METH_KEYWORDS, NULL},
    {"index_create", KW py_index_create, METH_VARARGS | METH_KEYWORDS, NULL},
    {"index_load", py_index_load, METH_VARARGS, NULL},
    {"index_save", py_index_save, METH_VARARGS, NULL},
    {"index_info", py_index_info, METH_O, NULL},
    {"index_nearest", py_index_nearest, METH_VARARGS, NULL},
    {"kdtree_create", py_kdtree_create, METH_O, NULL},
    {"kdtree_knn", py_kdtree_knn, METH_VARARGS, NULL},
    {"kdtree_radius", py_kdtree_radius, METH_VARARGS, NULL},
    {"batch", KW py_batch, METH_VARARGS | METH_KEYWORDS, NULL},
    {"stop_reason_name", py_stop_reason_name, METH_O, NULL},
    {"tune", KW py_tune, METH_VARARGS | METH_KEYWORDS, NULL},
    {"multiway", KW py_multiway, METH_VARARGS | METH_KEYWORDS, NULL},
    {"tracker_create", KW py_tracker_create, METH_VARARGS | METH_KEYWORDS, NULL},
    {"odometry_create", KW py_odometry_create, METH_VARARGS | METH_KEYWORDS, NULL},
    {"odometry_push", py_odometry_push, METH_VARARGS, NULL},
    {"odometry_map", py_odometry_map, METH_VARARGS, NULL},
    {"odometry_summary", py_odometry_summary, METH_O, NULL},
    {"localizer_create", KW py_localizer_create, METH_VARARGS | METH_KEYWORDS, NULL},
    {"read_trajectory", py_read_trajectory, METH_VARARGS, NULL},
    {"tracker_push", py_tracker_push, METH_VARARGS, NULL},
    {"eval_trajectory", KW py_eval_trajectory, METH_VARARGS | METH_KEYWORDS, NULL},
    {"report_available", py_report_available, METH_NOARGS, NULL},
    {"report_html", py_report_html, METH_VARARGS, NULL},
    TOOLS_METHODS{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "ptreg._core",
                                    "The C binding of libptreg; use the ptreg package.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

/* ptreg.Error and one subclass per status, each also a subclass of the
 * built-in exception a Python user would catch for it. */
static int add_errors(PyObject *m)
{
    error_base = PyErr_NewExceptionWithDoc("ptreg.Error", "An error reported by libptreg; .status names its kind.",
                                           NULL, NULL);
    if (!error_base || PyModule_AddObjectRef(m, "Error", error_base) < 0)
        return -1;
    static const struct {
        ptreg_status status;
        const char *name, *doc;
        PyObject **builtin;
    } kinds[] = {
        {PTREG_ERR_ARG, "ptreg.ArgumentError", "An invalid argument or option.", &PyExc_ValueError},
        {PTREG_ERR_IO, "ptreg.FileError", "A file could not be opened, read or written.", &PyExc_OSError},
        {PTREG_ERR_FORMAT, "ptreg.FormatError", "Malformed or unusable input data (the message names the place).",
         &PyExc_ValueError},
        {PTREG_ERR_NOMEM, "ptreg.OutOfMemoryError", "An allocation failed.", &PyExc_MemoryError},
        {PTREG_ERR_UNSUPPORTED, "ptreg.UnsupportedError", "Valid input that ptreg cannot handle (yet).",
         &PyExc_NotImplementedError},
        {PTREG_ERR_RUNTIME, "ptreg.ComputationError", "An algorithm could not produce a result.", &PyExc_RuntimeError},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        PyObject *bases = PyTuple_Pack(2, error_base, *kinds[i].builtin);
        PyObject *type = bases ? PyErr_NewExceptionWithDoc(kinds[i].name, kinds[i].doc, bases, NULL) : NULL;
        Py_XDECREF(bases);
        if (!type || PyModule_AddObjectRef(m, strchr(kinds[i].name, '.') + 1, type) < 0)
            return -1;
        error_types[kinds[i].status] = type;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (add_errors(m) < 0 || PyModule_AddIntConstant(m, "FPFH_BINS", PTREG_FPFH_BINS) < 0 ||
        PyModule_AddIntConstant(m, "PFH_BINS", PTREG_PFH_BINS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
