#include "cli/args.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *cmd, const char *fmt, ...)
{
    fprintf(stderr, "ptreg %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The command's library options table (cli_command.library names it). */
static const ptreg_option_table *cli_library_table(const cli_command *cmd)
{
    return cmd->library ? ptreg_option_table_find(cmd->library) : NULL;
}

/* A library option's help, range and default ("(in (0, 1); default 0.9)"),
 * the default from `filled` (the struct's defaults, NULL: none). */
static void describe_library_option(const ptreg_option *o, const void *filled, char *buf, size_t size)
{
    char range[160], dflt[64] = "";
    ptreg_option_range(o, range, sizeof range);
    if (filled && ptreg_option_explicit(o, filled)) { /* else the help says what the default is */
        char v[48];
        ptreg_option_format(o, filled, v, sizeof v);
        snprintf(dflt, sizeof dflt, "; default %s", v);
    }
    snprintf(buf, size, "%s (%s%s)", o->help, range, dflt);
}

/* The short name the command gives the library's option `name` (an own
 * option of that name without help, cli_option), or 0. */
static char library_short(const cli_command *cmd, const char *name)
{
    for (size_t i = 0; i < cmd->option_count; i++)
        if (!cmd->options[i].help && !strcmp(cmd->options[i].name, name))
            return cmd->options[i].short_name;
    return 0;
}

/* Calls show(option, its short name or 0, its description, arg) for each of
 * the command's library options. */
static void each_library_option(const cli_command *cmd, void (*show)(const char *, char, const char *, const char *))
{
    const ptreg_option_table *t = cli_library_table(cmd);
    void *filled = t ? calloc(1, t->size) : NULL;
    if (filled)
        t->defaults(filled);
    for (size_t i = 0; t && i < t->count; i++) {
        char name[48], text[512];
        describe_library_option(&t->options[i], filled, text, sizeof text);
        ptreg_option_cli_name(&t->options[i], name, sizeof name);
        show(name, library_short(cmd, name), text, t->options[i].placeholder);
    }
    free(filled);
}

static void show_help_line(const char *name, char short_name, const char *text, const char *placeholder)
{
    char left[64];
    if (short_name)
        snprintf(left, sizeof left, "-%c, --%s %s", short_name, name, placeholder);
    else
        snprintf(left, sizeof left, "    --%s %s", name, placeholder);
    printf("  %-28s %s\n", left, text);
}

/* roff text: '-' as \-, a backslash doubled */
void cli_put_roff(const char *s)
{
    for (; *s; s++)
        if (*s == '-' || *s == '\\')
            printf("\\%c", *s == '-' ? '-' : '\\');
        else
            putchar(*s);
}

static void show_man_item(const char *name, char short_name, const char *text, const char *placeholder)
{
    printf(".TP\n.BI ");
    if (short_name)
        printf("\"\\-%c, ", short_name);
    printf("\\-\\-");
    cli_put_roff(name);
    printf("%s \" %s\"\n", short_name ? "\"" : "", placeholder);
    cli_put_roff(text);
    putchar('\n');
}

void cli_print_man_options(const cli_command *cmd) { each_library_option(cmd, show_man_item); }

void cli_print_help(const cli_command *cmd)
{
    printf("usage: ptreg %s %s\n\n%s\n", cmd->name, cmd->synopsis, cmd->summary);
    if (cmd->description)
        printf("\n%s\n", cmd->description);
    printf("\noptions:\n");
    for (size_t i = 0; i < cmd->option_count; i++) {
        const cli_option *o = &cmd->options[i];
        if (!o->help) /* a library option's short name: shown with it */
            continue;
        char left[64];
        if (o->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->value ? " " : "",
                     o->value ? o->value : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
        printf("  %-28s %s\n", left, o->help);
    }
    each_library_option(cmd, show_help_line);
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

/* The library's option `name` (its first len characters): its index in
 * cli_args.value, after the command's own; -1 when none. */
static int find_library(const cli_command *cmd, const char *name, size_t len)
{
    const ptreg_option_table *t = cli_library_table(cmd);
    const ptreg_option *o = t ? ptreg_option_find(t, name, len) : NULL;
    return o ? (int)(cmd->option_count + (size_t)(o - t->options)) : -1;
}

/* An option's index in cli_args.value: the command's own first, then the
 * library's. */
static int find_long(const cli_command *cmd, const char *name, size_t len)
{
    for (size_t i = 0; i < cmd->option_count; i++)
        if (cmd->options[i].help && strlen(cmd->options[i].name) == len && !strncmp(cmd->options[i].name, name, len))
            return (int)i;
    return find_library(cmd, name, len);
}

/* Options renamed so that one idea has one name in every command
 * (tests/cli/vocabulary.py): the former spelling is still taken, with a
 * note, until the next release. */
static const struct {
    const char *command, *former, *current;
} former_names[] = {
    {"harris3d", "k", "kappa"},                 /* --k is a neighbour count everywhere else */
    {"register", "fgr-iterations", "fgr-iter"}, /* iterations: --max-iter, --STAGE-iter */
    {"multiway", "graph-max-iter", "graph-iter"},
    {"synth", "truth", "truth-out"}, /* --truth reads a known answer everywhere else */
    {"synth", "truth-trajectory", "truth-trajectory-out"},
    {"view", "max-points", "html-max-points"}, /* the page's cap, as in every other command */
};

/* The index of the option formerly called `name` (its first len
 * characters), after printing the note; -1 when none. */
static int find_former(const cli_command *cmd, const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof former_names / sizeof former_names[0]; i++) {
        const char *former = former_names[i].former;
        if (strcmp(former_names[i].command, cmd->name) || strlen(former) != len || strncmp(former, name, len))
            continue;
        const char *current = former_names[i].current;
        fprintf(stderr, "ptreg %s: note: --%s is now --%s (the old name goes in the next release)\n", cmd->name, former,
                current);
        return find_long(cmd, current, strlen(current));
    }
    return -1;
}

/* What the option at idx takes: its placeholder, NULL for a flag. */
static const char *option_value(const cli_command *cmd, int idx)
{
    if ((size_t)idx < cmd->option_count)
        return cmd->options[idx].value;
    return cli_library_table(cmd)->options[(size_t)idx - cmd->option_count].placeholder;
}

static int find_short(const cli_command *cmd, char c)
{
    for (size_t i = 0; i < cmd->option_count; i++) {
        const cli_option *o = &cmd->options[i];
        if (o->short_name == c)
            return o->help ? (int)i : find_library(cmd, o->name, strlen(o->name));
    }
    return -1;
}

/* One option at argv[*i]; advances *i past a separate value. */
static int parse_option(const cli_command *cmd, int argc, char **argv, int *i, cli_args *args)
{
    const char *arg = argv[*i], *inline_value = NULL;
    int idx;
    if (arg[1] == '-') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        idx = find_long(cmd, name, len);
        if (idx < 0)
            idx = find_former(cmd, name, len);
        inline_value = eq ? eq + 1 : NULL;
    } else {
        idx = arg[2] == '\0' ? find_short(cmd, arg[1]) : -1;
    }
    if (idx < 0) {
        cli_error(cmd->name, "unknown option '%s' (see 'ptreg %s --help')", arg, cmd->name);
        return EXIT_USAGE;
    }
    const char *value = option_value(cmd, idx);
    if (!value) {
        if (inline_value) {
            cli_error(cmd->name, "option %s takes no value", arg);
            return EXIT_USAGE;
        }
        args->value[idx] = "";
        return EXIT_OK;
    }
    if (!inline_value) {
        if (*i + 1 >= argc) {
            cli_error(cmd->name, "option %s needs a value (%s)", arg, value);
            return EXIT_USAGE;
        }
        inline_value = argv[++*i];
    }
    args->value[idx] = inline_value;
    return EXIT_OK;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *args)
{
    if (cmd->option_count + (cmd->library ? cli_library_table(cmd)->count : 0) > CLI_MAX_OPTIONS) {
        fprintf(stderr, "ptreg: internal error: %s has more than %d options\n", cmd->name, CLI_MAX_OPTIONS);
        abort();
    }
    memset(args, 0, sizeof *args);
    args->cmd = cmd;
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && (!strcmp(arg, "-h") || !strcmp(arg, "--help"))) {
            cli_print_help(cmd);
            return -1;
        }
        if (!only_positional && !strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        if (!only_positional && arg[0] == '-' && arg[1] != '\0') {
            int rc = parse_option(cmd, argc, argv, &i, args);
            if (rc)
                return rc;
            continue;
        }
        if (args->positional_count >= cmd->max_positional) {
            cli_error(cmd->name, "unexpected argument '%s' (usage: ptreg %s %s)", arg, cmd->name, cmd->synopsis);
            return EXIT_USAGE;
        }
        args->positional[args->positional_count++] = arg;
    }
    if (args->positional_count < cmd->min_positional) {
        cli_error(cmd->name, "missing arguments (usage: ptreg %s %s)", cmd->name, cmd->synopsis);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static int option_index(const cli_args *args, const char *name)
{
    int idx = find_long(args->cmd, name, strlen(name));
    if (idx < 0) { /* a programming error: the command asked for an option it lacks */
        fprintf(stderr, "ptreg: internal error: no option --%s in %s\n", name, args->cmd->name);
        abort();
    }
    return idx;
}

int cli_read_library(const cli_args *args, void *options)
{
    const ptreg_option_table *t = cli_library_table(args->cmd);
    for (size_t j = 0; j < t->count; j++) {
        const char *text = args->value[args->cmd->option_count + j];
        ptreg_error err;
        if (text && ptreg_option_parse(&t->options[j], options, text, &err)) {
            char name[48];
            cli_error(args->cmd->name, "--%s: %s", ptreg_option_cli_name(&t->options[j], name, sizeof name),
                      err.message);
            return EXIT_USAGE;
        }
    }
    /* the library's rules that tie options together: its message, in the
     * command line's spelling */
    ptreg_error err;
    if (ptreg_options_check_as(t, options, PTREG_OPTION_SPELL_CLI, &err)) {
        cli_error(args->cmd->name, "%s", err.message);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_library_knob_given(const cli_args *args)
{
    const ptreg_option_table *t = cli_library_table(args->cmd);
    for (size_t j = 0; j < t->count; j++)
        if (args->value[args->cmd->option_count + j] && (t->options[j].flags & PTREG_OPTION_KNOB))
            return 1;
    return 0;
}

int cli_has(const cli_args *args, const char *name) { return args->value[option_index(args, name)] != NULL; }

int cli_given(const cli_args *args, const char *name)
{
    return find_long(args->cmd, name, strlen(name)) >= 0 && cli_has(args, name);
}

const char *cli_string(const cli_args *args, const char *name, const char *fallback)
{
    const char *v = args->value[option_index(args, name)];
    return v ? v : fallback;
}

int cli_double(const cli_args *args, const char *name, double lo, double hi, double *out)
{
    const char *v = cli_string(args, name, NULL);
    if (!v)
        return EXIT_OK;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end != '\0' || errno == ERANGE || !isfinite(d)) {
        cli_error(args->cmd->name, "--%s: '%s' is not a number", name, v);
        return EXIT_USAGE;
    }
    if (d < lo || d > hi) {
        cli_error(args->cmd->name, "--%s: %s is outside [%g, %g]", name, v, lo, hi);
        return EXIT_USAGE;
    }
    *out = d;
    return EXIT_OK;
}

static int parse_integer(const cli_args *args, const char *name, long long lo, long long hi, long long *out)
{
    const char *v = cli_string(args, name, NULL);
    if (!v)
        return 1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE) {
        cli_error(args->cmd->name, "--%s: '%s' is not an integer", name, v);
        return EXIT_USAGE;
    }
    if (x < lo || x > hi) {
        cli_error(args->cmd->name, "--%s: %s is outside [%lld, %lld]", name, v, lo, hi);
        return EXIT_USAGE;
    }
    *out = x;
    return EXIT_OK;
}

int cli_int(const cli_args *args, const char *name, long lo, long hi, int *out)
{
    long long x;
    int rc = parse_integer(args, name, lo, hi, &x);
    if (rc == EXIT_OK)
        *out = (int)x;
    return rc == 1 ? EXIT_OK : rc;
}

int cli_size(const cli_args *args, const char *name, size_t lo, size_t hi, size_t *out)
{
    long long x;
    long long lim = hi > (size_t)LLONG_MAX ? LLONG_MAX : (long long)hi;
    int rc = parse_integer(args, name, (long long)lo, lim, &x);
    if (rc == EXIT_OK)
        *out = (size_t)x;
    return rc == 1 ? EXIT_OK : rc;
}

int cli_u64(const cli_args *args, const char *name, uint64_t *out)
{
    const char *v = cli_string(args, name, NULL);
    if (!v)
        return EXIT_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || v[0] == '-') {
        cli_error(args->cmd->name, "--%s: '%s' is not a non-negative integer", name, v);
        return EXIT_USAGE;
    }
    *out = (uint64_t)x;
    return EXIT_OK;
}

int cli_vec3(const cli_args *args, const char *name, double out[3])
{
    const char *v = cli_string(args, name, NULL);
    if (!v)
        return EXIT_OK;
    double tmp[3];
    const char *p = v;
    for (int k = 0; k < 3; k++) {
        char *end;
        tmp[k] = strtod(p, &end);
        if (end == p || !isfinite(tmp[k]) || (k < 2 && *end != ',') || (k == 2 && *end != '\0')) {
            cli_error(args->cmd->name, "--%s: '%s' is not three numbers x,y,z", name, v);
            return EXIT_USAGE;
        }
        p = end + 1;
    }
    memcpy(out, tmp, sizeof tmp);
    return EXIT_OK;
}
