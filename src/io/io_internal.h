/* Shared pieces of the point-cloud readers and writers: the input being
 * parsed, error messages that name the place, a text cursor that never reads
 * past the buffer, number scanning, binary scalar types and the last steps
 * every reader takes. Private to src/io. */
#ifndef PTREG_IO_INTERNAL_H
#define PTREG_IO_INTERNAL_H

#include "ptreg/apt.h"
#include "ptreg/io.h"

#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define IO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define IO_PRINTF(a, b)
#endif

/* The input of one read: a buffer that is not NUL-terminated, and the name
 * used in messages. */
typedef struct io_cloud_state io_cloud_state;
typedef struct io_in {
    const unsigned char *data;
    size_t size;
    const char *name;
    ptreg_error *err;
    io_cloud_state *cloud; /* cloud readers only: what io_cloud_store needs */
} io_in;

/* "NAME: line L: ..." and "NAME: byte B: ..." (line is 1-based, byte is the
 * 0-based offset from the start of the file). Return status. */
ptreg_status io_fail_line(const io_in *in, ptreg_status status, size_t line, const char *fmt, ...) IO_PRINTF(4, 5);
ptreg_status io_fail_byte(const io_in *in, ptreg_status status, size_t offset, const char *fmt, ...) IO_PRINTF(4, 5);

/* ---- text ---------------------------------------------------------------- */

/* A token: bytes of the input, not NUL-terminated. */
typedef struct io_token {
    const char *s;
    size_t len;
} io_token;

/* A cursor over text. Tokens are separated by blanks (space, tab, CR, VT,
 * FF); with commas set, one comma between tokens is a separator as well and
 * a second one makes an empty token; with comments set, a token starting
 * with '#' ends the line. A token never crosses a newline. */
typedef struct io_text {
    const char *p;   /* next unread byte */
    const char *end; /* one past the last byte */
    size_t line;     /* 1-based line of p */
    int commas;
    int comments;
} io_text;

void io_text_init(io_text *t, const void *data, size_t size);
/* 1 at the end of the input. */
int io_text_eof(const io_text *t);
/* The next token on the current line; 0 at the end of the line. */
int io_text_token(io_text *t, io_token *tok);
/* The next token on this line or a later one (for formats whose data runs
 * across lines freely); 0 at the end of the input. */
int io_text_next_token(io_text *t, io_token *tok);
/* 1 when nothing but blanks (or a comment) is left on the current line. */
int io_text_eol(io_text *t);
/* Moves to the start of the next line. */
void io_text_next_line(io_text *t);
/* Skips blank lines (and comment lines with t->comments); 0 at the end of
 * the input. */
int io_text_skip_empty_lines(io_text *t);
/* Fails with "unexpected 'TOKEN' after WHAT" when the line has more. */
ptreg_status io_text_no_more(const io_in *in, io_text *t, const char *after);
/* Bytes left from the cursor to the end. */
size_t io_text_left(const io_text *t);

int io_token_is(io_token tok, const char *word);
int io_token_is_nocase(io_token tok, const char *word);

/* Numbers. A token is a number only when the whole of it is one. Floats and
 * doubles use strtof/strtod, which follow LC_NUMERIC: the library relies on
 * the "C" locale that a program has unless it calls setlocale. */
int io_parse_float(io_token tok, float *out);
int io_parse_double(io_token tok, double *out);
/* A coordinate of an untyped text format: parsed as float, and again as
 * double when it is too large for float32 to keep a millimetre
 * (PTREG_ORIGIN_THRESHOLD) or the cloud has an origin on that axis, so
 * small clouds keep their float bits. */
int io_parse_coord(const io_in *in, int axis, io_token tok, double *out);
/* Decimal digits only, no sign; fails on overflow. */
int io_parse_u64(io_token tok, uint64_t *out);

/* A token made safe to quote in a message: printable ASCII, at most
 * IO_QUOTE_MAX - 1 bytes, "..." when cut. */
#define IO_QUOTE_MAX 40
const char *io_quote(io_token tok, char buf[IO_QUOTE_MAX]);

/* ---- binary scalars ------------------------------------------------------ */

typedef enum io_type { IO_I8, IO_U8, IO_I16, IO_U16, IO_I32, IO_U32, IO_I64, IO_U64, IO_F32, IO_F64 } io_type;

