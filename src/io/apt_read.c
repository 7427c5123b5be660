/* Atom-probe reconstructions: .pos (16-byte records: x y z m/q) and .epos
 * (44-byte records: x y z m/q, TOF, VDC, Vpulse, detector x y as float32,
 * then the pulse delta and the ions per pulse as uint32), big-endian. The
 * record count comes from the file's size; a size that is not a whole
 * number of records is an error naming where the last record breaks off. */
#include "ptreg/apt.h"

#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"
#include "io/io_internal.h"
#include "io/testing.h"

#define POS_RECORD 16
#define EPOS_RECORD 44

void ptreg_apt_init(ptreg_apt *apt) { memset(apt, 0, sizeof *apt); }

void ptreg_apt_free(ptreg_apt *apt)
{
    if (!apt)
        return;
    free(apt->xyz);
    free(apt->mq);
    free(apt->tof);
    free(apt->vdc);
    free(apt->vpulse);
    free(apt->detector);
    free(apt->pulse_delta);
    free(apt->ions_per_pulse);
    ptreg_apt_init(apt);
}

ptreg_apt_format ptreg_apt_format_from_path(const char *path)
{
    if (path && io_has_extension(path, "pos"))
        return PTREG_APT_POS;
    if (path && io_has_extension(path, "epos"))
        return PTREG_APT_EPOS;
    return PTREG_APT_AUTO;
}

static ptreg_status allocate(const io_in *in, ptreg_apt *apt, size_t n, int epos)
{
    apt->xyz = malloc(3 * n * sizeof(float));
    apt->mq = malloc(n * sizeof(float));
    int ok = apt->xyz && apt->mq;
    if (epos) {
        apt->tof = malloc(n * sizeof(float));
        apt->vdc = malloc(n * sizeof(float));
        apt->vpulse = malloc(n * sizeof(float));
        apt->detector = malloc(2 * n * sizeof(float));
        apt->pulse_delta = malloc(n * sizeof(uint32_t));
        apt->ions_per_pulse = malloc(n * sizeof(uint32_t));
        ok = ok && apt->tof && apt->vdc && apt->vpulse && apt->detector && apt->pulse_delta && apt->ions_per_pulse;
    }
    if (!ok) {
        ptreg_apt_free(apt);
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu ions", in->name, n);
    }
    apt->n = n;
    return PTREG_OK;
}

static float be_float(const unsigned char *p) { return io_load_float(p, IO_F32, 1); }
static uint32_t be_u32(const unsigned char *p) { return (uint32_t)io_load(p, IO_U32, 1); }

static void decode(const unsigned char *d, size_t n, int epos, ptreg_apt *apt)
{
    const size_t record = epos ? EPOS_RECORD : POS_RECORD;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *r = d + i * record;
        for (int k = 0; k < 3; k++)
            apt->xyz[3 * i + (size_t)k] = be_float(r + 4 * k);
        apt->mq[i] = be_float(r + 12);
        if (!epos)
            continue;
        apt->tof[i] = be_float(r + 16);
        apt->vdc[i] = be_float(r + 20);
        apt->vpulse[i] = be_float(r + 24);
        apt->detector[2 * i] = be_float(r + 28);
        apt->detector[2 * i + 1] = be_float(r + 32);
        apt->pulse_delta[i] = be_u32(r + 36);
        apt->ions_per_pulse[i] = be_u32(r + 40);
    }
}

/* The format (resolved from the name when AUTO) and the records' count,
 * after the checks every read makes. */
static ptreg_status count_records(const io_in *in, ptreg_apt_format *format, size_t *records)
{
    if (*format == PTREG_APT_AUTO)
        *format = ptreg_apt_format_from_path(in->name);
    if (*format != PTREG_APT_POS && *format != PTREG_APT_EPOS)
        return ptreg_error_set(in->err, PTREG_ERR_ARG, "%s: not a .pos or .epos file (give the format)", in->name);
    const size_t record = *format == PTREG_APT_EPOS ? EPOS_RECORD : POS_RECORD;
    const char *kind = *format == PTREG_APT_EPOS ? ".epos" : ".pos";
    if (in->size == 0)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 0, "empty %s file", kind);
    if (in->size % record)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size - in->size % record,
                            "a %s file is %zu-byte records: %zu whole ones, then %zu bytes (truncated?)", kind, record,
                            in->size / record, in->size % record);
    *records = in->size / record;
    return PTREG_OK;
}

