/* The outputs' check before any work: see cli/outputs.h. */
#define _DEFAULT_SOURCE /* realpath, readlink, lstat */

#include "cli/outputs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"

/* The endings of writes, after CLI_WRITES_LIVE when it has it. */
static const char *endings(const char *writes)
{
    return strncmp(writes, CLI_WRITES_LIVE, strlen(CLI_WRITES_LIVE)) ? writes : writes + strlen(CLI_WRITES_LIVE);
}

int cli_writes_extension(const char *writes, const char *path)
{
    size_t n = strlen(path);
    writes = endings(writes);
    for (const char *w = writes; *w;) {
        size_t len = strcspn(w, " ");
        if (n > len + 1 && path[n - len - 1] == '.' && !strncasecmp(path + n - len, w, len) && path[n - len - 2] != '/')
            return 1;
        w += len;
        w += strspn(w, " ");
    }
    return 0;
}

/* "writes .ply, .pcd or .las" from "ply pcd las". */
static void list_formats(const char *writes, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    writes = endings(writes);
    for (const char *w = writes; *w && used < size;) {
        size_t len = strcspn(w, " ");
        const char *next = w + len + strspn(w + len, " ");
        const char *sep = w == writes ? "" : *next ? ", " : " or ";
        int k = snprintf(buf + used, size - used, "%s.%.*s", sep, (int)len, w);
        used += k > 0 ? (size_t)k : 0;
        w = next;
    }
}

/* The folder of path ("." for a bare name), in buf. */
static void folder_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

/* The file path names when a symlink is followed, in buf: a link that
 * dangles names the file the atomic writer will create (its target,
 * relative to the link's folder). 0, or -1 with errno (ELOOP ...). */
static int named_file(const char *path, char *buf, size_t size)
{
    struct stat st;
    snprintf(buf, size, "%s", path);
    for (int hops = 0; lstat(buf, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
        char text[PATH_MAX], dir[PATH_MAX];
        ssize_t got = hops < 40 ? readlink(buf, text, sizeof text - 1) : -1;
        if (got < 0) {
            errno = hops < 40 ? errno : ELOOP;
            return -1;
        }
        text[got] = '\0';
        folder_of(buf, dir, sizeof dir);
        int len = text[0] == '/' || !strchr(buf, '/') ? snprintf(buf, size, "%s", text)
                                                      : snprintf(buf, size, "%s/%s", dir, text);
        if (len < 0 || (size_t)len >= size) {
            errno = ENAMETOOLONG;
            return -1;
        }
    }
    return 0;
}

void cli_remove_output(const char *path)
{
    char file[PATH_MAX];
    if (path && named_file(path, file, sizeof file) == 0)
        remove(file);
}

/* Why a folder cannot take a new file (NULL: it can). */
static const char *folder_problem(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? "does not exist" : strerror(errno);
    if (!S_ISDIR(st.st_mode))
        return "is not a folder";
    if (access(dir, W_OK | X_OK) != 0)
        return "is not writable";
    return NULL;
}

static int check_file(const char *cmd, const cli_option *o, const char *path)
{
    char formats[256], file[PATH_MAX], dir[PATH_MAX];
    list_formats(o->writes, formats, sizeof formats);
    struct stat st;
    const int exists = named_file(path, file, sizeof file) == 0 && stat(file, &st) == 0;
    if (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
        if (o->writes != endings(o->writes))
            return EXIT_OK;
        cli_error(cmd, "--%s %s: not a regular file (--%s writes %s files, renamed into place)", o->name, path, o->name,
                  formats);
        return EXIT_USAGE;
    }
    if (!cli_writes_extension(o->writes, path)) {
        const char *slash = strrchr(path, '/'), *dot = strrchr(slash ? slash + 1 : path, '.');
        if (dot && dot[1])
            cli_error(cmd, "--%s %s: %s is not a format it writes: --%s writes %s", o->name, path, dot, o->name,
                      formats);
        else
            cli_error(cmd, "--%s %s: no extension to tell the format: --%s writes %s", o->name, path, o->name, formats);
        return EXIT_USAGE;
    }
    if (named_file(path, file, sizeof file) != 0) {
        cli_error(cmd, "--%s %s: %s", o->name, path, strerror(errno));
        return EXIT_USAGE;
    }
    if (stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error(cmd, "--%s %s: is a folder, not a file (--%s writes %s)", o->name, path, o->name, formats);
        return EXIT_USAGE;
    }
    folder_of(file, dir, sizeof dir);
    const char *problem = folder_problem(dir);
    if (problem) {
        cli_error(cmd, "--%s %s: its folder %s %s", o->name, path, dir, problem);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* A folder the command fills: an existing, writable folder, or a new one
 * in a writable folder. */
static int check_folder(const char *cmd, const cli_option *o, const char *path)
{
    char dir[PATH_MAX];
    struct stat st;
    const char *problem;
    if (stat(path, &st) == 0) {
        problem = folder_problem(path);
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        folder_of(path, dir, sizeof dir);
        problem = folder_problem(dir);
    }
    if (problem) {
        cli_error(cmd, "--%s %s: %s%s %s", o->name, path, strcmp(dir, path) ? "its parent " : "", dir, problem);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_begin(const cli_command *cmd, int argc, char **argv, cli_args *args, int *exit_code)
{
    int rc = cli_parse(cmd, argc, argv, args);
    rc = rc == EXIT_OK ? cli_check_outputs(args) : rc;
    *exit_code = rc < 0 ? EXIT_OK : rc;
    return rc == EXIT_OK;
}

int cli_require(const cli_args *args, const char *name, const char *what)
{
    if (cli_has(args, name))
        return EXIT_OK;
    cli_error(args->cmd->name, "give %s", what);
    return EXIT_USAGE;
}

int cli_check_outputs(const cli_args *args)
{
    const cli_command *cmd = args->cmd;
    for (size_t i = 0; i < cmd->option_count; i++) {
        const cli_option *o = &cmd->options[i];
        const char *path = args->value[i];
        if (!o->writes || !o->help || !path)
            continue;
        if (!*path) {
            cli_error(cmd->name, "--%s: an empty path", o->name);
            return EXIT_USAGE;
        }
        int rc = strcmp(o->writes, CLI_WRITES_FOLDER) ? check_file(cmd->name, o, path)
                                                      : check_folder(cmd->name, o, path);
        if (rc)
            return rc;
    }
    return EXIT_OK;
}
