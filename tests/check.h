/* A tiny test harness: CHECK records a failure and goes on, so one run shows
 * every broken assertion; main returns check_exit(). A section that cannot
 * run here (no ../shared/data, no device) is a skip (check_skip), and a
 * program with a skip ends 77, CTest's "skipped", never 0: `make check` sets
 * PTREG_TEST_REQUIRE_DATA=1 and PTREG_TEST_REQUIRE_DEVICE=1, which make
 * those skips failures, and fails on any other skip not on tests/skips.txt.
 *
 * Every numeric comparison must fail on NaN: CHECK(a <= tol) does (a NaN
 * makes it false), CHECK(!(a > tol)) does not, nor does a maximum taken with
 * fmax, which drops a NaN: fold with check_worse (and check_least) instead. */
#ifndef PTREG_TEST_CHECK_H
#define PTREG_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        check_count++;                                                               \
        if (!(cond)) {                                                               \
            check_failures++;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        check_count++;                                                               \
        if (!(cond)) {                                                               \
            check_failures++;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

/* CHECK, then leave the (void) test function when it failed: for a step
 * that what follows needs (a program built, a kernel found), so that a
 * failure is reported instead of crashing on what was not made. */
#define REQUIRE(cond)                      \
    do {                                   \
        const int required_ = (cond);      \
        CHECK_MSG(required_, "%s", #cond); \
        if (!required_)                    \
            return;                        \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                     \
    do {                                                                                                          \
        double check_a_ = (double)(a), check_b_ = (double)(b);                                                    \
        check_count++;                                                                                            \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                                                              \
            check_failures++;                                                                                     \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g, tol %g\n", __FILE__, __LINE__, #a, \
                    check_a_, #b, check_b_, (double)(tol));                                                       \
        }                                                                                                         \
    } while (0)

#define CHECK_EXIT_SKIP 77

static int check_skipped;

/* The larger of worst and d, where a NaN wins and stays: fmax(worst, NaN) is
 * worst, so a maximum over fmax passes any NaN entry. */
static inline double check_worse(double worst, double d)
{
    if (isnan(worst))
        return worst;
    return isnan(d) || d > worst ? d : worst;
}

/* The smaller of best and d, where a NaN wins and stays (fmin drops it). */
static inline double check_least(double best, double d)
{
    if (isnan(best))
        return best;
    return isnan(d) || d < best ? d : best;
}

/* max |a[i] - b[i]|, NaN when an entry is NaN (compare it with <=). */
static inline double check_max_abs_diff(const double *a, const double *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = check_worse(worst, fabs(a[i] - b[i]));
    return worst;
}

/* Whether environment variable name is set to something other than 0. */
static inline int check_env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* A section that cannot run here, and why. Under the variable `require`
 * (make check's PTREG_TEST_REQUIRE_DATA or _DEVICE) that is a failure;
 * otherwise the program will end 77 (skipped), whatever else passed. */
static inline void check_skip(const char *require, const char *why)
{
    if (check_env_set(require)) {
        check_failures++;
        fprintf(stderr, "FAILED: %s (%s=1 requires it)\n", why, require);
        return;
    }
    check_skipped = 1;
    printf("skipped: %s\n", why);
}

static inline int check_exit(void)
{
    if (check_failures) {
        fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
        return 1;
    }
    if (check_skipped) {
        printf("%d checks passed, but a section was skipped (above): exit 77\n", check_count);
        return CHECK_EXIT_SKIP;
    }
    if (check_count == 0) {
        fprintf(stderr, "no check ran: a test that checks nothing fails\n");
        return 1;
    }
    printf("all %d checks passed\n", check_count);
    return 0;
}

/* The shared data folder, or NULL (a skip, or a failure under
 * PTREG_TEST_REQUIRE_DATA) when it is absent. */
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
    snprintf(probe, sizeof probe, "the shared data folder is not at %s: its data tests did not run",
             dir ? dir : "(PTREG_DATA_DIR unset)");
    check_skip("PTREG_TEST_REQUIRE_DATA", probe);
    return NULL;
}

#endif
