/* The tuner's cache of winners, shared by `ptreg tune` (which writes it)
 * and the commands that use a tuned kernel (which read it): JSON at
 * $PTREG_TUNE_CACHE, else $XDG_CACHE_HOME/ptreg/tune.json, else
 * ~/.cache/ptreg/tune.json ("off" disables it):
 *   {"format": 1, "machines": {MACHINE: {KERNEL: {SIZE CLASS:
 *     {"params": {NAME: VALUE, ...}, "seconds": S, "default_seconds": S,
 *      "ptreg": VERSION}}}}}
 * A missing cache means the built-in defaults; an unreadable, corrupted or
 * stale one (another format, or written by another ptreg version) is
 * ignored with one warning on stderr, never an error. */
#ifndef PTREG_CLI_TUNE_CACHE_H
#define PTREG_CLI_TUNE_CACHE_H

#include "ptreg/tune.h"

/* The cache's path; 0 when the cache is off or no home is known. */
int cli_tune_cache_path(char *buf, size_t size);

/* The size class of a problem of `work` units (n * m pairs ...): "1e8". */
void cli_tune_size_class(double work, char *buf, size_t size);

/* The winner for (machine, space's kernel, size class), or the nearest
 * size class stored for them, into point (the space's parameters by name;
 * a parameter missing from the entry keeps its fallback). Returns 1 when
 * found; 0 otherwise (a warning is printed when the cache is unusable,
 * stale, or holds a point the space does not: each value must be one its
 * parameter takes, the point within the constraints on m). */
int cli_tune_lookup(const ptreg_tune_space *space, const ptreg_tune_machine *m, const char *size_class,
                    double *point, char *found_class, size_t class_size);
/* The same on the cache's text (path names it in warnings): the fuzz
 * target's entry. */
int cli_tune_lookup_text(const char *text, const char *path, const ptreg_tune_space *space,
                         const ptreg_tune_machine *m, const char *size_class, double *point, char *found_class,
                         size_t class_size);

/* For a command about to run a tunable kernel on `on` (the CPU or a
 * resolved GPU): that machine's winner for the space's kernel and the
 * problem's work, else the space's fallbacks, into point, unless the
 * command was given --no-tune. Returns "tuned" (cls, the size class used,
 * filled) or "default". */
const char *cli_tune_winner(int no_tune, const ptreg_tune_space *space, const ptreg_device *on, double work,
                            double *point, char *cls, size_t cls_size);
/* {"source": ..., "size_class": ..., NAME: VALUE ...} for a command's JSON. */
struct cJSON *cli_tune_json(const ptreg_tune_space *space, const char *source, const char *cls, const double *point);

/* Stores a winner, atomically; an exit code (a failure is printed). */
int cli_tune_store(const ptreg_tune_space *space, const char *machine, const char *size_class, const double *point,
                   double seconds, double default_seconds);

#endif
