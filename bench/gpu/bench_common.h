/* What the GPU benchmark programs (batch_gpu.c, pairs_gpu.c) share: comma
 * lists on the command line, and output printed and copied to a markdown
 * file. */
#ifndef PTREG_BENCH_GPU_COMMON_H
#define PTREG_BENCH_GPU_COMMON_H

#include <stdarg.h>
#include <stdio.h>
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

#endif
