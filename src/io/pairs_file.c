/* ptreg pairs files (docs/FORMATS.md, "ptreg pairs file"): many small
 * registration problems in one little-endian binary, for ptreg batch.
 *
 *   "PTPAIRS1", uint64 N (pairs), uint64 T (targets: 1 shared, or N),
 *   uint64 source_offset[N + 1], uint64 target_offset[T + 1] (in points),
 *   float32 source[3 * source_offset[N]], float32 target[3 * target_offset[T]]
 *
 * Every count is checked against the file's size before anything is
 * allocated, and the size must be exactly what the counts imply. */
#include "ptreg/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/testing.h"

#define PAIRS_MAGIC "PTPAIRS1"
#define PAIRS_HEADER 24

void ptreg_pairs_file_init(ptreg_pairs_file *pf) { memset(pf, 0, sizeof *pf); }

void ptreg_pairs_file_free(ptreg_pairs_file *pf)
{
    if (!pf)
        return;
    free(pf->source_offset);
    free(pf->target_offset);
    free(pf->source);
    free(pf->target);
    ptreg_pairs_file_init(pf);
}

static uint64_t load_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = v << 8 | p[b];
    return v;
}

/* Reads count + 1 offsets at byte `at`: from 0, non-decreasing, each
 * range non-empty (a pair needs points), the last at most `most`. */
static ptreg_status read_offsets(const io_in *in, size_t at, size_t count, const char *what, uint64_t most, size_t *out)
{
    for (size_t i = 0; i <= count; i++) {
        const uint64_t v = load_u64(in->data + at + 8 * i);
        if (i == 0 && v != 0)
            return io_fail_byte(in, PTREG_ERR_FORMAT, at, "the first %s offset is %llu, not 0", what,
                                (unsigned long long)v);
        if (i > 0 && v <= out[i - 1])
            return io_fail_byte(in, PTREG_ERR_FORMAT, at + 8 * i, "%s %zu has no points (offset %llu after %zu)", what,
                                i - 1, (unsigned long long)v, out[i - 1]);
        if (v > most)
            return io_fail_byte(in, PTREG_ERR_FORMAT, at + 8 * i,
                                "%s offset %llu is past the %llu points the file can hold", what, (unsigned long long)v,
                                (unsigned long long)most);
        out[i] = (size_t)v;
    }
    return PTREG_OK;
}

static ptreg_status read_points(const io_in *in, size_t at, size_t points, const char *what, float *out)
{
    for (size_t i = 0; i < 3 * points; i++) {
        out[i] = io_load_float(in->data + at + 4 * i, IO_F32, 0);
        if (!isfinite(out[i]))
            return io_fail_byte(in, PTREG_ERR_FORMAT, at + 4 * i, "%s point %zu has a coordinate that is not finite",
                                what, i / 3);
    }
    return PTREG_OK;
}

/* N and T from the header, checked against what the file can hold. */
static ptreg_status read_header(const io_in *in, size_t *count, size_t *targets)
{
    if (in->size < PAIRS_HEADER || memcmp(in->data, PAIRS_MAGIC, 8))
        return io_fail_byte(in, PTREG_ERR_FORMAT, 0, "not a ptreg pairs file (no \"" PAIRS_MAGIC "\" header)");
    const uint64_t n = load_u64(in->data + 8), t = load_u64(in->data + 16);
    const uint64_t room = (in->size - PAIRS_HEADER) / 8; /* offsets the file could hold */
    if (n == 0)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 8, "no pairs");
    if (t != 1 && t != n)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 16, "%llu targets for %llu pairs: give 1 (shared) or one per pair",
                            (unsigned long long)t, (unsigned long long)n);
    if (n >= room || t >= room || n + 1 + t + 1 > room)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 8,
                            "%llu pairs and %llu targets need more offsets than the "
                            "%zu-byte file holds (truncated?)",
                            (unsigned long long)n, (unsigned long long)t, in->size);
    *count = (size_t)n, *targets = (size_t)t;
    return PTREG_OK;
}

