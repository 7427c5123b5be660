/* What long commands show while they run and draw when they end: a
 * progress line on a terminal and --plot's SVG of the measure per step. */
#ifndef PTREG_CLI_PROGRESS_H
#define PTREG_CLI_PROGRESS_H

#include "cli/args.h"
#include "ptreg/core.h"

/* --plot, on the commands that take it (--quiet: cli/files.h). */
#define CLI_OPT_PLOT(what)                                                   \
    {                                                                        \
        "plot", 0, "FILE.svg", "draw " what " per iteration", CLI_WRITES_SVG \
    }

/* An iterative method's progress: a line on stderr (the step, the measure,
 * the time), redrawn at most ten times a second, when stderr is a terminal
 * and neither --json nor --quiet is given; with --plot, every step's
 * measure, for the plot. */
typedef struct cli_progress {
    const char *command, *step, *measure;
    int draw;
    int iterations; /* the steps are iterations: they delimit the device work per iteration */
    double start_ms, drawn_ms;
    double *values; /* --plot: the measure per step, else NULL */
    int count, capacity, lost;
} cli_progress;

/* step names what the library counts ("iteration", "stage"). */
void cli_progress_begin(cli_progress *p, const cli_args *a, const char *command, const char *step, const char *measure);
/* The library's hook feeding p. */
ptreg_progress cli_progress_hook(cli_progress *p);
/* Clears the line; with --plot, after a run that succeeded, writes the
 * plot (atomically): the exit code, 4 when the plot cannot be written.
 * Frees what p holds. */
int cli_progress_end(cli_progress *p, const cli_args *a, int succeeded);

/* The SVG line plot of values[0..n) against the step (a log axis when they
 * are positive and span more than a hundredfold), titled. */
int cli_plot_series(const char *command, const char *path, const char *title, const char *measure, const double *values,
                    int n);

#endif
