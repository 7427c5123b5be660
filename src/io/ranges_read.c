/* Range files of atom-probe analysis: the mass-to-charge intervals that
 * name each ion species.
 *
 * .rrng (IVAS): sections [Ions] (Number=, IonK=name) and [Ranges]
 * (Number=, RangeK=lo hi followed by key:value tokens: Vol:, Color:,
 * Name:, and element:count for the ion's composition).
 * .rng (the older Oak Ridge form): "ions ranges", then per ion its name and
 * a colour line "name r g b", a header of dashes followed by the ions' names
 * (the columns), then per range ". lo hi" and one count per column.
 *
 * Counts in the files are checked against the lines that are there, never
 * used to size anything. */
#include "ptreg/apt.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/testing.h"

#define MAX_TOKENS 64

/* One line of the input, cut into blank-separated tokens. */
typedef struct line {
    size_t number;
    size_t count;
    io_token tok[MAX_TOKENS];
} line;

/* Reads the next non-empty line (comments: '#'); 0 at the end. */
static int next_line(io_text *t, line *l)
{
    while (io_text_skip_empty_lines(t)) {
        l->number = t->line;
        l->count = 0;
        io_token tok;
        while (io_text_token(t, &tok))
            if (l->count < MAX_TOKENS)
                l->tok[l->count++] = tok;
        io_text_next_line(t);
        if (l->count)
            return 1;
    }
    return 0;
}

/* Lines left from t, an upper bound on the records a count may claim. */
static size_t lines_left(const io_text *t)
{
    size_t n = 1;
    for (const char *p = t->p; p < t->end; p++)
        n += *p == '\n';
    return n;
}

static void ranges_init(ptreg_ranges *r) { memset(r, 0, sizeof *r); }

void ptreg_ranges_free(ptreg_ranges *r)
{
    if (!r)
        return;
    free(r->range);
    ranges_init(r);
}

/* Appends "name" or "nameN" to an ion's composition string; 0 when it
 * does not fit. */
static int append_part(char *ion, const char *name, size_t len, unsigned long count)
{
    size_t used = strlen(ion);
    char part[PTREG_ION_NAME_MAX + 24];
    int w = count > 1 ? snprintf(part, sizeof part, "%.*s%lu", (int)len, name, count)
                      : snprintf(part, sizeof part, "%.*s", (int)len, name);
    if (w < 0 || used + (size_t)w >= PTREG_ION_NAME_MAX)
        return 0;
    memcpy(ion + used, part, (size_t)w + 1);
    return 1;
}

static ptreg_status add_range(const io_in *in, ptreg_ranges *r, size_t cap, size_t at, double lo, double hi,
                              const char *ion)
{
    if (!(lo >= 0 && hi >= lo && hi < 1e6))
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "range %g to %g: want 0 <= low <= high", lo, hi);
    if (!ion[0])
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "the range names no ion");
    if (r->n >= cap)
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "more ranges than the file can hold");
    ptreg_range *x = &r->range[r->n++];
    x->lo = lo, x->hi = hi, x->line = at;
    snprintf(x->ion, sizeof x->ion, "%s", ion);
    return PTREG_OK;
}

static ptreg_status reserve(const io_in *in, ptreg_ranges *r, size_t cap)
{
    r->range = calloc(cap ? cap : 1, sizeof *r->range);
    return r->range ? PTREG_OK : ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
}

/* ---- .rrng ---- */

/* "key=value" split at the first '='; 0 when the token has none. */
static int split_key(io_token tok, io_token *key, io_token *value)
{
    const char *eq = memchr(tok.s, '=', tok.len);
    if (!eq)
        return 0;
    *key = (io_token){tok.s, (size_t)(eq - tok.s)};
    *value = (io_token){eq + 1, tok.len - (size_t)(eq - tok.s) - 1};
    return 1;
}

static int starts_nocase(io_token tok, const char *prefix, size_t *rest)
{
    size_t k = strlen(prefix);
    if (tok.len < k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)tok.s[i]) != tolower((unsigned char)prefix[i]))
            return 0;
    *rest = k;
    return 1;
}

