/* ptreg._core: the CPython binding of libptreg that ptreg/__init__.py wraps.
 *
 * Arrays cross as buffers: the Python layer hands over C-contiguous float32
 * (float64 for LDDMM) arrays, read in place (no copy), and preallocated
 * NumPy outputs the library writes into. Options arrive as keyword
 * arguments, set on the library's own *_options_default structs through a
 * table per struct (one place each option's name and type live). Every
 * library call runs without the GIL; a ptreg_error becomes a ptreg.Error
 * (or a subclass) with the library's message. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/batch.h"
#include "ptreg/emicp.h"
#include "ptreg/features.h"
#include "ptreg/global.h"
#include "ptreg/harris3d.h"
#include "ptreg/io.h"
#include "ptreg/lddmm.h"
#include "ptreg/nn.h"
#include "ptreg/multiway.h"
#include "ptreg/nn.h"
#include "ptreg/report.h"
#include "ptreg/results.h"
#include "ptreg/track.h"
#include "ptreg/tune.h"

/* Runs stmt with the GIL released: the library never calls back into
 * Python. */
#define WITHOUT_GIL(stmt)                                                                                          \
    do {                                                                                                            \
        Py_BEGIN_ALLOW_THREADS stmt;                                                                                \
        Py_END_ALLOW_THREADS                                                                                        \
    } while (0)

/* ---- errors --------------------------------------------------------------- */

static PyObject *error_base;                  /* ptreg.Error */
static PyObject *error_types[PTREG_ERR_RUNTIME + 1]; /* per status, the base for OK */

/* The binding's own refusals of a value: ptreg.ArgumentError (a ValueError
 * too), as the library's, so that Python raises ptreg.Error subclasses only. */
#define ARG_ERROR error_types[PTREG_ERR_ARG]

/* Raises the exception of st with the library's message; returns NULL. */
static PyObject *raise_ptreg(ptreg_status st, const ptreg_error *err)
{
    PyObject *type = (unsigned)st <= PTREG_ERR_RUNTIME && error_types[st] ? error_types[st] : error_base;
    const char *msg = err && err->message[0] ? err->message : ptreg_status_string(st);
    PyObject *exc = PyObject_CallFunction(type, "s", msg);
    if (!exc)
        return NULL;
    PyObject *status = PyUnicode_FromString(ptreg_status_string(st));
    if (status) {
        PyObject_SetAttrString(exc, "status", status);
        Py_DECREF(status);
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- buffers -------------------------------------------------------------- */

/* A C-contiguous buffer of rows of `width` items of the format's type
 * ('f' float32, 'd' float64, 'B' bytes, 'i' int32, 'I' uint32, 'Q' uint64: size_t
 * here); rows in *rows. Writable when asked. None gives an empty view when
 * allow_none. */
static int get_rows(PyObject *obj, Py_buffer *view, char format, size_t width, int writable, int allow_none,
                    const char *what, size_t *rows)
{
    memset(view, 0, sizeof *view);
    *rows = 0;
    if (obj == Py_None) {
        if (allow_none)
            return 0;
        PyErr_Format(PyExc_TypeError, "%s: an array is needed, not None", what);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const size_t item = format == 'd' || format == 'Q' ? 8 : format == 'f' || format == 'i' || format == 'I' ? 4 : 1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    /* NumPy names uint64 'L' where unsigned long has 64 bits */
    const int same = f[0] == format || (format == 'Q' && f[0] == 'L');
    if ((size_t)view->itemsize != item || !same || f[1]) {
        PyErr_Format(PyExc_TypeError, "%s: %s items are needed (got format '%s')", what,
                     format == 'd'   ? "float64"
                     : format == 'f' ? "float32"
                     : format == 'i' ? "int32"
                     : format == 'I' ? "uint32"
                     : format == 'Q' ? "uint64"
                                     : "byte",
                     view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    if ((size_t)view->len % (item * width)) {
        PyErr_Format(ARG_ERROR, "%s: %zd values are not rows of %zu", what, view->len / (Py_ssize_t)item,
                     width);
        PyBuffer_Release(view);
        return -1;
    }
    *rows = (size_t)view->len / (item * width);
    return 0;
}

static void release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
}

/* ---- options -------------------------------------------------------------- */

typedef enum field_kind { F_INT, F_SIZE, F_DOUBLE, F_U64, F_ENUM, F_DEVICE, F_MAT16, F_VEC3 } field_kind;

/* Names an enum's value; 0 when known. */
typedef int (*enum_parse_fn)(const char *name, int *value);

typedef struct field {
    const char *name;
    field_kind kind;
    size_t offset;
    enum_parse_fn parse;
} field;

static int set_doubles(PyObject *value, double *out, Py_ssize_t count, const char *name)
{
    PyObject *seq = PySequence_Fast(value, "");
    if (!seq || PySequence_Fast_GET_SIZE(seq) != count) {
        Py_XDECREF(seq);
        PyErr_Clear();
        PyErr_Format(ARG_ERROR, "%s: %zd numbers are needed", name, count);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    return 0;
}

static int set_field(void *opt, const field *f, PyObject *value)
{
    char *at = (char *)opt + f->offset;
    switch (f->kind) {
    case F_INT: {
        long v = PyLong_AsLong(value);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < -2147483647L || v > 2147483647L) {
            PyErr_Format(ARG_ERROR, "%s: %ld is out of range", f->name, v);
            return -1;
        }
        *(int *)at = (int)v;
        return 0;
    }
    case F_SIZE: {
        size_t v = PyLong_AsSize_t(value);
        if (v == (size_t)-1 && PyErr_Occurred())
            return -1;
        *(size_t *)at = v;
        return 0;
    }
    case F_U64: {
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        *(uint64_t *)at = (uint64_t)v;
        return 0;
    }
    case F_DOUBLE: {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred())
            return -1;
        *(double *)at = v;
        return 0;
    }
    case F_ENUM:
    case F_DEVICE: {
        const char *s = PyUnicode_AsUTF8(value);
        if (!s)
            return -1;
        if (f->kind == F_DEVICE) {
            if (ptreg_device_parse(s, (ptreg_device *)at) != 0) {
                PyErr_Format(ARG_ERROR, "%s: '%s' is not auto, cpu, cuda[:N] or opencl[:N]", f->name, s);
                return -1;
            }
            return 0;
        }
        int v;
        if (f->parse(s, &v) != 0) {
            PyErr_Format(ARG_ERROR, "%s: '%s' is not one of its values", f->name, s);
            return -1;
        }
        *(int *)at = v;
        return 0;
    }
    case F_MAT16: return set_doubles(value, (double *)at, 16, f->name);
    case F_VEC3: return set_doubles(value, (double *)at, 3, f->name);
    }
    return -1;
}

/* A keyword that the library's options table (ptreg/options.h) holds:
 * its range and names are the library's. */
static int set_library_option(void *opt, const ptreg_option *o, PyObject *value)
{
    ptreg_error err;
    ptreg_status st;
    if (PyUnicode_Check(value)) {
        const char *s = PyUnicode_AsUTF8(value);
        if (!s)
            return -1;
        st = ptreg_option_parse(o, opt, s, &err);
    } else {
        const double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred())
            return -1;
        /* as the command line's text (%.17g gives the double back): a value
         * the library reads as "not set" (max_dist=-1) is refused as there,
         * None leaving an option unset; NaN by the setter, which names it */
        char text[40];
        snprintf(text, sizeof text, "%.17g", v);
        st = isnan(v) ? ptreg_option_set(o, opt, v, &err) : ptreg_option_parse(o, opt, text, &err);
    }
    if (!st)
        return 0;
    ptreg_error named; /* ptreg.ArgumentError, naming the keyword */
    snprintf(named.message, sizeof named.message, "%.40s: %.400s", o->name, err.message);
    raise_ptreg(st, &named);
    return -1;
}

/* The row a keyword names: the command line's spelling with '_' for '-'
 * first, else the row's own name (ptreg_option_find), so that Python's
 * keywords are the command line's options. */
static const ptreg_option *library_option(const ptreg_option_table *table, const char *name)
{
    return table ? ptreg_option_find(table, name, strlen(name)) : NULL;
}

/* Sets each keyword (None: the default stays) on opt: from the library's
 * table of the options (NULL: none), else from the binding's own fields
 * (the device, matrices, and options without a table yet); an unknown one
 * is a TypeError, as for any Python function. Then the table's check, its
 * rules included. */
static int apply_options(void *opt, const ptreg_option_table *table, const field *fields, PyObject *kwargs,
                         const char *func)
{
    if (!kwargs)
        return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        const char *name = PyUnicode_AsUTF8(key);
        if (!name)
            return -1;
        const ptreg_option *o = library_option(table, name);
        if (o) {
            if (value != Py_None && set_library_option(opt, o, value) < 0)
                return -1;
            continue;
        }
        const field *f = fields;
        while (f->name && strcmp(f->name, name))
            f++;
        if (!f->name) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", func, name);
            return -1;
        }
        if (value != Py_None && set_field(opt, f, value) < 0)
            return -1;
    }
    /* the library's rules that tie keywords together, stated there once */
    ptreg_error err;
    ptreg_status st = table ? ptreg_options_check(table, opt, &err) : PTREG_OK;
    if (st) {
        raise_ptreg(st, &err);
        return -1;
    }
    return 0;
}

