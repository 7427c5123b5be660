/* Point descriptors (PFH, FPFH) to PCD, NumPy .npy and CSV. */
#include "ptreg/io.h"

#include <stdio.h>
#include <string.h>

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
    if (npy)
        return ptreg_npy_write(path, PTREG_NPY_F32, values, n, (size_t)bins, err);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    if (pcd)
        write_pcd(af.fp, values, n, bins, field);
    else
        write_csv(af.fp, values, n, bins);
    return ptreg_atomic_commit(&af, err);
}
