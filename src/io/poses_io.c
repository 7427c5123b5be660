/* Files of many poses and of index pairs (multiway registration's
 * outputs and inputs): text, '#' comments. A poses file is 16 numbers per
 * pose, row-major (four rows of four); a pairs file is two indices per
 * line. Written with %.17g, which reads back to the same doubles. */
#include "ptreg/io.h"
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include "io/testing.h"

/* A pose's last row must be 0 0 0 1 and its rotation orthonormal to 1e-6:
 * anything else is not a pose, and would be taken silently as one. */
static int is_rigid(const double T[16])
{
    if (T[12] != 0.0 || T[13] != 0.0 || T[14] != 0.0 || T[15] != 1.0)
        return 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double d = 0.0;
            for (int k = 0; k < 3; k++)
                d += T[4 * k + a] * T[4 * k + b];
            if (fabs(d - (a == b)) > 1e-6)
                return 0;
        }
    return 1;
}

static ptreg_status grow(const io_in *in, double **v, size_t *cap, size_t need)
{
    if (need <= *cap)
        return PTREG_OK;
    size_t c = *cap ? 2 * *cap : 64;
    while (c < need)
        c *= 2;
    double *nv = realloc(*v, c * sizeof *nv);
    if (!nv)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
    *v = nv, *cap = c;
    return PTREG_OK;
}

/* Every number of the text, each finite. */
static ptreg_status numbers_of(const io_in *in, double **out, size_t *n)
{
    io_text t;
    io_token tok;
    char q[IO_QUOTE_MAX];
    io_text_init(&t, in->data, in->size);
    t.commas = 1;
    t.comments = 1;
    double *v = NULL;
    size_t cap = 0, k = 0;
    for (; !io_text_eof(&t); io_text_next_line(&t))
        while (io_text_token(&t, &tok)) {
            ptreg_status st = grow(in, &v, &cap, k + 1);
            if (!st && !io_parse_double(tok, &v[k]))
                st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not a number", io_quote(tok, q));
            if (!st && !isfinite(v[k]))
                st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not finite", io_quote(tok, q));
            if (st) {
                free(v);
                return st;
            }
            k++;
        }
    *out = v, *n = k;
    return PTREG_OK;
}

static ptreg_status parse_poses(const io_in *in, double **poses, size_t *count)
{
    double *v;
    size_t n;
    ptreg_status st = numbers_of(in, &v, &n);
    if (st)
        return st;
    if (n == 0 || n % 16)
        st = ptreg_error_set(in->err, PTREG_ERR_FORMAT, "%s: %zu numbers: poses are 16 each (4 rows of 4)", in->name,
                             n);
    for (size_t i = 0; !st && i < n / 16; i++)
        if (!is_rigid(v + 16 * i))
            st = ptreg_error_set(in->err, PTREG_ERR_FORMAT,
                                 "%s: pose %zu is not rigid (an orthonormal rotation over 0 0 0 1)", in->name, i);
    if (st) {
        free(v);
        return st;
    }
    *poses = v, *count = n / 16;
    return PTREG_OK;
}

ptreg_status ptreg_poses_read(const char *path, double **poses, size_t *count, ptreg_error *err)
{
    unsigned char *data;
    size_t size;
    ptreg_status st = path ? io_read_file(path, &data, &size, err)
                           : ptreg_error_set(err, PTREG_ERR_ARG, "poses read: no path");
    if (st)
        return st;
    st = ptreg_poses_read_memory(data, size, path, poses, count, err);
    free(data);
    return st;
}

ptreg_status ptreg_poses_read_memory(const void *data, size_t size, const char *name, double **poses, size_t *count,
                                     ptreg_error *err)
{
    if ((!data && size) || !poses || !count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "poses read: no data or no output");
    io_in in = {data, size, name ? name : "(memory)", err, NULL};
    return parse_poses(&in, poses, count);
}

ptreg_status ptreg_poses_write(const char *path, const double *poses, size_t count, const char *const *labels,
                               ptreg_error *err)
{
    if (!path || (!poses && count))
        return ptreg_error_set(err, PTREG_ERR_ARG, "poses write: no path or no poses");
    for (size_t i = 0; i < 16 * count; i++)
        if (!isfinite(poses[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "%s: pose %zu has a non-finite entry", path, i / 16);
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    for (size_t i = 0; i < count; i++) {
        fprintf(af.fp, "# pose %zu%s%s\n", i, labels && labels[i] ? ": " : "", labels && labels[i] ? labels[i] : "");
        const double *T = poses + 16 * i;
        for (int r = 0; r < 4; r++)
            fprintf(af.fp, "%.17g %.17g %.17g %.17g\n", T[4 * r], T[4 * r + 1], T[4 * r + 2], T[4 * r + 3]);
    }
    return ptreg_atomic_commit(&af, err);
}

static ptreg_status parse_index_pairs(const io_in *in, size_t limit, size_t **pairs, size_t *count)
{
    io_text t;
    io_token tok;
    char q[IO_QUOTE_MAX];
    io_text_init(&t, in->data, in->size);
    t.commas = 1;
    t.comments = 1;
    size_t *v = NULL, cap = 0, k = 0;
    ptreg_status st = PTREG_OK;
    for (; !st && !io_text_eof(&t); io_text_next_line(&t)) {
        size_t on_line = 0;
        while (!st && io_text_token(&t, &tok)) {
            uint64_t x;
            if (on_line == 2)
                st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "more than two indices on a line");
            else if (!io_parse_u64(tok, &x))
                st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not an index", io_quote(tok, q));
            else if (x >= limit)
                st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "index %llu: there are %zu", (unsigned long long)x,
                                  limit);
            if (!st && k == cap) {
                size_t *nv = realloc(v, (cap ? 2 * cap : 64) * sizeof *nv);
                if (!nv)
                    st = ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
                else
                    v = nv, cap = cap ? 2 * cap : 64;
            }
            if (!st)
                v[k++] = (size_t)x, on_line++;
        }
        if (!st && on_line == 1)
            st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "one index: a pair is two");
        if (!st && on_line == 2 && v[k - 1] == v[k - 2])
            st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "a pair of index %zu with itself", v[k - 1]);
    }
    if (st) {
        free(v);
        return st;
    }
    *pairs = v, *count = k / 2;
    return PTREG_OK;
}

ptreg_status ptreg_index_pairs_read(const char *path, size_t limit, size_t **pairs, size_t *count, ptreg_error *err)
{
    unsigned char *data;
    size_t size;
    ptreg_status st = path ? io_read_file(path, &data, &size, err)
                           : ptreg_error_set(err, PTREG_ERR_ARG, "pairs read: no path");
    if (st)
        return st;
    st = ptreg_index_pairs_read_memory(data, size, path, limit, pairs, count, err);
    free(data);
    return st;
}

ptreg_status ptreg_index_pairs_read_memory(const void *data, size_t size, const char *name, size_t limit,
                                           size_t **pairs, size_t *count, ptreg_error *err)
{
    if ((!data && size) || !pairs || !count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pairs read: no data or no output");
    io_in in = {data, size, name ? name : "(memory)", err, NULL};
    return parse_index_pairs(&in, limit, pairs, count);
}