size_t io_type_size(io_type type);
int io_type_is_integer(io_type type);
/* A value of a typed field as double: float32 fields parsed as float (the
 * bits a float32 file means), the others as double. */
int io_parse_typed(io_token tok, io_type type, double *out);

/* The value at p (io_type_size(type) bytes, little- or big-endian). */
double io_load(const unsigned char *p, io_type type, int big_endian);
/* double -> float with IEEE rounding to +-inf instead of C's undefined
 * behaviour for values out of range. */
float io_to_float(double d);
/* The same as io_load, straight to float: exact for IO_F32. */
float io_load_float(const unsigned char *p, io_type type, int big_endian);
/* Little-endian float32 store, whatever the host's byte order. */
void io_store_f32le(unsigned char *p, float v);
void io_store_f64le(unsigned char *p, double v);

/* a * b into *out; 0 on overflow. */
int io_mul_size(size_t a, size_t b, size_t *out);

/* ---- clouds -------------------------------------------------------------- */

/* One read of a cloud: its options, the origin its first point chose and,
 * when it is read in pieces, where each full piece goes. */
struct io_cloud_state {
    ptreg_read_options opt;
    int wide; /* set by the reader: its coordinates carry more than float32 (double, text, LAS
                               * integers), so an origin can keep what they hold */
    int origin_decided;
    double origin[3]; /* the cloud's, once decided */
    size_t cap;       /* room in the cloud being filled */
    size_t piece;     /* 0: the whole cloud is kept */
    ptreg_cloud_piece_fn fn;
    void *ctx;
    size_t kept;          /* points handed to fn */
    size_t dropped;       /* non-finite points, every piece */
    int mapped;           /* in->data is a file's memory map: pages behind `pos` may go */
    size_t pos, released; /* bytes the reader has passed; bytes let go */
};

/* A point as a reader parsed it: world coordinates in double (the origin is
 * subtracted when it is stored) and what else the format has. */
typedef struct io_point {
    double xyz[3];
    float normal[3];
    uint16_t intensity;
    uint8_t classification;
    uint8_t rgb[3];
} io_point;

/* Room for cap points (at least one, at most a piece), n = 0. NOMEM names
 * the input. */
ptreg_status io_cloud_reserve(const io_in *in, ptreg_cloud *cloud, size_t cap, int normals);
/* Normals, or intensity and classification (only when the options ask for
 * attributes), for the room reserved. */
