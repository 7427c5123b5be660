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

/* What a row holds beyond x y z, and how the format spells it. */
typedef struct row_layout {
    int normals, curvature, rgb, intensity;
    int pcd;  /* PCD: the colour packed in 4 bytes (PCL's rgb), the intensity float32 (PCL's PointXYZI) */
    char sep; /* text: between values */
} row_layout;

/* PLY and PCD carry the curvature next to the normals, as PCL's
 * PointNormal does; XYZ text never (its readers take 3 or 6 columns).
 * Colours and intensity go wherever the cloud has them. */
static row_layout layout_of(const ptreg_cloud *cloud, int normals, int curvature_too, int pcd)
{
    row_layout l = {normals,
                    curvature_too && normals && cloud->curvature != NULL,
                    cloud->rgb != NULL,
                    cloud->intensity != NULL,
                    pcd,
                    ' '};
    return l;
}

/* PCL's packed colour: 0xAARRGGBB, opaque. */
static uint32_t packed_rgb(const uint8_t *c)
{
    return 0xFF000000u | (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | (uint32_t)c[2];
}

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

/* Text rows, values separated by l->sep (a blank; a comma in CSV). PCD
 * ascii gives the packed colour as its integer, as PCL writes it (the
 * float would print opaque colours as NaN). */
static void write_text_rows(FILE *f, const ptreg_cloud *cloud, const row_layout *l)
{
    const char sep = l->sep;
    for (size_t i = 0; i < cloud->n; i++) {
        write_text_point(f, cloud, i, sep);
        if (l->normals) {
            const float *q = cloud->normals + 3 * i;
            fprintf(f, "%c%.9g%c%.9g%c%.9g", sep, q[0], sep, q[1], sep, q[2]);
        }
        if (l->curvature)
            fprintf(f, "%c%.9g", sep, cloud->curvature[i]);
        if (l->rgb && l->pcd)
            fprintf(f, "%c%u", sep, (unsigned)packed_rgb(cloud->rgb + 3 * i));
        else if (l->rgb)
            fprintf(f, "%c%u%c%u%c%u", sep, cloud->rgb[3 * i], sep, cloud->rgb[3 * i + 1], sep, cloud->rgb[3 * i + 2]);
        if (l->intensity)
            fprintf(f, "%c%u", sep, (unsigned)cloud->intensity[i]);
        fputc('\n', f);
    }
}

static size_t record_bytes(const ptreg_cloud *cloud, const row_layout *l)
{
    return (io_has_origin(cloud) ? 24 : 12) + (l->normals ? 12 : 0) + (l->curvature ? 4 : 0) +
           (l->rgb ? (l->pcd ? 4 : 3) : 0) + (l->intensity ? (l->pcd ? 4 : 2) : 0);
}

/* One record: float32, but x y z in float64 when the cloud has an origin;
 * the colour as PLY's three uchar or PCD's packed 4 bytes; the intensity as
 * PLY's ushort or PCD's float32. */
static void put_record(unsigned char *o, const ptreg_cloud *cloud, const row_layout *l, size_t i)
{
    const int world = io_has_origin(cloud);
    for (int c = 0; c < 3; c++, o += world ? 8 : 4)
        if (world)
            io_store_f64le(o, cloud->origin[c] + cloud->xyz[3 * i + c]);
        else
            io_store_f32le(o, cloud->xyz[3 * i + c]);
    for (int c = 0; l->normals && c < 3; c++, o += 4)
        io_store_f32le(o, cloud->normals[3 * i + c]);
    if (l->curvature) {
        io_store_f32le(o, cloud->curvature[i]);
        o += 4;
    }
    if (l->rgb && l->pcd) {
        const uint32_t v = packed_rgb(cloud->rgb + 3 * i);
        for (int b = 0; b < 4; b++)
            *o++ = (unsigned char)(v >> (8 * b));
    } else if (l->rgb) {
        memcpy(o, cloud->rgb + 3 * i, 3);
        o += 3;
    }
    if (l->intensity && l->pcd)
        io_store_f32le(o, (float)cloud->intensity[i]);
    else if (l->intensity) {
        o[0] = (unsigned char)cloud->intensity[i];
        o[1] = (unsigned char)(cloud->intensity[i] >> 8);
    }
}

/* Little-endian records, as PLY binary_little_endian and PCD binary (which
 * PCL writes in the host's order, little-endian in practice) both want. */
static void write_binary_rows(FILE *f, const ptreg_cloud *cloud, const row_layout *l)
{
    unsigned char buf[CHUNK_POINTS * 64];
    const size_t rec = record_bytes(cloud, l);
    for (size_t start = 0; start < cloud->n; start += CHUNK_POINTS) {
        size_t end = cloud->n - start < CHUNK_POINTS ? cloud->n : start + CHUNK_POINTS;
        unsigned char *o = buf;
        for (size_t i = start; i < end; i++, o += rec)
            put_record(o, cloud, l, i);
        fwrite(buf, 1, (size_t)(o - buf), f);
    }
}

void io_write_ply(FILE *f, const ptreg_cloud *cloud, int ascii, int normals)
{
    const row_layout l = layout_of(cloud, normals, 1, 0);
    fprintf(f, "ply\nformat %s 1.0\ncomment written by ptreg %s\nelement vertex %zu\n",
            ascii ? "ascii" : "binary_little_endian", PTREG_VERSION_STRING, cloud->n);
    const char *xyz_type = io_has_origin(cloud) ? "double" : "float";
    fprintf(f, "property %s x\nproperty %s y\nproperty %s z\n", xyz_type, xyz_type, xyz_type);
    if (l.normals)
        fputs("property float nx\nproperty float ny\nproperty float nz\n", f);
    if (l.curvature)
        fputs("property float curvature\n", f);
    if (l.rgb)
        fputs("property uchar red\nproperty uchar green\nproperty uchar blue\n", f);
    if (l.intensity)
        fputs("property ushort intensity\n", f);
    fputs("end_header\n", f);
    if (ascii)
        write_text_rows(f, cloud, &l);
    else
        write_binary_rows(f, cloud, &l);
}

void io_write_pcd(FILE *f, const ptreg_cloud *cloud, int ascii, int normals)
{
    const row_layout l = layout_of(cloud, normals, 1, 1);
    fputs("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n", f);
    fprintf(f, "FIELDS x y z%s%s%s%s\n", l.normals ? " normal_x normal_y normal_z" : "",
            l.curvature ? " curvature" : "", l.rgb ? " rgb" : "", l.intensity ? " intensity" : "");
    fprintf(f, "SIZE %s%s%s%s%s\n", io_has_origin(cloud) ? "8 8 8" : "4 4 4", l.normals ? " 4 4 4" : "",
            l.curvature ? " 4" : "", l.rgb ? " 4" : "", l.intensity ? " 4" : "");
    fprintf(f, "TYPE F F F%s%s%s%s\n", l.normals ? " F F F" : "", l.curvature ? " F" : "", l.rgb ? " F" : "",
            l.intensity ? " F" : "");
    fprintf(f, "COUNT 1 1 1%s%s%s%s\n", l.normals ? " 1 1 1" : "", l.curvature ? " 1" : "", l.rgb ? " 1" : "",
            l.intensity ? " 1" : "");
    fprintf(f, "WIDTH %zu\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %zu\nDATA %s\n", cloud->n, cloud->n,
            ascii ? "ascii" : "binary");
    if (ascii)
        write_text_rows(f, cloud, &l);
    else
        write_binary_rows(f, cloud, &l);
}

/* A header line names the columns when there is more than x y z, and
 * always in CSV (what a spreadsheet or pandas expects), so that a reader
 * never has to guess (docs/FORMATS.md, "Text"). */
void io_write_xyz(FILE *f, const ptreg_cloud *cloud, int normals, int csv)
{
    row_layout l = layout_of(cloud, normals, 0, 0);
    l.sep = csv ? ',' : ' ';
    if (csv || l.normals || l.rgb || l.intensity) {
        static const char *const names[] = {"x", "y", "z", "nx", "ny", "nz", "r", "g", "b", "intensity"};
        const int on[] = {1, 1, 1, l.normals, l.normals, l.normals, l.rgb, l.rgb, l.rgb, l.intensity};
        for (int k = 0; k < 10; k++) {
            if (!on[k])
                continue;
            if (k)
                fputc(l.sep, f);
            fputs(names[k], f);
        }
        fputc('\n', f);
    }
    write_text_rows(f, cloud, &l);
}

int ptreg_format_holds_normals(ptreg_format format)
{
    return format == PTREG_FORMAT_PLY || format == PTREG_FORMAT_PCD || format == PTREG_FORMAT_XYZ ||
           format == PTREG_FORMAT_AUTO;
}

void ptreg_write_options_default(ptreg_write_options *opt)
{
    opt->format = PTREG_FORMAT_AUTO;
    opt->ascii = 0;
    opt->with_normals = 1;
}

static ptreg_status check_write_args(const char *path, const ptreg_cloud *cloud, ptreg_format format, ptreg_error *err)
{
    if (!path || !cloud)
        return ptreg_error_set(err, PTREG_ERR_ARG, "cloud write: no path or no cloud");
    if (cloud->n && !cloud->xyz)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: the cloud has %zu points but no data", path, cloud->n);
    if (format == PTREG_FORMAT_VTK || format == PTREG_FORMAT_EPOS)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: %s files are read, not written", path,
                               format == PTREG_FORMAT_VTK ? "VTK" : ".epos");
    if (format == PTREG_FORMAT_OBJ || format == PTREG_FORMAT_STL || format == PTREG_FORMAT_OFF)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "%s: %s meshes are read (their vertices), not written: write PLY, PCD, text or LAS",
                               path, ptreg_format_name(format));
    if ((format < PTREG_FORMAT_PLY || format > PTREG_FORMAT_LAS) && format != PTREG_FORMAT_KITTI)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: unknown format %d", path, (int)format);
    return PTREG_OK;
}

