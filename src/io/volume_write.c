/* Volume and keypoint writers: NRRD (attached, raw little-endian), NIfTI-1
 * (a single .nii, little-endian) and
 * keypoints as PLY or CSV, through the atomic file of ptreg/io.h. */
#include "ptreg/io.h"
#include "io/io_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NRRD's names for our voxel types. */
static const char *nrrd_type(ptreg_voxel_type type)
{
    static const char *const names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float", "double"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : NULL;
}

#define WRITE_CHUNK (1u << 16)

void io_write_le(FILE *f, const void *data, size_t count, size_t size)
{
    size_t n = count * size;
    const unsigned char *p = data;
    if (size == 1 || !io_host_big_endian()) {
        fwrite(p, 1, n, f);
        return;
    }
    unsigned char buf[WRITE_CHUNK];
    for (size_t at = 0; at < n; at += WRITE_CHUNK) {
        size_t len = n - at < WRITE_CHUNK ? n - at : WRITE_CHUNK;
        for (size_t i = 0; i < len; i += size)
            for (size_t b = 0; b < size; b++)
                buf[i + b] = p[at + i + size - 1 - b];
        fwrite(buf, 1, len, f);
    }
}

static ptreg_status write_nrrd(const char *path, const ptreg_volume *vol, ptreg_error *err)
{
    if (!vol || !vol->data || !nrrd_type(vol->type) || !ptreg_volume_count(vol))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no volume to write", path ? path : "NRRD");
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    FILE *f = af.fp;
    fprintf(f, "NRRD0004\n# written by ptreg %s\ntype: %s\ndimension: 3\nsizes: %zu %zu %zu\n", PTREG_VERSION_STRING,
            nrrd_type(vol->type), vol->nx, vol->ny, vol->nz);
    const double *sp = vol->spacing, *o = vol->origin;
    if (o[0] != 0 || o[1] != 0 || o[2] != 0)
        /* An origin needs a space; spacings and space directions exclude each other. */
        fprintf(f,
                "space dimension: 3\nspace directions: (%.17g,0,0) (0,%.17g,0) (0,0,%.17g)\n"
                "space origin: (%.17g,%.17g,%.17g)\n",
                sp[0], sp[1], sp[2], o[0], o[1], o[2]);
    else
        fprintf(f, "spacings: %.17g %.17g %.17g\n", sp[0], sp[1], sp[2]);
    fputs("endian: little\nencoding: raw\n\n", f);
    io_write_le(f, vol->data, ptreg_volume_count(vol), ptreg_voxel_size(vol->type));
    return ptreg_atomic_commit(&af, err);
}

/* NIfTI-1's datatype codes and bits per voxel for our voxel types. */
static const struct {
    int16_t code, bits;
} nifti_types[] = {{2, 8}, {256, 8}, {512, 16}, {4, 16}, {768, 32}, {8, 32}, {16, 32}, {64, 64}};

#define NIFTI_HEADER 348
#define NIFTI_DATA 352 /* the header and an empty extension block */

static void store_i16le(unsigned char *p, int v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)((v >> 8) & 0xff);
}

/* The 348-byte header (nifti1.h's layout, little-endian): sizes, type,
 * spacing, and the origin both as the qform's offsets and the sform's
 * translation (what the reader takes), axes aligned (no rotation). */
static void nifti_header(unsigned char h[NIFTI_DATA], const ptreg_volume *vol)
{
    memset(h, 0, NIFTI_DATA);
    h[0] = NIFTI_HEADER & 0xff;
    h[1] = NIFTI_HEADER >> 8;
    h[38] = 'r'; /* regular */
    const size_t n[3] = {vol->nx, vol->ny, vol->nz};
    store_i16le(h + 40, 3);
    for (int k = 0; k < 7; k++)
        store_i16le(h + 42 + 2 * k, k < 3 ? (int)n[k] : 1);
    store_i16le(h + 70, nifti_types[vol->type].code);
    store_i16le(h + 72, nifti_types[vol->type].bits);
    io_store_f32le(h + 76, 1.0f); /* qfac */
    for (int k = 0; k < 3; k++)
        io_store_f32le(h + 80 + 4 * k, (float)vol->spacing[k]);
    io_store_f32le(h + 108, (float)NIFTI_DATA);
    h[123] = 2; /* xyzt_units: millimetres */
    snprintf((char *)h + 148, 80, "written by ptreg %s", PTREG_VERSION_STRING);
    store_i16le(h + 252, 1); /* qform_code: scanner */
    store_i16le(h + 254, 1); /* sform_code */
    for (int k = 0; k < 3; k++) {
        io_store_f32le(h + 268 + 4 * k, (float)vol->origin[k]);
        io_store_f32le(h + 280 + 16 * k + 4 * k, (float)vol->spacing[k]);
        io_store_f32le(h + 280 + 16 * k + 12, (float)vol->origin[k]);
    }
    memcpy(h + 344, "n+1", 4);
}

