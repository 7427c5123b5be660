/* Two processes writing the tuner's cache and the kernel cache at once.
 * Each of ROUNDS rounds, each process stores a winner under one of its own
 * keys of the tuner's cache (the round in "seconds") and an image of its own
 * under a kernel-cache key both share, then reads both files back: every
 * read must find a whole file (the tuner's parses; the image is one of the
 * two, its checksum right) and every key of the process must hold the
 * round it last stored there (no writer lost another's winner). Afterwards
 * each key holds its process's last round, a later lookup finds them, and
 * no temporary file is left.
 *
 *   test_cache_race [--rounds N]   (default 1000) */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "device/kernel_cache.h"
#include "ptreg/ptreg.h"
#include "tune/tune_kernels.h"

#define KEYS 5
#define IMAGE_BYTES 4096
#define MAX_POINTS 64

/* main's own REQUIRE: a step the rest needs. */
#define REQUIRE_MAIN(cond)                                                       \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: required: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

static const char *const image_key[] = {"test_cache_race", "a kernel both processes build"};

typedef struct race {
    char dir[64];
    ptreg_tune_space space;
    ptreg_tune_machine machine;
    double points[MAX_POINTS * PTREG_TUNE_MAX_PARAMS]; /* param_count each */
    size_t point_count;
} race;

static void size_class(int process, int key, char *buf, size_t size)
{
    snprintf(buf, size, "1e%d", 10 * (process + 1) + key);
}

static void fill_image(unsigned char *image, int process)
{
    for (size_t i = 0; i < IMAGE_BYTES; i++)
        image[i] = (unsigned char)(process * 101 + i * 7);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (text)
        text[n] = '\0';
    return text;
}

/* The tuner's cache as a reader sees it: NULL when it does not parse. */
static cJSON *read_tune_cache(const race *r)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tune.json", r->dir);
    char *text = read_file(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    return root;
}

/* The kernel cache's image: one of the two processes', whole. */
static int image_whole(void)
{
    void *image;
    size_t size;
    if (!kernel_cache_load("bin", image_key, 2, &image, &size))
        return 0;
    unsigned char expect[2][IMAGE_BYTES];
    fill_image(expect[0], 0), fill_image(expect[1], 1);
    int ok = size == IMAGE_BYTES && (!memcmp(image, expect[0], size) || !memcmp(image, expect[1], size));
    free(image);
    return ok;
}

/* The entry of a key, as the last writer left it. */
static double stored_round(const cJSON *root, const race *r, const char *cls)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "machines"),
                                                      r->machine.name);
    const cJSON *entry = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, r->space.kernel), cls);
    const cJSON *seconds = cJSON_GetObjectItemCaseSensitive(entry, "seconds");
    return cJSON_IsNumber(seconds) ? seconds->valuedouble : -1;
}

/* Whether every key of the process holds the round it last stored there:
 * a writer that rewrote the cache from a stale read would have dropped one. */
static int own_winners_kept(const cJSON *root, const race *r, int process, const int *last_round)
{
    for (int k = 0; k < KEYS; k++) {
        char cls[16];
        size_class(process, k, cls, sizeof cls);
        if (last_round[k] >= 0 && stored_round(root, r, cls) != last_round[k])
            return 0;
    }
    return 1;
}

/* One process's rounds; its exit code counts what went wrong (at most 255). */
static int writer(const race *r, int process, int rounds)
{
    unsigned char image[IMAGE_BYTES];
    fill_image(image, process);
    int failed_stores = 0, torn_reads = 0, lost = 0, last_round[KEYS] = {-1, -1, -1, -1, -1};
    for (int i = 0; i < rounds; i++) {
        char cls[16];
        size_class(process, i % KEYS, cls, sizeof cls);
        const double *point = r->points + (size_t)(i % (int)r->point_count) * (size_t)r->space.param_count;
        ptreg_error err;
        if (ptreg_tune_cache_store(&r->space, r->machine.name, cls, point, (double)i, 1.0, &err)) {
            if (!failed_stores++)
                fprintf(stderr, "process %d round %d: %s\n", process, i, err.message);
        } else {
            last_round[i % KEYS] = i;
        }
        kernel_cache_store("bin", image_key, 2, image, sizeof image);
        cJSON *root = read_tune_cache(r);
        torn_reads += !root + !image_whole();
        lost += root && !own_winners_kept(root, r, process, last_round);
        cJSON_Delete(root);
    }
    if (failed_stores || torn_reads || lost)
        fprintf(stderr, "process %d: %d failed stores, %d torn reads, %d rounds found a winner of its own lost\n",
                process, failed_stores, torn_reads, lost);
    int bad = failed_stores + torn_reads + lost;
    return bad > 255 ? 255 : bad;
}