/* The enums' names, for the fields above: each adapter returns 0 when it
 * knows the name. */
static int parse_from_names(const char *const *names, const char *name, int *value)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) {
            *value = i;
            return 0;
        }
    return -1;
}

#define ENUM_FROM_NAMES(fn, ...)                                                                                   \
    static int fn(const char *name, int *value)                                                                     \
    {                                                                                                               \
        static const char *const names[] = {__VA_ARGS__, NULL};                                                    \
        return parse_from_names(names, name, value);                                                                \
    }
/* in each enum's order (lddmm.h, harris3d.h) */
ENUM_FROM_NAMES(parse_lddmm_init, "scaled", "displacement", "zero")
ENUM_FROM_NAMES(parse_threshold_mode, "relative", "absolute")

#define OPT(type, name, kind, member) {name, kind, offsetof(type, member), NULL}
#define OPT_ENUM(type, name, member, parser) {name, F_ENUM, offsetof(type, member), parser}

static const field icp_fields[] = {
    OPT(ptreg_icp_options, "init", F_MAT16, init),
    OPT(ptreg_icp_options, "no_tune", F_INT, no_tune),
    OPT(ptreg_icp_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field normals_fields[] = {
    OPT(ptreg_normals_options, "viewpoint", F_VEC3, viewpoint),
    OPT(ptreg_normals_options, "direction", F_VEC3, direction),
    OPT(ptreg_normals_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field feature_fields[] = {
    OPT(ptreg_features_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field register_fields[] = {
    OPT(ptreg_register_options, "mutual", F_INT, mutual),
    OPT(ptreg_register_options, "seed", F_U64, ransac.seed),
    OPT(ptreg_register_options, "no_refine", F_INT, no_refine),
    OPT(ptreg_register_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field emicp_fields[] = {
    OPT(ptreg_emicp_options, "init", F_MAT16, init),
    OPT(ptreg_emicp_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field harris_fields[] = {
    OPT_ENUM(ptreg_harris3d_options, "threshold_mode", threshold_mode, parse_threshold_mode),
    OPT(ptreg_harris3d_options, "threshold", F_DOUBLE, threshold),
    OPT(ptreg_harris3d_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field lddmm_fields[] = {
    OPT_ENUM(ptreg_lddmm_options, "init", init, parse_lddmm_init),
    OPT(ptreg_lddmm_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field batch_fields[] = {
    OPT(ptreg_batch_options, "translation", F_INT, translation),
    OPT(ptreg_batch_options, "device", F_DEVICE, device),
    {NULL, F_INT, 0, NULL},
};

static const field index_fields[] = {
    OPT(ptreg_index_options, "delaunay", F_INT, delaunay),
    {NULL, F_INT, 0, NULL},
};

/* ---- results -------------------------------------------------------------- */

/* d[key] = value, value's reference taken over; -1 (error set) when value
 * is NULL. */
static int put(PyObject *d, const char *key, PyObject *value)
{
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *doubles_list(const double *v, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *x = PyFloat_FromDouble(v[i]);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    return l;
}

static PyObject *device_string(const ptreg_device *d)
{
    char buf[32];
    return PyUnicode_FromString(ptreg_device_format(d, buf, sizeof buf));
}

static PyObject *bytes_of(const void *data, size_t size)
{
    return PyByteArray_FromStringAndSize(size ? (const char *)data : "", (Py_ssize_t)size);
}

/* ---- a result struct through its table (ptreg/results.h) ---------------- */

static int result_into(PyObject *d, const ptreg_result_table *table, const void *s);

static PyObject *u64s_list(const uint64_t *v, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, x);
    }
    return l;
}

static PyObject *records_list(const ptreg_result_table *table, const char *records, size_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *r = PyDict_New();
        if (!r || result_into(r, table, records + i * table->size) < 0) {
            Py_XDECREF(r);
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, r);
    }
    return l;
}

/* The field's value as Python's; NULL without an error set when the table
 * leaves it out (a NULL RECORDS pointer), as the command line's --json does. */
static PyObject *result_value(const ptreg_result_field *f, const void *s)
{
    const void *p = (const char *)s + f->offset;
    switch (f->type) {
    case PTREG_RESULT_INT:
        return PyLong_FromLong(*(const int *)p);
    case PTREG_RESULT_DOUBLE:
        return PyFloat_FromDouble(*(const double *)p);
    case PTREG_RESULT_FLOAT:
        return PyFloat_FromDouble(*(const float *)p);
    case PTREG_RESULT_SIZE:
        return PyLong_FromSize_t(*(const size_t *)p);
    case PTREG_RESULT_U64:
        return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case PTREG_RESULT_U32:
        return PyLong_FromUnsignedLong(*(const uint32_t *)p);
    case PTREG_RESULT_BOOL:
        return PyBool_FromLong(*(const int *)p);
    case PTREG_RESULT_ENUM:
        return PyUnicode_FromString(f->enum_name(*(const int *)p));
    case PTREG_RESULT_TEXT:
        return PyUnicode_FromString((const char *)p);
    case PTREG_RESULT_STRING: {
        const char *text = *(const char *const *)p;
        return PyUnicode_FromString(text ? text : "");
    }
    case PTREG_RESULT_DEVICE:
        return device_string((const ptreg_device *)p);
    case PTREG_RESULT_DOUBLES:
    case PTREG_RESULT_TRANSFORM: /* the clouds' frame: ptreg/__init__.py moves it to the world's */
        return doubles_list((const double *)p, f->count);
    case PTREG_RESULT_U64S:
        return u64s_list((const uint64_t *)p, f->count);
    case PTREG_RESULT_SERIES:
        return doubles_list(*(const double *const *)p, f->length_of(s));
    case PTREG_RESULT_RECORDS: {
        const char *records = *(const char *const *)p;
        return records ? records_list(f->table, records, f->length_of(s)) : NULL;
    }
    case PTREG_RESULT_DERIVED:
        return PyFloat_FromDouble(f->value_of(s));
    case PTREG_RESULT_OBJECT: {
        const void *object = *(const void *const *)p;
        PyObject *r = object ? PyDict_New() : NULL;
        if (r && result_into(r, f->table, object) < 0)
            Py_CLEAR(r);
        return r;
    }
    }
    return NULL;
}

/* d[name] for every field of the result struct s that table names, except
 * the keys d holds already; -1 with an error set on failure. */
static int result_into(PyObject *d, const ptreg_result_table *table, const void *s)
{
    for (size_t k = 0; k < table->count; k++) {
        const ptreg_result_field *f = &table->fields[k];
        if (PyDict_GetItemString(d, f->name))
            continue;
        PyObject *v = result_value(f, s);
        if (!v && PyErr_Occurred())
            return -1;
        if (v && put(d, f->name, v) < 0)
            return -1;
    }
    return 0;
}

/* ---- module functions ----------------------------------------------------- */

static PyObject *py_version(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyUnicode_FromString(ptreg_version());
}

static PyObject *py_set_num_threads(PyObject *self, PyObject *arg)
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

static PyObject *py_get_num_threads(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return PyLong_FromLong(ptreg_get_num_threads());
}

static PyObject *py_devices(PyObject *self, PyObject *args)
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
                  put(e, "standin", PyBool_FromLong(d->standin)) || put(e, "is_gpu", PyBool_FromLong(d->is_gpu)) ||
                  PyList_Append(out, e);
        Py_XDECREF(e);
        if (bad)
            Py_CLEAR(out);
    }
    return out;
}

/* A far cloud's points as float64 world coordinates (origin + offset):
 * float32 would lose a UTM point's millimetres. */
static PyObject *world_bytes(const ptreg_cloud *c)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(3 * c->n * sizeof(double)));
    if (!b)
        return NULL;
    double *w = (double *)PyBytes_AS_STRING(b);
    for (size_t i = 0; i < 3 * c->n; i++)
        w[i] = c->origin[i % 3] + c->xyz[i];
    return b;
}

static PyObject *py_read_cloud(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *format_name = NULL;
    if (!PyArg_ParseTuple(args, "s|z", &path, &format_name))
        return NULL;
    ptreg_format format = PTREG_FORMAT_AUTO;
    if (format_name && ptreg_format_parse(format_name, &format) != 0)
        return PyErr_Format(ARG_ERROR, "format: '%s' is not ply, pcd, xyz, vtk, pos or epos", format_name);
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status st;
    ptreg_cloud_init(&c);
    WITHOUT_GIL(st = ptreg_cloud_read(path, format, &c, &err));
    if (st)
        return raise_ptreg(st, &err);
    const int world = c.origin[0] != 0.0 || c.origin[1] != 0.0 || c.origin[2] != 0.0;
    PyObject *xyz = world ? world_bytes(&c) : bytes_of(c.xyz, 3 * c.n * sizeof(float));
    PyObject *normals = c.normals ? bytes_of(c.normals, 3 * c.n * sizeof(float)) : (Py_INCREF(Py_None), Py_None);
    PyObject *rgb = c.rgb ? bytes_of(c.rgb, 3 * c.n) : (Py_INCREF(Py_None), Py_None);
    PyObject *out = xyz && normals && rgb ? Py_BuildValue("(OOni(ddd)O)", xyz, normals, (Py_ssize_t)c.dropped_nonfinite,
                                                          world, c.origin[0], c.origin[1], c.origin[2], rgb)
                                          : NULL;
    Py_XDECREF(xyz), Py_XDECREF(normals), Py_XDECREF(rgb);
    ptreg_cloud_free(&c);
    return out;
}

static PyObject *py_write_cloud(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *format_name = NULL;
    PyObject *xyz_obj, *normals_obj, *colors_obj = Py_None;
    int ascii = 0;
    double origin[3] = {0, 0, 0}; /* the points' world position of zero: written back in world coordinates */
    if (!PyArg_ParseTuple(args, "sOO|zp(ddd)O", &path, &xyz_obj, &normals_obj, &format_name, &ascii, &origin[0],
                          &origin[1], &origin[2], &colors_obj))
        return NULL;
    ptreg_write_options wo;
    ptreg_write_options_default(&wo);
    wo.ascii = ascii;
    if (format_name && ptreg_format_parse(format_name, &wo.format) != 0)
        return PyErr_Format(ARG_ERROR, "format: '%s' is not ply, pcd, xyz, vtk or pos", format_name);
    Py_buffer xv, nv;
    size_t n, nn;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(normals_obj, &nv, 'f', 3, 0, 1, "normals", &nn) < 0) {
        release(&xv);
        return NULL;
    }
    if (nv.obj && nn != n) {
        release(&xv), release(&nv);
        return PyErr_Format(ARG_ERROR, "normals: %zu rows for %zu points", nn, n);
    }
    Py_buffer cv;
    size_t nc;
    if (get_rows(colors_obj, &cv, 'B', 3, 0, 1, "colors", &nc) < 0) {
        release(&xv), release(&nv);
        return NULL;
    }
    if (cv.obj && nc != n) {
        release(&xv), release(&nv), release(&cv);
        return PyErr_Format(ARG_ERROR, "colors: %zu rows for %zu points", nc, n);
    }
    ptreg_cloud c = {n,    xv.buf, nv.obj ? nv.buf : NULL, NULL, 0, {origin[0], origin[1], origin[2]},
                     NULL, NULL,   cv.obj ? cv.buf : NULL};
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_cloud_write(path, &c, &wo, &err));
    release(&xv);
    release(&nv);
    release(&cv);
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

static PyObject *py_read_transform(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    double T[16];
    ptreg_error err;
    ptreg_status st = ptreg_transform_read(path, T, &err);
    return st ? raise_ptreg(st, &err) : doubles_list(T, 16);
}

static PyObject *py_write_transform(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path;
    PyObject *m;
    if (!PyArg_ParseTuple(args, "sO", &path, &m))
        return NULL;
    double T[16];
    if (set_doubles(m, T, 16, "transformation") < 0)
        return NULL;
    ptreg_error err;
    ptreg_status st = ptreg_transform_write(path, T, &err);
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

static PyObject *volume_tuple(const ptreg_volume *v)
{
    PyObject *data = bytes_of(v->data, ptreg_volume_count(v) * ptreg_voxel_size(v->type));
    if (!data)
        return NULL;
    PyObject *out = Py_BuildValue("(O(nnn)s(ddd)(ddd))", data, (Py_ssize_t)v->nx, (Py_ssize_t)v->ny,
                                  (Py_ssize_t)v->nz, ptreg_voxel_type_name(v->type), v->spacing[0], v->spacing[1],
                                  v->spacing[2], v->origin[0], v->origin[1], v->origin[2]);
    Py_DECREF(data);
    return out;
}

static PyObject *py_read_volume(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *type_name = NULL;
    Py_ssize_t nx = 0, ny = 0, nz = 0;
    int big_endian = 0;
    if (!PyArg_ParseTuple(args, "s|(nnn)zp", &path, &nx, &ny, &nz, &type_name, &big_endian))
        return NULL;
    ptreg_raw_options raw;
    ptreg_raw_options_default(&raw);
    if (nx < 0 || ny < 0 || nz < 0)
        return PyErr_Format(ARG_ERROR, "dims: sizes must be positive");
    raw.dims[0] = (size_t)nx, raw.dims[1] = (size_t)ny, raw.dims[2] = (size_t)nz;
    raw.big_endian = big_endian;
    if (type_name) {
        if (ptreg_voxel_type_parse(type_name, &raw.type) != 0)
            return PyErr_Format(ARG_ERROR, "dtype: '%s' is not a voxel type (u8 ... f64)", type_name);
        raw.type_set = 1;
    }
    ptreg_volume v;
    ptreg_volume_init(&v);
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_volume_read(path, PTREG_VOLUME_AUTO, &raw, &v, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *out = volume_tuple(&v);
    ptreg_volume_free(&v);
    return out;
}

/* A volume viewing a buffer of nx*ny*nz voxels of the named type. */
static int volume_view(PyObject *data, Py_ssize_t nx, Py_ssize_t ny, Py_ssize_t nz, const char *type_name,
                       PyObject *spacing, PyObject *origin, Py_buffer *view, ptreg_volume *v)
{
    ptreg_volume_init(v);
    if (ptreg_voxel_type_parse(type_name, &v->type) != 0) {
        PyErr_Format(ARG_ERROR, "dtype: '%s' is not a voxel type (u8 ... f64)", type_name);
        return -1;
    }
    if (nx < 1 || ny < 1 || nz < 1) {
        PyErr_Format(ARG_ERROR, "volume: sizes %zd x %zd x %zd must be at least 1", nx, ny, nz);
        return -1;
    }
    if ((spacing != Py_None && set_doubles(spacing, v->spacing, 3, "spacing") < 0) ||
        (origin != Py_None && set_doubles(origin, v->origin, 3, "origin") < 0))
        return -1;
    if (PyObject_GetBuffer(data, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    v->nx = (size_t)nx, v->ny = (size_t)ny, v->nz = (size_t)nz;
    if ((size_t)view->len != ptreg_volume_count(v) * ptreg_voxel_size(v->type)) {
        PyErr_Format(ARG_ERROR, "volume: %zd bytes for %zd x %zd x %zd voxels of %s", view->len, nx, ny, nz,
                     type_name);
        PyBuffer_Release(view);
        return -1;
    }
    v->data = view->buf;
    return 0;
}

static PyObject *py_write_volume(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *type_name;
    PyObject *data, *spacing, *origin;
    Py_ssize_t nx, ny, nz;
    if (!PyArg_ParseTuple(args, "sO(nnn)sOO", &path, &data, &nx, &ny, &nz, &type_name, &spacing, &origin))
        return NULL;
    Py_buffer view;
    ptreg_volume v;
    if (volume_view(data, nx, ny, nz, type_name, spacing, origin, &view, &v) < 0)
        return NULL;
    /* by extension, as the CLI's --scores: NRRD or NIfTI-1, never one for the other */
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_volume_write(path, &v, &err));
    PyBuffer_Release(&view);
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

static PyObject *py_voxel_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj, *normals_obj;
    double voxel;
    if (!PyArg_ParseTuple(args, "OOd", &xyz_obj, &normals_obj, &voxel))
        return NULL;
    Py_buffer xv, nv;
    size_t n, nn;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(normals_obj, &nv, 'f', 3, 0, 1, "normals", &nn) < 0) {
        release(&xv);
        return NULL;
    }
    if (nv.obj && nn != n) {
        release(&xv), release(&nv);
        return PyErr_Format(ARG_ERROR, "normals: %zu rows for %zu points", nn, n);
    }
    ptreg_cloud in = {n, xv.buf, nv.obj ? nv.buf : NULL, NULL, 0, {0, 0, 0}, NULL, NULL, NULL}, out;
    ptreg_cloud_init(&out);
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_voxel_downsample(&in, voxel, &out, &err));
    release(&xv);
    release(&nv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *x = bytes_of(out.xyz, 3 * out.n * sizeof(float));
    PyObject *nrm = out.normals ? bytes_of(out.normals, 3 * out.n * sizeof(float)) : (Py_INCREF(Py_None), Py_None);
    PyObject *res = x && nrm ? Py_BuildValue("(OO)", x, nrm) : NULL;
    Py_XDECREF(x), Py_XDECREF(nrm);
    ptreg_cloud_free(&out);
    return res;
}

/* radius given without k: every point within it (k 0), as the command
 * line's --radius alone, not the k nearest of them. */
static void radius_alone(PyObject *kwargs, ptreg_neighborhood *nb)
{
    PyObject *r = kwargs ? PyDict_GetItemString(kwargs, "radius") : NULL;
    PyObject *k = kwargs ? PyDict_GetItemString(kwargs, "k") : NULL;
    if (r && r != Py_None && (!k || k == Py_None))
        nb->k = 0;
}

/* normals(points, out, curvature_out, **options) -> points without a normal */
static PyObject *py_normals(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *xyz_obj, *out_obj, *curv_obj;
    if (!PyArg_ParseTuple(args, "OOO", &xyz_obj, &out_obj, &curv_obj))
        return NULL;
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("normals"), normals_fields, kwargs, "normals") < 0)
        return NULL;
    radius_alone(kwargs, &o.neighbors);
    Py_buffer xv, ov, cv;
    size_t n, no, nc;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(out_obj, &ov, 'f', 3, 1, 0, "normals out", &no) < 0) {
        release(&xv);
        return NULL;
    }
    if (get_rows(curv_obj, &cv, 'f', 1, 1, 1, "curvature out", &nc) < 0 || no != n || (cv.obj && nc != n)) {
        if (!PyErr_Occurred())
            PyErr_SetString(ARG_ERROR, "normals: the outputs must have one row per point");
        release(&xv), release(&ov), release(&cv);
        return NULL;
    }
    size_t missing = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_normals(xv.buf, n, &o, ov.buf, cv.obj ? cv.buf : NULL, &missing, &err));
    release(&xv);
    release(&ov), release(&cv);
    if (st)
        return raise_ptreg(st, &err);
    return PyLong_FromSize_t(missing);
}

typedef ptreg_status (*feature_fn)(const float *, const float *, size_t, const ptreg_features_options *, float *,
                                   size_t *, ptreg_error *);

static PyObject *run_feature(PyObject *args, PyObject *kwargs, feature_fn fn, size_t bins, const char *name)
{
    PyObject *xyz_obj, *n_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &xyz_obj, &n_obj, &out_obj))
        return NULL;
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("features"), feature_fields, kwargs, name) < 0)
        return NULL;
    radius_alone(kwargs, &o.neighbors);
    Py_buffer xv, nv, ov;
    size_t n, nn, no;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    if (get_rows(n_obj, &nv, 'f', 3, 0, 0, "normals", &nn) < 0) {
        release(&xv);
        return NULL;
    }
    if (get_rows(out_obj, &ov, 'f', bins, 1, 0, "descriptors out", &no) < 0 || nn != n || no != n) {
        if (!PyErr_Occurred())
            PyErr_Format(ARG_ERROR, "%s: normals and output need one row per point", name);
        release(&xv), release(&nv), release(&ov);
        return NULL;
    }
    size_t missing = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = fn(xv.buf, nv.buf, n, &o, ov.buf, &missing, &err));
    release(&xv);
    release(&nv), release(&ov);
    if (st)
        return raise_ptreg(st, &err);
    return PyLong_FromSize_t(missing);
}