static ptreg_status write_nifti(const char *path, const ptreg_volume *vol, ptreg_error *err)
{
    if (!vol || !vol->data || !nrrd_type(vol->type) || !ptreg_volume_count(vol))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no volume to write", path ? path : "NIfTI");
    if (vol->nx > INT16_MAX || vol->ny > INT16_MAX || vol->nz > INT16_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "%s: %zu x %zu x %zu voxels: NIfTI-1 sizes are at most 32767 (write NRRD)", path,
                               vol->nx, vol->ny, vol->nz);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    unsigned char h[NIFTI_DATA];
    nifti_header(h, vol);
    fwrite(h, 1, sizeof h, af.fp);
    io_write_le(af.fp, vol->data, ptreg_volume_count(vol), ptreg_voxel_size(vol->type));
    return ptreg_atomic_commit(&af, err);
}

static void physical(const ptreg_keypoint *k, const ptreg_volume *g, double out[3])
{
    const uint32_t idx[3] = {k->x, k->y, k->z};
    for (int a = 0; a < 3; a++)
        out[a] = g ? g->origin[a] + idx[a] * g->spacing[a] : idx[a];
}

static void write_keypoints_ply(FILE *f, const ptreg_keypoint *kp, size_t n, const ptreg_volume *g)
{
    fprintf(f,
            "ply\nformat binary_little_endian 1.0\ncomment written by ptreg %s: Harris keypoints\n"
            "element vertex %zu\nproperty float x\nproperty float y\nproperty float z\n"
            "property float score\nproperty int i\nproperty int j\nproperty int k\nend_header\n",
            PTREG_VERSION_STRING, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char rec[28];
        double p[3];
        physical(&kp[i], g, p);
        for (int a = 0; a < 3; a++)
            io_store_f32le(rec + 4 * a, (float)p[a]);
        io_store_f32le(rec + 12, kp[i].score);
        const uint32_t idx[3] = {kp[i].x, kp[i].y, kp[i].z};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 4; b++)
                rec[16 + 4 * a + b] = (unsigned char)(idx[a] >> (8 * b));
        fwrite(rec, 1, sizeof rec, f);
    }
}

static void write_keypoints_csv(FILE *f, const ptreg_keypoint *kp, size_t n, const ptreg_volume *g)
{
    fputs("x,y,z,score,i,j,k\n", f);
    for (size_t i = 0; i < n; i++) {
        double p[3];
        physical(&kp[i], g, p);
        fprintf(f, "%.9g,%.9g,%.9g,%.9g,%u,%u,%u\n", p[0], p[1], p[2], kp[i].score, (unsigned)kp[i].x,
                (unsigned)kp[i].y, (unsigned)kp[i].z);
    }
}

ptreg_status ptreg_keypoints_write(const char *path, const ptreg_keypoint *kp, size_t n, const ptreg_volume *geometry,
                                   ptreg_error *err)
{
    if (!path || (n && !kp))
        return ptreg_error_set(err, PTREG_ERR_ARG, "keypoints write: no path or no keypoints");
    int ply = io_has_extension(path, "ply");
    if (!ply && !io_has_extension(path, "csv") && !io_has_extension(path, "txt"))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: keypoints are written as .ply, .csv or .txt", path);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    if (ply)
        write_keypoints_ply(af.fp, kp, n, geometry);
    else
        write_keypoints_csv(af.fp, kp, n, geometry);
    return ptreg_atomic_commit(&af, err);
}

/* The extension picks the writer, never one format for the other's name:
 * the front ends (--scores, write_volume) name files by it. */
ptreg_status ptreg_volume_write(const char *path, const ptreg_volume *vol, ptreg_error *err)
{
    const size_t len = path ? strlen(path) : 0;
    const ptreg_volume_format f = ptreg_volume_format_from_path(path);
    const int nii = len > 4 && f == PTREG_VOLUME_NIFTI && path[len - 1] != 'z' && path[len - 1] != 'Z';
    const int nrrd = len > 5 && f == PTREG_VOLUME_NRRD && (path[len - 1] == 'd' || path[len - 1] == 'D');
    if (nii)
        return write_nifti(path, vol, err);
    if (nrrd)
        return write_nrrd(path, vol, err);
    return ptreg_error_set(err, PTREG_ERR_ARG, "%s: volumes are written as .nrrd or .nii", path ? path : "(null)");
}
