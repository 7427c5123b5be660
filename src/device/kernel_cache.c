#define _POSIX_C_SOURCE 200809L /* mkdir, mkstemp, fdopen */
/* Compiled kernels on disk, so that a program is compiled once per machine
 * rather than once per process: $PTREG_KERNEL_CACHE (a folder, or "off"),
 * else $XDG_CACHE_HOME/ptreg/kernels, else ~/.cache/ptreg/kernels. A file
 * is named by a 128-bit hash of everything that decides the binary (source,
 * options, architecture, compiler and driver versions), holds a small
 * header with the image's size and checksum, and is written atomically; a
 * file that does not check out is ignored and rewritten. */
#include "device/kernel_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC 0x4b525450u /* "PTRK" */

static uint64_t fnv1a(uint64_t h, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void key_hash(const char *const parts[], size_t count, uint64_t key[2])
{
    key[0] = 0xcbf29ce484222325ull;
    key[1] = 0x84222325cbf29ce4ull;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(parts[i]);
        /* the length too, so that ("ab", "c") and ("a", "bc") differ */
        key[0] = fnv1a(fnv1a(key[0], &len, sizeof len), parts[i], len);
        key[1] = fnv1a(fnv1a(key[1], parts[i], len), &len, sizeof len);
    }
}

static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* The cache folder, created; 0 when caching is off or impossible. */
static int cache_dir(char *dir, size_t size)
{
    const char *env = getenv("PTREG_KERNEL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && (!strcmp(env, "off") || !strcmp(env, "0")))
        return 0;
    int n;
    if (env && *env)
        n = snprintf(dir, size, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(dir, size, "%s/ptreg/kernels", xdg);
    else if (home && *home)
        n = snprintf(dir, size, "%s/.cache/ptreg/kernels", home);
    else
        return 0;
    return n > 0 && (size_t)n < size && make_dirs(dir) == 0;
}

static int cache_path(const char *kind, const char *const parts[], size_t count, char *path, size_t size)
{
    char dir[900];
    if (!cache_dir(dir, sizeof dir))
        return 0;
    uint64_t key[2];
    key_hash(parts, count, key);
    int n = snprintf(path, size, "%s/%016llx%016llx.%s", dir, (unsigned long long)key[0], (unsigned long long)key[1],
                     kind);
    return n > 0 && (size_t)n < size;
}

typedef struct cache_header {
    uint32_t magic, unused;
    uint64_t size, checksum;
} cache_header;

int kernel_cache_load(const char *kind, const char *const parts[], size_t count, void **image, size_t *size)
{
    char path[1024];
    if (!cache_path(kind, parts, count, path, sizeof path))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    cache_header h;
    void *data = NULL;
    int ok = fread(&h, sizeof h, 1, f) == 1 && h.magic == MAGIC && h.size > 0 && h.size < (1ull << 31) &&
             (data = malloc(h.size)) && fread(data, 1, h.size, f) == h.size && fgetc(f) == EOF &&
             fnv1a(0xcbf29ce484222325ull, data, h.size) == h.checksum;
    fclose(f);
    if (!ok) {
        free(data);
        return 0;
    }
    *image = data;
    *size = h.size;
    return 1;
}

void kernel_cache_store(const char *kind, const char *const parts[], size_t count, const void *image, size_t size)
{
    char path[1024], tmp[1100];
    if (!cache_path(kind, parts, count, path, sizeof path))
        return;
    /* A name of its own for every writer, threads of one process included:
     * two writers of one key each rename a whole file over the other's. */
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        remove(tmp);
        return;
    }
    cache_header h = {MAGIC, 0, size, fnv1a(0xcbf29ce484222325ull, image, size)};
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(image, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path))
        remove(tmp);
}

void kernel_cache_forget(const char *kind, const char *const parts[], size_t count)
{
    char path[1024];
    if (cache_path(kind, parts, count, path, sizeof path))
        remove(path);
}
