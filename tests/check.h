/* A tiny test harness: CHECK records a failure and goes on, so one run shows
 * every broken assertion; main returns check_exit(). Exit code 77 is CTest's
 * "skipped" (used when ../shared/data is absent). */
#ifndef PTREG_TEST_CHECK_H
#define PTREG_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        check_count++;                                                                \
        if (!(cond)) {                                                                \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                          \
    do {                                                                              \
        check_count++;                                                                \
        if (!(cond)) {                                                                \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

/* CHECK, then leave the (void) test function when it failed: for a step
 * that what follows needs (a program built, a kernel found), so that a
 * failure is reported instead of crashing on what was not made. */
#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        const int required_ = (cond);                                                 \
        CHECK_MSG(required_, "%s", #cond);                                            \
        if (!required_)                                                               \
            return;                                                                   \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                         \
    do {                                                                              \
        double check_a_ = (double)(a), check_b_ = (double)(b);                        \
        check_count++;                                                                \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                                  \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g, tol %g\n", \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_, (double)(tol));   \
        }                                                                             \
    } while (0)

#define CHECK_EXIT_SKIP 77

static inline int check_exit(void)
{
    if (check_failures) {
        fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
        return 1;
    }
    printf("all %d checks passed\n", check_count);
    return 0;
}

/* The shared data folder, or NULL (and a message) when it is absent. */
static inline const char *check_data_dir(void)
{
    const char *dir = getenv("PTREG_DATA_DIR");
#ifdef PTREG_DATA_DIR
    if (!dir)
        dir = PTREG_DATA_DIR;
#endif
    char probe[4096];
    if (dir) {
        snprintf(probe, sizeof probe, "%s/README.md", dir);
        FILE *f = fopen(probe, "r");
        if (f) {
            fclose(f);
            return dir;
        }
    }
    printf("shared data folder not found (%s): data tests skipped\n", dir ? dir : "unset");
    return NULL;
}

#endif