/* The ion of RangeK's key:value tokens: Name:, else the elements. */
static ptreg_status rrng_ion(const io_in *in, const line *l, size_t first, char ion[PTREG_ION_NAME_MAX])
{
    char composed[PTREG_ION_NAME_MAX] = "", named[PTREG_ION_NAME_MAX] = "";
    for (size_t i = first; i < l->count; i++) {
        io_token tok = l->tok[i];
        const char *colon = memchr(tok.s, ':', tok.len);
        char q[IO_QUOTE_MAX];
        if (!colon)
            return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "'%s': want key:value", io_quote(tok, q));
        io_token key = {tok.s, (size_t)(colon - tok.s)}, value = {colon + 1, tok.len - key.len - 1};
        if (io_token_is_nocase(key, "vol") || io_token_is_nocase(key, "color"))
            continue;
        if (io_token_is_nocase(key, "name")) {
            snprintf(named, sizeof named, "%.*s", (int)value.len, value.s);
            continue;
        }
        uint64_t count;
        if (!key.len || !isalpha((unsigned char)key.s[0]) || !io_parse_u64(value, &count) || count > 1000)
            return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "'%s': want element:count", io_quote(tok, q));
        if (count && !append_part(composed, key.s, key.len, (unsigned long)count))
            return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "the ion's name is too long");
    }
    snprintf(ion, PTREG_ION_NAME_MAX, "%s", named[0] ? named : composed);
    return PTREG_OK;
}

static ptreg_status rrng_range(const io_in *in, ptreg_ranges *r, size_t cap, const line *l, io_token value)
{
    /* "RangeK=lo" is one token: lo follows the '=' */
    double lo, hi;
    if (l->count < 2 || !io_parse_double(value, &lo) || !io_parse_double(l->tok[1], &hi))
        return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "want RangeK=low high key:value...");
    char ion[PTREG_ION_NAME_MAX];
    ptreg_status st = rrng_ion(in, l, 2, ion);
    return st ? st : add_range(in, r, cap, l->number, lo, hi, ion);
}

static ptreg_status read_rrng(const io_in *in, ptreg_ranges *r)
{
    io_text t;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    size_t cap = lines_left(&t), claimed = 0, claimed_at = 0;
    ptreg_status st = reserve(in, r, cap);
    int in_ranges = 0;
    line l;
    while (!st && next_line(&t, &l)) {
        io_token key, value, head = l.tok[0];
        size_t rest;
        if (head.len && head.s[0] == '[') {
            in_ranges = io_token_is_nocase(head, "[Ranges]");
            continue;
        }
        if (!in_ranges || !split_key(head, &key, &value))
            continue; /* [Ions] and other sections name nothing we use */
        if (io_token_is_nocase(key, "number")) {
            uint64_t n;
            if (!io_parse_u64(value, &n))
                st = io_fail_line(in, PTREG_ERR_FORMAT, l.number, "Number= wants a count");
            claimed = (size_t)n, claimed_at = l.number;
        } else if (starts_nocase(key, "range", &rest)) {
            st = rrng_range(in, r, cap, &l, value);
        }
    }
    if (!st && claimed_at && claimed != r->n)
        st = io_fail_line(in, PTREG_ERR_FORMAT, claimed_at, "[Ranges] Number=%zu, but the file has %zu ranges", claimed,
                          r->n);
    if (!st && !r->n)
        st = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "no [Ranges] entries");
    return st;
}

/* ---- .rng ---- */

static ptreg_status rng_counts(const io_in *in, io_text *t, size_t *ions, size_t *ranges, line *l)
{
    uint64_t a, b;
    if (!next_line(t, l) || l->count < 2 || !io_parse_u64(l->tok[0], &a) || !io_parse_u64(l->tok[1], &b))
        return io_fail_line(in, PTREG_ERR_FORMAT, l->number ? l->number : 1, "want the numbers of ions and of ranges");
    size_t left = lines_left(t);
    if (a == 0 || a > left || b > left)
        return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "%llu ions and %llu ranges: more than the file holds",
                            (unsigned long long)a, (unsigned long long)b);
    *ions = (size_t)a, *ranges = (size_t)b;
    return PTREG_OK;
}

/* The ions' names and colour lines, up to the dashed header, which names
 * the columns of the range rows. */
static ptreg_status rng_columns(const io_in *in, io_text *t, size_t ions, line *header)
{
    for (;;) {
        if (!next_line(t, header))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "no dashed header before the ranges");
        if (header->tok[0].s[0] == '-')
            break;
    }
    if (header->count - 1 != ions || ions >= MAX_TOKENS - 3)
        return io_fail_line(in, PTREG_ERR_FORMAT, header->number, "the header names %zu ions, the file said %zu",
                            header->count - 1, ions);
    return PTREG_OK;
}

