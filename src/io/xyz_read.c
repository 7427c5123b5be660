/* XYZ / CSV / TXT / PTS reader: one point per line, separated by blanks or
 * commas; blank lines and '#' comments are skipped. A header line (the
 * first line whose first field is not a number) names the columns when it
 * has x, y and z among them (nx ny nz or normal_x ..., r g b or red green
 * blue, intensity; case ignored, CloudCompare's leading "//" too; other
 * columns are skipped); without one the count says: 3 x y z, 4 x y z
 * intensity, 6 x y z and normals or colours, told apart by their values.
 * Every data row must have as many columns as the first.
 * docs/FORMATS.md, "Text". */
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns a header can name; the rest of a wider row is skipped. */
#define XYZ_MAX_COLUMNS 64

enum { COL_SKIP = -1, COL_X, COL_Y, COL_Z, COL_NX, COL_NY, COL_NZ, COL_R, COL_G, COL_B, COL_I, COL_ROLES };

/* How far a normal's length may be from 1 for 6 headerless columns to be
 * taken as normals: text with %.9g keeps far more. */
#define UNIT_TOLERANCE 1e-3

static const struct {
    const char *name;
    int role;
} column_names[] = {
    {"x", COL_X},
    {"y", COL_Y},
    {"z", COL_Z},
    {"nx", COL_NX},
    {"ny", COL_NY},
    {"nz", COL_NZ},
    {"normal_x", COL_NX},
    {"normal_y", COL_NY},
    {"normal_z", COL_NZ},
    {"r", COL_R},
    {"g", COL_G},
    {"b", COL_B},
    {"red", COL_R},
    {"green", COL_G},
    {"blue", COL_B},
    {"intensity", COL_I},
    {"scalar_intensity", COL_I},
};

typedef struct xyz_state {
    size_t columns;    /* of the first data row, 0 before it */
    size_t first_line; /* of the first data row */
    int header_seen;
    int named;                 /* the header named the columns */
    int decided;               /* the columns' roles are known and their room allocated */
    int role[XYZ_MAX_COLUMNS]; /* each column's, when named or decided */
    int has[COL_ROLES];        /* which roles a column has */
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

/* ---- the header ---- */

static int column_role(io_token tok)
{
    if (tok.len >= 2 && tok.s[0] == '/' && tok.s[1] == '/') { /* CloudCompare's "//X,Y,Z" */
        tok.s += 2;
        tok.len -= 2;
    }
    if (tok.len >= 2 && tok.s[0] == '"' && tok.s[tok.len - 1] == '"') {
        tok.s++;
        tok.len -= 2;
    }
    for (size_t i = 0; i < sizeof column_names / sizeof column_names[0]; i++)
        if (io_token_is_nocase(tok, column_names[i].name))
            return column_names[i].role;
    return COL_SKIP;
}

/* A group of roles is all there or not at all. */
static ptreg_status check_group(const io_in *in, size_t line, const xyz_state *st, int first, const char *what)
{
    const int n = st->has[first] + st->has[first + 1] + st->has[first + 2];
    if (n == 0 || n == 3)
        return PTREG_OK;
    return io_fail_line(in, PTREG_ERR_FORMAT, line, "the header names some %s columns but not all three", what);
}

/* The header line: its names give the columns their roles when it names
 * x, y and z; a header of other names (a title) is skipped as before. */
static ptreg_status read_header(const io_in *in, io_text *t, xyz_state *st)
{
    io_token tok;
    const size_t line = t->line;
    char q[IO_QUOTE_MAX];
    size_t k = 0;
    int known = 0;
    for (; io_text_token(t, &tok); k++) {
        const int r = column_role(tok);
        if (k < XYZ_MAX_COLUMNS)
            st->role[k] = r;
        if (r == COL_SKIP || k >= XYZ_MAX_COLUMNS)
            continue;
        if (st->has[r])
            return io_fail_line(in, PTREG_ERR_FORMAT, line, "the header names column '%s' twice", io_quote(tok, q));
        st->has[r] = 1;
        known++;
    }
    if (!known) {
        memset(st->has, 0, sizeof st->has);
        return PTREG_OK;
    }
    for (int r = COL_X; r <= COL_Z; r++)
        if (!st->has[r])
            return io_fail_line(in, PTREG_ERR_FORMAT, line, "the header names no '%c' column", "xyz"[r]);
    ptreg_status s = check_group(in, line, st, COL_NX, "normal");
    if (s == PTREG_OK)
        s = check_group(in, line, st, COL_R, "colour");
    st->named = 1;
    st->columns = k;
    st->first_line = line;
    return s;
}

/* ---- six columns without a header: normals or colours ---- */

static int is_unit(const double n[3])
{
    if (isnan(n[0]) && isnan(n[1]) && isnan(n[2])) /* ptreg's writers give a point without a normal NaNs */
        return 1;
    return fabs(sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) - 1.0) <= UNIT_TOLERANCE;
}

