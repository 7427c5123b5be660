/* Point descriptors (PFH, FPFH) to PCD, NumPy .npy and CSV. */
#include "ptreg/io.h"

#include <stdio.h>
#include <string.h>

#include "io/atomic.h"
#include "io/io_internal.h"

/* PCL's header for a cloud of one array field, as savePCDFileBinary writes
 * it for FPFHSignature33 (field "fpfh", COUNT 33). */
static void write_pcd(FILE *f, const float *v, size_t n, int bins, const char *field)
{
    fprintf(f,
            "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS %s\nSIZE 4\nTYPE F\nCOUNT %d\n"
            "WIDTH %zu\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %zu\nDATA binary\n",
            field, bins, n, n);
    io_write_le(f, v, n * (size_t)bins, sizeof *v);
}

/* NumPy format 1.0: magic, version, a little-endian header length, then a
 * Python dict literal padded with spaces to a multiple of 64 bytes and
 * ending in a newline. */
static void write_npy(FILE *f, const float *v, size_t n, int bins)
{
    char dict[128];
    int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %d), }", n, bins);
    size_t total = 10 + (size_t)len + 1, padded = (total + 63) / 64 * 64;
    size_t header = padded - 10;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(header & 0xff), f);
    fputc((int)(header >> 8), f);
    fwrite(dict, 1, (size_t)len, f);
    for (size_t i = total; i < padded; i++)
        fputc(' ', f);
    fputc('\n', f);
    io_write_le(f, v, n * (size_t)bins, sizeof *v);
}

static void write_csv(FILE *f, const float *v, size_t n, int bins)
{
    for (int b = 0; b < bins; b++)
        fprintf(f, "%sf%d", b ? "," : "", b);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        for (int b = 0; b < bins; b++) {
            float x = v[i * (size_t)bins + (size_t)b];
            if (x != x)
                fprintf(f, "%snan", b ? "," : "");
            else
                fprintf(f, "%s%.9g", b ? "," : "", (double)x);
        }
        fputc('\n', f);
    }
}

ptreg_status ptreg_descriptors_write(const char *path, const float *values, size_t n, int bins, const char *field,
                                     ptreg_error *err)
{
    if (!path || !field || !*field || (n && !values) || bins <= 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "descriptors write: no path, field or values");
    int pcd = io_has_extension(path, "pcd"), npy = io_has_extension(path, "npy");
    if (!pcd && !npy && !io_has_extension(path, "csv") && !io_has_extension(path, "txt"))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: descriptors are written as .pcd, .npy, .csv or .txt", path);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    if (pcd)
        write_pcd(af.fp, values, n, bins, field);
    else if (npy)
        write_npy(af.fp, values, n, bins);
    else
        write_csv(af.fp, values, n, bins);
    return ptreg_atomic_commit(&af, err);
}
