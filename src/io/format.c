/* Format names, content sniffing and the read entry points: a file is read
 * into memory whole and handed to the same parser the fuzzers drive. */
#define _POSIX_C_SOURCE 200809L

#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>
#include "io/testing.h"

static const struct {
    const char *name;
    ptreg_format format;
} format_names
    [] =
        {
            {"ply", PTREG_FORMAT_PLY},   {"pcd", PTREG_FORMAT_PCD}, {"xyz", PTREG_FORMAT_XYZ},
            {"txt", PTREG_FORMAT_XYZ},   {"csv", PTREG_FORMAT_XYZ}, {"pts", PTREG_FORMAT_XYZ},
            {"vtk", PTREG_FORMAT_VTK},   {"pos", PTREG_FORMAT_POS}, {"epos", PTREG_FORMAT_EPOS},
            {"las", PTREG_FORMAT_LAS},   {"laz", PTREG_FORMAT_LAS}, /* the LAS reader refuses LAZ by its content */
            {"obj", PTREG_FORMAT_OBJ},   {"stl", PTREG_FORMAT_STL}, {"off", PTREG_FORMAT_OFF},
            {"bin", PTREG_FORMAT_KITTI},
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
    case PTREG_FORMAT_LAS: return "las";
    case PTREG_FORMAT_OBJ: return "obj";
    case PTREG_FORMAT_STL: return "stl";
    case PTREG_FORMAT_OFF: return "off";
    case PTREG_FORMAT_KITTI: return "bin";
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

/* OBJ files open with comments, then a statement: v, vn, vt, f, o, g,
 * s, mtllib or usemtl and a blank. */
static int looks_like_obj(const unsigned char *d, size_t n)
{
    static const char *const words[] = {"v ", "vn ", "vt ", "f ", "o ", "g ", "s ", "mtllib ", "usemtl "};
    while (n > 0 && (d[0] == '#' || d[0] == '\n' || d[0] == '\r')) {
        const unsigned char *nl = memchr(d, '\n', n);
        if (!nl)
            return 0;
        n -= (size_t)(nl + 1 - d);
        d = nl + 1;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (has_prefix(d, n, words[i]))
            return 1;
    return 0;
}

static ptreg_format sniff(const unsigned char *d, size_t n)
{
    if (has_prefix(d, n, "ply\n") || has_prefix(d, n, "ply\r\n"))
        return PTREG_FORMAT_PLY;
    if (has_prefix(d, n, "LASF"))
        return PTREG_FORMAT_LAS;
    if (has_prefix(d, n, "# vtk DataFile"))
        return PTREG_FORMAT_VTK;
    if (has_prefix(d, n, "OFF") || has_prefix(d, n, "COFF") || has_prefix(d, n, "NOFF"))
        return PTREG_FORMAT_OFF;
    if (has_prefix(d, n, "solid ") || has_prefix(d, n, "solid\n"))
        return PTREG_FORMAT_STL;
    if (looks_like_pcd(d, n))
        return PTREG_FORMAT_PCD;
    if (looks_like_obj(d, n))
        return PTREG_FORMAT_OBJ;
    return PTREG_FORMAT_XYZ;
}

void ptreg_read_options_default(ptreg_read_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->format = PTREG_FORMAT_AUTO;
    opt->origin_auto = 1;
}

static ptreg_status check_read_options(const io_in *in, ptreg_format format, const ptreg_read_options *opt)
{
    if (opt->classes && format != PTREG_FORMAT_LAS)
        return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: only LAS files have classes to keep (this is %s)", in->name,
                               ptreg_format_name(format));
    for (int k = 0; opt->crop && k < 3; k++)
        if (!(opt->crop_min[k] <= opt->crop_max[k]))
            return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: the crop box is empty along axis %c", in->name,
                                   "xyz"[k]);
    return PTREG_OK;
}