static int is_color(const double c[3])
{
    for (int k = 0; k < 3; k++)
        if (!(c[k] >= 0.0 && c[k] <= 255.0 && c[k] == floor(c[k])))
            return 0;
    return 1;
}

/* Reads every row from t on (a copy: the real pass follows) and decides:
 * normals when every row's last three make a unit vector, else colours
 * when every row's are integers 0 to 255, else an error naming the rows
 * that rule each out. Rows that do not parse are left to the real pass. */
static ptreg_status decide_six(const io_in *in, io_text t, xyz_state *st)
{
    size_t not_unit = 0, not_color = 0;
    while (io_text_skip_empty_lines(&t) && !(not_unit && not_color)) {
        io_token tok;
        double v[6];
        size_t k = 0;
        const size_t line = t.line;
        while (k < 6 && io_text_token(&t, &tok) && io_parse_double(tok, &v[k]))
            k++;
        if (k == 6 && io_text_eol(&t)) {
            if (!not_unit && !is_unit(v + 3))
                not_unit = line;
            if (!not_color && !is_color(v + 3))
                not_color = line;
        }
        io_text_next_line(&t);
    }
    if (not_unit && not_color)
        return io_fail_line(in, PTREG_ERR_FORMAT, not_color,
                            "6 columns but neither normals (line %zu's are not a unit vector) nor colours (this "
                            "line's are not integers 0 to 255): give the file a header line such as "
                            "'x y z nx ny nz' or 'x y z r g b'",
                            not_unit);
    const int base = not_unit ? COL_R : COL_NX;
    for (int k = 0; k < 3; k++) {
        st->role[3 + k] = base + k;
        st->has[base + k] = 1;
    }
    return PTREG_OK;
}

/* ---- the rows ---- */

/* A colour value: an integer 0 to 255. */
static ptreg_status color_value(const io_in *in, size_t line, io_token tok, uint8_t *out)
{
    char q[IO_QUOTE_MAX];
    double v;
    if (!io_parse_double(tok, &v))
        return not_a_number(in, line, tok);
    if (!(v >= 0.0 && v <= 255.0 && v == floor(v)))
        return io_fail_line(in, PTREG_ERR_FORMAT, line, "colour '%s' is not an integer 0 to 255", io_quote(tok, q));
    *out = (uint8_t)v;
    return PTREG_OK;
}

/* One field of a row, by its column's role (positional x y z ... before
 * the first data row decides). */
static ptreg_status read_field(const io_in *in, size_t line, int role, io_token tok, io_point *p)
{
    double v;
    if (role == COL_SKIP)
        return PTREG_OK;
    if (role >= COL_R && role <= COL_B)
        return color_value(in, line, tok, &p->rgb[role - COL_R]);
    if (role <= COL_Z) {
        if (!io_parse_coord(in, role, tok, &p->xyz[role]))
            return not_a_number(in, line, tok);
        return PTREG_OK;
    }
    if (!io_parse_double(tok, &v))
        return not_a_number(in, line, tok);
    if (role == COL_I)
        p->intensity = io_intensity_u16(v);
    else
        p->normal[role - COL_NX] = (float)v;
    return PTREG_OK;
}

/* The role of column k: its own once the columns are known; before, x y
 * z and then a number that the count will decide about. */
static int role_of(const xyz_state *st, size_t k)
{
    if (k >= XYZ_MAX_COLUMNS || ((st->decided || st->named) && k >= st->columns))
        return COL_SKIP;
    if (st->decided || st->named)
        return st->role[k];
    return k < 3 ? (int)k : COL_I; /* parsed as a number, stored after the decision */
}

/* Reads the fields of one row into p; *columns counts them all. Sets
 * *header, and stops, on the one header line allowed before the data. */
