/* The tuner's cache of winners (tune.h): `ptreg tune` stores, the front
 * ends look up (ptreg_tune_choose). JSON, one document:
 *   {"format": 1, "machines": {MACHINE: {KERNEL: {SIZE CLASS:
 *     {"params": {NAME: VALUE, ...}, "seconds": S, "default_seconds": S,
 *      "ptreg": VERSION}}}}}
 * A missing cache means the built-in defaults; an unreadable, corrupted or
 * stale one (another format, or written by another ptreg version) is
 * ignored with one warning on stderr, never an error. */
/* flock: BSD, in glibc's default set */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include "ptreg/tune.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ptreg/io.h"
#include "tune/testing.h"
#include "tune/tune_kernels.h"

#define CACHE_FORMAT 1
#define CACHE_MAX_BYTES (16u << 20)

int ptreg_tune_cache_path(char *buf, size_t size)
{
    const char *env = getenv("PTREG_TUNE_CACHE");
    if (env && *env) {
        if (!strcmp(env, "off"))
            return 0;
        snprintf(buf, size, "%s", env);
        return 1;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, size, "%s/ptreg/tune.json", xdg);
    else if (home && *home)
        snprintf(buf, size, "%s/.cache/ptreg/tune.json", home);
    else
        return 0;
    return 1;
}

void ptreg_tune_size_class(double work, char *buf, size_t size)
{
    snprintf(buf, size, "1e%d", work > 1 ? (int)lround(log10(work)) : 0);
}

/* Once per process, whichever thread of a library caller meets it first. */
static void warn_once(const char *path, const char *why)
{
    static atomic_int warned;
    if (!atomic_fetch_add(&warned, 1))
        fprintf(stderr, "ptreg: warning: the tuning cache %s %s: built-in defaults used\n", path, why);
}

/* The cache's root parsed from text, or NULL with why it is unusable. */
static cJSON *parse(const char *text, const char **why)
{
    cJSON *root = cJSON_Parse(text);
    const cJSON *format = root ? cJSON_GetObjectItemCaseSensitive(root, "format") : NULL;
    *why = NULL;
    if (!root || !cJSON_IsNumber(format) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "machines")))
        *why = "is corrupted";
    else if (format->valuedouble != CACHE_FORMAT)
        *why = "has another format (stale)";
    if (*why) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* The whole cache file as text (NUL-terminated, freed by the caller), or
 * NULL: absent (*why NULL) or unreadable (*no_memory set when for want of
 * memory). */
static char *read_text(const char *path, const char **why, int *no_memory)
{
    *why = NULL;
    *no_memory = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno != ENOENT)
            *why = "cannot be read";
        return NULL;
    }
    char *text = malloc(CACHE_MAX_BYTES + 1);
    size_t got = text ? fread(text, 1, CACHE_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!text || got > CACHE_MAX_BYTES) {
        *no_memory = !text;
        free(text);
        *why = text ? "is too large (corrupted)" : "cannot be read (out of memory)";
        return NULL;
    }
    text[got] = '\0';
    return text;
}

static double class_exponent(const char *name) { return strncmp(name, "1e", 2) ? NAN : atof(name + 2); }

/* The entry of the class, or of the nearest class stored. */
static const cJSON *nearest_class(const cJSON *classes, const char *size_class)
{
    const cJSON *best = NULL, *c;
    double want = class_exponent(size_class), best_d = INFINITY;
    cJSON_ArrayForEach(c, classes)
    {
        const double d = fabs(class_exponent(c->string) - want);
        if (d < best_d)
            best = c, best_d = d;
    }
    return best;
}

/* Whether every value is one its parameter takes and the point meets the
 * space's constraints on this machine: a winner from the file is applied
 * as options (thread counts, tile sizes), so it must be one the search
 * could have chosen. */
static int point_in_space(const ptreg_tune_space *s, const ptreg_tune_machine *m, const double *point)
{
    for (int p = 0; p < s->param_count; p++) {
        double values[PTREG_TUNE_MAX_VALUES];
        const int count = ptreg_tune_param_values(&s->params[p], values);
        int known = 0;
        for (int v = 0; v < count && !known; v++)
            known = values[v] == point[p];
        if (!known)
            return 0;
    }
    return ptreg_tune_valid(s, m, point);
}

int ptreg_tune_cache_lookup_text(const char *text, const char *path, const ptreg_tune_space *s,
                                 const ptreg_tune_machine *m, const char *size_class, double *point, char *found_class,
                                 size_t class_size)
{
    const char *why;
    cJSON *root = parse(text, &why);
    const cJSON *machines = root ? cJSON_GetObjectItemCaseSensitive(root, "machines") : NULL;
    const cJSON *kernels = machines ? cJSON_GetObjectItemCaseSensitive(machines, m->name) : NULL;
    const cJSON *classes = kernels ? cJSON_GetObjectItemCaseSensitive(kernels, s->kernel) : NULL;
    const cJSON *entry = cJSON_IsObject(classes) ? nearest_class(classes, size_class) : NULL;
    const cJSON *params = entry ? cJSON_GetObjectItemCaseSensitive(entry, "params") : NULL;
    const cJSON *by = entry ? cJSON_GetObjectItemCaseSensitive(entry, "ptreg") : NULL;
    int found = cJSON_IsObject(params);
    if (found && (!cJSON_IsString(by) || strcmp(by->valuestring, ptreg_version())))
        why = "was written by another ptreg version (stale)", found = 0;
    double got[PTREG_TUNE_MAX_PARAMS];
    for (int p = 0; found && p < s->param_count; p++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, s->params[p].name);
        got[p] = cJSON_IsNumber(v) ? v->valuedouble : s->params[p].fallback;
    }
    if (found && !point_in_space(s, m, got))
        why = "holds a winner outside the kernel's space (corrupted)", found = 0;
    if (found) {
        memcpy(point, got, (size_t)s->param_count * sizeof *point);
        if (found_class)
            snprintf(found_class, class_size, "%s", entry->string);
    }
    if (why)
        warn_once(path, why);
    cJSON_Delete(root);
    return found;
}