ptreg_status ptreg_cloud_write(const char *path, const ptreg_cloud *cloud, const ptreg_write_options *opt,
                               ptreg_error *err)
{
    ptreg_write_options defaults;
    ptreg_write_options_default(&defaults);
    if (!opt)
        opt = &defaults;
    ptreg_format format = opt->format;
    if (format == PTREG_FORMAT_AUTO && path)
        format = ptreg_format_from_path(path);
    if (format == PTREG_FORMAT_AUTO) /* never another format than the name says (issue 47) */
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "%s: no cloud format ptreg writes has that extension (.ply, .pcd, .xyz, .txt, .csv, "
                               ".pts, .las, .pos, .bin), and none was named",
                               path ? path : "(no path)");
    ptreg_status s = check_write_args(path, cloud, format, err);
    if (s != PTREG_OK)
        return s;
    if ((format == PTREG_FORMAT_POS || format == PTREG_FORMAT_KITTI) && io_has_origin(cloud))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "%s: %s holds float32 coordinates: this cloud's (origin %.17g %.17g %.17g) would lose "
                               "their millimetres; write PLY, PCD or LAS",
                               path, format == PTREG_FORMAT_KITTI ? "KITTI .bin" : ".pos", cloud->origin[0],
                               cloud->origin[1], cloud->origin[2]);
    int normals = opt->with_normals && cloud->normals != NULL;
    if (normals && !ptreg_format_holds_normals(format))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "%s: %s files cannot hold normals: write PLY, PCD or text (.xyz .txt .csv .pts), "
                               "or drop the normals",
                               path,
                               format == PTREG_FORMAT_LAS     ? "LAS"
                               : format == PTREG_FORMAT_KITTI ? "KITTI .bin"
                                                              : "atom probe .pos");
    if (format == PTREG_FORMAT_POS)
        return ptreg_apt_write_pos(path, cloud->xyz, NULL, cloud->n, err);
    ptreg_atomic_file af;
    if ((s = ptreg_atomic_open(path, &af, err)) != PTREG_OK)
        return s;
    if (format == PTREG_FORMAT_LAS) {
        if ((s = io_write_las(af.fp, cloud, path, err)) != PTREG_OK) {
            ptreg_atomic_abort(&af);
            return s;
        }
    } else if (format == PTREG_FORMAT_KITTI)
        io_write_kitti(af.fp, cloud);
    else if (format == PTREG_FORMAT_PLY)
        io_write_ply(af.fp, cloud, opt->ascii, normals);
    else if (format == PTREG_FORMAT_PCD)
        io_write_pcd(af.fp, cloud, opt->ascii, normals);
    else
        io_write_xyz(af.fp, cloud, normals, io_has_extension(path, "csv"));
    return ptreg_atomic_commit(&af, err);
}
