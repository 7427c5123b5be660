/* The text cursor, number scanning and error messages shared by the readers.
 * Everything works on a buffer that is not NUL-terminated (the fuzzers hand
 * raw bytes), so no function here may run past t->end. */
#include "io/io_internal.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for any float a program prints (%.17g needs 24 bytes); longer
 * tokens are junk, and rejecting them keeps the copy on the stack. */
#define IO_NUMBER_MAX 128

static ptreg_status fail_at(const io_in *in, ptreg_status status, const char *unit, size_t at, const char *fmt,
                            va_list ap)
{
    char what[PTREG_ERROR_MESSAGE_MAX];
    vsnprintf(what, sizeof what, fmt, ap);
    return ptreg_error_set(in->err, status, "%s: %s %zu: %s", in->name, unit, at, what);
}

ptreg_status io_fail_line(const io_in *in, ptreg_status status, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptreg_status s = fail_at(in, status, "line", line, fmt, ap);
    va_end(ap);
    return s;
}

ptreg_status io_fail_byte(const io_in *in, ptreg_status status, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptreg_status s = fail_at(in, status, "byte", offset, fmt, ap);
    va_end(ap);
    return s;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

void io_text_init(io_text *t, const void *data, size_t size)
{
    t->p = data;
    t->end = t->p + size;
    t->line = 1;
    t->commas = 0;
    t->comments = 0;
}

int io_text_eof(const io_text *t) { return t->p >= t->end; }

size_t io_text_left(const io_text *t) { return (size_t)(t->end - t->p); }

static void skip_blanks(io_text *t)
{
    while (t->p < t->end && is_blank(*t->p))
        t->p++;
}

/* Leaves the cursor on the newline (or the end) so the line count stays in
 * io_text_next_line alone. */
static void skip_to_newline(io_text *t)
{
    const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
    t->p = nl ? nl : t->end;
}

int io_text_eol(io_text *t)
{
    skip_blanks(t);
    if (t->p < t->end && t->comments && *t->p == '#')
        skip_to_newline(t);
    return t->p == t->end || *t->p == '\n';
}

int io_text_token(io_text *t, io_token *tok)
{
    if (io_text_eol(t))
        return 0;
    const char *s = t->p;
    while (t->p < t->end && !is_blank(*t->p) && *t->p != '\n' && !(t->commas && *t->p == ','))
        t->p++;
    tok->s = s;
    tok->len = (size_t)(t->p - s);
    if (t->commas) {
        /* One comma belongs to this token's separator; a second one is
         * left to start an empty token, so "1,,2" is caught. */
        skip_blanks(t);
        if (t->p < t->end && *t->p == ',')
            t->p++;
    }
    return 1;
}

void io_text_next_line(io_text *t)
{
    skip_to_newline(t);
    if (t->p < t->end) {
        t->p++;
        t->line++;
    }
}

int io_text_next_token(io_text *t, io_token *tok)
{
    while (!io_text_token(t, tok)) {
        if (io_text_eof(t))
            return 0;
        io_text_next_line(t);
    }
    return 1;
}

int io_text_skip_empty_lines(io_text *t)
{
    while (t->p < t->end) {
        if (!io_text_eol(t))
            return 1;
        io_text_next_line(t);
    }
    return 0;
}

ptreg_status io_text_no_more(const io_in *in, io_text *t, const char *after)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_token(t, &tok))
        return PTREG_OK;
    return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unexpected '%s' after %s", io_quote(tok, q), after);
}

