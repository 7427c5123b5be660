/* Options declared once (options.h): finding, setting, checking and
 * describing a field through its table row. */
#include "ptreg/options.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"

static void *field_of(const ptreg_option *o, void *options) { return (char *)options + o->offset; }

static double value_of(const ptreg_option *o, const void *options)
{
    const void *at = (const char *)options + o->offset;
    if (o->type == PTREG_OPTION_DOUBLE)
        return *(const double *)at;
    return o->type == PTREG_OPTION_SIZE ? (double)*(const size_t *)at : (double)*(const int *)at;
}

/* name's first len characters spell option name `full`, '-' and '_' alike */
static int spells(const char *full, const char *name, size_t len)
{
    if (!full || strlen(full) != len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        const char a = full[i] == '_' ? '-' : full[i], b = name[i] == '_' ? '-' : name[i];
        if (a != b)
            return 0;
    }
    return 1;
}

const char *option_name_of(const ptreg_option_name *names, int value)
{
    for (const ptreg_option_name *n = names; n->name; n++)
        if (n->value == value)
            return n->name;
    return NULL;
}

int option_value_of(const ptreg_option_name *names, const char *name, int *value)
{
    for (const ptreg_option_name *n = names; n->name; n++)
        if (spells(n->name, name, strlen(name))) {
            *value = n->value;
            return 0;
        }
    return -1;
}

const ptreg_option *ptreg_option_find(const ptreg_option_table *table, const char *name, size_t len)
{
    for (size_t i = 0; i < table->count; i++) {
        const ptreg_option *o = &table->options[i];
        if (spells(o->cli_name ? o->cli_name : o->name, name, len))
            return o;
    }
    for (size_t i = 0; i < table->count; i++)
        if (spells(table->options[i].name, name, len))
            return &table->options[i];
    return NULL;
}

const char *ptreg_option_cli_name(const ptreg_option *o, char *buf, size_t size)
{
    snprintf(buf, size, "%s", o->cli_name ? o->cli_name : o->name);
    for (char *c = buf; *c; c++)
        *c = *c == '_' ? '-' : *c;
    return buf;
}

static int power_of_two(double v) { return v >= 1 && v == floor(v) && frexp(v, &(int){0}) == 0.5; }

static int in_range(const ptreg_option *o, double v)
{
    if (o->type == PTREG_OPTION_ENUM)
        return v == floor(v) && fabs(v) <= INT_MAX && option_name_of(o->names, (int)v) != NULL;
    const int above = o->flags & PTREG_OPTION_OPEN_LO ? v > o->lo : v >= o->lo;
    const int below = o->flags & PTREG_OPTION_OPEN_HI ? v < o->hi : v <= o->hi;
    return above && below && (!(o->flags & PTREG_OPTION_POW2) || power_of_two(v)) &&
           (!(o->flags & PTREG_OPTION_ODD) || fmod(v, 2) != 0);
}

static int unbounded_below(const ptreg_option *o) { return o->lo == -DBL_MAX || o->lo == INT_MIN; }
static int unbounded_above(const ptreg_option *o)
{
    return o->hi == DBL_MAX || o->hi == INT_MAX || o->hi >= (double)SIZE_MAX;
}

/* A value a caller may not set but the library takes as "not set". */
static int unset(const ptreg_option *o, double v)
{
    return ((o->flags & PTREG_OPTION_AUTO) && isfinite(v) && v <= o->lo) ||
           ((o->flags & PTREG_OPTION_LO_UNSET) && v == o->lo);
}

void ptreg_option_range(const ptreg_option *o, char *buf, size_t size)
{
    buf[0] = '\0';
    if (o->type == PTREG_OPTION_ENUM) {
        size_t used = 0;
        for (const ptreg_option_name *n = o->names; n->name && used < size; n++)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", n == o->names ? "" : "|", n->name);
        return;
    }
    const char *kind = o->flags & PTREG_OPTION_POW2 ? "a power of two " : o->flags & PTREG_OPTION_ODD ? "odd, " : "";
    const int lo_open = o->flags & PTREG_OPTION_OPEN_LO, hi_open = o->flags & PTREG_OPTION_OPEN_HI;
    if (unbounded_below(o) && unbounded_above(o))
        snprintf(buf, size, "%s", o->type == PTREG_OPTION_DOUBLE ? "finite" : "an integer");
    else if (unbounded_above(o))
        snprintf(buf, size, "%s%s %.10g", kind, lo_open ? ">" : ">=", o->lo);
    else if (unbounded_below(o))
        snprintf(buf, size, "%s%s %.10g", kind, hi_open ? "<" : "<=", o->hi);
    else
        snprintf(buf, size, "%sin %c%.10g, %.10g%c", kind, lo_open ? '(' : '[', o->lo, o->hi, hi_open ? ')' : ']');
}

