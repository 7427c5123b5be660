/* Plain reference nearest neighbors and the test clouds shared by the
 * nearest-neighbor tests (test_nn.c, test_delaunay.c). */
#ifndef PTREG_TEST_NN_REF_H
#define PTREG_TEST_NN_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"
#include "core/numeric.h"

static inline float ref_dist2(const float *q, const float *p)
{
    float dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static inline int ref_better(float d, uint32_t i, float bd, uint32_t bi) { return d < bd || (d == bd && i < bi); }

static inline void ref_nearest(const float *t, size_t m, const float *q, uint32_t *bi, float *bd)
{
    *bd = INFINITY;
    *bi = PTREG_NO_NEIGHBOR;
    for (size_t j = 0; j < m; j++) {
        float d = ref_dist2(q, t + 3 * j);
        if (ref_better(d, (uint32_t)j, *bd, *bi))
            *bd = d, *bi = (uint32_t)j;
    }
}

typedef enum {
    CLOUD_UNIFORM,
    CLOUD_CLUSTERED,
    CLOUD_DUPLICATES,
    CLOUD_LATTICE,
    CLOUD_PLANE,
    CLOUD_SPHERE, /* on a sphere: cospherical, every Delaunay cell degenerate */
    CLOUD_LINE,   /* exactly collinear */
    CLOUD_KINDS
} cloud_kind;

static const char *const cloud_kind_names[CLOUD_KINDS] = {"uniform", "clustered", "duplicates", "lattice",
                                                          "plane",   "sphere",    "line"};

static inline float *make_cloud(cloud_kind kind, size_t n, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    float *p = malloc(3 * n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float *v = p + 3 * i;
        switch (kind) {
        case CLOUD_UNIFORM:
            for (int d = 0; d < 3; d++)
                v[d] = (float)(ptreg_rng_uniform(&rng) * 2 - 1);
            break;
        case CLOUD_CLUSTERED: {
            double c = (double)(i % 5);
            for (int d = 0; d < 3; d++)
                v[d] = (float)(c + 0.01 * ptreg_rng_normal(&rng));
            break;
        }
        case CLOUD_DUPLICATES:
            for (int d = 0; d < 3; d++)
                v[d] = (float)((int)(ptreg_rng_uniform(&rng) * 4)); /* many exact copies */
            break;
        case CLOUD_LATTICE: /* unit lattice: queries at half-integers tie everywhere */
            v[0] = (float)(i % 17), v[1] = (float)((i / 17) % 17), v[2] = (float)(i / 289);
            break;
        case CLOUD_PLANE:
            v[0] = (float)ptreg_rng_uniform(&rng), v[1] = (float)ptreg_rng_uniform(&rng), v[2] = 0.5f;
            break;
        case CLOUD_SPHERE: { /* unit vectors made exact in float: axis-aligned and diagonal ones */
            static const float dirs[6][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {-1, 0, 0}, {0, -1, 0}, {0, 0, -1}};
            double a = 6.283185307179586 * ptreg_rng_uniform(&rng), b = 3.141592653589793 * ptreg_rng_uniform(&rng);
            if (i < 6)
                memcpy(v, dirs[i], sizeof dirs[i]);
            else
                v[0] = (float)(cos(a) * sin(b)), v[1] = (float)(sin(a) * sin(b)), v[2] = (float)cos(b);
            break;
        }
        case CLOUD_LINE: v[0] = (float)i * 0.25f, v[1] = (float)i * 0.5f, v[2] = (float)i * 0.75f; break;
        case CLOUD_KINDS: break;
        }
    }
    return p;
}

static inline float *make_queries(cloud_kind kind, size_t n, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    float *q = malloc(3 * n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) {
            double u = ptreg_rng_uniform(&rng);
            if (kind == CLOUD_LATTICE)
                q[3 * i + d] = (float)(0.5 * (int)(u * 36) - 0.5); /* half-integer grid */
            else if (i % 10 == 0)
                q[3 * i + d] = (float)(u * 40 - 20); /* far outside */
            else
                q[3 * i + d] = (float)(u * 3 - 1);
        }
    return q;
}

/* The real scans bun000 (target) and bun045 (queries) from ../shared/data:
 * 1 when read, 0 when the data is absent or unreadable (a failed check). */
static inline int read_bunny_pair(ptreg_cloud *target, ptreg_cloud *query)
{
    const char *dir = check_data_dir();
    if (!dir)
        return 0;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/bunny/bun000.ply", dir);
    snprintf(b, sizeof b, "%s/bunny/bun045.ply", dir);
    ptreg_error err;
    ptreg_cloud_init(target);
    ptreg_cloud_init(query);
    if (ptreg_cloud_read(a, PTREG_FORMAT_AUTO, target, &err) != PTREG_OK ||
        ptreg_cloud_read(b, PTREG_FORMAT_AUTO, query, &err) != PTREG_OK) {
        CHECK_MSG(0, "reading the bunny scans: %s", err.message);
        ptreg_cloud_free(target);
        return 0;
    }
    return 1;
}

#endif
