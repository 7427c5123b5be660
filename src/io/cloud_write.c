/* Writers: PLY (binary little-endian or ascii), PCD (binary or ascii) and
 * XYZ text. Text uses %.9g, enough digits for every float to read back
 * bit-exact. Output goes through the atomic file of ptreg/io.h, so a failed
 * write leaves nothing behind. */
#include "ptreg/io.h"
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

/* Points per fwrite of the binary writers. */
#define CHUNK_POINTS 1024

/* PLY and PCD carry the curvature next to the normals, as PCL's
 * PointNormal does; XYZ text never (its readers take 3 or 6 columns). */
static int with_curvature(const ptreg_cloud *cloud, int normals) { return normals && cloud->curvature != NULL; }

static void write_text_point(FILE *f, const ptreg_cloud *cloud, size_t i, char sep)
{
    const float *p = cloud->xyz + 3 * i;
    if (!io_has_origin(cloud)) {
        fprintf(f, "%.9g%c%.9g%c%.9g", p[0], sep, p[1], sep, p[2]);
        return;
    }
    char w[3][32];
    for (int k = 0; k < 3; k++)
        io_format_world(w[k], cloud->origin[k] + p[k]);
    fprintf(f, "%s%c%s%c%s", w[0], sep, w[1], sep, w[2]);
}

/* One point per line, values separated by sep (a blank; a comma in CSV). */
static void write_text_rows(FILE *f, const ptreg_cloud *cloud, int normals, int curvature, char sep)
{
    for (size_t i = 0; i < cloud->n; i++) {
        write_text_point(f, cloud, i, sep);
        if (normals) {
            const float *q = cloud->normals + 3 * i;
            fprintf(f, "%c%.9g%c%.9g%c%.9g", sep, q[0], sep, q[1], sep, q[2]);
        }
        if (curvature)
            fprintf(f, "%c%.9g", sep, cloud->curvature[i]);
        fputc('\n', f);
    }
}

/* Little-endian records, as PLY binary_little_endian and PCD binary (which
 * PCL writes in the host's order, little-endian in practice) both want:
 * float32, but x y z in float64 when the cloud has an origin. */
static void write_binary_rows(FILE *f, const ptreg_cloud *cloud, int normals, int curvature)
{
    unsigned char buf[CHUNK_POINTS * 10 * 4];
    const int world = io_has_origin(cloud);
    const size_t xyz_bytes = world ? 24 : 12;
    const size_t rec = xyz_bytes + (normals ? 12 : 0) + (curvature ? 4 : 0);
    for (size_t start = 0; start < cloud->n; start += CHUNK_POINTS) {
        size_t end = cloud->n - start < CHUNK_POINTS ? cloud->n : start + CHUNK_POINTS;
        unsigned char *o = buf;
        for (size_t i = start; i < end; i++, o += rec) {
            for (int c = 0; c < 3; c++) {
                if (world)
                    io_store_f64le(o + 8 * c, cloud->origin[c] + cloud->xyz[3 * i + c]);
                else
                    io_store_f32le(o + 4 * c, cloud->xyz[3 * i + c]);
                if (normals)
                    io_store_f32le(o + xyz_bytes + 4 * c, cloud->normals[3 * i + c]);
            }
            if (curvature)
                io_store_f32le(o + xyz_bytes + 12, cloud->curvature[i]);
        }
        fwrite(buf, 1, (size_t)(o - buf), f);
    }
}

void io_write_ply(FILE *f, const ptreg_cloud *cloud, int ascii, int normals)
{
    int curvature = with_curvature(cloud, normals);
    fprintf(f, "ply\nformat %s 1.0\ncomment written by ptreg %s\nelement vertex %zu\n",
            ascii ? "ascii" : "binary_little_endian", PTREG_VERSION_STRING, cloud->n);
    const char *xyz_type = io_has_origin(cloud) ? "double" : "float";
    fprintf(f, "property %s x\nproperty %s y\nproperty %s z\n", xyz_type, xyz_type, xyz_type);
    if (normals)
        fputs("property float nx\nproperty float ny\nproperty float nz\n", f);
    if (curvature)
        fputs("property float curvature\n", f);
    fputs("end_header\n", f);
    if (ascii)
        write_text_rows(f, cloud, normals, curvature, ' ');
    else
        write_binary_rows(f, cloud, normals, curvature);
}

