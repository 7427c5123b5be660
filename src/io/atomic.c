/* Temporary file + rename: see ptreg/io.h. */
#define _POSIX_C_SOURCE 200809L

#include "ptreg/io.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A short fixed stem: a long target name cannot push the temporary one
 * past NAME_MAX, and a leftover from a killed run is easy to spot. */
#define TEMP_STEM ".ptreg-tmp-XXXXXX"

static char *temp_template(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    char *t = malloc(dir + sizeof TEMP_STEM);
    if (t) {
        memcpy(t, path, dir);
        memcpy(t + dir, TEMP_STEM, sizeof TEMP_STEM);
    }
    return t;
}

/* mkstemp makes the file 0600; a replaced file keeps its permissions and a
 * new one gets the usual 0644. */
static mode_t target_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return st.st_mode & 0777;
    return 0644;
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
    af->path = strdup(path);
    af->tmp_path = temp_template(path);
    if (!af->path || !af->tmp_path || !journal_hold_room(af)) {
        release(af);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) {
        int e = errno;
        free(af->tmp_path);
        af->tmp_path = NULL; /* nothing was created */
        return fail_errno(af, e, "cannot create a temporary file in its folder", err);
    }
    if (fchmod(fd, target_mode(path)) != 0 || !(af->fp = fdopen(fd, "wb"))) {
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