static void check_after(const race *r, int rounds)
{
    cJSON *root = read_tune_cache(r);
    CHECK_MSG(root != NULL, "the tuner's cache does not parse after the race");
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < KEYS && k < rounds; k++) {
            char cls[16];
            size_class(p, k, cls, sizeof cls);
            int last = (rounds - 1) - ((rounds - 1 - k) % KEYS);
            CHECK_MSG(stored_round(root, r, cls) == last, "process %d key %s: round %g stored, %d expected", p, cls,
                      stored_round(root, r, cls), last);
            double point[PTREG_TUNE_MAX_PARAMS];
            char found[16];
            CHECK_MSG(ptreg_tune_cache_lookup(&r->space, &r->machine, cls, point, found, sizeof found) == 1 &&
                          !strcmp(found, cls),
                      "a later lookup of process %d's key %s", p, cls);
        }
    cJSON_Delete(root);
    CHECK_MSG(image_whole(), "the kernel cache's image after the race");
}

/* What may be left: the tuner's cache, its lock file and the kernel cache's
 * folder; one image in that. */
static int expected_in_tune_dir(const char *name)
{
    return !strcmp(name, "tune.json") || !strcmp(name, "tune.json.lock") || !strcmp(name, "kernels");
}

static int expected_in_kernel_dir(const char *name)
{
    const char *ext = strrchr(name, '.');
    return ext && !strcmp(ext, ".bin") && ext != name;
}

/* No temporary file left (a writer's, killed or failed, would be). */
static void check_no_leftovers(const char *dir, int (*expected)(const char *name))
{
    DIR *d = opendir(dir);
    REQUIRE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            CHECK_MSG(expected(e->d_name), "%s/%s left behind", dir, e->d_name);
    closedir(d);
}

static void remove_tree(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    int rounds = 1000;
    if (argc == 3 && !strcmp(argv[1], "--rounds") && atoi(argv[2]) > 0)
        rounds = atoi(argv[2]);
    else if (argc != 1) {
        fprintf(stderr, "usage: %s [--rounds N]\n", argv[0]);
        return 2;
    }
    static race r;
    snprintf(r.dir, sizeof r.dir, "/tmp/ptreg-cache-race-XXXXXX");
    REQUIRE_MAIN(mkdtemp(r.dir) != NULL);
    char tune[128], kernels[128];
    snprintf(tune, sizeof tune, "%s/tune.json", r.dir);
    snprintf(kernels, sizeof kernels, "%s/kernels", r.dir);
    setenv("PTREG_TUNE_CACHE", tune, 1);
    setenv("PTREG_KERNEL_CACHE", kernels, 1);
    ptreg_tune_space_pair(&r.space);
    ptreg_tune_machine_cpu(&r.machine);
    r.point_count = ptreg_tune_enumerate(&r.space, &r.machine, r.points, MAX_POINTS, NULL);
    REQUIRE_MAIN(r.point_count > 0);
    if (r.point_count > MAX_POINTS) /* it counts them all, writes the first MAX_POINTS */
        r.point_count = MAX_POINTS;
    /* both start at once: each waits for a byte that comes after both forked */
    int go[2];
    REQUIRE_MAIN(pipe(go) == 0);
    pid_t child[2];
    for (int p = 0; p < 2; p++) {
        child[p] = fork();
        REQUIRE_MAIN(child[p] >= 0);
        if (child[p] == 0) {
            char byte;
            close(go[1]);
            if (read(go[0], &byte, 1) != 1)
                _exit(254);
            _exit(writer(&r, p, rounds));
        }
    }
    close(go[0]);
    const char start[2] = {1, 1};
    CHECK(write(go[1], start, 2) == 2);
    close(go[1]);
    for (int p = 0; p < 2; p++) {
        int status = 0;
        waitpid(child[p], &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "writer %d: exit %d (failed stores, torn reads, lost winners)", p,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    check_after(&r, rounds);
    check_no_leftovers(r.dir, expected_in_tune_dir);
    check_no_leftovers(kernels, expected_in_kernel_dir);
    remove_tree(r.dir);
    printf("%d rounds in each of 2 processes\n", rounds);
    return check_exit();
}