static ptreg_status read_row(const io_in *in, io_text *t, xyz_state *st, io_point *p, size_t *columns, int *header)
{
    io_token tok;
    size_t line = t->line, k = 0;
    const io_text start = *t;
    *header = 0;
    for (; io_text_token(t, &tok); k++) {
        double v;
        if (k == 0 && !st->decided && !st->header_seen && tok.len > 0 && !io_parse_double(tok, &v)) {
            *header = 1;
            st->header_seen = 1;
            *t = start; /* the header's names from its first */
            return read_header(in, t, st);
        }
        ptreg_status s = read_field(in, line, role_of(st, k), tok, p);
        if (s != PTREG_OK)
            return s;
    }
    *columns = k;
    return PTREG_OK;
}

/* Allocates what the columns carry. */
static ptreg_status add_room(const io_in *in, const xyz_state *st, ptreg_cloud *cloud)
{
    ptreg_status s = PTREG_OK;
    if (st->has[COL_NX])
        s = io_cloud_add_normals(in, cloud);
    if (s == PTREG_OK && st->has[COL_R])
        s = io_cloud_add_colors(in, cloud);
    if (s == PTREG_OK && st->has[COL_I])
        s = io_cloud_add_intensity(in, cloud);
    return s;
}

/* Without a header the count gives the roles (6: decided by the values,
 * from the row at `row` on). */
static ptreg_status positional_roles(const io_in *in, size_t line, size_t k, const io_text *row, xyz_state *st)
{
    if (k != 3 && k != 4 && k != 6)
        return io_fail_line(in, PTREG_ERR_FORMAT, line,
                            "%zu columns; without a header line rows have 3 (x y z), 4 (x y z intensity) or 6 (x y "
                            "z nx ny nz, or x y z r g b): a header line names other columns",
                            k);
    for (int r = COL_X; r <= COL_Z; r++) {
        st->role[r] = r;
        st->has[r] = 1;
    }
    if (k == 4) {
        st->role[3] = COL_I;
        st->has[COL_I] = 1;
    }
    return k == 6 ? decide_six(in, *row, st) : PTREG_OK;
}

/* The first data row fixes the columns: the header's names, or the count. */
static ptreg_status decide(const io_in *in, size_t line, size_t k, const io_text *row, xyz_state *st,
                           ptreg_cloud *cloud)
{
    if (st->named && k != st->columns)
        return io_fail_line(in, PTREG_ERR_FORMAT, line, "%zu columns, but the header (line %zu) names %zu", k,
                            st->first_line, st->columns);
    ptreg_status s = st->named ? PTREG_OK : positional_roles(in, line, k, row, st);
    if (s != PTREG_OK)
        return s;
    if (!st->named)
        st->first_line = line;
    st->columns = k;
    st->decided = 1;
    return add_room(in, st, cloud);
}

ptreg_status io_read_xyz(const io_in *in, ptreg_cloud *cloud)
{
    xyz_state st;
    memset(&st, 0, sizeof st);
    st.cap = count_lines(in);
    in->cloud->wide = 1;
    io_text t;
    io_text_init(&t, in->data, in->size);
    t.commas = 1;
    t.comments = 1;
    ptreg_status s = io_cloud_reserve(in, cloud, st.cap, 0);
    while (s == PTREG_OK && io_text_skip_empty_lines(&t)) {
        io_point p;
        memset(&p, 0, sizeof p);
        const io_text row = t;
        size_t k = 0, line = t.line;
        int header;
        s = read_row(in, &t, &st, &p, &k, &header);
        if (s == PTREG_OK && !header && !st.decided) {
            s = decide(in, line, k, &row, &st, cloud);
            t = row; /* the first row again, now that its columns have roles */
            memset(&p, 0, sizeof p);
            if (s == PTREG_OK)
                s = read_row(in, &t, &st, &p, &k, &header);
        } else if (s == PTREG_OK && !header && k != st.columns)
            s = io_fail_line(in, PTREG_ERR_FORMAT, line, "%zu columns, but %s (line %zu) has %zu", k,
                             st.named ? "the header" : "the first data row", st.first_line, st.columns);
        if (s == PTREG_OK && !header)
            s = io_cloud_store(in, cloud, &p);
        io_text_next_line(&t);
    }
    return s == PTREG_OK ? io_cloud_finish(in, cloud, st.cap, 1, t.line) : s;
}
