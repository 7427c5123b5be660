/* Temporary file + rename: see ptreg/io.h. */
#define _POSIX_C_SOURCE 200809L

#include "ptreg/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A short fixed stem: a long target name cannot push the temporary one
 * past NAME_MAX, and a leftover from a killed run is easy to spot. */
#define TEMP_STEM ".ptreg-tmp-"
#define TEMP_RANDOM 6
/* Symlinks followed before giving up (Linux's own limit). */
#define MAX_LINK_HOPS 40

/* The text of a symlink, NUL-terminated (malloc'd; NULL with errno set). */
static char *read_link(const char *path, size_t hint)
{
    for (size_t size = hint + 2 > 64 ? hint + 2 : 64;; size *= 2) {
        char *buf = malloc(size);
        if (!buf)
            return NULL;
        ssize_t got = readlink(path, buf, size);
        if (got >= 0 && (size_t)got < size) {
            buf[got] = '\0';
            return buf;
        }
        free(buf);
        if (got < 0)
            return NULL;
    }
}

/* `link`'s target as a path: a relative one is relative to the link's
 * folder, not to ours. */
static char *link_target(const char *link, const char *text)
{
    const char *slash = strrchr(link, '/');
    size_t dir = text[0] == '/' || !slash ? 0 : (size_t)(slash - link) + 1;
    char *t = malloc(dir + strlen(text) + 1);
    if (t) {
        memcpy(t, link, dir);
        strcpy(t + dir, text);
    }
    return t;
}

/* The file an output path names: a symlink is followed (link by link, a
 * dangling one to the file it names, which is then created), so that the
 * new file replaces the link's target and the link stays a link. NULL with
 * errno set (ELOOP, ENOMEM) on failure. */
static char *resolve_output(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        char *text = hops < MAX_LINK_HOPS ? read_link(cur, (size_t)st.st_size) : NULL;
        char *next = text ? link_target(cur, text) : NULL;
        int e = hops < MAX_LINK_HOPS ? errno : ELOOP;
        free(text);
        free(cur);
        cur = next;
        if (!cur)
            errno = e ? e : ENOMEM;
    }
    return NULL;
}

static char *temp_template(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    char *t = malloc(dir + sizeof TEMP_STEM + TEMP_RANDOM);
    if (t) {
        memcpy(t, path, dir);
        memcpy(t + dir, TEMP_STEM, sizeof TEMP_STEM);
    }
    return t;
}

/* splitmix64: spreads a counter, the time and the pid over the name. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Creates the temporary file with open(O_EXCL) rather than mkstemp: the
 * mode 0666 goes through the process's umask (and a folder's default ACL)
 * as any new file's does, where mkstemp's 0600 would need the umask, which
 * a thread cannot read without changing it. */
static int create_temp(char *tmp)
{
    static unsigned long counter;
    char *x = tmp + strlen(tmp);
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t r = mix(((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                         ((uint64_t)__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) << 40) ^ (uintptr_t)tmp);
        for (int k = 0; k < TEMP_RANDOM; k++, r /= 62)
            x[k] = digits[r % 62];
        x[TEMP_RANDOM] = '\0';
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
        *x = '\0';
    }
    errno = EEXIST;
    return -1;
}

/* A replaced file keeps its permission bits; a new one has what
 * create_temp's open gave it (0666 less the umask). */
static int keep_target_mode(int fd, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return fchmod(fd, st.st_mode & 0777);
    return 0;
}

/* The journal of committed targets (see ptreg/io.h). Room for a file's
 * commit is held from its open to its commit or abort, so that a commit
 * never fails for want of it, however many files threads have open. */
static struct {
    int on;
    size_t count, capacity;
    size_t held; /* rooms held by open files */
    char **paths;
    pthread_mutex_t lock;
} journal = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int journal_hold_room(ptreg_atomic_file *af)
{
    pthread_mutex_lock(&journal.lock);
    int ok = 1;
    if (journal.on && journal.count + journal.held >= journal.capacity) {
        size_t cap = journal.capacity ? 2 * journal.capacity : 8;
        while (cap <= journal.count + journal.held)
            cap *= 2;
        char **p = realloc(journal.paths, cap * sizeof *p);
        if (p) {
            journal.paths = p;
            journal.capacity = cap;
        }
        ok = p != NULL;
    }
    if (ok) {
        journal.held++;
        af->journal_room = 1;
    }
    pthread_mutex_unlock(&journal.lock);
    return ok;
}

