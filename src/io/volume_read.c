/* Volume reading: formats by extension and content, and headerless raw
 * files (the voxel arrays every reader shares are binary.c's). */
#define _POSIX_C_SOURCE 200809L

#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "io/testing.h"

void ptreg_raw_options_default(ptreg_raw_options *opt)
{
    memset(opt, 0, sizeof *opt);
    for (int a = 0; a < 3; a++)
        opt->spacing[a] = 1.0;
}

static int ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

ptreg_volume_format ptreg_volume_format_from_path(const char *path)
{
    if (!path)
        return PTREG_VOLUME_AUTO;
    if (ends_with_nocase(path, ".nrrd") || ends_with_nocase(path, ".nhdr"))
        return PTREG_VOLUME_NRRD;
    if (ends_with_nocase(path, ".nii") || ends_with_nocase(path, ".nii.gz"))
        return PTREG_VOLUME_NIFTI;
    if (ends_with_nocase(path, ".raw"))
        return PTREG_VOLUME_RAW;
    return PTREG_VOLUME_AUTO;
}

const char *ptreg_volume_format_name(ptreg_volume_format format)
{
    switch (format) {
    case PTREG_VOLUME_AUTO: return "auto";
    case PTREG_VOLUME_RAW: return "raw";
    case PTREG_VOLUME_NRRD: return "nrrd";
    case PTREG_VOLUME_NIFTI: return "nifti";
    }
    return "unknown";
}

/* NAME_XxYxZ_TYPE.raw: the last "_" before the sizes, then "_TYPE". */
static int raw_from_name(const char *name, size_t dims[3], ptreg_voxel_type *type)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strrchr(base, '.');
    for (const char *p = strchr(base, '_'); p && (!dot || p < dot); p = strchr(p + 1, '_')) {
        char *end;
        const char *q = p + 1;
        int ok = 1;
        for (int a = 0; a < 3 && ok; a++) {
            if (*q < '0' || *q > '9')
                ok = 0;
            else {
                dims[a] = strtoull(q, &end, 10);
                q = end;
                if (a < 2)
                    ok = *q++ == 'x';
            }
        }
        if (!ok || *q != '_')
            continue;
        char tname[16];
        size_t len = dot ? (size_t)(dot - (q + 1)) : strlen(q + 1);
        if (len == 0 || len >= sizeof tname)
            continue;
        memcpy(tname, q + 1, len);
        tname[len] = 0;
        if (ptreg_voxel_type_parse(tname, type) == 0)
            return 1;
    }
    return 0;
}

ptreg_status io_read_raw_volume(const io_in *in, const ptreg_raw_options *raw, ptreg_volume *vol)
{
    ptreg_raw_options o;
    if (raw)
        o = *raw;
    else
        ptreg_raw_options_default(&o);
    size_t named[3];
    ptreg_voxel_type named_type;
    int from_name = raw_from_name(in->name, named, &named_type);
    if (!o.dims[0] || !o.dims[1] || !o.dims[2]) {
        if (!from_name)
            return ptreg_error_set(in->err, PTREG_ERR_ARG,
                                   "%s: a raw volume needs its sizes (--dims X,Y,Z) and type (--type), "
                                   "or a name like NAME_XxYxZ_TYPE.raw",
                                   in->name);
        memcpy(o.dims, named, sizeof named);
    }
    if (!o.type_set) {
        if (!from_name)
            return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: a raw volume needs its voxel type (--type)", in->name);
        o.type = named_type;
    }
    if (!o.dims[0] || !o.dims[1] || !o.dims[2])
        return io_fail_byte(in, PTREG_ERR_ARG, 0, "sizes %zu x %zu x %zu: each must be at least 1", o.dims[0],
                            o.dims[1], o.dims[2]);
    size_t bytes = 0;
    ptreg_status s = io_volume_bytes(in, o.dims, o.type, &bytes);
    if (s)
        return s;
    if (in->size != bytes)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size < bytes ? in->size : bytes,
                            "the file has %zu bytes, %zu x %zu x %zu voxels of %s need %zu", in->size, o.dims[0],
                            o.dims[1], o.dims[2], ptreg_voxel_type_name(o.type), bytes);
    if ((s = io_volume_from_bytes(in, in->data, o.dims, o.type, o.big_endian, vol)))
        return s;
    memcpy(vol->spacing, o.spacing, sizeof o.spacing);
    return PTREG_OK;
}

static int has_prefix(const unsigned char *d, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(d, prefix, k) == 0;
}

/* NRRD opens with its magic; NIfTI-1 with sizeof_hdr = 348 in either byte
 * order, or a gzip stream (.nii.gz). */
static ptreg_volume_format sniff(const unsigned char *d, size_t n)
{
    if (has_prefix(d, n, "NRRD000"))
        return PTREG_VOLUME_NRRD;
    if (has_prefix(d, n, "\x5c\x01\x00\x00") || has_prefix(d, n, "\x00\x00\x01\x5c") || has_prefix(d, n, "\x1f\x8b"))
        return PTREG_VOLUME_NIFTI;
    return PTREG_VOLUME_RAW;
}

static ptreg_status read_volume(const io_in *in, ptreg_volume_format format, const char *dir,
                                const ptreg_raw_options *raw, ptreg_volume *vol)
{
    if (format == PTREG_VOLUME_AUTO)
        format = sniff(in->data, in->size);
    switch (format) {
    case PTREG_VOLUME_RAW: return io_read_raw_volume(in, raw, vol);
    case PTREG_VOLUME_NRRD: return io_read_nrrd(in, dir, vol);
    case PTREG_VOLUME_NIFTI: return io_read_nifti(in, vol);
    default: break;
    }
    return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: unknown volume format %d", in->name, (int)format);
}

ptreg_status ptreg_volume_read_memory(const void *data, size_t size, ptreg_volume_format format, const char *name,
                                      const ptreg_raw_options *raw, ptreg_volume *vol, ptreg_error *err)
{
    io_in in = {data, size, name ? name : "<memory>", err, NULL};
    if (vol)
        ptreg_volume_init(vol);
    if (!vol || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no volume or no data", in.name);
    if (size == 0)
        return io_fail_byte(&in, PTREG_ERR_FORMAT, 0, "empty file");
    ptreg_status s = read_volume(&in, format, NULL, raw, vol);
    if (s)
        ptreg_volume_free(vol);
    return s;
}

/* The folder of path, with its trailing slash ("" for a bare name). */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    char *dir = malloc(n + 1);
    if (dir) {
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    return dir;
}

ptreg_status ptreg_volume_read(const char *path, ptreg_volume_format format, const ptreg_raw_options *raw,
                               ptreg_volume *vol, ptreg_error *err)
{
    if (vol)
        ptreg_volume_init(vol);
    if (!path || !vol)
        return ptreg_error_set(err, PTREG_ERR_ARG, "volume read: no path or no volume");
    if (format == PTREG_VOLUME_AUTO)
        format = ptreg_volume_format_from_path(path);
    unsigned char *data;
    size_t size;
    ptreg_status s = io_read_file(path, &data, &size, err);
    if (s)
        return s;
    char *dir = folder_of(path);
    io_in in = {data, size, path, err, NULL};
    if (!dir)
        s = ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", path);
    else if (size == 0)
        s = io_fail_byte(&in, PTREG_ERR_FORMAT, 0, "empty file");
    else
        s = read_volume(&in, format, dir, raw, vol);
    if (s)
        ptreg_volume_free(vol);
    free(dir);
    free(data);
    return s;
}