static ptreg_status parse_cloud(const io_in *in, ptreg_format format, ptreg_cloud *cloud)
{
    switch (format) {
    case PTREG_FORMAT_PLY: return io_read_ply(in, cloud);
    case PTREG_FORMAT_PCD: return io_read_pcd(in, cloud);
    case PTREG_FORMAT_XYZ: return io_read_xyz(in, cloud);
    case PTREG_FORMAT_VTK: return io_read_vtk(in, cloud);
    case PTREG_FORMAT_POS: return io_read_apt_cloud(in, PTREG_APT_POS, cloud);
    case PTREG_FORMAT_EPOS: return io_read_apt_cloud(in, PTREG_APT_EPOS, cloud);
    case PTREG_FORMAT_LAS: return io_read_las(in, cloud);
    case PTREG_FORMAT_OBJ: return io_read_obj(in, cloud);
    case PTREG_FORMAT_STL: return io_read_stl(in, cloud);
    case PTREG_FORMAT_OFF: return io_read_off(in, cloud);
    case PTREG_FORMAT_KITTI: return io_read_kitti(in, cloud);
    default: break;
    }
    return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: unknown format %d", in->name, (int)format);
}

/* The one way into every cloud reader: in->cloud carries the options and,
 * in pieces, where they go. */
static ptreg_status read_cloud(io_in *in, ptreg_format format, ptreg_cloud *cloud)
{
    if (in->size == 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "empty file");
    if (format == PTREG_FORMAT_AUTO)
        format = sniff(in->data, in->size);
    ptreg_status s = check_read_options(in, format, &in->cloud->opt);
    if (s == PTREG_OK)
        s = parse_cloud(in, format, cloud);
    if (s != PTREG_OK || in->cloud->piece)
        ptreg_cloud_free(cloud);
    return s;
}

static void state_init(io_cloud_state *st, const ptreg_read_options *opt)
{
    memset(st, 0, sizeof *st);
    if (opt)
        st->opt = *opt;
    else
        ptreg_read_options_default(&st->opt);
}

ptreg_status ptreg_cloud_read_memory_with(const void *data, size_t size, const ptreg_read_options *opt,
                                          const char *name, ptreg_cloud *cloud, ptreg_error *err)
{
    io_cloud_state st;
    state_init(&st, opt);
    io_in in = {data, size, name ? name : "<memory>", err, &st};
    if (cloud)
        ptreg_cloud_init(cloud);
    if (!cloud || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no cloud or no data", in.name);
    return read_cloud(&in, st.opt.format, cloud);
}

ptreg_status ptreg_cloud_read_memory(const void *data, size_t size, ptreg_format format, const char *name,
                                     ptreg_cloud *cloud, ptreg_error *err)
{
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.format = format;
    return ptreg_cloud_read_memory_with(data, size, &opt, name, cloud, err);
}

/* A file through its memory map (io_map_file), whole or in pieces. */
static ptreg_status read_file(const char *path, io_cloud_state *st, ptreg_cloud *cloud, ptreg_error *err)
{
    ptreg_format format = st->opt.format;
    if (format == PTREG_FORMAT_AUTO)
        format = ptreg_format_from_path(path);
    unsigned char *data;
    size_t size;
    ptreg_status s = io_map_file(path, &data, &size, &st->mapped, err);
    if (s != PTREG_OK)
        return s;
    io_in in = {data, size, path, err, st};
    s = read_cloud(&in, format, cloud);
    io_unmap_file(data, size, st->mapped);
    return s;
}

ptreg_status ptreg_cloud_read_with(const char *path, const ptreg_read_options *opt, ptreg_cloud *cloud,
                                   ptreg_error *err)
{
    if (cloud)
        ptreg_cloud_init(cloud);
    if (!path || !cloud)
        return ptreg_error_set(err, PTREG_ERR_ARG, "cloud read: no path or no cloud");
    io_cloud_state st;
    state_init(&st, opt);
    return read_file(path, &st, cloud, err);
}

ptreg_status ptreg_cloud_read(const char *path, ptreg_format format, ptreg_cloud *cloud, ptreg_error *err)
{
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.format = format;
    return ptreg_cloud_read_with(path, &opt, cloud, err);
}

ptreg_status ptreg_cloud_read_pieces(const char *path, const ptreg_read_options *opt, size_t piece,
                                     ptreg_cloud_piece_fn fn, void *ctx, ptreg_error *err)
{
    if (!path || !fn || piece == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "cloud read: no path, no function or pieces of 0 points");
    io_cloud_state st;
    state_init(&st, opt);
    st.piece = piece;
    st.fn = fn;
    st.ctx = ctx;
    ptreg_cloud work;
    ptreg_cloud_init(&work);
    return read_file(path, &st, &work, err);
}