static void journal_give_back_room(ptreg_atomic_file *af)
{
    if (!af->journal_room)
        return;
    pthread_mutex_lock(&journal.lock);
    journal.held--;
    af->journal_room = 0;
    pthread_mutex_unlock(&journal.lock);
}

/* Takes the committed target's path into the journal (when it is on). */
static void journal_record(ptreg_atomic_file *af)
{
    pthread_mutex_lock(&journal.lock);
    if (journal.on && journal.count < journal.capacity) {
        journal.paths[journal.count++] = af->path;
        af->path = NULL;
    }
    pthread_mutex_unlock(&journal.lock);
}

void ptreg_atomic_journal_begin(void)
{
    pthread_mutex_lock(&journal.lock);
    journal.on = 1;
    pthread_mutex_unlock(&journal.lock);
}

void ptreg_atomic_journal_end(int remove_files)
{
    pthread_mutex_lock(&journal.lock);
    for (size_t i = 0; i < journal.count; i++) {
        if (remove_files)
            unlink(journal.paths[i]);
        free(journal.paths[i]);
    }
    free(journal.paths);
    journal.paths = NULL;
    journal.count = journal.capacity = 0;
    journal.on = 0;
    pthread_mutex_unlock(&journal.lock);
}

static void release(ptreg_atomic_file *af)
{
    journal_give_back_room(af);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}

static ptreg_status fail_errno(ptreg_atomic_file *af, int e, const char *what, ptreg_error *err)
{
    ptreg_status s = ptreg_error_set(err, PTREG_ERR_IO, "%s: %s: %s", af->path, what, strerror(e));
    if (af->tmp_path)
        unlink(af->tmp_path);
    release(af);
    return s;
}

ptreg_status ptreg_atomic_open(const char *path, ptreg_atomic_file *af, ptreg_error *err)
{
    memset(af, 0, sizeof *af);
    if (!path || !*path)
        return ptreg_error_set(err, PTREG_ERR_ARG, "no output path");
    af->path = resolve_output(path);
    if (!af->path && errno != ENOMEM) /* a loop of links, or one that cannot be read */
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: %s", path, strerror(errno));
    af->tmp_path = af->path ? temp_template(af->path) : NULL;
    if (!af->path || !af->tmp_path || !journal_hold_room(af)) {
        release(af);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = create_temp(af->tmp_path);
    if (fd < 0) {
        int e = errno;
        free(af->tmp_path);
        af->tmp_path = NULL; /* nothing was created */
        return fail_errno(af, e, "cannot create a temporary file in its folder", err);
    }
    if (keep_target_mode(fd, af->path) != 0 || !(af->fp = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        return fail_errno(af, e, "cannot open a temporary file in its folder", err);
    }
    return PTREG_OK;
}

ptreg_status ptreg_atomic_commit(ptreg_atomic_file *af, ptreg_error *err)
{
    if (!af->fp)
        return ptreg_error_set(err, PTREG_ERR_ARG, "atomic commit: no file is open");
    /* The stream's error flag is all that is left of a failed write; its
     * reason (ENOSPC, EFBIG ...) is still in errno unless something failed
     * since, and a flush of what is left gives a fresh one. */
    int last = errno, e = 0, had_error = ferror(af->fp);
    if (fflush(af->fp) != 0)
        e = errno;
    if (had_error && !e)
        e = last ? last : EIO;
    if (fclose(af->fp) != 0 && !e)
        e = errno;
    af->fp = NULL;
    if (e)
        return fail_errno(af, e, "cannot write", err);
    if (rename(af->tmp_path, af->path) != 0)
        return fail_errno(af, errno, "cannot replace", err);
    if (!af->shared)
        journal_record(af);
    release(af);
    return PTREG_OK;
}

void ptreg_atomic_abort(ptreg_atomic_file *af)
{
    if (af->fp)
        fclose(af->fp);
    if (af->tmp_path)
        unlink(af->tmp_path);
    release(af);
}