ptreg_status io_cloud_add_normals(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_cloud_add_attributes(const io_in *in, ptreg_cloud *cloud);
/* A format with an intensity but no classification (PLY, PCD, text): the
 * intensity alone, when the options ask for attributes. */
ptreg_status io_cloud_add_intensity(const io_in *in, ptreg_cloud *cloud);
/* Colours for the room reserved, unless the options skip them. */
ptreg_status io_cloud_add_colors(const io_in *in, ptreg_cloud *cloud);
/* A colour or intensity as a number of another type, into the kept range:
 * rounded to nearest and clamped (docs/FORMATS.md, "Colour and intensity"). */
uint8_t io_color_u8(double v, io_type type);
uint16_t io_intensity_u16(double v);
/* Appends a point: the first finite one decides the origin; points outside
 * the crop box or of a class not kept are skipped; a full piece goes to the
 * caller's function (whose failure is returned). */
ptreg_status io_cloud_store(const io_in *in, ptreg_cloud *cloud, const io_point *p);
/* A binary reader has passed byte pos: the memory map's pages before it
 * may be let go. */
static inline void io_cloud_at(const io_in *in, size_t pos) { in->cloud->pos = pos; }
/* The last step of every reader: drops points with a non-finite coordinate,
 * gives back unused room (hands the last piece on) and fails with "no
 * usable point" when none is left. is_line says how the place `at` is
 * shown (1: line, 0: byte). */
ptreg_status io_cloud_finish(const io_in *in, ptreg_cloud *cloud, size_t cap, int is_line, size_t at);

/* ---- readers and writers ------------------------------------------------- */

ptreg_status io_read_ply(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_pcd(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_xyz(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_vtk(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_las(const io_in *in, ptreg_cloud *cloud);
/* Mesh vertices (mesh_read.c). */
ptreg_status io_read_obj(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_stl(const io_in *in, ptreg_cloud *cloud);
ptreg_status io_read_off(const io_in *in, ptreg_cloud *cloud);
/* A KITTI velodyne scan (kitti_read.c). */
ptreg_status io_read_kitti(const io_in *in, ptreg_cloud *cloud);
/* A .pos or .epos reconstruction's positions as a cloud (apt_read.c). */
ptreg_status io_read_apt_cloud(const io_in *in, ptreg_apt_format format, ptreg_cloud *cloud);

/* Writers stream to f and leave error detection to the stream's error flag,
 * which the atomic commit checks. */
void io_write_ply(FILE *f, const ptreg_cloud *cloud, int ascii, int normals);
void io_write_pcd(FILE *f, const ptreg_cloud *cloud, int ascii, int normals);
/* csv: a header line and commas, else blanks and no header. */
void io_write_xyz(FILE *f, const ptreg_cloud *cloud, int normals, int csv);
/* KITTI .bin records (kitti_read.c): reflectance intensity / 65535, else 0. */
void io_write_kitti(FILE *f, const ptreg_cloud *cloud);
/* LAS 1.2 (las_write.c): fails on coordinates the format cannot hold. */
ptreg_status io_write_las(FILE *f, const ptreg_cloud *cloud, const char *path, ptreg_error *err);
/* Whether the cloud has an origin: its writers then write world coordinates
 * in double, the way to keep what the readers kept (io_cloud.c). */
int io_has_origin(const ptreg_cloud *cloud);
/* A world coordinate origin + v as the shortest text that reads back to
 * the same double (at most 17 significant digits). */
void io_format_world(char buf[32], double v);

/* ---- volumes ------------------------------------------------------------- */

/* Bytes of nx*ny*nz voxels of type; fails (naming the input) on overflow. */
ptreg_status io_volume_bytes(const io_in *in, const size_t dims[3], ptreg_voxel_type type, size_t *bytes);
int io_host_big_endian(void);
/* Allocates vol and fills it from the voxels at bytes (byte order as
 * given), converting to the host's order. */
ptreg_status io_volume_from_bytes(const io_in *in, const unsigned char *bytes, const size_t dims[3],
                                  ptreg_voxel_type type, int big_endian, ptreg_volume *vol);

/* Inflates the gzip (or zlib) stream of n bytes at src, which starts at
 * byte `offset` of the input, into out: up to out_size bytes. *produced
 * says how many came; *more (may be NULL) is set when the stream holds
 * more than out_size. Corrupt data fails, naming the input and offset. */
ptreg_status io_gunzip(const io_in *in, size_t offset, const unsigned char *src, size_t n, unsigned char *out,
                       size_t out_size, size_t *produced, int *more);
/* The most bytes n bytes of deflate data can expand to (deflate's
 * limit is 1032:1), so a size in a header can be checked before any
 * allocation. */
size_t io_gunzip_bound(size_t n);

/* dir: the folder of the header file, for detached data (NULL from
 * memory). */
ptreg_status io_read_nrrd(const io_in *in, const char *dir, ptreg_volume *vol);
ptreg_status io_read_nifti(const io_in *in, ptreg_volume *vol);
ptreg_status io_read_raw_volume(const io_in *in, const ptreg_raw_options *raw, ptreg_volume *vol);

/* Reads a whole file into a malloc'ed buffer (*data is never NULL on
 * success, even for an empty file). IO errors name the path. */
ptreg_status io_read_file(const char *path, unsigned char **data, size_t *size, ptreg_error *err);
/* A regular file mapped read-only (*mapped 1), anything else read into
 * memory (*mapped 0); io_unmap_file gives either back. */
ptreg_status io_map_file(const char *path, unsigned char **data, size_t *size, int *mapped, ptreg_error *err);
void io_unmap_file(unsigned char *data, size_t size, int mapped);
/* Lets a map's pages from *released up to the page holding byte upto go
 * (a reader that has passed them needs them no more), so that a file read
 * once is never resident whole beside what was read from it. */
void io_let_pages_go(const unsigned char *data, int mapped, size_t *released, size_t upto);

/* count values of `size` bytes in little-endian order (swapped a chunk at
 * a time on a big-endian host). */
void io_write_le(FILE *f, const void *data, size_t count, size_t size);

/* Whether the path's last extension is ext (case-insensitive, no dot). */
int io_has_extension(const char *path, const char *ext);

/* A volume's format from its file name's extension (.raw, .vol, .nrrd,
 * .nhdr, .nii, .nii.gz; any case): the volume readers and writer choose by it. */
ptreg_volume_format ptreg_volume_format_from_path(const char *path);

#endif
