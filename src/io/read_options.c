/* Read options as a command line spells them: LAS classes to keep and a
 * crop box. The CLI's --classes and --crop, and any other caller's. */
#include "ptreg/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A class 0 to 255 in decimal; NULL when there is none or it is larger. */
static const char *parse_class(const char *p, unsigned *out)
{
    unsigned v = 0;
    p = skip_blanks(p);
    if (*p < '0' || *p > '9')
        return NULL;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((v = v * 10 + (unsigned)(*p - '0')) > 255)
            return NULL;
    *out = v;
    return skip_blanks(p);
}

int ptreg_classes_parse(const char *list, unsigned char keep[256])
{
    unsigned char set[256] = {0};
    const char *p = list;
    if (!list || !keep)
        return -1;
    for (;;) {
        unsigned lo, hi;
        if (!(p = parse_class(p, &lo)))
            return -1;
        hi = lo;
        if (*p == '-' && (!(p = parse_class(p + 1, &hi)) || hi < lo))
            return -1;
        memset(set + lo, 1, hi - lo + 1);
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return -1;
    }
    memcpy(keep, set, sizeof set);
    return 0;
}

/* A finite number followed by `end` (after blanks); NULL otherwise. */
static const char *parse_bound(const char *p, char end, double *out)
{
    char *stop;
    p = skip_blanks(p);
    *out = strtod(p, &stop);
    if (stop == p || !isfinite(*out))
        return NULL;
    p = skip_blanks(stop);
    return *p == end ? p + (end != '\0') : NULL;
}

int ptreg_crop_parse(const char *s, double min[3], double max[3])
{
    double v[6];
    const char *p = s;
    if (!s || !min || !max)
        return -1;
    for (int i = 0; i < 6; i++)
        if (!(p = parse_bound(p, i < 5 ? ',' : '\0', &v[i])))
            return -1;
    for (int k = 0; k < 3; k++)
        if (!(v[k] <= v[k + 3]))
            return -1;
    memcpy(min, v, 3 * sizeof *v);
    memcpy(max, v + 3, 3 * sizeof *v);
    return 0;
}