int io_token_is(io_token tok, const char *word)
{
    size_t n = strlen(word);
    return tok.len == n && memcmp(tok.s, word, n) == 0;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

int io_token_is_nocase(io_token tok, const char *word)
{
    size_t n = strlen(word);
    if (tok.len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(tok.s[i]) != lower(word[i]))
            return 0;
    return 1;
}

/* strtof/strtod need a NUL-terminated string and the token sits inside the
 * input; a stack copy avoids a malloc per number. */
static int token_cstr(io_token tok, char buf[IO_NUMBER_MAX])
{
    if (tok.len == 0 || tok.len >= IO_NUMBER_MAX)
        return 0;
    memcpy(buf, tok.s, tok.len);
    buf[tok.len] = '\0';
    return 1;
}

/* Clinger's fast path for floats: when the digits make an integer m below
 * 2^24 with at most 10 of them after the point, m and 10^decimals are exact
 * floats and one IEEE division rounds the quotient correctly: the result
 * strtof gives. It takes the plain decimals scanners write (most of a PLY
 * or XYZ file) without the copy and strtof's general machinery. Returns 0
 * to hand the token to strtof. */
#if FLT_EVAL_METHOD == 0
/* m = 10 m + digit; 0 once m leaves the exact range of a float. */
static int push_digit(uint32_t *m, char digit)
{
    *m = *m * 10 + (uint32_t)(digit - '0');
    return *m < (1u << 24);
}

static int fast_float(io_token tok, float *out)
{
    static const float pow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    const char *p = tok.s, *end = tok.s + tok.len;
    int neg = p < end && (*p == '-' || *p == '+') ? *p++ == '-' : 0;
    uint32_t m = 0;
    int k = 0, digits = 0, zeros = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++)
        if (!push_digit(&m, *p))
            return 0;
    /* Zeros after the point count only when a digit follows them, so the
     * padding of "%.15f" output stays on the fast path. */
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
            if (*p == '0') {
                zeros++;
                continue;
            }
            for (; zeros > 0; zeros--, k--)
                if (!push_digit(&m, '0'))
                    return 0;
            if (!push_digit(&m, *p))
                return 0;
            k--;
        }
    if (p != end || digits == 0 || k < -10)
        return 0; /* an exponent, junk, or too many decimals: strtof decides */
    float v = k < 0 ? (float)m / pow10[-k] : (float)m;
    *out = neg ? -v : v;
    return 1;
}
#else
/* Float arithmetic carried out wider (x87) would round twice. */
static int fast_float(io_token tok, float *out)
{
    (void)tok;
    (void)out;
    return 0;
}
#endif

int io_parse_float(io_token tok, float *out)
{
    char buf[IO_NUMBER_MAX], *end;
    if (fast_float(tok, out))
        return 1;
    if (!token_cstr(tok, buf))
        return 0;
    float v = strtof(buf, &end);
    if (end != buf + tok.len)
        return 0;
    *out = v;
    return 1;
}

int io_parse_coord(const io_in *in, int axis, io_token tok, double *out)
{
    const io_cloud_state *st = in->cloud;
    if (axis < 3 && st->origin_decided && st->origin[axis] != 0.0)
        return io_parse_double(tok, out);
    float f;
    if (!io_parse_float(tok, &f))
        return 0;
    *out = f;
    return fabsf(f) < PTREG_ORIGIN_THRESHOLD || io_parse_double(tok, out);
}

int io_parse_typed(io_token tok, io_type type, double *out)
{
    float f;
    if (type != IO_F32)
        return io_parse_double(tok, out);
    if (!io_parse_float(tok, &f))
        return 0;
    *out = f;
    return 1;
}

int io_parse_double(io_token tok, double *out)
{
    char buf[IO_NUMBER_MAX], *end;
    if (!token_cstr(tok, buf))
        return 0;
    double v = strtod(buf, &end);
    if (end != buf + tok.len)
        return 0;
    *out = v;
    return 1;
}

int io_parse_u64(io_token tok, uint64_t *out)
{
    if (tok.len == 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < tok.len; i++) {
        unsigned d = (unsigned)(unsigned char)tok.s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

const char *io_quote(io_token tok, char buf[IO_QUOTE_MAX])
{
    const size_t keep = IO_QUOTE_MAX - 4; /* room for "..." and the NUL */
    size_t n = tok.len < keep ? tok.len : keep;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)tok.s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (tok.len > keep) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}
