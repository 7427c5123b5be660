/* ptreg point-cloud I/O: PLY, PCD, XYZ/CSV/TXT, VTK legacy POLYDATA, and
 * 4x4 transform files. */
#ifndef PTREG_IO_H
#define PTREG_IO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_format {
    PTREG_FORMAT_AUTO = 0, /* by file extension: .ply .pcd .xyz .txt .csv .pts .vtk */
    PTREG_FORMAT_PLY,
    PTREG_FORMAT_PCD,
    PTREG_FORMAT_XYZ,      /* whitespace- or comma-separated text (.xyz .txt .csv .pts) */
    PTREG_FORMAT_VTK
} ptreg_format;

/* The format named by a path's extension (case-insensitive), or
 * PTREG_FORMAT_AUTO when the extension is unknown. */
ptreg_format ptreg_format_from_path(const char *path);
/* "ply", "pcd", "xyz", "vtk"; parses the same names (and "csv", "txt"). */
const char *ptreg_format_name(ptreg_format format);
ptreg_format ptreg_format_parse(const char *name);

/* Reads a cloud. Points with a non-finite coordinate (including the NaN
 * points of organised PCD clouds) are dropped and counted in
 * cloud->dropped_nonfinite; a file with no usable point left is
 * PTREG_ERR_FORMAT. On failure *cloud is left empty and err names the file
 * and the place (line or byte offset). */
ptreg_status ptreg_cloud_read(const char *path, ptreg_format format, ptreg_cloud *cloud,
                              ptreg_error *err);
/* The same from memory; name is used in messages (used by the fuzzers). */
ptreg_status ptreg_cloud_read_memory(const void *data, size_t size, ptreg_format format,
                                     const char *name, ptreg_cloud *cloud, ptreg_error *err);

typedef struct ptreg_write_options {
    ptreg_format format; /* AUTO: by extension, PLY when unknown */
    int ascii;           /* PLY and PCD: text instead of binary (default binary) */
    int with_normals;    /* write normals when the cloud has them (default 1) */
} ptreg_write_options;

void ptreg_write_options_default(ptreg_write_options *opt);
/* Writes atomically: to a temporary file in the same folder, then renamed
 * over path, so a failure leaves no partial file. */
ptreg_status ptreg_cloud_write(const char *path, const ptreg_cloud *cloud,
                               const ptreg_write_options *opt, ptreg_error *err);

/* A 4x4 transform file: 16 numbers (row-major, whitespace/comma separated,
 * '#' comments) or 12 (the top three rows). */
ptreg_status ptreg_transform_read(const char *path, double T[16], ptreg_error *err);
ptreg_status ptreg_transform_write(const char *path, const double T[16], ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
