/* 4x4 transform files: 16 numbers row-major (or 12: the top three rows),
 * separated by blanks, commas or newlines, with '#' comments. Written with
 * %.17g, which reads back to the same doubles. */
#include "ptreg/io.h"
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>

static ptreg_status parse_transform(const io_in *in, double T[16])
{
    double v[16];
    size_t n = 0;
    io_text t;
    io_token tok;
    char q[IO_QUOTE_MAX];
    io_text_init(&t, in->data, in->size);
    t.commas = 1;
    t.comments = 1;
    for (; !io_text_eof(&t); io_text_next_line(&t))
        while (io_text_token(&t, &tok)) {
            if (n == 16)
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "more than 16 numbers");
            if (!io_parse_double(tok, &v[n]))
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not a number",
                                    io_quote(tok, q));
            if (!isfinite(v[n]))
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not finite",
                                    io_quote(tok, q));
            n++;
        }
    if (n != 12 && n != 16)
        return io_fail_line(in, PTREG_ERR_FORMAT, t.line,
                            "%zu numbers; a transform has 16 (4x4) or 12 (the top 3x4)", n);
    for (size_t i = 0; i < 12; i++)
        T[i] = v[i];
    for (size_t i = 12; i < 16; i++)
        T[i] = n == 16 ? v[i] : (i == 15 ? 1.0 : 0.0);
    return PTREG_OK;
}

ptreg_status ptreg_transform_read(const char *path, double T[16], ptreg_error *err)
{
    unsigned char *data;
    size_t size;
    if (!path || !T)
        return ptreg_error_set(err, PTREG_ERR_ARG, "transform read: no path or no matrix");
    ptreg_status s = io_read_file(path, &data, &size, err);
    if (s != PTREG_OK)
        return s;
    io_in in = {data, size, path, err, NULL};
    s = parse_transform(&in, T);
    free(data);
    return s;
}

ptreg_status ptreg_transform_read_memory(const void *data, size_t size, const char *name, double T[16],
                                        ptreg_error *err)
{
    if ((!data && size) || !T)
        return ptreg_error_set(err, PTREG_ERR_ARG, "transform read: no data or no matrix");
    io_in in = {data, size, name ? name : "(memory)", err, NULL};
    return parse_transform(&in, T);
}

ptreg_status ptreg_transform_write(const char *path, const double T[16], ptreg_error *err)
{
    if (!path || !T)
        return ptreg_error_set(err, PTREG_ERR_ARG, "transform write: no path or no matrix");
    for (int i = 0; i < 16; i++)
        if (!isfinite(T[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "%s: the transform has a non-finite entry",
                                   path);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s != PTREG_OK)
        return s;
    for (int r = 0; r < 4; r++)
        fprintf(af.fp, "%.17g %.17g %.17g %.17g\n", T[4 * r], T[4 * r + 1], T[4 * r + 2],
                T[4 * r + 3]);
    return ptreg_atomic_commit(&af, err);
}
