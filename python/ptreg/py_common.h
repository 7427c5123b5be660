/* ptreg._core's private helpers, shared by its files (py_common.c). */
#ifndef PTREG_PY_COMMON_H
#define PTREG_PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/batch.h"
#include "ptreg/cpd.h"
#include "ptreg/emicp.h"
#include "ptreg/features.h"
#include "ptreg/global.h"
#include "ptreg/odometry.h"
#include "ptreg/harris3d.h"
#include "ptreg/io.h"
#include "ptreg/lddmm.h"
#include "ptreg/nn.h"
#include "ptreg/multiway.h"
#include "ptreg/report.h"
#include "ptreg/results.h"
#include "ptreg/track.h"
#include "ptreg/tune.h"

/* hidden: the extension exports PyInit__core alone */
#pragma GCC visibility push(hidden)

/* Runs stmt with the GIL released: the library never calls back into
 * Python. */
#define WITHOUT_GIL(stmt)            \
    do {                             \
        Py_BEGIN_ALLOW_THREADS stmt; \
        Py_END_ALLOW_THREADS         \
    } while (0)

/* The binding's own refusals of a value: ptreg.ArgumentError (a ValueError
 * too), as the library's, so that Python raises ptreg.Error subclasses only. */
#define ARG_ERROR error_types[PTREG_ERR_ARG]

typedef enum field_kind { F_INT, F_SIZE, F_DOUBLE, F_U64, F_ENUM, F_DEVICE, F_MAT16, F_VEC3 } field_kind;

/* Names an enum's value; 0 when known. */
typedef int (*enum_parse_fn)(const char *name, int *value);

typedef struct field {
    const char *name;
    field_kind kind;
    size_t offset;
    enum_parse_fn parse;
} field;

#define ENUM_FROM_NAMES(fn, ...)                                \
    static int fn(const char *name, int *value)                 \
    {                                                           \
        static const char *const names[] = {__VA_ARGS__, NULL}; \
        return parse_from_names(names, name, value);            \
    }

#define OPT(type, name, kind, member)            \
    {                                            \
        name, kind, offsetof(type, member), NULL \
    }
#define OPT_ENUM(type, name, member, parser)         \
    {                                                \
        name, F_ENUM, offsetof(type, member), parser \
    }

/* Two clouds and their optional normals: views (released by the caller
 * through release_pair) and the row counts. */
typedef struct cloud_pair {
    Py_buffer s, t, sn, tn;
    size_t ns, nt;
} cloud_pair;

/* py_common.c */
extern PyObject *error_base;
extern PyObject *error_types[PTREG_ERR_RUNTIME + 1];
PyObject *raise_ptreg(ptreg_status st, const ptreg_error *err);
int get_rows(PyObject *obj, Py_buffer *view, char format, size_t width, int writable, int allow_none, const char *what,
             size_t *rows);
void py_release(Py_buffer *view);
int set_doubles(PyObject *value, double *out, Py_ssize_t count, const char *name);
int apply_options(void *opt, const ptreg_option_table *table, const field *fields, PyObject *kwargs, const char *func);
int parse_from_names(const char *const *names, const char *name, int *value);
int py_put(PyObject *d, const char *key, PyObject *value);
PyObject *doubles_list(const double *v, size_t n);
PyObject *bytes_of(const void *data, size_t size);
int result_into(PyObject *d, const ptreg_result_table *table, const void *s);
int volume_view(PyObject *data, Py_ssize_t nx, Py_ssize_t ny, Py_ssize_t nz, const char *type_name, PyObject *spacing,
                PyObject *origin, Py_buffer *view, ptreg_volume *v);
void release_pair(cloud_pair *p);
/* A cloud's float32 points (n x 3) and its normals (n x 3, or None: nv->obj
 * NULL), views the caller releases; -1 with the error set, nothing held. */
int get_points_normals(PyObject *xyz, PyObject *normals, Py_buffer *xv, Py_buffer *nv, size_t *n);
int get_pair(PyObject *s, PyObject *t, size_t t_points, PyObject *sn, PyObject *tn, cloud_pair *p);
PyObject *variant_dict(const ptreg_tune_choice *c);
int get_matrix16(PyObject *obj, double T[16]);

#pragma GCC visibility pop

#endif /* PTREG_PY_COMMON_H */
