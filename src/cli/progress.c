/* Progress lines and convergence plots (progress.h). */
#include "cli/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/device_arg.h"
#include "cli/report.h"
#include "ptreg/io.h"

#define REDRAW_MS 100.0

void cli_progress_begin(cli_progress *p, const cli_args *a, const char *command, const char *step, const char *measure)
{
    *p = (cli_progress){command, step, measure, 0, !strcmp(step, "iteration"), 0, 0, NULL, 0, 0, 0};
    p->draw = isatty(STDERR_FILENO) && !cli_given(a, "json") && !cli_given(a, "quiet");
    p->start_ms = ptreg_time_ms();
    p->drawn_ms = -REDRAW_MS;
    if (cli_given(a, "plot") || cli_report())
        p->capacity = -1; /* keep values: allocated on the first step */
}

static void keep(cli_progress *p, int step, double value)
{
    if (p->capacity == 0 || p->lost)
        return;
    if (step >= p->capacity) {
        int cap = step < 64 ? 128 : 2 * step;
        double *v = realloc(p->values, (size_t)cap * sizeof *v);
        if (!v) {
            p->lost = 1;
            return;
        }
        for (int i = p->capacity < 0 ? 0 : p->capacity; i < cap; i++)
            v[i] = NAN;
        p->values = v, p->capacity = cap;
    }
    p->values[step] = value;
    if (step + 1 > p->count)
        p->count = step + 1;
}

static void on_step(void *ctx, int step, int most, double value)
{
    cli_progress *p = ctx;
    if (p->iterations)
        cli_device_step(step);
    keep(p, step, value);
    const double now = ptreg_time_ms();
    if (!p->draw || now - p->drawn_ms < REDRAW_MS)
        return;
    p->drawn_ms = now;
    fprintf(stderr, "\r  ptreg %s: %s %d of at most %d, %s %.6g, %.1f s\033[K", p->command, p->step, step, most,
            p->measure, value, (now - p->start_ms) / 1000.0);
    fflush(stderr);
}

ptreg_progress cli_progress_hook(cli_progress *p)
{
    return (ptreg_progress){on_step, p}; /* always: the steps delimit the device work per iteration */
}

/* The measure per step beside the report's view. */
static int add_report_curve(const cli_progress *p)
{
    if (p->lost) {
        cli_error(p->command, "--html: out of memory");
        return EXIT_RUNTIME;
    }
    char title[96];
    snprintf(title, sizeof title, "%s per %s", p->measure, p->step);
    ptreg_error err;
    return cli_report_check(ptreg_report_add_curve(cli_report(), title, p->measure, p->values, (size_t)p->count, &err),
                            &err);
}

int cli_progress_end(cli_progress *p, const cli_args *a, int succeeded)
{
    if (p->draw && p->drawn_ms >= 0) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
    int rc = EXIT_OK;
    if (succeeded && cli_given(a, "plot")) {
        char title[96];
        snprintf(title, sizeof title, "ptreg %s: %s per %s", p->command, p->measure, p->step);
        rc = p->lost ? (cli_error(p->command, "--plot: out of memory"), EXIT_RUNTIME)
                     : cli_plot_series(p->command, cli_string(a, "plot", NULL), title, p->measure, p->values, p->count);
    }
    if (!rc && succeeded && cli_report())
        rc = add_report_curve(p);
    free(p->values);
    p->values = NULL;
    return rc;
}

/* The plot's y of a value: its place between lo and hi (log10 when log). */
static double y_of(double v, double lo, double hi, int log_axis)
{
    if (log_axis)
        v = log10(v), lo = log10(lo), hi = log10(hi);
    return hi > lo ? 420.0 - 360.0 * (v - lo) / (hi - lo) : 240.0;
}

int cli_plot_series(const char *command, const char *path, const char *title, const char *measure, const double *values,
                    int n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(values[i]))
            lo = fmin(lo, values[i]), hi = fmax(hi, values[i]);
    const int log_axis = lo > 0 && hi > 100.0 * lo;
    ptreg_atomic_file af;
    ptreg_error err;
    if (ptreg_atomic_open(path, &af, &err)) {
        cli_error(command, "--plot: %s", err.message);
        return EXIT_RUNTIME;
    }
    FILE *f = af.fp;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"480\" font-family=\"sans-serif\" "
            "font-size=\"13\">\n<rect width=\"1000\" height=\"480\" fill=\"white\"/>\n"
            "<text x=\"60\" y=\"24\">%s%s</text>\n",
            title, log_axis ? " (log scale)" : "");
    fprintf(f, "<line x1=\"58\" y1=\"420\" x2=\"962\" y2=\"420\" stroke=\"black\"/>\n"
               "<line x1=\"58\" y1=\"60\" x2=\"58\" y2=\"420\" stroke=\"black\"/>\n");
    if (isfinite(lo))
        fprintf(f, "<text x=\"4\" y=\"64\">%.4g</text><text x=\"4\" y=\"424\">%.4g</text>\n", hi, lo);
    fprintf(f,
            "<text x=\"56\" y=\"440\">0</text><text x=\"940\" y=\"440\">%d</text>\n"
            "<text x=\"420\" y=\"460\">iteration</text><text x=\"60\" y=\"50\">%s</text>\n",
            n > 0 ? n - 1 : 0, measure);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#4a74b8\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++)
        if (isfinite(values[i]) && (!log_axis || values[i] > 0))
            fprintf(f, "%.2f,%.2f ", 60.0 + 900.0 * i / (n > 1 ? n - 1 : 1), y_of(values[i], lo, hi, log_axis));
    fprintf(f, "\"/>\n</svg>\n");
    if (ptreg_atomic_commit(&af, &err)) {
        cli_error(command, "--plot: %s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}
