/* A whole file into memory, and what its name's extension says: the
 * first step of every reader. */
#define _DEFAULT_SOURCE /* madvise */

#include "io/io_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Regular files are read with one fread of their size; pipes and devices
 * grow the buffer until the end. One byte more than the size asked for
 * tells the end from a file that grew. */
ptreg_status io_read_file(const char *path, unsigned char **data, size_t *size, ptreg_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    size_t cap = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
    size_t n = 0;
    unsigned char *buf = malloc(cap);
    int e = buf ? 0 : ENOMEM;
    while (!e) {
        errno = 0;
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) {
            e = errno ? errno : EIO;
        } else if (n < cap) {
            break;
        } else {
            unsigned char *p = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!p)
                e = ENOMEM;
            else {
                buf = p;
                cap *= 2;
            }
        }
    }
    fclose(f);
    if (e) {
        free(buf);
        return ptreg_error_set(err, e == ENOMEM ? PTREG_ERR_NOMEM : PTREG_ERR_IO, "%s: cannot read: %s", path,
                               strerror(e));
    }
    *data = buf;
    *size = n;
    return PTREG_OK;
}

/* Reading a file of 10^8 points into a buffer would hold its bytes and its
 * points at once; a map's pages can be let go as the parser passes them. */
ptreg_status io_map_file(const char *path, unsigned char **data, size_t *size, int *mapped, ptreg_error *err)
{
    *mapped = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    fclose(f);
    if (p == MAP_FAILED) /* a pipe, an empty file, a file system without maps */
        return io_read_file(path, data, size, err);
    *data = p;
    *size = (size_t)st.st_size;
    *mapped = 1;
    return PTREG_OK;
}

void io_unmap_file(unsigned char *data, size_t size, int mapped)
{
    if (mapped)
        munmap(data, size);
    else
        free(data);
}

void io_let_pages_go(const unsigned char *data, int mapped, size_t *released, size_t upto)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    upto = upto / page * page;
    if (!mapped || upto <= *released)
        return;
    madvise((void *)(data + *released), upto - *released, MADV_DONTNEED);
    *released = upto;
}

int io_has_extension(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.');
    return dot && !strchr(dot, '/') && !strcasecmp(dot + 1, ext);
}