static PyObject *py_fpfh(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return run_feature(args, kwargs, ptreg_fpfh, PTREG_FPFH_BINS, "fpfh");
}

static PyObject *py_pfh(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return run_feature(args, kwargs, ptreg_pfh, PTREG_PFH_BINS, "pfh");
}

/* Two clouds and their optional normals: views (released by the caller
 * through release_pair) and the row counts. */
typedef struct cloud_pair {
    Py_buffer s, t, sn, tn;
    size_t ns, nt;
} cloud_pair;

static void release_pair(cloud_pair *p)
{
    release(&p->s), release(&p->t), release(&p->sn), release(&p->tn);
}

/* t NULL: the target is a model index's t_points points (no view). */
static int get_pair(PyObject *s, PyObject *t, size_t t_points, PyObject *sn, PyObject *tn, cloud_pair *p)
{
    memset(p, 0, sizeof *p);
    p->nt = t_points;
    size_t a = 0, b = 0;
    if (get_rows(s, &p->s, 'f', 3, 0, 0, "source", &p->ns) < 0 ||
        (t && get_rows(t, &p->t, 'f', 3, 0, 0, "target", &p->nt) < 0) ||
        get_rows(sn, &p->sn, 'f', 3, 0, 1, "source_normals", &a) < 0 ||
        get_rows(tn, &p->tn, 'f', 3, 0, 1, "target_normals", &b) < 0) {
        release_pair(p);
        return -1;
    }
    if ((p->sn.obj && a != p->ns) || (p->tn.obj && b != p->nt)) {
        PyErr_SetString(ARG_ERROR, "normals: one row per point of their cloud");
        release_pair(p);
        return -1;
    }
    return 0;
}