static ptreg_status rng_row(const io_in *in, ptreg_ranges *r, size_t cap, const line *l, const line *header)
{
    size_t ions = header->count - 1;
    double lo, hi;
    if (l->count != 3 + ions || !io_token_is(l->tok[0], ".") || !io_parse_double(l->tok[1], &lo) ||
        !io_parse_double(l->tok[2], &hi))
        return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "want '. low high' and %zu counts", ions);
    char ion[PTREG_ION_NAME_MAX] = "";
    for (size_t k = 0; k < ions; k++) {
        uint64_t count;
        io_token name = header->tok[1 + k];
        if (!io_parse_u64(l->tok[3 + k], &count) || count > 1000)
            return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "counts are whole numbers");
        if (count && !append_part(ion, name.s, name.len, (unsigned long)count))
            return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "the ion's name is too long");
    }
    return add_range(in, r, cap, l->number, lo, hi, ion);
}

static ptreg_status read_rng(const io_in *in, ptreg_ranges *r)
{
    io_text t;
    io_text_init(&t, in->data, in->size);
    size_t ions = 0, ranges = 0;
    line l = {0}, header = {0};
    ptreg_status st = rng_counts(in, &t, &ions, &ranges, &l);
    st = st ? st : rng_columns(in, &t, ions, &header);
    st = st ? st : reserve(in, r, ranges);
    for (size_t k = 0; !st && k < ranges; k++) {
        if (!next_line(&t, &l))
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "%zu ranges announced, %zu found", ranges, k);
        st = rng_row(in, r, ranges, &l, &header);
    }
    return st;
}

static int by_low(const void *pa, const void *pb)
{
    const ptreg_range *a = *(const ptreg_range *const *)pa, *b = *(const ptreg_range *const *)pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* An ion whose mass-to-charge falls in two ranges would be named twice:
 * such a file is refused, naming both lines. Ranges may share an end. */
static ptreg_status check_overlaps(const io_in *in, const ptreg_ranges *r)
{
    const ptreg_range **sorted = malloc((r->n + 1) * sizeof *sorted);
    if (!sorted)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
    for (size_t i = 0; i < r->n; i++)
        sorted[i] = &r->range[i];
    qsort(sorted, r->n, sizeof *sorted, by_low);
    ptreg_status st = PTREG_OK;
    const ptreg_range *reach = r->n ? sorted[0] : NULL; /* of those so far, the one reaching highest */
    for (size_t i = 1; !st && i < r->n; i++) {
        const ptreg_range *x = sorted[i];
        if (x->lo < reach->hi)
            st = io_fail_line(in, PTREG_ERR_FORMAT, x->line > reach->line ? x->line : reach->line,
                              "ranges overlap: %g to %g (%s, line %zu) and %g to %g (%s, line %zu)", reach->lo,
                              reach->hi, reach->ion, reach->line, x->lo, x->hi, x->ion, x->line);
        reach = x->hi > reach->hi ? x : reach;
    }
    free(sorted);
    return st;
}

ptreg_status ptreg_ranges_read_memory(const void *data, size_t size, const char *name, ptreg_ranges *ranges,
                                      ptreg_error *err)
{
    io_in in = {data, size, name ? name : "<memory>", err, NULL};
    if (ranges)
        ranges_init(ranges);
    if (!ranges || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no ranges or no data", in.name);
    if (size == 0)
        return io_fail_line(&in, PTREG_ERR_FORMAT, 1, "empty range file");
    /* IVAS files name their sections; the older form starts with counts */
    const char *d = data;
    size_t i = 0;
    while (i < size && isspace((unsigned char)d[i]))
        i++;
    ptreg_status st = i < size && d[i] == '[' ? read_rrng(&in, ranges) : read_rng(&in, ranges);
    st = st ? st : check_overlaps(&in, ranges);
    if (st)
        ptreg_ranges_free(ranges);
    return st;
}

ptreg_status ptreg_ranges_read(const char *path, ptreg_ranges *ranges, ptreg_error *err)
{
    if (ranges)
        ranges_init(ranges);
    if (!path || !ranges)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ranges read: no path or no ranges");
    unsigned char *data;
    size_t size;
    ptreg_status st = io_read_file(path, &data, &size, err);
    if (st)
        return st;
    st = ptreg_ranges_read_memory(data, size, path, ranges, err);
    free(data);
    return st;
}

long ptreg_ranges_find(const ptreg_ranges *r, double mq)
{
    for (size_t i = 0; i < r->n; i++)
        if (mq >= r->range[i].lo && mq <= r->range[i].hi)
            return (long)i;
    return -1;
}

int ptreg_ranges_has_ion(const ptreg_ranges *r, const char *ion)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->range[i].ion, ion))
            return 1;
    return 0;
}
