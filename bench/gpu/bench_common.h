/* What the GPU benchmark programs (batch_gpu.c, pairs_gpu.c, harris_gpu.c,
 * features_gpu.c) share: comma lists on the command line, output printed
 * and copied to a markdown file, JSON rows, medians. */
#ifndef PTREG_BENCH_GPU_COMMON_H
#define PTREG_BENCH_GPU_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16

typedef struct list {
    size_t n;
    char *item[MAX_LIST];
} list;

/* Splits text (modified) at commas into l, at most MAX_LIST items. */
static void split(char *text, list *l)
{
    l->n = 0;
    for (char *tok = strtok(text, ","); tok && l->n < MAX_LIST; tok = strtok(NULL, ","))
        l->item[l->n++] = tok;
}

/* printf to stdout and, when md is open, to md as well. */
static void out_md(FILE *md, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    vprintf(fmt, ap);
    if (md)
        vfprintf(md, fmt, copy);
    va_end(copy);
    fflush(stdout);
}

/* The report of the programs with one kind of JSON row (not batch_gpu's). */
#ifndef BENCH_OWN_REPORT
/* Where the tables and rows go: stdout and md, and json as an array of
 * objects. */
typedef struct bench_report {
    FILE *md, *json;
    int first_json;
} bench_report;

static void report_line(bench_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_line(bench_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_md(r->md, fmt, ap);
    va_end(ap);
}

static void json_row(bench_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_row(bench_report *r, const char *fmt, ...)
{
    if (!r->json)
        return;
    fprintf(r->json, "%s\n {", r->first_json ? "" : ",");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->json, fmt, ap);
    va_end(ap);
    fprintf(r->json, "}");
    r->first_json = 0;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}
#endif

#endif