static PyObject *icp_result_dict(const ptreg_icp_result *r)
{
    PyObject *d = PyDict_New();
    if (d && result_into(d, ptreg_result_table_find("icp"), r) < 0)
        Py_CLEAR(d);
    return d;
}

static ptreg_model_index *index_of(PyObject *capsule);

/* icp_normals(method): (source, target), whether the method reads that
 * cloud's normals (ptreg_icp_method_normals) */
static PyObject *py_icp_normals(PyObject *self, PyObject *name)
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
static PyObject *py_icp(PyObject *self, PyObject *args, PyObject *kwargs)
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

static PyObject *py_register(PyObject *self, PyObject *args, PyObject *kwargs)
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
        put(d, "source_down", PyLong_FromSize_t(r.source_down)) ||
        put(d, "target_down", PyLong_FromSize_t(r.target_down)) ||
        put(d, "inliers", PyLong_FromSize_t(r.ransac.inliers)) ||
        put(d, "global_transformation",
            doubles_list(o.global == PTREG_GLOBAL_FGR ? r.fgr.transformation : r.ransac.transformation, 16))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* The engine variant a run used, for its result: where it came from, the
 * cache's size class, and each knob by name (threads: the count that ran). */
static PyObject *variant_dict(const ptreg_tune_choice *c)
{
    PyObject *v = PyDict_New();
    if (!v || put(v, "source", PyUnicode_FromString(c->source)) ||
        (!strcmp(c->source, "tuned") && put(v, "size_class", PyUnicode_FromString(c->size_class)))) {
        Py_XDECREF(v);
        return NULL;
    }
    for (int p = 0; p < c->space.param_count; p++) {
        const char *name = c->space.params[p].name;
        const double value = strcmp(name, "threads") ? c->point[p] : (double)ptreg_get_num_threads();
        if (put(v, name, PyLong_FromLong((long)value))) {
            Py_DECREF(v);
            return NULL;
        }
    }
    return v;
}

