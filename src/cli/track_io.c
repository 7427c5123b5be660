/* ptreg track's inputs and outputs (track_io.h): the frames, from files,
 * a folder or a stream; -o and --states, written whole on success; --truth;
 * --html's page, gathered frame by frame. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/files.h"
#include "cli/track_io.h"
#include "ptreg/io.h"
#include "ptreg/transform.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int list_folder(const char *dir, frame_source *src)
{
    DIR *d = opendir(dir);
    if (!d) {
        cli_error(src->cmd, "--frames %s: cannot open the folder", dir);
        return EXIT_BAD_INPUT;
    }
    size_t cap = 0;
    struct dirent *e;
    int rc = EXIT_OK;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || ptreg_format_from_path(e->d_name) == PTREG_FORMAT_AUTO)
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(len);
        if (src->count == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(src->owned, cap * sizeof *grown);
            if (grown)
                src->owned = grown;
            else
                free(path), path = NULL;
        }
        if (!path) {
            cli_error(src->cmd, "out of memory");
            rc = EXIT_RUNTIME;
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
            free(path);
            continue;
        }
        src->owned[src->count++] = path;
    }
    closedir(d);
    if (rc)
        return rc;
    if (src->count == 0) {
        cli_error(src->cmd, "--frames %s: no cloud files (.ply .pcd .xyz .txt .csv .pts .vtk .las .bin ...) in it",
                  dir);
        return EXIT_BAD_INPUT;
    }
    qsort(src->owned, src->count, sizeof *src->owned, by_name);
    src->paths = (const char **)src->owned;
    return EXIT_OK;
}

/* The next frame of the stream: 1 with a frame, 0 at its end (or after an
 * error, reported and flagged). */
static int stream_next(frame_source *src, frame_in *f)
{
    ptreg_error err;
    int end = 0;
    const ptreg_status st = ptreg_frame_stream_next(&src->stream, &f->cloud, &f->t, &end, &err);
    if (st == PTREG_ERR_NOMEM)
        cli_error(src->cmd, "%s", err.message);
    else if (st)
        cli_error(src->cmd, "stdin: %s", err.message);
    src->stream_error = st == PTREG_ERR_NOMEM ? 2 : st ? 1 : 0;
    return !st && !end;
}

int track_source_next(frame_source *src, frame_in *f)
{
    const size_t index = src->next;
    memset(f, 0, sizeof *f);
    ptreg_cloud_init(&f->cloud);
    if (!src->paths) {
        f->name = "stdin";
        if (!stream_next(src, f))
            return 0;
        src->next++;
        return 1;
    }
    if (index >= src->count)
        return 0;
    src->next++;
    f->name = src->paths[index];
    f->t = (double)index / src->rate;
    ptreg_error err;
    const ptreg_status st = ptreg_cloud_read(f->name, PTREG_FORMAT_AUTO, &f->cloud, &err);
    if (st == PTREG_ERR_NOMEM) { /* the run's failure, not the frame's */
        cli_error(src->cmd, "frame %zu: %s", index, err.message);
        src->stream_error = 2;
        return 0;
    }
    if (st) {
        cli_error(src->cmd, "frame %zu: %s; the frame is %s", index, err.message, src->unreadable_is);
        f->unreadable = 1;
        ptreg_cloud_init(&f->cloud);
    } else if (cli_join_frame(src->cmd, f->name, &f->cloud)) {
        f->unreadable = 1; /* beyond float range from the model: said, and lost */
    }
    return 1;
}

/* -o and --states: temporary files in their folders (a folder that cannot
 * take one fails here, before any work), renamed over the targets only when
 * the run succeeds, so that a failed run (a stream cut short, a device
 * that failed, no frame read) leaves neither an empty nor a partial file.
 * A target that is there and is no regular file (/dev/null, a FIFO a
 * reader follows) is written directly, each line flushed as it is known. */
int track_output_open(const cli_args *a, const char *name, ptreg_atomic_file *af, FILE **f)
{
    const char *path = cli_string(a, name, NULL);
    ptreg_error err;
    struct stat sb;
    if (!path)
        return EXIT_OK;
    memset(af, 0, sizeof *af);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (!(*f = fopen(path, "w"))) {
            cli_error(a->cmd->name, "--%s %s: cannot be written: %s", name, path, strerror(errno));
            return EXIT_RUNTIME;
        }
        setvbuf(*f, NULL, _IOLBF, 0);
        return EXIT_OK;
    }
    if (ptreg_atomic_open(path, af, &err)) {
        cli_error(a->cmd->name, "--%s %s: cannot be written: %s", name, path, err.message);
        return EXIT_RUNTIME;
    }
    *f = af->fp;
    return EXIT_OK;
}

/* Renames a finished output over its target (rc 0) or removes it; a
 * direct one is closed. */