static ptreg_status decode(const io_in *in, ptreg_pairs_file *pf)
{
    ptreg_status st = read_header(in, &pf->count, &pf->targets);
    if (st)
        return st;
    const size_t src_at = PAIRS_HEADER, tgt_at = src_at + 8 * (pf->count + 1);
    const size_t points_at = tgt_at + 8 * (pf->targets + 1);
    const uint64_t most = (in->size - points_at) / 12;
    pf->source_offset = malloc((pf->count + 1) * sizeof(size_t));
    pf->target_offset = malloc((pf->targets + 1) * sizeof(size_t));
    if (!pf->source_offset || !pf->target_offset)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu pairs", in->name, pf->count);
    st = read_offsets(in, src_at, pf->count, "source", most, pf->source_offset);
    st = st ? st : read_offsets(in, tgt_at, pf->targets, "target", most, pf->target_offset);
    if (st)
        return st;
    const size_t ns = pf->source_offset[pf->count], nt = pf->target_offset[pf->targets];
    if (ns > most || nt > most - ns)
        return io_fail_byte(in, PTREG_ERR_FORMAT, points_at,
                            "%zu source and %zu target points need more bytes "
                            "than the %zu-byte file has (truncated?)",
                            ns, nt, in->size);
    if (points_at + 12 * (ns + nt) != in->size)
        return io_fail_byte(in, PTREG_ERR_FORMAT, points_at + 12 * (ns + nt),
                            "%zu source and %zu target points end here, but the file goes on to byte %zu", ns, nt,
                            in->size);
    pf->source = malloc(3 * ns * sizeof(float));
    pf->target = malloc(3 * nt * sizeof(float));
    if (!pf->source || !pf->target)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu points", in->name, ns + nt);
    st = read_points(in, points_at, ns, "source", pf->source);
    return st ? st : read_points(in, points_at + 12 * ns, nt, "target", pf->target);
}

ptreg_status ptreg_pairs_read_memory(const void *data, size_t size, const char *name, ptreg_pairs_file *pf,
                                     ptreg_error *err)
{
    if (pf)
        ptreg_pairs_file_init(pf);
    const io_in in = {data, size, name ? name : "pairs", err, NULL};
    if (!pf || (size && !data))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no pairs file or no data", in.name);
    ptreg_status st = decode(&in, pf);
    if (st)
        ptreg_pairs_file_free(pf);
    return st;
}

ptreg_status ptreg_pairs_read(const char *path, ptreg_pairs_file *pf, ptreg_error *err)
{
    if (pf)
        ptreg_pairs_file_init(pf);
    if (!path || !pf)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pairs read: no path or no pairs file");
    unsigned char *data;
    size_t size;
    ptreg_status st = io_read_file(path, &data, &size, err);
    if (st)
        return st;
    st = ptreg_pairs_read_memory(data, size, path, pf, err);
    free(data);
    return st;
}

static void write_offsets(FILE *f, const size_t *offset, size_t count)
{
    for (size_t i = 0; i <= count; i++) {
        const uint64_t v = offset[i];
        io_write_le(f, &v, 1, sizeof v);
    }
}

ptreg_status ptreg_pairs_write(const char *path, const ptreg_pairs_file *pf, ptreg_error *err)
{
    if (!path || !pf || !pf->count || (pf->targets != 1 && pf->targets != pf->count) || !pf->source_offset ||
        !pf->target_offset || !pf->source || !pf->target)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pairs write: no pairs, or %zu targets for %zu pairs",
                               pf ? pf->targets : 0, pf ? pf->count : 0);
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    const uint64_t head[2] = {pf->count, pf->targets};
    fwrite(PAIRS_MAGIC, 1, 8, af.fp);
    io_write_le(af.fp, head, 2, sizeof head[0]);
    write_offsets(af.fp, pf->source_offset, pf->count);
    write_offsets(af.fp, pf->target_offset, pf->targets);
    io_write_le(af.fp, pf->source, 3 * pf->source_offset[pf->count], sizeof(float));
    io_write_le(af.fp, pf->target, 3 * pf->target_offset[pf->targets], sizeof(float));
    return ptreg_atomic_commit(&af, err);
}