/* emicp(source, target, tune, **options): with tune, the engine's knobs
 * are the tuner's cache's winner for this machine (ptreg_tune_variant); the
 * same for harris3d's tiling (ptreg_tune_variant). */
static PyObject *py_emicp(PyObject *self, PyObject *args, PyObject *kwargs)
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
    if (!d || result_into(d, ptreg_result_table_find("emicp"), &r) < 0 || put(d, "variant", variant_dict(&choice))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* harris3d(data, (nx, ny, nz), dtype, spacing, origin, want_scores, **options) */
static PyObject *py_harris3d(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *data, *spacing, *origin;
    Py_ssize_t nx, ny, nz;
    const char *type_name;
    int want_scores = 0, tune = 1;
    if (!PyArg_ParseTuple(args, "O(nnn)sOOpp", &data, &nx, &ny, &nz, &type_name, &spacing, &origin, &want_scores,
                          &tune))
        return NULL;
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("harris3d"), harris_fields, kwargs, "harris3d") < 0)
        return NULL;
    Py_buffer view;
    ptreg_volume v;
    if (volume_view(data, nx, ny, nz, type_name, spacing, origin, &view, &v) < 0)
        return NULL;
    ptreg_tune_choice choice;
    ptreg_harris3d_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_tune_variant("harris3d", &o, ptreg_volume_count(&v), 0, tune, &choice, &err);
                st = st ? st : ptreg_harris3d(&v, &o, &r, &err));
    PyBuffer_Release(&view);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    int bad = !d || put(d, "keypoints", bytes_of(r.keypoints, r.keypoint_count * sizeof(ptreg_keypoint))) ||
              result_into(d, ptreg_result_table_find("harris3d"), &r) < 0 || put(d, "variant", variant_dict(&choice)) ||
              (want_scores && put(d, "scores", bytes_of(r.scores, ptreg_volume_count(&v) * sizeof(float))));
    ptreg_harris3d_result_free(&r);
    if (bad) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* lddmm_register(template, target, **options) over float64 n x 3 rows */
