/* --html FILE: the run's report (ptreg/report.h), one per process. A command
 * begins it, adds what it drew; its JSON result goes in too (cli_json_print's
 * sink: kept for the page and, with --json, for stdout once the page is
 * written, so a run that fails to write it prints nothing),
 * and main writes the page when the command succeeded (docs/REPORT.md). */
#ifndef PTREG_CLI_REPORT_H
#define PTREG_CLI_REPORT_H

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/json.h"
#include "ptreg/report.h"

#define CLI_OPT_HTML                                                            \
    {"html", 0, "FILE.html",                                                    \
     "write a self-contained HTML report of the run: a 3-D view, the curves, "  \
     "the numbers (docs/REPORT.md)",                                            \
     CLI_WRITES_HTML},                                                          \
    {                                                                           \
        "html-max-points", 0, "N",                                              \
            "--html: show at most N points in all, every layer evenly thinned " \
            "(default 2000000)"                                                 \
    }

/* With --html: a report begins, titled by the command and its arguments
 * ("ptreg icp scan.ply model.ply"), and from here the command's JSON goes
 * into it (and to stdout only with --json). Without --html nothing happens;
 * 2 when this ptreg has no viewer. */
int cli_report_begin(const cli_args *a, const char *command);
/* A report to `path` whatever the options (ptreg view): cap_option names
 * the option of the cap on points. */
int cli_report_open(const cli_args *a, const char *command, const char *path, const char *cap_option);
/* The report begun, or NULL (no --html): commands add to it when not NULL. */
ptreg_report *cli_report(void);
/* An add's status: its exit code, the message printed. */
int cli_report_check(ptreg_status st, const ptreg_error *err);
/* main's end of the run: the page written when rc is 0, then --json's
 * text printed (the exit code: the write's or the print's), the report
 * released either way. */
int cli_report_finish(int rc);

/* The colour of the i-th of many clouds (scans, frames): ten apart, then
 * again. */
uint32_t cli_report_palette(size_t i);

void cli_distances_free(cli_distances *d);
/* SOURCE (n points, the command's frame) moved by T; NULL: no memory. */
float *cli_moved(const float *xyz, size_t n, const double T[16]);
/* With --html, a registration's page: TARGET, SOURCE where it began (init;
 * NULL: identity) and where it ended (T), coloured by its distances, which
 * go into d for the JSON. Without --html d stays empty. */
int cli_report_registration(const float *source, size_t n, const float *target, size_t m, const double init[16],
                            const double T[16], cli_distances *d);

#endif
