/* NumPy .npy arrays (format 1.0): the header alone (for writers that place
 * rows themselves, as MPI-IO does) and whole 2-D arrays. */
#include "ptreg/io.h"

#include <stdio.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/testing.h"

static const char *npy_descr(ptreg_npy_type type)
{
    switch (type) {
    case PTREG_NPY_F32: return "<f4";
    case PTREG_NPY_F64: return "<f8";
    case PTREG_NPY_I32: return "<i4";
    case PTREG_NPY_U8: return "|u1";
    }
    return NULL;
}

size_t ptreg_npy_type_size(ptreg_npy_type type)
{
    switch (type) {
    case PTREG_NPY_F32: return 4;
    case PTREG_NPY_F64: return 8;
    case PTREG_NPY_I32: return 4;
    case PTREG_NPY_U8: return 1;
    }
    return 0;
}

/* Magic, version, a little-endian header length, then a Python dict
 * literal padded with spaces to a multiple of 64 bytes and ending in a
 * newline. */
size_t ptreg_npy_header(ptreg_npy_type type, size_t rows, size_t cols, char buf[PTREG_NPY_HEADER_MAX])
{
    char dict[PTREG_NPY_HEADER_MAX];
    const int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
                             npy_descr(type), rows, cols);
    const size_t total = 10 + (size_t)len + 1, padded = (total + 63) / 64 * 64, header = padded - 10;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(header & 0xff);
    buf[9] = (char)(header >> 8);
    memcpy(buf + 10, dict, (size_t)len);
    memset(buf + 10 + len, ' ', padded - total);
    buf[padded - 1] = '\n';
    return padded;
}

ptreg_status ptreg_npy_write(const char *path, ptreg_npy_type type, const void *data, size_t rows, size_t cols,
                             ptreg_error *err)
{
    if (!path || !npy_descr(type) || (rows && cols && !data))
        return ptreg_error_set(err, PTREG_ERR_ARG, "npy write: no path, type or data");
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    char header[PTREG_NPY_HEADER_MAX];
    fwrite(header, 1, ptreg_npy_header(type, rows, cols, header), af.fp);
    io_write_le(af.fp, data, rows * cols, ptreg_npy_type_size(type));
    return ptreg_atomic_commit(&af, err);
}