static PyObject *py_lddmm_register(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *q_obj, *t_obj;
    if (!PyArg_ParseTuple(args, "OO", &q_obj, &t_obj))
        return NULL;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("lddmm"), lddmm_fields, kwargs, "lddmm") < 0)
        return NULL;
    Py_buffer qv, tv;
    size_t n, m;
    if (get_rows(q_obj, &qv, 'd', 3, 0, 0, "template", &n) < 0)
        return NULL;
    if (get_rows(t_obj, &tv, 'd', 3, 0, 0, "target", &m) < 0) {
        release(&qv);
        return NULL;
    }
    if (n != m) {
        release(&qv), release(&tv);
        return PyErr_Format(ARG_ERROR, "lddmm: %zu template landmarks against %zu target landmarks", n, m);
    }
    ptreg_lddmm_result r;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_lddmm_register(qv.buf, tv.buf, n, NULL, &o, &r, &err));
    release(&qv);
    release(&tv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    int bad = !d || put(d, "p0", bytes_of(r.p0, 3 * r.n * sizeof(double))) ||
              put(d, "q1", bytes_of(r.q1, 3 * r.n * sizeof(double))) ||
              put(d, "hamiltonian", PyFloat_FromDouble(r.hamiltonian)) || /* the name before the table's "H" */
              result_into(d, ptreg_result_table_find("lddmm"), &r) < 0;
    ptreg_lddmm_result_free(&r);
    if (bad) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* lddmm_warp(q0, p0, points, out, **options): points (float64 m x 3) moved
 * by the flow of (q0, p0) into out */
static PyObject *py_lddmm_warp(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *q_obj, *p_obj, *x_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &q_obj, &p_obj, &x_obj, &out_obj))
        return NULL;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if (apply_options(&o, ptreg_option_table_find("lddmm"), lddmm_fields, kwargs, "warp") < 0)
        return NULL;
    Py_buffer qv, pv, xv, ov;
    size_t n = 0, np = 0, m = 0, mo = 0;
    memset(&pv, 0, sizeof pv), memset(&xv, 0, sizeof xv), memset(&ov, 0, sizeof ov);
    int bad = get_rows(q_obj, &qv, 'd', 3, 0, 0, "q0", &n) < 0 || get_rows(p_obj, &pv, 'd', 3, 0, 0, "p0", &np) < 0 ||
              get_rows(x_obj, &xv, 'd', 3, 0, 0, "points", &m) < 0 ||
              get_rows(out_obj, &ov, 'd', 3, 1, 0, "out", &mo) < 0;
    if (!bad && (np != n || mo != m)) {
        PyErr_SetString(ARG_ERROR, "warp: p0 needs one row per landmark and out one per point");
        bad = 1;
    }
    ptreg_status st = PTREG_OK;
    ptreg_error err;
    if (!bad)
        WITHOUT_GIL(st = ptreg_lddmm_warp(qv.buf, pv.buf, n, &o, xv.buf, m, ov.buf, &err));
    release(&qv), release(&pv), release(&xv), release(&ov);
    if (bad)
        return NULL;
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

/* batch(source, source_offset, target, target_offset, transforms, iterations,
 * stops, **options): many small pairs (ptreg_batch_register); the outputs
 * preallocated (count x 16 float64, count int32 twice); the stats back. */
static PyObject *py_batch(PyObject *self, PyObject *args, PyObject *kwargs)
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
        release(&v[k]);
    if (bad)
        return NULL;
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || put(d, "time_ms", PyFloat_FromDouble(stats.time_ms)) ||
        put(d, "pairs_per_s", PyFloat_FromDouble(stats.pairs_per_s)) || put(d, "gpts", PyFloat_FromDouble(stats.gpts)) ||
        put(d, "pair_terms", PyFloat_FromDouble(stats.pair_terms)) ||
        put(d, "isa", PyUnicode_FromString(stats.isa ? stats.isa : ""))) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* ---- the autotuner -------------------------------------------------------- */

static PyObject *point_dict(const ptreg_tune_space *s, const double *point)
{
    PyObject *d = PyDict_New();
    for (int p = 0; d && p < s->param_count; p++)
        if (put(d, s->params[p].name, PyFloat_FromDouble(point[p]))) {
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
        int bad = !e || put(e, "point", point_dict(s, c->point)) || put(e, "seconds", PyFloat_FromDouble(c->seconds)) ||
                  put(e, "error", PyFloat_FromDouble(c->error)) || put(e, "passed", PyBool_FromLong(c->passed)) ||
                  PyList_Append(cands, e);
        Py_XDECREF(e);
        if (bad)
            Py_CLEAR(cands);
    }
    PyObject *d = cands ? PyDict_New() : NULL;
    if (!d || put(d, "candidates", (Py_INCREF(cands), cands)) ||
        put(d, "winner", r->best < r->count ? point_dict(s, r->candidates[r->best].point) : (Py_INCREF(Py_None), Py_None)) ||
        put(d, "winner_seconds",
            PyFloat_FromDouble(r->best < r->count ? r->candidates[r->best].seconds : NAN)) ||
        put(d, "default_seconds",
            PyFloat_FromDouble(r->fallback < r->count ? r->candidates[r->fallback].seconds : NAN)) ||
        put(d, "gain", PyFloat_FromDouble(r->gain)) || put(d, "default_kept", PyBool_FromLong(r->default_kept)) ||
        put(d, "method", PyUnicode_FromString(ptreg_tune_method_name(r->method))) ||
        put(d, "valid_points", PyFloat_FromDouble(r->stats.valid)) ||
        put(d, "measurements", PyLong_FromSize_t(r->measurements)) ||
        put(d, "elapsed_s", PyFloat_FromDouble(r->elapsed_s))) {
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
static PyObject *py_tune(PyObject *self, PyObject *args, PyObject *kwargs)
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
    WITHOUT_GIL(st = k->job_create(NULL, (size_t)size, fp16 ? PTREG_PRECISION_FP16 : PTREG_PRECISION_FP32, &job,
                                   &err));
    ptreg_tune_result r;
    memset(&r, 0, sizeof r);
    if (!st)
        WITHOUT_GIL(st = ptreg_tune_search(&space, &machine, k->measure, job, &o, &r, &err));
    k->job_destroy(job);
    PyObject *d = st ? raise_ptreg(st, &err) : tune_result_dict(&space, &r);
    if (d && put(d, "machine", PyUnicode_FromString(machine.name))) {
        Py_DECREF(d);
        d = NULL;
    }
    ptreg_tune_result_free(&r);
    return d;
}

static PyObject *py_stop_reason_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(ptreg_stop_reason_name((ptreg_stop_reason)v));
}

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

static PyObject *py_index_create(PyObject *self, PyObject *args, PyObject *kwargs)
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
    release(&xv);
    return st ? raise_ptreg(st, &err) : index_capsule(idx);
}

static PyObject *py_index_load(PyObject *self, PyObject *args)
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

static ptreg_model_index *index_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, INDEX_CAPSULE);
}

static PyObject *py_index_save(PyObject *self, PyObject *args)
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

