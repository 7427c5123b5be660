/* 4x4 transform files: 16 numbers row-major (or 12: the top three rows),
 * separated by blanks, commas or newlines, with '#' comments; or JSON,
 * {"transformation": [[4 numbers] x 4]} as the commands' --json prints it.
 * Written with %.17g, which reads back to the same doubles. */
#include "ptreg/io.h"
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "io/testing.h"

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
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not a number", io_quote(tok, q));
            if (!isfinite(v[n]))
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not finite", io_quote(tok, q));
            n++;
        }
    if (n != 12 && n != 16)
        return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "%zu numbers; a transform has 16 (4x4) or 12 (the top 3x4)",
                            n);
    for (size_t i = 0; i < 12; i++)
        T[i] = v[i];
    for (size_t i = 12; i < 16; i++)
        T[i] = n == 16 ? v[i] : (i == 15 ? 1.0 : 0.0);
    return PTREG_OK;
}

/* JSON when the first thing in the file is an object or an array. */
static int looks_like_json(const io_in *in)
{
    size_t i = 0;
    while (i < in->size && strchr(" \t\r\n", in->data[i]))
        i++;
    return i < in->size && (in->data[i] == '{' || in->data[i] == '[');
}

static size_t line_at(const io_in *in, size_t at)
{
    size_t line = 1;
    for (size_t i = 0; i < at && i < in->size; i++)
        line += in->data[i] == '\n';
    return line;
}

/* The 4x4 rows of a JSON transform: {"transformation": rows} or the bare
 * rows, each row an array of 4 finite numbers. */
static ptreg_status json_rows(const io_in *in, const cJSON *root, double T[16])
{
    const cJSON *rows = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "transformation") : root;
    if (!rows)
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "a JSON transform needs \"transformation\": 4 rows of 4 numbers");
    if (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) != 4)
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "the transformation must be 4 rows of 4 numbers");
    int r = 0;
    for (const cJSON *row = rows->child; row; row = row->next, r++) {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != 4)
            return io_fail_line(in, PTREG_ERR_FORMAT, 1, "row %d of the transformation is not 4 numbers", r + 1);
        int c = 0;
        for (const cJSON *v = row->child; v; v = v->next, c++) {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
                return io_fail_line(in, PTREG_ERR_FORMAT, 1,
                                    "row %d, column %d of the transformation is not a "
                                    "finite number",
                                    r + 1, c + 1);
            T[4 * r + c] = v->valuedouble;
        }
    }
    return PTREG_OK;
}

static ptreg_status parse_json_transform(const io_in *in, double T[16])
{
    const char *text = (const char *)in->data, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, in->size, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + in->size ? (size_t)(end - text) : in->size;
        return io_fail_line(in, PTREG_ERR_FORMAT, line_at(in, at), "not valid JSON%s",
                            at >= in->size ? " (it ends early)" : "");
    }
    double v[16];
    ptreg_status s = json_rows(in, root, v);
    cJSON_Delete(root);
    if (s == PTREG_OK)
        memcpy(T, v, sizeof v);
    return s;
}

static ptreg_status parse_any(const io_in *in, double T[16])
{
    return looks_like_json(in) ? parse_json_transform(in, T) : parse_transform(in, T);
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
    s = parse_any(&in, T);
    free(data);
    return s;
}

ptreg_status ptreg_transform_read_memory(const void *data, size_t size, const char *name, double T[16],
                                         ptreg_error *err)
{
    if ((!data && size) || !T)
        return ptreg_error_set(err, PTREG_ERR_ARG, "transform read: no data or no matrix");
    io_in in = {data, size, name ? name : "(memory)", err, NULL};
    return parse_any(&in, T);
}

ptreg_status ptreg_transform_write(const char *path, const double T[16], ptreg_error *err)
{
    if (!path || !T)
        return ptreg_error_set(err, PTREG_ERR_ARG, "transform write: no path or no matrix");
    for (int i = 0; i < 16; i++)
        if (!isfinite(T[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "%s: the transform has a non-finite entry", path);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s != PTREG_OK)
        return s;
    const int json = io_has_extension(path, "json");
    if (json)
        fputs("{\"transformation\": [", af.fp);
    for (int r = 0; r < 4; r++)
        fprintf(af.fp, json ? "%s[%.17g, %.17g, %.17g, %.17g]" : "%s%.17g %.17g %.17g %.17g\n", json && r ? ", " : "",
                T[4 * r], T[4 * r + 1], T[4 * r + 2], T[4 * r + 3]);
    if (json)
        fputs("]}\n", af.fp);
    return ptreg_atomic_commit(&af, err);
}