int track_output_close(const char *cmd, ptreg_atomic_file *af, FILE **f, int rc)
{
    ptreg_error err;
    FILE *fp = *f;
    if (!fp)
        return rc;
    *f = NULL;
    if (!af->fp) { /* written directly */
        if (fclose(fp) && !rc) {
            cli_error(cmd, "writing the trajectory failed: %s", strerror(errno));
            return EXIT_RUNTIME;
        }
        return rc;
    }
    if (rc) {
        ptreg_atomic_abort(af);
        return rc;
    }
    if (ptreg_atomic_commit(af, &err)) {
        cli_error(cmd, "writing the trajectory failed: %s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* ---- TUM lines (track -o, odometry -o) ---- */

void track_tum_numbers(const double T[16], double out[7])
{
    double R[9], q[4];
    ptreg_transform_rotation(T, R);
    ptreg_matrix_to_quaternion(R, q);
    out[0] = T[3], out[1] = T[7], out[2] = T[11];
    out[3] = q[1], out[4] = q[2], out[5] = q[3], out[6] = q[0];
}

int track_write_tum(FILE *f, double t, const double pose[7])
{
    char x[3][32];
    for (int k = 0; k < 3; k++)
        cli_format_coordinate(x[k], pose[k]);
    return fprintf(f, "%.6f %s %s %s %.9g %.9g %.9g %.9g\n", t, x[0], x[1], x[2], pose[3], pose[4], pose[5], pose[6]) <
           0;
}

/* ---- --truth ---- */

/* Reads --truth; exit 3 naming the file and line of the first bad one. */
int track_read_truth(const char *path, ptreg_trajectory *tr)
{
    ptreg_error err;
    const ptreg_status st = ptreg_trajectory_read(path, tr, &err);
    if (st == PTREG_ERR_NOMEM)
        cli_error("track", "out of memory reading --truth %s", path);
    else if (st)
        cli_error("track", "--truth %s", err.message);
    return cli_exit_code(st, 1);
}

void track_source_free(frame_source *src)
{
    for (size_t i = 0; src->owned && i < src->count; i++)
        free(src->owned[i]);
    free(src->owned);
}

int track_source_open(const cli_args *a, int first, frame_source *src)
{
    src->cmd = a->cmd->name;
    if (!src->unreadable_is)
        src->unreadable_is = "lost";
    if (cli_has(a, "frames"))
        return list_folder(cli_string(a, "frames", NULL), src);
    if (!strcmp(a->positional[first], "-"))
        src->stream.in = stdin;
    else
        src->paths = (const char **)a->positional + first, src->count = (size_t)(a->positional_count - first);
    return EXIT_OK;
}

/* ---- --html ---- */

void track_page_add(track_page *p, const float *frame, size_t n, const double pose[16], int lost)
{
    if (p->no_memory)
        return;
    if (p->count == p->cap) {
        const size_t cap = p->cap ? 2 * p->cap : 256;
        float *path = realloc(p->path, 3 * cap * sizeof *path);
        p->path = path ? path : p->path;
        uint8_t *flags = realloc(p->lost, cap);
        p->lost = flags ? flags : p->lost;
        if (!path || !flags) {
            p->no_memory = 1;
            return;
        }
        p->cap = cap;
    }
    const float origin[3] = {0.0f, 0.0f, 0.0f};
    ptreg_transform_points(pose, origin, p->path + 3 * p->count, 1);
    p->lost[p->count++] = (uint8_t)lost;
    if (n == 0)
        return;
    free(p->last);
    p->last = malloc(n * 3 * sizeof *p->last);
    if (p->last)
        ptreg_transform_points(pose, frame, p->last, n);
    p->last_n = p->last ? n : 0;
    p->no_memory = !p->last;
}

ptreg_status track_page_report(const track_page *p, ptreg_report *rep, const float *model, size_t m, ptreg_error *err)
{
    if (p->no_memory)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    size_t lost = 0;
    float *lost_at = malloc((p->count ? p->count : 1) * 3 * sizeof *lost_at);
    for (size_t i = 0; lost_at && i < p->count; i++)
        if (p->lost[i])
            memcpy(lost_at + 3 * lost++, p->path + 3 * i, 3 * sizeof *lost_at);
    ptreg_status st = lost_at ? ptreg_report_add_cloud(rep, "model", model, m, 0x8c8c8cu, err)
                              : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    st = st ? st : ptreg_report_add_cloud(rep, "last frame", p->last, p->last_n, 0x1f77b4u, err);
    if (!st && p->count >= 2)
        st = ptreg_report_add_paths(rep, "sensor path", p->path, 1, p->count, 0x000000u, err);
    st = st ? st : ptreg_report_add_cloud(rep, "frames lost", lost_at, lost, 0xd62728u, err);
    free(lost_at);
    return st;
}

void track_page_free(track_page *p)
{
    free(p->path);
    free(p->lost);
    free(p->last);
    memset(p, 0, sizeof *p);
}