ptreg_status ptreg_apt_read_memory(const void *data, size_t size, ptreg_apt_format format, const char *name,
                                   ptreg_apt *apt, ptreg_error *err)
{
    io_in in = {data, size, name ? name : "<memory>", err, NULL};
    if (apt)
        ptreg_apt_init(apt);
    if (!apt || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no reconstruction or no data", in.name);
    size_t n;
    ptreg_status st = count_records(&in, &format, &n);
    st = st ? st : allocate(&in, apt, n, format == PTREG_APT_EPOS);
    if (!st)
        decode(in.data, apt->n, format == PTREG_APT_EPOS, apt);
    return st;
}

ptreg_status ptreg_apt_read(const char *path, ptreg_apt_format format, ptreg_apt *apt, ptreg_error *err)
{
    if (apt)
        ptreg_apt_init(apt);
    if (!path || !apt)
        return ptreg_error_set(err, PTREG_ERR_ARG, "APT read: no path or no reconstruction");
    unsigned char *data;
    size_t size;
    ptreg_status st = io_read_file(path, &data, &size, err);
    if (st)
        return st;
    st = ptreg_apt_read_memory(data, size, format, path, apt, err);
    free(data);
    return st;
}

/* The records [first, first + count) into the piece's room. */
static void decode_piece(const io_in *in, int epos, size_t first, size_t count, ptreg_apt *piece)
{
    const size_t record = epos ? EPOS_RECORD : POS_RECORD;
    piece->n = count;
    decode(in->data + first * record, count, epos, piece);
}

ptreg_status ptreg_apt_read_pieces(const char *path, ptreg_apt_format format, size_t piece, const uint8_t *skip,
                                   ptreg_apt_piece_fn fn, void *ctx, ptreg_error *err)
{
    if (!path || !fn || piece == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "APT read: no path, no function or pieces of 0 ions");
    unsigned char *data;
    size_t size, n = 0, released = 0;
    int mapped;
    ptreg_status st = io_map_file(path, &data, &size, &mapped, err);
    if (st)
        return st;
    io_in in = {data, size, path, err, NULL};
    st = count_records(&in, &format, &n);
    const int epos = format == PTREG_APT_EPOS;
    ptreg_apt room;
    ptreg_apt_init(&room);
    st = st ? st : allocate(&in, &room, n < piece ? n : piece, epos);
    for (size_t first = 0; !st && first < n; first += piece) {
        const size_t count = n - first < piece ? n - first : piece;
        if (skip && skip[first / piece])
            continue;
        decode_piece(&in, epos, first, count, &room);
        st = fn(ctx, &room, first, err);
        io_let_pages_go(data, mapped, &released, (first + count) * (epos ? EPOS_RECORD : POS_RECORD));
    }
    ptreg_apt_free(&room);
    io_unmap_file(data, size, mapped);
    return st;
}

static void put_be_float(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    p[0] = (unsigned char)(u >> 24), p[1] = (unsigned char)(u >> 16);
    p[2] = (unsigned char)(u >> 8), p[3] = (unsigned char)u;
}

ptreg_status ptreg_apt_write_pos(const char *path, const float *xyz, const float *mq, size_t n, ptreg_error *err)
{
    if (!path || (n && !xyz))
        return ptreg_error_set(err, PTREG_ERR_ARG, ".pos write: no path or no points");
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    unsigned char rec[POS_RECORD];
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++)
            put_be_float(rec + 4 * k, xyz[3 * i + (size_t)k]);
        put_be_float(rec + 12, mq ? mq[i] : 0.0f);
        fwrite(rec, 1, sizeof rec, af.fp);
    }
    return ptreg_atomic_commit(&af, err);
}

/* As a cloud: the coordinates, non-finite ones dropped as every reader
 * drops them. */
ptreg_status io_read_apt_cloud(const io_in *in, ptreg_apt_format format, ptreg_cloud *cloud)
{
    ptreg_apt apt;
    ptreg_status st = ptreg_apt_read_memory(in->data, in->size, format, in->name, &apt, in->err);
    if (st)
        return st;
    st = io_cloud_reserve(in, cloud, apt.n, 0);
    for (size_t i = 0; !st && i < apt.n; i++) { /* one by one: read in pieces, the room is a piece's */
        const float *q = apt.xyz + 3 * i;
        io_point p = {{q[0], q[1], q[2]}, {0, 0, 0}, 0, 0, {0, 0, 0}};
        st = io_cloud_store(in, cloud, &p);
    }
    if (!st)
        st = io_cloud_finish(in, cloud, apt.n, 0, in->size);
    ptreg_apt_free(&apt);
    return st;
}
