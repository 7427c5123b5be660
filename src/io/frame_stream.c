/* The binary frame stream (docs/FORMATS.md): frames one after another on
 * a pipe, each the 4 bytes "PTF1", a little-endian uint64 point count, a
 * little-endian double timestamp, then count x, y, z as little-endian
 * float32. Read as it comes: the count is never trusted beyond the bytes
 * that follow it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"

static uint64_t le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | b[k];
    return v;
}

static float le_float(const unsigned char *b)
{
    const uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

#define STREAM_HEADER 20
#define STREAM_CHUNK 65536 /* points read at a time: a frame's memory grows with the bytes that came */

/* The frame's header: PTREG_OK with *count and *t, or with *end at a clean
 * end of the stream; FORMAT when it is cut short or has no magic. */
static ptreg_status read_header(ptreg_frame_stream *s, uint64_t *count, double *t, int *end, ptreg_error *err)
{
    unsigned char h[STREAM_HEADER];
    const size_t got = fread(h, 1, sizeof h, s->in);
    if (got == 0 && feof(s->in)) {
        *end = 1;
        return PTREG_OK;
    }
    if (got < sizeof h)
        return ptreg_error_set(err, PTREG_ERR_FORMAT,
                               "frame %zu at byte %llu: the header is truncated (%zu of %d bytes)", s->frames,
                               (unsigned long long)s->offset, got, STREAM_HEADER);
    if (memcmp(h, "PTF1", 4))
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "frame %zu at byte %llu: no \"PTF1\" magic", s->frames,
                               (unsigned long long)s->offset);
    const uint64_t tbits = le64(h + 12);
    *count = le64(h + 4);
    memcpy(t, &tbits, sizeof *t);
    return PTREG_OK;
}

ptreg_status ptreg_frame_stream_next(ptreg_frame_stream *s, ptreg_cloud *frame, double *t, int *end, ptreg_error *err)
{
    ptreg_cloud_init(frame);
    *end = 0;
    uint64_t count = 0;
    ptreg_status st = read_header(s, &count, t, end, err);
    if (st || *end)
        return st;
    const uint64_t start = s->offset;
    s->offset += STREAM_HEADER;
    if (count > (uint64_t)SIZE_MAX / 12)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "frame %zu at byte %llu: %llu points cannot be held", s->frames,
                               (unsigned long long)start, (unsigned long long)count);
    float *xyz = NULL;
    size_t have = 0, cap = 0;
    unsigned char *buf = malloc(12 * STREAM_CHUNK);
    st = buf ? PTREG_OK : PTREG_ERR_NOMEM;
    while (!st && have < count) {
        const size_t want = count - have < STREAM_CHUNK ? (size_t)(count - have) : STREAM_CHUNK;
        const size_t bytes = fread(buf, 1, 12 * want, s->in);
        s->offset += bytes;
        const size_t pts = bytes / 12;
        if (have + pts > cap) {
            cap = have + pts > 2 * cap ? have + pts : 2 * cap;
            float *grown = realloc(xyz, 3 * cap * sizeof *grown);
            st = grown ? PTREG_OK : PTREG_ERR_NOMEM;
            xyz = grown ? grown : xyz;
        }
        for (size_t i = 0; !st && i < 3 * pts; i++)
            xyz[3 * have + i] = le_float(buf + 4 * i);
        have += st ? 0 : pts;
        if (!st && bytes < 12 * want)
            st = ptreg_error_set(err, PTREG_ERR_FORMAT,
                                 "frame %zu at byte %llu: truncated: %zu of its %llu points "
                                 "before the end",
                                 s->frames, (unsigned long long)start, have, (unsigned long long)count);
    }
    free(buf);
    if (st == PTREG_ERR_NOMEM)
        ptreg_error_set(err, st, "out of memory reading frame %zu", s->frames);
    if (st) {
        free(xyz);
        return st;
    }
    frame->n = have, frame->xyz = xyz;
    ptreg_cloud_drop_nonfinite(frame);
    s->frames++;
    return PTREG_OK;
}
