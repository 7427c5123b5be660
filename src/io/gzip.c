/* gzip data of NRRD and NIfTI files, through zlib. */
#include "io/io_internal.h"

#include <limits.h>
#include <zlib.h>

size_t io_gunzip_bound(size_t n)
{
    /* deflate emits at least one bit per 258-byte match: 1032:1, plus
     * a little for stored and empty blocks. */
    return n > (SIZE_MAX - 4096) / 1032 ? SIZE_MAX : n * 1032 + 4096;
}

/* zlib counts in 32-bit uInt: larger buffers go in slices. */
static uInt slice(size_t left) { return left > UINT_MAX ? UINT_MAX : (uInt)left; }

/* After the output filled: inflates one byte more to tell "the stream ends
 * here" from "more data" and from "the input stops before the end". */
static int peek_past_end(z_stream *z, size_t in_left, int *more)
{
    unsigned char extra;
    z->next_out = &extra;
    z->avail_out = 1;
    z->avail_in = slice(in_left);
    int rc = inflate(z, Z_NO_FLUSH);
    if (z->avail_out == 0) {
        *more = 1;
        return Z_STREAM_END;
    }
    return rc == Z_OK ? Z_BUF_ERROR : rc;
}

ptreg_status io_gunzip(const io_in *in, size_t offset, const unsigned char *src, size_t n, unsigned char *out,
                       size_t out_size, size_t *produced, int *more)
{
    z_stream z = {0};
    int more_data = 0;
    /* 15 + 32: a 32 KiB window, gzip or zlib header detected. */
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return io_fail_byte(in, PTREG_ERR_NOMEM, offset, "cannot start gzip decoding");
    size_t in_left = n, out_left = out_size;
    z.next_in = (unsigned char *)src;
    z.next_out = out;
    int rc = Z_OK;
    while (rc == Z_OK) {
        if (out_left == 0) {
            rc = peek_past_end(&z, in_left, &more_data);
            break;
        }
        uInt give_in = slice(in_left), give_out = slice(out_left);
        z.avail_in = give_in;
        z.avail_out = give_out;
        rc = inflate(&z, Z_NO_FLUSH);
        in_left -= give_in - z.avail_in;
        out_left -= give_out - z.avail_out;
        if (rc == Z_BUF_ERROR && in_left > 0)
            rc = Z_OK; /* a slice boundary, not the end of the input */
    }
    *produced = out_size - out_left;
    if (more)
        *more = more_data;
    size_t at = offset + (n - in_left);
    const char *msg = z.msg;
    ptreg_status s = PTREG_OK;
    if (rc == Z_BUF_ERROR && out_left == 0)
        s = io_fail_byte(in, PTREG_ERR_FORMAT, at, "gzip data is truncated (the stream's end is missing)");
    else if (rc == Z_MEM_ERROR)
        s = io_fail_byte(in, PTREG_ERR_NOMEM, at, "out of memory decoding gzip data");
    else if (rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        s = io_fail_byte(in, PTREG_ERR_FORMAT, at, "corrupt gzip data (%s)", msg ? msg : "zlib error");
    inflateEnd(&z);
    /* A stream that stops early (Z_BUF_ERROR with room left) shows in
     * *produced; the caller names what was missing. */
    return s;
}
