/* Search spaces (tune.h): the machine's limits, parameter values, and the
 * enumeration that tests each constraint at the first level where its
 * parameters are bound. */
#include "ptreg/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "ptreg/device.h"
#include "tune/tune_kernels.h"

/* A data cache's size from sysfs ("48K", "1024K", "32M"); 0 when absent. */
static double cache_bytes(int index)
{
    char path[96], text[32] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0.0;
    const int got = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    char *end;
    const double v = got ? strtod(text, &end) : 0.0;
    if (!got || !(v > 0))
        return 0.0;
    return *end == 'K' ? v * 1024.0 : *end == 'M' ? v * 1024.0 * 1024.0 : v;
}

void ptreg_tune_machine_cpu(ptreg_tune_machine *m)
{
    memset(m, 0, sizeof *m);
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    m->cores = ptreg_get_num_threads();
    snprintf(m->name, sizeof m->name, "cpu: %.120s, %d threads, %s", ptreg_device_name(&cpu), (int)m->cores,
             isa_level_name(cpu_isa_level()));
    /* index0 is L1 data, index1 L1 instructions, index2 L2 on Linux */
    m->l1_bytes = cache_bytes(0) > 0 ? cache_bytes(0) : 32.0 * 1024.0;
    m->l2_bytes = cache_bytes(2) > 0 ? cache_bytes(2) : 1024.0 * 1024.0;
    m->work_group = 1;
    m->local_bytes = m->l1_bytes;
}

int ptreg_tune_param_values(const ptreg_tune_param *p, double *out)
{
    int n = 0;
    switch (p->kind) {
    case PTREG_TUNE_BINARY:
        out[n++] = 0.0;
        out[n++] = 1.0;
        break;
    case PTREG_TUNE_LIST:
        for (; n < p->count && n < PTREG_TUNE_MAX_VALUES; n++)
            out[n] = p->values[n];
        break;
    case PTREG_TUNE_RANGE:
        for (double v = p->lo; v <= p->hi && n < PTREG_TUNE_MAX_VALUES && p->step > 0; v += p->step)
            out[n++] = v;
        break;
    case PTREG_TUNE_CONTINUOUS:
        for (; n < p->count && n < PTREG_TUNE_MAX_VALUES; n++)
            out[n] = p->count > 1 ? p->lo + (p->hi - p->lo) * n / (p->count - 1) : p->lo;
        break;
    }
    return n;
}

static double limit_of(const ptreg_tune_constraint *c, const ptreg_tune_machine *m)
{
    switch (c->limit) {
    case PTREG_TUNE_L1_BYTES: return m->l1_bytes;
    case PTREG_TUNE_L2_BYTES: return m->l2_bytes;
    case PTREG_TUNE_CORES: return m->cores;
    case PTREG_TUNE_WORK_GROUP: return m->work_group;
    case PTREG_TUNE_LOCAL_BYTES: return m->local_bytes;
    case PTREG_TUNE_CONST: break;
    }
    return c->value;
}

static int holds(const ptreg_tune_constraint *c, const ptreg_tune_machine *m, const double *point)
{
    const double a = point[c->a], b = c->b >= 0 ? point[c->b] : 1.0;
    if (c->op == PTREG_TUNE_MULTIPLE) {
        const double unit = b * c->scale;
        return unit > 0 && fmod(a, unit) == 0.0;
    }
    return a * c->scale * b <= limit_of(c, m);
}

/* The level (parameter index) at which a constraint's parameters are all bound. */
static int level_of(const ptreg_tune_constraint *c) { return c->b > c->a ? c->b : c->a; }

int ptreg_tune_valid(const ptreg_tune_space *s, const ptreg_tune_machine *m, const double *point)
{
    for (int k = 0; k < s->constraint_count; k++)
        if (!holds(&s->constraints[k], m, point))
            return 0;
    return 1;
}

typedef struct walk {
    const ptreg_tune_space *s;
    const ptreg_tune_machine *m;
    double values[PTREG_TUNE_MAX_PARAMS][PTREG_TUNE_MAX_VALUES];
    int counts[PTREG_TUNE_MAX_PARAMS];
    double point[PTREG_TUNE_MAX_PARAMS];
    double *out;
    size_t cap, found;
    ptreg_tune_enum_stats *stats;
} walk;

/* Whether the constraints that become testable at `level` hold. */
static int level_holds(const walk *w, int level)
{
    for (int k = 0; k < w->s->constraint_count; k++)
        if (level_of(&w->s->constraints[k]) == level && !holds(&w->s->constraints[k], w->m, w->point))
            return 0;
    return 1;
}

static void descend(walk *w, int level)
{
    if (level == w->s->param_count) {
        if (w->out && w->found < w->cap)
            memcpy(w->out + w->found * (size_t)w->s->param_count, w->point,
                   (size_t)w->s->param_count * sizeof *w->point);
        w->found++;
        return;
    }
    for (int v = 0; v < w->counts[level]; v++) {
        w->point[level] = w->values[level][v];
        w->stats->visited++;
        if (level_holds(w, level))
            descend(w, level + 1);
    }
}

size_t ptreg_tune_enumerate(const ptreg_tune_space *s, const ptreg_tune_machine *m, double *points, size_t cap,
                            ptreg_tune_enum_stats *stats)
{
    ptreg_tune_enum_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    walk w = {.s = s, .m = m, .out = points, .cap = cap, .stats = stats};
    stats->full = 1.0;
    for (int p = 0; p < s->param_count; p++) {
        w.counts[p] = ptreg_tune_param_values(&s->params[p], w.values[p]);
        stats->full *= w.counts[p];
    }
    descend(&w, 0);
    stats->valid = (double)w.found;
    return w.found;
}
