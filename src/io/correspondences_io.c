/* Correspondence files (docs/FORMATS.md, "Correspondence files"): one pair
 * per line, "SOURCE TARGET" or "SOURCE TARGET WEIGHT" (0-based point
 * indices, Open3D's correspondence_set with an optional weight), '#'
 * comments, spaces or commas. ptreg correspond reads them, ptreg evaluate
 * writes them. */
#include "ptreg/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/testing.h"

typedef struct pair_lists {
    uint32_t *source, *target;
    double *weight;
    size_t count, cap;
} pair_lists;

static void lists_free(pair_lists *p)
{
    free(p->source), free(p->target), free(p->weight);
    memset(p, 0, sizeof *p);
}

static ptreg_status lists_push(const io_in *in, pair_lists *p, const uint64_t ij[2], double w)
{
    if (p->count == p->cap) {
        const size_t cap = p->cap ? 2 * p->cap : 256;
        uint32_t *s = realloc(p->source, cap * sizeof *s);
        if (s)
            p->source = s;
        uint32_t *t = s ? realloc(p->target, cap * sizeof *t) : NULL;
        if (t)
            p->target = t;
        double *wv = t ? realloc(p->weight, cap * sizeof *wv) : NULL;
        if (!wv)
            return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
        p->weight = wv, p->cap = cap;
    }
    p->source[p->count] = (uint32_t)ij[0], p->target[p->count] = (uint32_t)ij[1], p->weight[p->count] = w;
    p->count++;
    return PTREG_OK;
}

/* One line's pair (*on_line 0 for a blank or comment line): its columns
 * into *columns (2 or 3), the first pair's count required of every other. */
static ptreg_status parse_line(const io_in *in, io_text *t, const size_t limit[2], int *columns, uint64_t ij[2],
                               double *w, int *on_line_out)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    int on_line = 0;
    *on_line_out = 0;
    *w = 1.0;
    while (io_text_token(t, &tok)) {
        if (on_line == 3)
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "more than three columns (source, target, weight)");
        if (on_line < 2) {
            if (!io_parse_u64(tok, &ij[on_line]))
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a point index", io_quote(tok, q));
            if (ij[on_line] >= limit[on_line])
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s index %llu: the %s has %zu points",
                                    on_line ? "target" : "source", (unsigned long long)ij[on_line],
                                    on_line ? "target" : "source", limit[on_line]);
        } else if (!io_parse_double(tok, w) || !(*w >= 0.0) || !isfinite(*w)) {
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "weight '%s' is not a number >= 0", io_quote(tok, q));
        }
        on_line++;
    }
    if (on_line == 1)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "one index: a pair is a source and a target index");
    if (on_line && *columns && on_line != *columns)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%d columns where the first pair has %d", on_line, *columns);
    if (on_line)
        *columns = on_line;
    *on_line_out = on_line;
    return PTREG_OK;
}

ptreg_status ptreg_correspondences_read_memory(const void *data, size_t size, const char *name, size_t ns, size_t nt,
                                               uint32_t **source, uint32_t **target, double **weights, size_t *count,
                                               ptreg_error *err)
{
    if ((!data && size) || !source || !target || !count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "correspondences read: no data or no output");
    io_in in = {data, size, name ? name : "(memory)", err, NULL};
    io_text t;
    io_text_init(&t, in.data, in.size);
    t.commas = 1;
    t.comments = 1;
    const size_t limit[2] = {ns > UINT32_MAX ? UINT32_MAX : ns, nt > UINT32_MAX ? UINT32_MAX : nt};
    pair_lists p = {0};
    int columns = 0;
    ptreg_status st = PTREG_OK;
    for (; !st && !io_text_eof(&t); io_text_next_line(&t)) {
        uint64_t ij[2];
        double w;
        int on_line;
        st = parse_line(&in, &t, limit, &columns, ij, &w, &on_line);
        if (!st && on_line)
            st = lists_push(&in, &p, ij, w);
    }
    if (!st && p.count == 0)
        st = ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no correspondences", in.name);
    if (st) {
        lists_free(&p);
        return st;
    }
    *source = p.source, *target = p.target, *count = p.count;
    if (weights && columns == 3)
        *weights = p.weight;
    else {
        free(p.weight);
        if (weights)
            *weights = NULL;
    }
    return PTREG_OK;
}

ptreg_status ptreg_correspondences_read(const char *path, size_t ns, size_t nt, uint32_t **source, uint32_t **target,
                                        double **weights, size_t *count, ptreg_error *err)
{
    unsigned char *data;
    size_t size;
    ptreg_status st = path ? io_read_file(path, &data, &size, err)
                           : ptreg_error_set(err, PTREG_ERR_ARG, "correspondences read: no path");
    if (st)
        return st;
    st = ptreg_correspondences_read_memory(data, size, path, ns, nt, source, target, weights, count, err);
    free(data);
    return st;
}

ptreg_status ptreg_correspondences_write(const char *path, const uint32_t *source, const uint32_t *target, size_t count,
                                         ptreg_error *err)
{
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    fprintf(af.fp, "# source target\n");
    for (size_t k = 0; k < count; k++)
        fprintf(af.fp, "%u %u\n", source[k], target[k]);
    return ptreg_atomic_commit(&af, err);
}