void io_write_pcd(FILE *f, const ptreg_cloud *cloud, int ascii, int normals)
{
    int curvature = with_curvature(cloud, normals);
    fputs("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n", f);
    fprintf(f, "FIELDS x y z%s%s\n", normals ? " normal_x normal_y normal_z" : "", curvature ? " curvature" : "");
    fprintf(f, "SIZE %s%s%s\n", io_has_origin(cloud) ? "8 8 8" : "4 4 4", normals ? " 4 4 4" : "",
            curvature ? " 4" : "");
    fprintf(f, "TYPE F F F%s%s\n", normals ? " F F F" : "", curvature ? " F" : "");
    fprintf(f, "COUNT 1 1 1%s%s\n", normals ? " 1 1 1" : "", curvature ? " 1" : "");
    fprintf(f, "WIDTH %zu\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %zu\nDATA %s\n", cloud->n,
            cloud->n, ascii ? "ascii" : "binary");
    if (ascii)
        write_text_rows(f, cloud, normals, curvature, ' ');
    else
        write_binary_rows(f, cloud, normals, curvature);
}

void io_write_xyz(FILE *f, const ptreg_cloud *cloud, int normals, int csv)
{
    if (csv) /* what a spreadsheet or pandas expects: commas, and the columns named (the reader skips it) */
        fputs(normals ? "x,y,z,nx,ny,nz\n" : "x,y,z\n", f);
    write_text_rows(f, cloud, normals, 0, csv ? ',' : ' ');
}

void ptreg_write_options_default(ptreg_write_options *opt)
{
    opt->format = PTREG_FORMAT_AUTO;
    opt->ascii = 0;
    opt->with_normals = 1;
}

static ptreg_status check_write_args(const char *path, const ptreg_cloud *cloud,
                                     ptreg_format format, ptreg_error *err)
{
    if (!path || !cloud)
        return ptreg_error_set(err, PTREG_ERR_ARG, "cloud write: no path or no cloud");
    if (cloud->n && !cloud->xyz)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: the cloud has %zu points but no data", path,
                               cloud->n);
    if (format == PTREG_FORMAT_VTK || format == PTREG_FORMAT_EPOS)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: %s files are read, not written", path,
                               format == PTREG_FORMAT_VTK ? "VTK" : ".epos");
    if (format < PTREG_FORMAT_PLY || format > PTREG_FORMAT_LAS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: unknown format %d", path, (int)format);
    return PTREG_OK;
}

ptreg_status ptreg_cloud_write(const char *path, const ptreg_cloud *cloud,
                               const ptreg_write_options *opt, ptreg_error *err)
{
    ptreg_write_options defaults;
    ptreg_write_options_default(&defaults);
    if (!opt)
        opt = &defaults;
    ptreg_format format = opt->format;
    if (format == PTREG_FORMAT_AUTO && path)
        format = ptreg_format_from_path(path);
    if (format == PTREG_FORMAT_AUTO)
        format = PTREG_FORMAT_PLY;
    ptreg_status s = check_write_args(path, cloud, format, err);
    if (s != PTREG_OK)
        return s;
    if (format == PTREG_FORMAT_POS && io_has_origin(cloud))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "%s: .pos holds float32 coordinates: this cloud's (origin %.17g %.17g %.17g) would lose "
                               "their millimetres; write PLY, PCD or LAS",
                               path, cloud->origin[0], cloud->origin[1], cloud->origin[2]);
    if (format == PTREG_FORMAT_POS)
        return ptreg_apt_write_pos(path, cloud->xyz, NULL, cloud->n, err);
    int normals = opt->with_normals && cloud->normals != NULL;
    ptreg_atomic_file af;
    if ((s = ptreg_atomic_open(path, &af, err)) != PTREG_OK)
        return s;
    if (format == PTREG_FORMAT_LAS) {
        if ((s = io_write_las(af.fp, cloud, path, err)) != PTREG_OK) {
            ptreg_atomic_abort(&af);
            return s;
        }
    } else if (format == PTREG_FORMAT_PLY)
        io_write_ply(af.fp, cloud, opt->ascii, normals);
    else if (format == PTREG_FORMAT_PCD)
        io_write_pcd(af.fp, cloud, opt->ascii, normals);
    else
        io_write_xyz(af.fp, cloud, normals, io_has_extension(path, "csv"));
    return ptreg_atomic_commit(&af, err);
}
