/* ptreg._core: the helpers the topic files share: errors, NumPy buffers, options from
 * keywords, results into dicts (declared in py_common.h). */
#include "py_common.h"

/* ---- errors --------------------------------------------------------------- */

PyObject *error_base;                         /* ptreg.Error */
PyObject *error_types[PTREG_ERR_RUNTIME + 1]; /* per status, the base for OK */

/* Raises the exception of st with the library's message; returns NULL. */
PyObject *raise_ptreg(ptreg_status st, const ptreg_error *err)
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
int get_rows(PyObject *obj, Py_buffer *view, char format, size_t width, int writable, int allow_none, const char *what,
             size_t *rows)
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
        PyErr_Format(ARG_ERROR, "%s: %zd values are not rows of %zu", what, view->len / (Py_ssize_t)item, width);
        PyBuffer_Release(view);
        return -1;
    }
    *rows = (size_t)view->len / (item * width);
    return 0;
}

void py_release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
}

/* ---- options -------------------------------------------------------------- */

int set_doubles(PyObject *value, double *out, Py_ssize_t count, const char *name)
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
int apply_options(void *opt, const ptreg_option_table *table, const field *fields, PyObject *kwargs, const char *func)
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
int parse_from_names(const char *const *names, const char *name, int *value)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) {
            *value = i;
            return 0;
        }
    return -1;
}

/* ---- results -------------------------------------------------------------- */

/* d[key] = value, value's reference taken over; -1 (error set) when value
 * is NULL. */
int py_put(PyObject *d, const char *key, PyObject *value)
{
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

PyObject *doubles_list(const double *v, size_t n)
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

PyObject *bytes_of(const void *data, size_t size)
{
    return PyByteArray_FromStringAndSize(size ? (const char *)data : "", (Py_ssize_t)size);
}

/* ---- a result struct through its table (ptreg/results.h) ---------------- */

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
    case PTREG_RESULT_INT: return PyLong_FromLong(*(const int *)p);
    case PTREG_RESULT_DOUBLE: return PyFloat_FromDouble(*(const double *)p);
    case PTREG_RESULT_FLOAT: return PyFloat_FromDouble(*(const float *)p);
    case PTREG_RESULT_SIZE: return PyLong_FromSize_t(*(const size_t *)p);
    case PTREG_RESULT_U64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case PTREG_RESULT_U32: return PyLong_FromUnsignedLong(*(const uint32_t *)p);
    case PTREG_RESULT_BOOL: return PyBool_FromLong(*(const int *)p);
    case PTREG_RESULT_ENUM: return PyUnicode_FromString(f->enum_name(*(const int *)p));
    case PTREG_RESULT_TEXT: return PyUnicode_FromString((const char *)p);
    case PTREG_RESULT_STRING: {
        const char *text = *(const char *const *)p;
        return PyUnicode_FromString(text ? text : "");
    }
    case PTREG_RESULT_DEVICE: return device_string((const ptreg_device *)p);
    case PTREG_RESULT_DOUBLES:
    case PTREG_RESULT_TRANSFORM: /* the clouds' frame: ptreg/__init__.py moves it to the world's */
        return doubles_list((const double *)p, f->count);
    case PTREG_RESULT_U64S: return u64s_list((const uint64_t *)p, f->count);
    case PTREG_RESULT_SERIES: return doubles_list(*(const double *const *)p, f->length_of(s));
    case PTREG_RESULT_RECORDS: {
        const char *records = *(const char *const *)p;
        return records ? records_list(f->table, records, f->length_of(s)) : NULL;
    }
    case PTREG_RESULT_DERIVED: return PyFloat_FromDouble(f->value_of(s));
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
int result_into(PyObject *d, const ptreg_result_table *table, const void *s)
{
    for (size_t k = 0; k < table->count; k++) {
        const ptreg_result_field *f = &table->fields[k];
        if (PyDict_GetItemString(d, f->name))
            continue;
        PyObject *v = result_value(f, s);
        if (!v && PyErr_Occurred())
            return -1;
        if (v && py_put(d, f->name, v) < 0)
            return -1;
    }
    return 0;
}

/* ---- the topics' helpers that more than one topic uses -------------------- */

/* A volume viewing a buffer of nx*ny*nz voxels of the named type. */
int volume_view(PyObject *data, Py_ssize_t nx, Py_ssize_t ny, Py_ssize_t nz, const char *type_name, PyObject *spacing,
                PyObject *origin, Py_buffer *view, ptreg_volume *v)
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
        PyErr_Format(ARG_ERROR, "volume: %zd bytes for %zd x %zd x %zd voxels of %s", view->len, nx, ny, nz, type_name);
        PyBuffer_Release(view);
        return -1;
    }
    v->data = view->buf;
    return 0;
}

int get_points_normals(PyObject *xyz, PyObject *normals, Py_buffer *xv, Py_buffer *nv, size_t *n)
{
    size_t nn;
    if (get_rows(xyz, xv, 'f', 3, 0, 0, "points", n) < 0)
        return -1;
    if (get_rows(normals, nv, 'f', 3, 0, 1, "normals", &nn) < 0) {
        py_release(xv);
        return -1;
    }
    if (nv->obj && nn != *n) {
        py_release(xv), py_release(nv);
        PyErr_Format(ARG_ERROR, "normals: %zu rows for %zu points", nn, *n);
        return -1;
    }
    return 0;
}

void release_pair(cloud_pair *p) { py_release(&p->s), py_release(&p->t), py_release(&p->sn), py_release(&p->tn); }

/* t NULL: the target is a model index's t_points points (no view). */
int get_pair(PyObject *s, PyObject *t, size_t t_points, PyObject *sn, PyObject *tn, cloud_pair *p)
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

/* The engine variant a run used, for its result: where it came from, the
 * cache's size class, and each knob by name (threads: the count that ran). */
PyObject *variant_dict(const ptreg_tune_choice *c)
{
    PyObject *v = PyDict_New();
    if (!v || py_put(v, "source", PyUnicode_FromString(c->source)) ||
        (!strcmp(c->source, "tuned") && py_put(v, "size_class", PyUnicode_FromString(c->size_class)))) {
        Py_XDECREF(v);
        return NULL;
    }
    for (int p = 0; p < c->space.param_count; p++) {
        const char *name = c->space.params[p].name;
        const double value = strcmp(name, "threads") ? c->point[p] : (double)ptreg_get_num_threads();
        if (py_put(v, name, PyLong_FromLong((long)value))) {
            Py_DECREF(v);
            return NULL;
        }
    }
    return v;
}

int get_matrix16(PyObject *obj, double T[16])
{
    Py_buffer tv;
    size_t rows;
    if (get_rows(obj, &tv, 'd', 16, 0, 0, "transformation", &rows) < 0)
        return -1;
    if (rows != 1) {
        py_release(&tv);
        PyErr_SetString(PyExc_ValueError, "transformation: 16 values are needed");
        return -1;
    }
    memcpy(T, tv.buf, 16 * sizeof *T);
    py_release(&tv);
    return 0;
}
