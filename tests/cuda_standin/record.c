#define _POSIX_C_SOURCE 200809L /* mkdir, getpid */
/* Records: the bridge from a compiled image to the source it came from.
 * The NVRTC recorder writes one per image it hands out (named by a hash of
 * the image's bytes), the driver reads it when that image is loaded, even
 * by a later process from ptreg's disk cache. A record holds NVRTC's
 * options and the whole source, in a small text header:
 *   ptreg-cuda-standin-record 1
 *   name LABEL
 *   options N, then N lines
 *   source BYTES, then the bytes */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "standin.h"

#define MAGIC "ptreg-cuda-standin-record 1"

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void standin_image_key(const void *data, size_t size, char key[33])
{
    const uint64_t a = fnv1a(0xcbf29ce484222325ull, data, size);
    const uint64_t b = fnv1a(0x84222325cbf29ce4ull ^ size, data, size);
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int make_dir(const char *path) { return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1; }

const char *standin_record_dir(void)
{
    static char dir[1024];
    const char *root = getenv("CUDA_STANDIN_DIR");
    if (!root || !*root)
        return NULL;
    int n = snprintf(dir, sizeof dir, "%s/images", root);
    if (n <= 0 || (size_t)n >= sizeof dir || make_dir(root) || make_dir(dir))
        return NULL;
    return dir;
}

static int record_path(const char *key, char *path, size_t size)
{
    const char *dir = standin_record_dir();
    return dir && snprintf(path, size, "%s/%s.rec", dir, key) < (int)size ? 0 : -1;
}

int standin_record_write(const char *key, const char *name, const char *source, int noptions,
                         const char *const *options)
{
    char path[1100], tmp[1200];
    if (record_path(key, path, sizeof path))
        return -1;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    const size_t len = strlen(source);
    int ok = fprintf(f, "%s\nname %s\noptions %d\n", MAGIC, name ? name : "", noptions) > 0;
    for (int i = 0; i < noptions && ok; i++)
        ok = fprintf(f, "%s\n", options[i]) > 0;
    ok = ok && fprintf(f, "source %zu\n", len) > 0 && fwrite(source, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path)) {
        remove(tmp);
        return -1;
    }
    return 0;
}

static char *read_line(FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n <= 0) {
        free(line);
        return NULL;
    }
    if (line[n - 1] == '\n')
        line[n - 1] = '\0';
    return line;
}

static int read_body(FILE *f, standin_record *rec)
{
    char *line = read_line(f);
    int ok = line && !strcmp(line, MAGIC);
    free(line);
    line = ok ? read_line(f) : NULL;
    ok = line && !strncmp(line, "name ", 5) && (rec->name = strdup(line + 5));
    free(line);
    line = ok ? read_line(f) : NULL;
    ok = line && sscanf(line, "options %d", &rec->noptions) == 1 && rec->noptions >= 0 && rec->noptions < 4096 &&
         (rec->options = calloc((size_t)rec->noptions + 1, sizeof *rec->options));
    free(line);
    for (int i = 0; ok && i < rec->noptions; i++)
        ok = (rec->options[i] = read_line(f)) != NULL;
    line = ok ? read_line(f) : NULL;
    size_t len = 0;
    ok = line && sscanf(line, "source %zu", &len) == 1 && (rec->source = malloc(len + 1)) &&
         fread(rec->source, 1, len, f) == len;
    free(line);
    if (ok)
        rec->source[len] = '\0';
    return ok ? 0 : -1;
}

int standin_record_read(const char *key, standin_record *rec, char *why, size_t why_size)
{
    memset(rec, 0, sizeof *rec);
    char path[1100];
    if (record_path(key, path, sizeof path)) {
        snprintf(why, why_size, "CUDA_STANDIN_DIR is not set (run through scripts/with-cuda-standin.sh)");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size,
                 "image %s was not compiled through the stand-in's NVRTC (no %s): it cannot say which source to run",
                 key, path);
        return -1;
    }
    int rc = read_body(f, rec);
    fclose(f);
    if (rc) {
        snprintf(why, why_size, "the record %s is damaged", path);
        standin_record_free(rec);
    }
    return rc;
}

void standin_record_free(standin_record *rec)
{
    for (int i = 0; rec->options && i < rec->noptions; i++)
        free(rec->options[i]);
    free(rec->options);
    free(rec->name);
    free(rec->source);
    memset(rec, 0, sizeof *rec);
}