static ptreg_status out_of_range(const ptreg_option *o, const char *text, ptreg_error *err)
{
    char range[160];
    ptreg_option_range(o, range, sizeof range);
    if (o->type == PTREG_OPTION_ENUM)
        return ptreg_error_set(err, PTREG_ERR_ARG, "'%s' is not %s", text, range);
    return ptreg_error_set(err, PTREG_ERR_ARG, "%s is not %s", text, range);
}

static void store(const ptreg_option *o, void *options, double value)
{
    if (o->type == PTREG_OPTION_DOUBLE)
        *(double *)field_of(o, options) = value;
    else if (o->type == PTREG_OPTION_SIZE)
        *(size_t *)field_of(o, options) = (size_t)value;
    else
        *(int *)field_of(o, options) = (int)value;
}

ptreg_status ptreg_option_set(const ptreg_option *o, void *options, double value, ptreg_error *err)
{
    char text[32];
    if (isnan(value))
        snprintf(text, sizeof text, "NaN");
    else
        snprintf(text, sizeof text, "%.17g", value);
    if (o->type == PTREG_OPTION_ENUM)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: give one of its names", text);
    if (o->type != PTREG_OPTION_DOUBLE && !(value == floor(value)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s is not an integer", text);
    if (!in_range(o, value) && !unset(o, value))
        return out_of_range(o, text, err);
    store(o, options, value);
    return PTREG_OK;
}

ptreg_status ptreg_option_parse(const ptreg_option *o, void *options, const char *text, ptreg_error *err)
{
    if (o->type == PTREG_OPTION_ENUM)
        return option_value_of(o->names, text, (int *)field_of(o, options)) ? out_of_range(o, text, err) : PTREG_OK;
    char *end;
    errno = 0;
    const int whole = o->type != PTREG_OPTION_DOUBLE;
    const double v = whole ? (double)strtoll(text, &end, 10) : strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
        return ptreg_error_set(err, PTREG_ERR_ARG, "'%s' is not %s", text, whole ? "an integer" : "a number");
    if (!in_range(o, v))
        return out_of_range(o, text, err);
    store(o, options, v);
    return PTREG_OK;
}

void ptreg_option_format(const ptreg_option *o, const void *options, char *buf, size_t size)
{
    const double v = value_of(o, options);
    const char *name = o->type == PTREG_OPTION_ENUM ? option_name_of(o->names, (int)v) : NULL;
    if (name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "%g", v);
}

int ptreg_option_explicit(const ptreg_option *o, const void *options) { return in_range(o, value_of(o, options)); }

/* Each field within its range (or AUTO's "not set"). */
static ptreg_status check_ranges(const ptreg_option_table *table, const void *options, ptreg_error *err)
{
    for (size_t i = 0; i < table->count; i++) {
        const ptreg_option *o = &table->options[i];
        const double v = value_of(o, options);
        if (in_range(o, v) || unset(o, v))
            continue;
        if (isnan(v))
            return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %s is NaN", table->owner, o->name);
        char range[160];
        ptreg_option_range(o, range, sizeof range);
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %s %g is not %s", table->owner, o->name, v, range);
    }
    return PTREG_OK;
}

ptreg_status ptreg_options_check_as(const ptreg_option_table *table, const void *options,
                                    ptreg_option_spelling spelling, ptreg_error *err)
{
    ptreg_status st = check_ranges(table, options, err);
    if (st || !table->check)
        return st;
    ptreg_error rule;
    if (!(st = table->check(options, spelling, &rule)))
        return PTREG_OK;
    if (spelling == PTREG_OPTION_SPELL_CLI)
        return ptreg_error_set(err, st, "%s", rule.message);
    return ptreg_error_set(err, st, "%s: %s", table->owner, rule.message);
}

ptreg_status ptreg_options_check(const ptreg_option_table *table, const void *options, ptreg_error *err)
{
    return ptreg_options_check_as(table, options, PTREG_OPTION_SPELL_NAME, err);
}

const char *option_spelled(const ptreg_option_table *table, const char *name, ptreg_option_spelling spelling, char *buf,
                           size_t size)
{
    const ptreg_option *o = NULL;
    for (size_t i = 0; i < table->count && !o; i++)
        if (!strcmp(table->options[i].name, name))
            o = &table->options[i];
    if (spelling == PTREG_OPTION_SPELL_NAME || !o) {
        snprintf(buf, size, "%s", name);
        return buf;
    }
    char cli[64];
    snprintf(buf, size, "--%s", ptreg_option_cli_name(o, cli, sizeof cli));
    return buf;
}