static PyObject *py_index_info(PyObject *self, PyObject *capsule)
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
    if (!d || put(d, "points", bytes_of(pts, 3 * n * sizeof(float))) ||
        put(d, "duplicates", PyLong_FromSize_t(info.duplicates)) ||
        put(d, "has_delaunay", PyBool_FromLong(info.has_delaunay)) ||
        put(d, "delaunay_note", PyUnicode_FromString(info.delaunay_note)) ||
        result_into(d, ptreg_result_table_find("model_index_info"), &info) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* index_nearest(index, queries, nearest, dist2): each query's nearest model
 * point by the k-d tree, into the caller's uint32 and float32 arrays (the
 * report's distances to a target, ModelIndex.nearest). */
static PyObject *py_index_nearest(PyObject *self, PyObject *args)
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
        release(&qv);
        release(&iv);
        release(&dv);
        return NULL;
    }
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_model_index_nearest(idx, qv.buf, nq, PTREG_NN_KDTREE, NULL, iv.buf, dv.buf, NULL, &err));
    release(&qv);
    release(&iv);
    release(&dv);
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
static PyObject *py_kdtree_create(PyObject *self, PyObject *capsule)
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
static PyObject *py_kdtree_knn(PyObject *self, PyObject *args)
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
        Py_BEGIN_ALLOW_THREADS
        for (size_t i = 0; i < nq; i++) {
            const size_t found = ptreg_kdtree_knn(tree, q + 3 * i, kk, index + kk * i, dist2 + kk * i);
            for (size_t j = found; j < kk; j++)
                index[kk * i + j] = PTREG_NO_NEIGHBOR, dist2[kk * i + j] = INFINITY;
        }
        Py_END_ALLOW_THREADS
    }
    release(&qv), release(&iv), release(&dv);
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
static PyObject *py_kdtree_radius(PyObject *self, PyObject *args)
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
    release(&qv);
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

/* ---- many scans ----------------------------------------------------------- */

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
        release(&v->xyz[i]), release(&v->normals[i]);
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
    if (!d || !poses || !placed || PyErr_Occurred() || put(d, "poses", poses) || put(d, "placed", placed) ||
        result_into(d, ptreg_result_table_find("multiway"), r) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* multiway(scans, normals, pairs, **options): pairs None or a uint64 (P, 2) array */
static PyObject *py_multiway(PyObject *self, PyObject *args, PyObject *kwargs)
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
        release(&pv);
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
    release(&pv);
    release_scans(&v);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = multiway_result_dict(&r);
    ptreg_multiway_result_free(&r);
    return d;
}

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
static PyObject *py_tracker_create(PyObject *self, PyObject *args, PyObject *kwargs)
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
static PyObject *py_tracker_push(PyObject *self, PyObject *args)
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
    release(&fv);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *d = PyDict_New();
    if (!d || put(d, "transformation", doubles_list(out.pose, 16)) ||
        put(d, "predicted", doubles_list(out.predicted, 16)) || result_into(d, ptreg_result_table_find("track_frame"), &out) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* ---- the report ----------------------------------------------------------- */

static PyObject *py_report_available(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyBool_FromLong(ptreg_report_available());
}

/* ("cloud", name, xyz, 0xRRGGBB): one colour. */
static int report_cloud(ptreg_report *rep, const char *name, PyObject *xyz_obj, PyObject *color_obj)
{
    unsigned long color = PyLong_AsUnsignedLong(color_obj);
    if (color == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, name, &n) < 0)
        return -1;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_report_add_cloud(rep, name, xv.buf, n, (uint32_t)color, &err));
    release(&xv);
    return st ? (raise_ptreg(st, &err), -1) : 0;
}

/* ("values", name, xyz, values, values_name): coloured by a value a point. */
static int report_values(ptreg_report *rep, const char *name, PyObject *xyz_obj, PyObject *values_obj,
                         const char *values_name)
{
    Py_buffer xv, vv;
    size_t n, nv;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, name, &n) < 0)
        return -1;
    if (get_rows(values_obj, &vv, 'f', 1, 0, 0, values_name, &nv) < 0) {
        release(&xv);
        return -1;
    }
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (nv != n)
        PyErr_Format(ARG_ERROR, "%s: %zu values for %zu points", name, nv, n);
    else
        WITHOUT_GIL(st = ptreg_report_add_cloud_values(rep, name, xv.buf, n, vv.buf, values_name, &err));
    release(&xv);
    release(&vv);
    if (st)
        raise_ptreg(st, &err);
    return PyErr_Occurred() ? -1 : 0;
}

static int report_layer(ptreg_report *rep, PyObject *layer)
{
    const char *kind, *name, *values_name = NULL;
    PyObject *xyz, *fourth;
    if (!PyArg_ParseTuple(layer, "ssOO|s", &kind, &name, &xyz, &fourth, &values_name))
        return -1;
    if (!strcmp(kind, "cloud"))
        return report_cloud(rep, name, xyz, fourth);
    if (!strcmp(kind, "values") && values_name)
        return report_values(rep, name, xyz, fourth, values_name);
    PyErr_Format(ARG_ERROR, "report layer %s: kind %s is not (cloud, ..., color) or (values, ..., name)",
                 name, kind);
    return -1;
}

/* (title, measure, float64 values): one value an iteration. */
static int report_curve(ptreg_report *rep, PyObject *curve)
{
    const char *title, *measure;
    PyObject *values;
    if (!PyArg_ParseTuple(curve, "ssO", &title, &measure, &values))
        return -1;
    Py_buffer v;
    size_t n;
    if (get_rows(values, &v, 'd', 1, 0, 0, measure, &n) < 0)
        return -1;
    ptreg_error err;
    ptreg_status st = ptreg_report_add_curve(rep, title, measure, v.buf, n, &err);
    release(&v);
    return st ? (raise_ptreg(st, &err), -1) : 0;
}

static int report_fill(ptreg_report *rep, PyObject *layers, PyObject *curves, const char *json)
{
    PyObject *seqs[2] = {PySequence_Fast(layers, "report layers: a list"),
                         PySequence_Fast(curves, "report curves: a list")};
    int bad = !seqs[0] || !seqs[1];
    for (Py_ssize_t i = 0; !bad && i < PySequence_Fast_GET_SIZE(seqs[0]); i++)
        bad = report_layer(rep, PySequence_Fast_GET_ITEM(seqs[0], i)) < 0;
    for (Py_ssize_t i = 0; !bad && i < PySequence_Fast_GET_SIZE(seqs[1]); i++)
        bad = report_curve(rep, PySequence_Fast_GET_ITEM(seqs[1], i)) < 0;
    Py_XDECREF(seqs[0]);
    Py_XDECREF(seqs[1]);
    ptreg_error err;
    ptreg_status st = bad ? PTREG_OK : ptreg_report_set_json(rep, json, &err);
    if (st)
        raise_ptreg(st, &err);
    return bad || st ? -1 : 0;
}

static PyObject *report_page(const ptreg_report *rep)
{
    char *page = NULL;
    size_t size = 0;
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_report_html(rep, &page, &size, &err));
    if (st)
        return raise_ptreg(st, &err);
    PyObject *s = PyUnicode_DecodeUTF8(page, (Py_ssize_t)size, "replace");
    free(page);
    return s;
}

/* report_html(title, layers, curves, json): the page of ptreg/report.h as a
 * str; layers and curves as report_layer and report_curve read them. */
static PyObject *py_report_html(PyObject *self, PyObject *args)
{
    (void)self;
    const char *title, *json;
    PyObject *layers, *curves;
    if (!PyArg_ParseTuple(args, "sOOs", &title, &layers, &curves, &json))
        return NULL;
    ptreg_report *rep = NULL;
    ptreg_error err;
    ptreg_status st = ptreg_report_create(title, &rep, &err);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *page = report_fill(rep, layers, curves, json) < 0 ? NULL : report_page(rep);
    ptreg_report_destroy(rep);
    return page;
}

/* ---- filters, evaluation, correspondences (issue 47: what Open3D's and
 * PCL's users reach for) ---------------------------------------------------- */

