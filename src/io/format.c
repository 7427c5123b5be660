/* Format names, content sniffing and the read entry points: a file is read
 * into memory whole and handed to the same parser the fuzzers drive. */
#define _POSIX_C_SOURCE 200809L

#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    ptreg_format format;
} format_names[] = {
    {"ply", PTREG_FORMAT_PLY}, {"pcd", PTREG_FORMAT_PCD}, {"xyz", PTREG_FORMAT_XYZ},
    {"txt", PTREG_FORMAT_XYZ}, {"csv", PTREG_FORMAT_XYZ}, {"pts", PTREG_FORMAT_XYZ},
    {"vtk", PTREG_FORMAT_VTK},  {"pos", PTREG_FORMAT_POS}, {"epos", PTREG_FORMAT_EPOS},
};

static int same_nocase(const char *a, const char *b)
{
    io_token tok = {a, strlen(a)};
    return io_token_is_nocase(tok, b);
}

int ptreg_format_parse(const char *name, ptreg_format *format)
{
    for (size_t i = 0; name && i < sizeof format_names / sizeof format_names[0]; i++)
        if (same_nocase(name, format_names[i].name)) {
            *format = format_names[i].format;
            return 0;
        }
    return -1;
}

ptreg_format ptreg_format_from_path(const char *path)
{
    if (!path)
        return PTREG_FORMAT_AUTO;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    ptreg_format format = PTREG_FORMAT_AUTO;
    if (dot)
        ptreg_format_parse(dot + 1, &format);
    return format;
}

const char *ptreg_format_name(ptreg_format format)
{
    switch (format) {
    case PTREG_FORMAT_AUTO: return "auto";
    case PTREG_FORMAT_PLY: return "ply";
    case PTREG_FORMAT_PCD: return "pcd";
    case PTREG_FORMAT_XYZ: return "xyz";
    case PTREG_FORMAT_VTK: return "vtk";
    case PTREG_FORMAT_POS: return "pos";
    case PTREG_FORMAT_EPOS: return "epos";
    }
    return "unknown";
}

static int has_prefix(const unsigned char *d, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(d, prefix, k) == 0;
}

/* PCD files open with '#' comments (PCL writes "# .PCD v0.7 ...") and then
 * VERSION, or FIELDS when there is no VERSION. */
static int looks_like_pcd(const unsigned char *d, size_t n)
{
    while (n > 0 && d[0] == '#') {
        const unsigned char *nl = memchr(d, '\n', n);
        if (!nl)
            return 0;
        n -= (size_t)(nl + 1 - d);
        d = nl + 1;
    }
    return has_prefix(d, n, "VERSION") || has_prefix(d, n, "FIELDS");
}

static ptreg_format sniff(const unsigned char *d, size_t n)
{
    if (has_prefix(d, n, "ply\n") || has_prefix(d, n, "ply\r\n"))
        return PTREG_FORMAT_PLY;
    if (has_prefix(d, n, "# vtk DataFile"))
        return PTREG_FORMAT_VTK;
    if (looks_like_pcd(d, n))
        return PTREG_FORMAT_PCD;
    return PTREG_FORMAT_XYZ;
}

ptreg_status ptreg_cloud_read_memory(const void *data, size_t size, ptreg_format format,
                                     const char *name, ptreg_cloud *cloud, ptreg_error *err)
{
    io_in in = {data, size, name ? name : "<memory>", err};
    if (cloud)
        ptreg_cloud_init(cloud);
    if (!cloud || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no cloud or no data", in.name);
    if (size == 0)
        return io_fail_line(&in, PTREG_ERR_FORMAT, 1, "empty file");
    if (format == PTREG_FORMAT_AUTO)
        format = sniff(in.data, size);
    ptreg_status s;
    switch (format) {
    case PTREG_FORMAT_PLY: s = io_read_ply(&in, cloud); break;
    case PTREG_FORMAT_PCD: s = io_read_pcd(&in, cloud); break;
    case PTREG_FORMAT_XYZ: s = io_read_xyz(&in, cloud); break;
    case PTREG_FORMAT_VTK: s = io_read_vtk(&in, cloud); break;
    case PTREG_FORMAT_POS: s = io_read_apt_cloud(&in, PTREG_APT_POS, cloud); break;
    case PTREG_FORMAT_EPOS: s = io_read_apt_cloud(&in, PTREG_APT_EPOS, cloud); break;
    default:
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: unknown format %d", in.name, (int)format);
    }
    if (s != PTREG_OK)
        ptreg_cloud_free(cloud);
    return s;
}

ptreg_status ptreg_cloud_read(const char *path, ptreg_format format, ptreg_cloud *cloud,
                              ptreg_error *err)
{
    if (cloud)
        ptreg_cloud_init(cloud);
    if (!path || !cloud)
        return ptreg_error_set(err, PTREG_ERR_ARG, "cloud read: no path or no cloud");
    if (format == PTREG_FORMAT_AUTO)
        format = ptreg_format_from_path(path);
    unsigned char *data;
    size_t size;
    ptreg_status s = io_read_file(path, &data, &size, err);
    if (s != PTREG_OK)
        return s;
    s = ptreg_cloud_read_memory(data, size, format, path, cloud, err);
    free(data);
    return s;
}
