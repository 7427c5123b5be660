/* XYZ / CSV / TXT / PTS reader: one point per line, x y z or x y z nx ny nz,
 * separated by blanks or commas. An optional header line (the first line
 * whose first field is not a number), blank lines and '#' comments are
 * skipped. Every data row must have as many columns as the first. */
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

#define XYZ_MAX_COLUMNS 6

typedef struct xyz_state {
    size_t columns;    /* of the first data row, 0 before it */
    size_t first_line; /* of the first data row */
    int header_seen;
    size_t cap;
} xyz_state;

/* Lines bound the rows: the count sizes the cloud in one allocation. */
static size_t count_lines(const io_in *in)
{
    size_t n = 1;
    const unsigned char *p = in->data, *end = in->data + in->size;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

static ptreg_status not_a_number(const io_in *in, size_t line, io_token tok)
{
    char q[IO_QUOTE_MAX];
    if (tok.len == 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, line, "empty field");
    return io_fail_line(in, PTREG_ERR_FORMAT, line, "'%s' is not a number", io_quote(tok, q));
}

/* Reads the fields of one row into v (the first XYZ_MAX_COLUMNS of them);
 * *columns counts them all. Sets *header, and stops, on the one header line
 * allowed before the data. */
static ptreg_status read_row(const io_in *in, io_text *t, xyz_state *st, double *v, size_t *columns,
                             int *header)
{
    io_token tok;
    size_t line = t->line, k = 0;
    *header = 0;
    for (; io_text_token(t, &tok); k++) {
        if (k >= XYZ_MAX_COLUMNS)
            continue; /* counted for the message */
        if (io_parse_coord(in, (int)k, tok, &v[k]))
            continue;
        if (k == 0 && tok.len > 0 && st->columns == 0 && !st->header_seen) {
            *header = 1;
            st->header_seen = 1;
            return PTREG_OK;
        }
        return not_a_number(in, line, tok);
    }
    *columns = k;
    return PTREG_OK;
}

static ptreg_status check_columns(const io_in *in, size_t line, xyz_state *st, size_t k,
                                  ptreg_cloud *cloud)
{
    if (st->columns == 0) {
        if (k != 3 && k != 6)
            return io_fail_line(in, PTREG_ERR_FORMAT, line,
                                "%zu columns; rows have 3 (x y z) or 6 (x y z nx ny nz)", k);
        st->columns = k;
        st->first_line = line;
        return k == 6 ? io_cloud_add_normals(in, cloud) : PTREG_OK;
    }
    if (k != st->columns)
        return io_fail_line(in, PTREG_ERR_FORMAT, line,
                            "%zu columns, but the first data row (line %zu) has %zu", k,
                            st->first_line, st->columns);
    return PTREG_OK;
}

ptreg_status io_read_xyz(const io_in *in, ptreg_cloud *cloud)
{
    xyz_state st = {0, 0, 0, count_lines(in)};
    in->cloud->wide = 1;
    io_text t;
    io_text_init(&t, in->data, in->size);
    t.commas = 1;
    t.comments = 1;
    ptreg_status s = io_cloud_reserve(in, cloud, st.cap, 0);
    while (s == PTREG_OK && io_text_skip_empty_lines(&t)) {
        double v[XYZ_MAX_COLUMNS] = {0};
        size_t k = 0, line = t.line;
        int header;
        s = read_row(in, &t, &st, v, &k, &header);
        if (s == PTREG_OK && !header)
            s = check_columns(in, line, &st, k, cloud);
        if (s == PTREG_OK && !header) {
            io_point p = {{v[0], v[1], v[2]}, {(float)v[3], (float)v[4], (float)v[5]}, 0, 0};
            s = io_cloud_store(in, cloud, &p);
        }
        io_text_next_line(&t);
    }
    return s == PTREG_OK ? io_cloud_finish(in, cloud, st.cap, 1, t.line) : s;
}
