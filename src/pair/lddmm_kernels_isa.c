/* Landmark-shooting pair sums (lddmm_kernels.h), compiled once per ISA.
 * One row vector at a time sweeps a tile of columns with its sums in
 * registers; the tile's float32 sums then go into the float64 row sums. */
#include "pair/lddmm_kernels.h"
#include "pair/vec_isa.h"

#include "core/cpu_isa.h"

typedef struct vec3 {
    vf x, y, z;
} vec3;

static inline vec3 load3(const float *const c[3], size_t i)
{
    return (vec3){v_load(c[0] + i), v_load(c[1] + i), v_load(c[2] + i)};
}

static inline vec3 bcast3(const float *const c[3], size_t j)
{
    return (vec3){v_set1(c[0][j]), v_set1(c[1][j]), v_set1(c[2][j])};
}

static inline vec3 sub3(vec3 a, vec3 b) { return (vec3){v_sub(a.x, b.x), v_sub(a.y, b.y), v_sub(a.z, b.z)}; }
static inline vf dot3(vec3 a, vec3 b) { return v_fma(a.z, b.z, v_fma(a.y, b.y, v_mul(a.x, b.x))); }
/* acc += w * u */
static inline void axpy3(vec3 *acc, vf w, vec3 u)
{
    acc->x = v_fma(w, u.x, acc->x);
    acc->y = v_fma(w, u.y, acc->y);
    acc->z = v_fma(w, u.z, acc->z);
}

static inline vec3 zero3(void) { return (vec3){v_zero(), v_zero(), v_zero()}; }

/* Adds a vec3 of float32 tile sums into three double outputs at row i. */
static void add3(double *const out[3], size_t i, vec3 s)
{
    float t[3][VW];
    v_store(t[0], s.x);
    v_store(t[1], s.y);
    v_store(t[2], s.z);
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < VW; k++)
            out[c][i + (size_t)k] += t[c][k];
}

static void clear_rows(const lddmm_block *b, int outputs)
{
    for (int o = 0; o < outputs; o++)
        for (size_t i = 0; i < b->rows.n; i++)
            b->out[o][i] = 0.0;
}

void ISA_FN(lddmm_flow_block)(const lddmm_block *b)
{
    const fp_env env = flush_denormals();
    const vf f2 = v_set1(b->exp2_factor);
    const size_t tile = (size_t)b->col_tile, m = b->cols.n;
    clear_rows(b, 6);
    for (size_t i = 0; i < b->rows.n; i += VW) {
        const vec3 qi = load3(b->rows.q, i), pi = load3(b->rows.p, i);
        for (size_t j0 = 0; j0 < m; j0 += tile) {
            const size_t end = m - j0 < tile ? m : j0 + tile;
            vec3 v = zero3(), f = zero3();
            for (size_t j = j0; j < end; j++) {
                const vec3 d = sub3(qi, bcast3(b->cols.q, j)), pj = bcast3(b->cols.p, j);
                const vf e = v_exp2(v_mul(dot3(d, d), f2));
                axpy3(&v, e, pj);
                axpy3(&f, v_mul(e, dot3(pi, pj)), d);
            }
            add3(b->out, i, v);
            add3(b->out + 3, i, f);
        }
    }
    restore_fp(env);
}

void ISA_FN(lddmm_adjoint_block)(const lddmm_block *b)
{
    const fp_env env = flush_denormals();
    const vf f2 = v_set1(b->exp2_factor);
    const size_t tile = (size_t)b->col_tile, m = b->cols.n;
    clear_rows(b, 15);
    for (size_t i = 0; i < b->rows.n; i += VW) {
        const vec3 qi = load3(b->rows.q, i), pi = load3(b->rows.p, i);
        const vec3 ai = load3(b->rows.a, i), bi = load3(b->rows.b, i);
        for (size_t j0 = 0; j0 < m; j0 += tile) {
            const size_t end = m - j0 < tile ? m : j0 + tile;
            vec3 A = zero3(), P = zero3(), Q1 = zero3(), Q2 = zero3(), Q3 = zero3();
            for (size_t j = j0; j < end; j++) {
                const vec3 d = sub3(qi, bcast3(b->cols.q, j)), pj = bcast3(b->cols.p, j);
                const vec3 aj = bcast3(b->cols.a, j), db = sub3(bi, bcast3(b->cols.b, j));
                const vf e = v_exp2(v_mul(dot3(d, d), f2));
                const vf t = v_mul(e, dot3(db, d)), ec = v_mul(e, dot3(pi, pj));
                axpy3(&A, e, aj);
                axpy3(&P, t, pj);
                axpy3(&Q1, v_mul(e, v_add(dot3(ai, pj), dot3(aj, pi))), d);
                axpy3(&Q2, ec, db);
                axpy3(&Q3, v_mul(ec, dot3(db, d)), d);
            }
            add3(b->out, i, A);
            add3(b->out + 3, i, P);
            add3(b->out + 6, i, Q1);
            add3(b->out + 9, i, Q2);
            add3(b->out + 12, i, Q3);
        }
    }
    restore_fp(env);
}
