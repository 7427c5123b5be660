/* Atomic output files for the library and the CLI: write to a temporary
 * file in the target's folder, then rename it over the target, so readers
 * see the old file or the whole new one, and a failure leaves nothing.
 *
 *     ptreg_atomic_file af;
 *     if (ptreg_atomic_open(path, &af, err) != PTREG_OK) return ...;
 *     fprintf(af.fp, ...);                     // any stdio output
 *     return ptreg_atomic_commit(&af, err);    // or ptreg_atomic_abort(&af)
 *
 * Commit checks every write (the stream's error flag, fflush, fclose)
 * before the rename. No fsync: a crash of the machine may lose the new
 * file, never leave a half-written one under the target's name. */
#ifndef PTREG_IO_ATOMIC_H
#define PTREG_IO_ATOMIC_H

#include "ptreg/core.h"

#include <stdio.h>

typedef struct ptreg_atomic_file {
    FILE *fp;       /* the temporary file, open for binary writing */
    char *path;     /* the target */
    char *tmp_path; /* the temporary file, in the target's folder */
    int shared;     /* set after open: a file kept across runs (the tuner's
                       cache), never journaled, so never removed */
} ptreg_atomic_file;

/* Creates the temporary file. On failure (PTREG_ERR_IO naming path and the
 * system's reason, or NOMEM) nothing is left on disk and af holds nothing
 * to release. The new file gets the target's permission bits when the
 * target exists, 0644 otherwise. */
ptreg_status ptreg_atomic_open(const char *path, ptreg_atomic_file *af, ptreg_error *err);
/* Closes the temporary file and renames it over the target. On failure the
 * temporary file is removed and the target is untouched. af is released
 * either way. */
ptreg_status ptreg_atomic_commit(ptreg_atomic_file *af, ptreg_error *err);
/* Closes and removes the temporary file; the target is untouched. Safe to
 * call on an af already committed or aborted. */
void ptreg_atomic_abort(ptreg_atomic_file *af);

/* A run's outputs as one: between begin and end every committed target is
 * noted, and end(1) removes them all, so that a run that fails after
 * writing some of its files leaves none (the CLI: any exit but 0). A file
 * that a removed output had replaced is gone too. Process-wide; library
 * callers that never begin pay nothing. */
void ptreg_atomic_journal_begin(void);
void ptreg_atomic_journal_end(int remove_files);

#endif