/* The mask a filter made, as bytes (ptreg/__init__.py selects with it). */
static PyObject *mask_result(ptreg_status st, const ptreg_error *err, unsigned char *keep, size_t n)
{
    PyObject *res = st ? raise_ptreg(st, err) : bytes_of(keep, n);
    free(keep);
    return res;
}

static unsigned char *mask_alloc(size_t n)
{
    unsigned char *keep = malloc(n ? n : 1);
    if (!keep)
        PyErr_NoMemory();
    return keep;
}

/* statistical_outliers(points, k, std_ratio) -> keep mask */
static PyObject *py_statistical_outliers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj;
    Py_ssize_t k;
    double ratio;
    if (!PyArg_ParseTuple(args, "Ond", &xyz_obj, &k, &ratio))
        return NULL;
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    unsigned char *keep = mask_alloc(n);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (keep)
        WITHOUT_GIL(st = ptreg_statistical_outliers(xv.buf, n, k < 1 ? 0 : (size_t)k, ratio, keep, NULL, &err));
    release(&xv);
    return keep ? mask_result(st, &err, keep, n) : NULL;
}

/* radius_outliers(points, radius, min_neighbors) -> keep mask */
static PyObject *py_radius_outliers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *xyz_obj;
    double radius;
    Py_ssize_t min;
    if (!PyArg_ParseTuple(args, "Odn", &xyz_obj, &radius, &min))
        return NULL;
    Py_buffer xv;
    size_t n;
    if (get_rows(xyz_obj, &xv, 'f', 3, 0, 0, "points", &n) < 0)
        return NULL;
    unsigned char *keep = mask_alloc(n);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (keep)
        WITHOUT_GIL(st = ptreg_radius_outliers(xv.buf, n, radius, min < 1 ? 0 : (size_t)min, keep, &err));
    release(&xv);
    return keep ? mask_result(st, &err, keep, n) : NULL;
}

/* random_downsample(n, fraction, count, seed) -> keep mask: count when
 * fraction < 0, else floor(fraction n) */
static PyObject *py_random_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n, count;
    double fraction;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "ndnK", &n, &fraction, &count, &seed))
        return NULL;
    ptreg_error err;
    if (n < 0 || (fraction < 0.0 && count < 0) || (fraction >= 0.0 && !(fraction <= 1.0)))
        return raise_ptreg(ptreg_error_set(&err, PTREG_ERR_ARG,
                                           "random_downsample: a fraction in [0, 1] or a count >= 0 is needed"),
                           &err);
    const size_t take = fraction >= 0.0 ? ptreg_random_downsample_count((size_t)n, fraction) : (size_t)count;
    unsigned char *keep = mask_alloc((size_t)n);
    if (!keep)
        return NULL;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_random_downsample((size_t)n, take, (uint64_t)seed, keep, &err));
    return mask_result(st, &err, keep, (size_t)n);
}

/* uniform_downsample(n, every) -> keep mask */
static PyObject *py_uniform_downsample(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n, every;
    if (!PyArg_ParseTuple(args, "nn", &n, &every))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "uniform_downsample: %zd points", n);
    unsigned char *keep = mask_alloc((size_t)n);
    if (!keep)
        return NULL;
    ptreg_error err;
    const ptreg_status st = ptreg_uniform_downsample((size_t)n, every < 1 ? 0 : (size_t)every, keep, &err);
    return mask_result(st, &err, keep, (size_t)n);
}

static int get_matrix16(PyObject *obj, double T[16])
{
    Py_buffer tv;
    size_t rows;
    if (get_rows(obj, &tv, 'd', 16, 0, 0, "transformation", &rows) < 0)
        return -1;
    if (rows != 1) {
        release(&tv);
        PyErr_SetString(PyExc_ValueError, "transformation: 16 values are needed");
        return -1;
    }
    memcpy(T, tv.buf, 16 * sizeof *T);
    release(&tv);
    return 0;
}

/* evaluate(source, target, T (16 float64), max_dist) ->
 * (inliers, fitness, inlier_rmse, pairs: uint32 source, target interleaved) */
static PyObject *py_evaluate(PyObject *self, PyObject *args)
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
        release(&sv);
        return NULL;
    }
    ptreg_evaluation e;
    ptreg_matches m = {0};
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_evaluate_registration(sv.buf, ns, tv.buf, nt, T, max_dist, &e, &m, &err));
    release(&sv), release(&tv);
    if (st)
        return raise_ptreg(st, &err);
    uint32_t *pairs = malloc((m.count ? m.count : 1) * 2 * sizeof *pairs);
    PyObject *res = NULL;
    if (!pairs)
        PyErr_NoMemory();
    else {
        for (size_t k = 0; k < m.count; k++)
            pairs[2 * k] = m.source[k], pairs[2 * k + 1] = m.target[k];
        PyObject *b = bytes_of(pairs, 2 * m.count * sizeof *pairs);
        res = b ? Py_BuildValue("(nddN)", (Py_ssize_t)e.inliers, e.fitness, e.inlier_rmse, b) : NULL;
        free(pairs);
    }
    ptreg_matches_free(&m);
    return res;
}

/* register_correspondences(source, target, pairs (uint32 rows of 2), weights
 * (float64) or None, ransac_dist (<= 0: none), ransac_iter, confidence, seed)
 * -> (T as 16 floats, inliers, hypotheses) */
static PyObject *py_register_correspondences(PyObject *self, PyObject *args)
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
        release(&sv);
        return NULL;
    }
    if (get_rows(p_obj, &pv, 'I', 2, 0, 0, "correspondences", &np_) < 0) {
        release(&sv), release(&tv);
        return NULL;
    }
    if (get_rows(w_obj, &wv, 'd', 1, 0, 1, "weights", &nw) < 0) {
        release(&sv), release(&tv), release(&pv);
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
    release(&sv), release(&tv), release(&pv), release(&wv);
    free(si), free(ti);
    if (st)
        return raise_ptreg(st, &err);
    PyObject *T = doubles_list(r.transformation, 16);
    return T ? Py_BuildValue("(Nni)", T, (Py_ssize_t)r.inliers, r.hypotheses) : NULL;
}

#define TOOLS_METHODS                                                                                          \
    {"statistical_outliers", py_statistical_outliers, METH_VARARGS, NULL},                                     \
        {"radius_outliers", py_radius_outliers, METH_VARARGS, NULL},                                           \
        {"random_downsample", py_random_downsample, METH_VARARGS, NULL},                                       \
        {"uniform_downsample", py_uniform_downsample, METH_VARARGS, NULL},                                     \
        {"evaluate", py_evaluate, METH_VARARGS, NULL},                                                         \
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
    {"tracker_push", py_tracker_push, METH_VARARGS, NULL},
    {"report_available", py_report_available, METH_NOARGS, NULL},
    {"report_html", py_report_html, METH_VARARGS, NULL},
    TOOLS_METHODS
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ptreg._core",
                                    "The C binding of libptreg; use the ptreg package.", -1, methods,
                                    NULL, NULL, NULL, NULL};

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
        {PTREG_ERR_RUNTIME, "ptreg.ComputationError", "An algorithm could not produce a result.",
         &PyExc_RuntimeError},
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
