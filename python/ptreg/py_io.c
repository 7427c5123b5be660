/* ptreg._core: files: clouds, transforms, volumes. */
#include "_core.h"

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

PyObject *py_read_cloud(PyObject *self, PyObject *args)
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

PyObject *py_write_cloud(PyObject *self, PyObject *args)
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
    size_t n;
    if (get_points_normals(xyz_obj, normals_obj, &xv, &nv, &n) < 0)
        return NULL;
    Py_buffer cv;
    size_t nc;
    if (get_rows(colors_obj, &cv, 'B', 3, 0, 1, "colors", &nc) < 0) {
        py_release(&xv), py_release(&nv);
        return NULL;
    }
    if (cv.obj && nc != n) {
        py_release(&xv), py_release(&nv), py_release(&cv);
        return PyErr_Format(ARG_ERROR, "colors: %zu rows for %zu points", nc, n);
    }
    ptreg_cloud c = {n,    xv.buf, nv.obj ? nv.buf : NULL, NULL, 0, {origin[0], origin[1], origin[2]},
                     NULL, NULL,   cv.obj ? cv.buf : NULL};
    ptreg_error err;
    ptreg_status st;
    WITHOUT_GIL(st = ptreg_cloud_write(path, &c, &wo, &err));
    py_release(&xv);
    py_release(&nv);
    py_release(&cv);
    if (st)
        return raise_ptreg(st, &err);
    Py_RETURN_NONE;
}

PyObject *py_read_transform(PyObject *self, PyObject *args)
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

PyObject *py_write_transform(PyObject *self, PyObject *args)
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
    PyObject *out = Py_BuildValue("(O(nnn)s(ddd)(ddd))", data, (Py_ssize_t)v->nx, (Py_ssize_t)v->ny, (Py_ssize_t)v->nz,
                                  ptreg_voxel_type_name(v->type), v->spacing[0], v->spacing[1], v->spacing[2],
                                  v->origin[0], v->origin[1], v->origin[2]);
    Py_DECREF(data);
    return out;
}

PyObject *py_read_volume(PyObject *self, PyObject *args)
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

PyObject *py_write_volume(PyObject *self, PyObject *args)
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