int ptreg_tune_cache_lookup(const ptreg_tune_space *s, const ptreg_tune_machine *m, const char *size_class,
                            double *point, char *found_class, size_t class_size)
{
    char path[1024];
    if (!ptreg_tune_cache_path(path, sizeof path))
        return 0;
    const char *why;
    int no_memory;
    char *text = read_text(path, &why, &no_memory);
    if (!text) {
        if (why)
            warn_once(path, why);
        return no_memory ? -1 : 0;
    }
    const int found = ptreg_tune_cache_lookup_text(text, path, s, m, size_class, point, found_class, class_size);
    free(text);
    return found;
}

/* The directories of path, made as needed. */
static void make_parents(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
}

static cJSON *child(cJSON *parent, const char *name)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(parent, name);
    if (!cJSON_IsObject(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(parent, name);
        c = cJSON_AddObjectToObject(parent, name);
    }
    return c;
}

/* The cache's read-modify-write, under the lock of store_exclusively. */
static ptreg_status store_locked(const char *path, const ptreg_tune_space *s, const char *machine,
                                 const char *size_class, const double *point, double seconds, double default_seconds,
                                 ptreg_error *err)
{
    const char *why;
    int no_memory;
    char *old = read_text(path, &why, &no_memory);
    cJSON *root = old ? parse(old, &why) : NULL; /* an unusable cache is replaced */
    free(old);
    if (no_memory) /* not a reason to replace the cache */
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the tuning cache %s", path);
    if (!root) {
        root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "format", CACHE_FORMAT);
        cJSON_AddObjectToObject(root, "machines");
    }
    cJSON *classes = child(child(child(root, "machines"), machine), s->kernel);
    cJSON_DeleteItemFromObjectCaseSensitive(classes, size_class);
    cJSON *entry = cJSON_AddObjectToObject(classes, size_class), *params = cJSON_AddObjectToObject(entry, "params");
    int whole = params != NULL;
    for (int p = 0; p < s->param_count; p++)
        whole &= cJSON_AddNumberToObject(params, s->params[p].name, point[p]) != NULL;
    whole &= cJSON_AddNumberToObject(entry, "seconds", seconds) != NULL;
    whole &= cJSON_AddNumberToObject(entry, "default_seconds", default_seconds) != NULL;
    whole &= cJSON_AddStringToObject(entry, "ptreg", ptreg_version()) != NULL;
    char *text = whole ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) /* cJSON fails only for want of memory */
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the tuning cache %s", path);
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    af.shared = 1; /* the winners of other runs: kept if this one fails later */
    if (!st && fputs(text, af.fp) < 0) {
        ptreg_atomic_abort(&af);
        st = ptreg_error_set(err, PTREG_ERR_IO, "%s: write failed", path);
    } else if (!st) {
        st = ptreg_atomic_commit(&af, err);
    }
    free(text);
    return st;
}

/* Readers need no lock (the file is replaced whole by a rename), but two
 * writers at once would each rewrite the cache they read and the later
 * rename would drop the other's winner. flock on a lock file beside the
 * cache excludes other processes and, opened anew by each call, other
 * threads of this one. The lock file stays: removing it would let a
 * writer lock a file that no longer has the name the next one opens. */
static ptreg_status store_exclusively(const char *path, const ptreg_tune_space *s, const char *machine,
                                      const char *size_class, const double *point, double seconds,
                                      double default_seconds, ptreg_error *err)
{
    char lock_path[1100];
    snprintf(lock_path, sizeof lock_path, "%s.lock", path);
    int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot open the tuning cache's lock: %s", lock_path,
                               strerror(errno));
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
        ;
    ptreg_status st = rc ? ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot lock: %s", lock_path, strerror(errno))
                         : store_locked(path, s, machine, size_class, point, seconds, default_seconds, err);
    close(fd); /* releases the lock */
    return st;
}

ptreg_status ptreg_tune_cache_store(const ptreg_tune_space *s, const char *machine, const char *size_class,
                                    const double *point, double seconds, double default_seconds, ptreg_error *err)
{
    char path[1024];
    if (!ptreg_tune_cache_path(path, sizeof path))
        return ptreg_error_set(err, PTREG_ERR_ARG, "no tuning cache (PTREG_TUNE_CACHE=off, or no HOME)");
    make_parents(path);
    return store_exclusively(path, s, machine, size_class, point, seconds, default_seconds, err);
}
