/* Pose-graph optimisation (ptreg_pose_graph_optimize): Open3D's
 * GlobalOptimizationLevenbergMarquardt with its line process, its damping
 * and its stopping rules, on the poses of every node but the reference
 * (whose 6 unknowns leave the system). Normal equations are one 6 x 6
 * block per node and per pair of nodes joined by an edge, assembled in the
 * edges' order, factored by CHOLMOD (simplicial LDL', AMD ordering, one
 * thread: the same bits on every run) or by a dense Cholesky, the
 * reference. docs/ALGORITHMS.md, "Pose graphs". */
#include "core/options_table.h"
#include "ptreg/posegraph.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#include "reg/posegraph/posegraph_impl.h"

/* Open3D's GlobalOptimizationConvergenceCriteria defaults. */
#define LM_MIN_RELATIVE_INCREMENT 1e-6
#define LM_MIN_RELATIVE_RESIDUAL_INCREMENT 1e-6
#define LM_MIN_RIGHT_TERM 1e-6
#define LM_MIN_RESIDUAL 1e-30
#define LM_MAX_ITERATION_LM 20
#define LM_UPPER_SCALE_FACTOR (2.0 / 3.0)
#define LM_LOWER_SCALE_FACTOR (1.0 / 3.0)
#define LM_TAU 1e-5 /* the first damping: tau * the largest diagonal entry */

/* ---- SE(3) pieces, as Open3D writes them ---- */

static void mul4(const double *A, const double *B, double *out)
{
    double r[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            r[4 * i + j] = A[4 * i] * B[j] + A[4 * i + 1] * B[4 + j] + A[4 * i + 2] * B[8 + j] +
                           A[4 * i + 3] * B[12 + j];
    memcpy(out, r, sizeof r);
}

/* The linearised 6-vector of a near-identity transform: the skew part of R
 * (rx, ry, rz), then t. */
static void linearized(const double *M, double *v)
{
    v[0] = (-M[6] + M[9]) / 2.0;
    v[1] = (-M[8] + M[2]) / 2.0;
    v[2] = (-M[1] + M[4]) / 2.0;
    v[3] = M[3];
    v[4] = M[7];
    v[5] = M[11];
}

/* The generators of the six small motions (rotations about x, y, z, then
 * translations along x, y, z), 4x4 row-major. */
static const double generator[6][16] = {
    {0, 0, 0, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0},
    {0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},  {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}};

/* A 6-vector (alpha, beta, gamma, a, b, c) as Rz(gamma) Ry(beta) Rx(alpha)
 * with translation (a, b, c) (Open3D's TransformVector6dToMatrix4d). */
static void vector6_to_matrix(const double *v, double *T)
{
    const double ca = cos(v[0]), sa = sin(v[0]), cb = cos(v[1]), sb = sin(v[1]), cg = cos(v[2]), sg = sin(v[2]);
    const double Rx[16] = {1, 0, 0, 0, 0, ca, -sa, 0, 0, sa, ca, 0, 0, 0, 0, 1};
    const double Ry[16] = {cb, 0, sb, 0, 0, 1, 0, 0, -sb, 0, cb, 0, 0, 0, 0, 1};
    const double Rz[16] = {cg, -sg, 0, 0, sg, cg, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    double ZY[16];
    mul4(Rz, Ry, ZY);
    mul4(ZY, Rx, T);
    T[3] = v[3];
    T[7] = v[4];
    T[11] = v[5];
}

/* The inverse: Euler angles and translation (Open3D's
 * TransformMatrix4dToVector6d), for the size of the pose vector. */
static void matrix_to_vector6(const double *T, double *v)
{
    const double sy = sqrt(T[0] * T[0] + T[4] * T[4]);
    if (!(sy < 1e-6)) {
        v[0] = atan2(T[9], T[10]);
        v[1] = atan2(-T[8], sy);
        v[2] = atan2(T[4], T[0]);
    } else {
        v[0] = atan2(-T[6], T[5]);
        v[1] = atan2(-T[8], sy);
        v[2] = 0;
    }
    v[3] = T[3];
    v[4] = T[7];
    v[5] = T[11];
}

static double pose_vector_norm(const double *poses, size_t N)
{
    double s = 0;
    for (size_t i = 0; i < N; i++) {
        double v[6];
        matrix_to_vector6(poses + 16 * i, v);
        for (int r = 0; r < 6; r++)
            s += v[r] * v[r];
    }
    return sqrt(s);
}

/* X^-1 Tt^-1: the left factor of an edge's misalignment. */
static void edge_left(const ptreg_pose_edge *e, const double *poses, double *A)
{
    double Xinv[16], Ttinv[16];
    ptreg_transform_invert_rigid(e->transformation, Xinv);
    ptreg_transform_invert_rigid(poses + 16 * e->target, Ttinv);
    mul4(Xinv, Ttinv, A);
}

static void residuals(const ptreg_pose_edge *edges, size_t E, const double *poses, double *zeta)
{
    for (size_t k = 0; k < E; k++) {
        double A[16], M[16];
        edge_left(&edges[k], poses, A);
        mul4(A, poses + 16 * edges[k].source, M);
        linearized(M, zeta + 6 * k);
    }
}

static double quad(const double *I, const double *e)
{
    double s = 0;
    for (int r = 0; r < 6; r++) {
        double row = 0;
        for (int c = 0; c < 6; c++)
            row += I[6 * r + c] * e[c];
        s += e[r] * row;
    }
    return s;
}

static double edge_weight(const ptreg_pose_edge *e) { return e->uncertain ? e->confidence : 1.0; }

/* The objective: sum of l e' I e + mu (sqrt(l) - 1)^2. */
static double objective(const ptreg_pose_edge *edges, size_t E, const double *zeta, double mu)
{
    double s = 0;
    for (size_t k = 0; k < E; k++) {
        const double l = edge_weight(&edges[k]);
        const double d = sqrt(l) - 1;
        s += l * quad(edges[k].information, zeta + 6 * k) + mu * d * d;
    }
    return s;
}

/* The line process's closed form: l = (mu / (mu + e' I e))^2; 1 where
 * both are 0 (mu = 0 with an edge met exactly: any l is optimal). */
static void update_confidence(ptreg_pose_edge *edges, size_t E, const double *zeta, double mu)
{
    for (size_t k = 0; k < E; k++)
        if (edges[k].uncertain) {
            const double d = mu + quad(edges[k].information, zeta + 6 * k);
            const double t = d == 0 ? 1.0 : mu / d;
            edges[k].confidence = t * t;
        }
}

/* mu = preference_loop_closure * max_dist^2 * the mean of information(5, 5)
 * over the edges (Open3D's ComputeLineProcessWeight; Choi et al. 2015,
 * section 5: information(5, 5) counts the pair's correspondences). */
static double line_process_weight(const ptreg_pose_edge *edges, size_t E, const ptreg_pose_graph_options *opt)
{
    if (!E)
        return 0;
    double s = 0;
    for (size_t k = 0; k < E; k++)
        s += edges[k].information[35];
    return opt->preference_loop_closure * opt->max_dist * opt->max_dist * (s / (double)E);
}

/* ---- the normal equations ---- */

typedef struct lm_system {
    size_t N, E, nfree, n; /* nodes, edges, free nodes, unknowns (6 nfree) */
    size_t *free_of;       /* node -> its free index, SIZE_MAX for the reference */
    size_t *node_of;       /* free index -> node */
    size_t npairs;
    size_t *pair_a, *pair_b; /* free indices a < b, sorted by (b, a) */
    size_t *col_start;       /* nfree + 1: the pairs of block column b */
    size_t *edge_pair;       /* edge -> its pair, SIZE_MAX when none */
    double *diag;            /* N x 36: every node's block, the reference's too */
    double *off;             /* npairs x 36: block (a, b), row-major */
    double *b;               /* N x 6: the right-hand side, -sum J' I e */
    double *rhs, *delta;     /* n each: b of the free nodes, the step */
    ptreg_pose_solver solver;
    double *dense; /* n x n */
    cholmod_common cc;
    int cc_started;
    cholmod_sparse *A;
    cholmod_factor *L;
    cholmod_dense *B;
} lm_system;

static int cmp_pair(const void *x, const void *y)
{
    const size_t *p = x, *q = y;
    if (p[1] != q[1])
        return p[1] < q[1] ? -1 : 1;
    return p[0] < q[0] ? -1 : p[0] > q[0];
}

static void system_free(lm_system *s)
{
    free(s->free_of);
    free(s->node_of);
    free(s->pair_a);
    free(s->pair_b);
    free(s->col_start);
    free(s->edge_pair);
    free(s->diag);
    free(s->off);
    free(s->b);
    free(s->rhs);
    free(s->delta);
    free(s->dense);
    if (s->cc_started) {
        cholmod_l_free_sparse(&s->A, &s->cc);
        cholmod_l_free_factor(&s->L, &s->cc);
        cholmod_l_free_dense(&s->B, &s->cc);
        cholmod_l_finish(&s->cc);
    }
    memset(s, 0, sizeof *s);
}

static ptreg_status system_setup(lm_system *s, const ptreg_pose_edge *edges, size_t E, size_t N, size_t ref,
                                 ptreg_pose_solver solver, ptreg_error *err)
{
    memset(s, 0, sizeof *s);
    s->N = N, s->E = E, s->nfree = N - 1, s->n = 6 * (N - 1), s->solver = solver;
    size_t *pairs = malloc((E ? E : 1) * 2 * sizeof *pairs);
    s->free_of = malloc(N * sizeof *s->free_of);
    s->node_of = malloc(N * sizeof *s->node_of);
    s->col_start = calloc(N + 1, sizeof *s->col_start);
    s->edge_pair = malloc((E ? E : 1) * sizeof *s->edge_pair);
    s->diag = malloc(N * 36 * sizeof *s->diag);
    s->b = malloc(N * 6 * sizeof *s->b);
    s->rhs = malloc((s->n ? s->n : 1) * sizeof *s->rhs);
    s->delta = malloc((s->n ? s->n : 1) * sizeof *s->delta);
    if (!pairs || !s->free_of || !s->node_of || !s->col_start || !s->edge_pair || !s->diag || !s->b || !s->rhs ||
        !s->delta)
        goto nomem;
    for (size_t i = 0, f = 0; i < N; i++) {
        s->free_of[i] = i == ref ? SIZE_MAX : f;
        if (i != ref)
            s->node_of[f++] = i;
    }
    size_t np = 0;
    for (size_t k = 0; k < E; k++) {
        const size_t fs = s->free_of[edges[k].source], ft = s->free_of[edges[k].target];
        if (fs == SIZE_MAX || ft == SIZE_MAX || fs == ft)
            continue;
        pairs[2 * np] = fs < ft ? fs : ft;
        pairs[2 * np + 1] = fs < ft ? ft : fs;
        np++;
    }
    qsort(pairs, np, 2 * sizeof *pairs, cmp_pair);
    size_t u = 0;
    for (size_t p = 0; p < np; p++)
        if (!u || pairs[2 * p] != pairs[2 * (u - 1)] || pairs[2 * p + 1] != pairs[2 * (u - 1) + 1]) {
            pairs[2 * u] = pairs[2 * p];
            pairs[2 * u + 1] = pairs[2 * p + 1];
            u++;
        }
    s->npairs = u;
    s->pair_a = malloc((u ? u : 1) * sizeof *s->pair_a);
    s->pair_b = malloc((u ? u : 1) * sizeof *s->pair_b);
    s->off = malloc((u ? u : 1) * 36 * sizeof *s->off);
    if (!s->pair_a || !s->pair_b || !s->off)
        goto nomem;
    for (size_t p = 0; p < u; p++) {
        s->pair_a[p] = pairs[2 * p];
        s->pair_b[p] = pairs[2 * p + 1];
        s->col_start[pairs[2 * p + 1] + 1]++;
    }
    for (size_t c = 0; c < s->nfree; c++)
        s->col_start[c + 1] += s->col_start[c];
    for (size_t k = 0; k < E; k++) {
        const size_t fs = s->free_of[edges[k].source], ft = s->free_of[edges[k].target];
        s->edge_pair[k] = SIZE_MAX;
        if (fs == SIZE_MAX || ft == SIZE_MAX || fs == ft)
            continue;
        const size_t key[2] = {fs < ft ? fs : ft, fs < ft ? ft : fs};
        const size_t *hit = bsearch(key, pairs, u, 2 * sizeof *pairs, cmp_pair);
        s->edge_pair[k] = (size_t)(hit - pairs) / 2;
    }
    free(pairs);
    pairs = NULL;

    if (solver == PTREG_POSE_SOLVER_DENSE) {
        if (s->n && s->n > SIZE_MAX / sizeof(double) / s->n)
            goto nomem;
        s->dense = malloc((s->n ? s->n * s->n : 1) * sizeof *s->dense);
        if (!s->dense)
            goto nomem;
    } else if (s->n) {
        cholmod_l_start(&s->cc);
        s->cc_started = 1;
        s->cc.print = 0;
        s->cc.nmethods = 1;
        s->cc.method[0].ordering = CHOLMOD_AMD;
        s->cc.postorder = 1;
        s->cc.supernodal = CHOLMOD_SIMPLICIAL;
        s->cc.final_ll = 0;
        const size_t nnz = 36 * s->npairs + 21 * s->nfree;
        s->A = cholmod_l_allocate_sparse(s->n, s->n, nnz, 1, 1, 1, CHOLMOD_REAL, &s->cc);
        s->B = cholmod_l_allocate_dense(s->n, 1, s->n, CHOLMOD_REAL, &s->cc);
        if (!s->A || !s->B)
            goto nomem;
    }
    return PTREG_OK;
nomem:
    free(pairs);
    system_free(s);
    return ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for the normal equations of %zu nodes", N);
}

/* H and b at the poses (zeta: their residuals), in the edges' order. An
 * edge adds M = l J' I J to both nodes' blocks and -M to their pair's (the
 * target's Jacobian is the source's negated), and -/+ l J' I e to b. */
static void system_assemble(lm_system *s, const ptreg_pose_edge *edges, const double *poses, const double *zeta)
{
    memset(s->diag, 0, s->N * 36 * sizeof *s->diag);
    memset(s->off, 0, (s->npairs ? s->npairs : 1) * 36 * sizeof *s->off);
    memset(s->b, 0, s->N * 6 * sizeof *s->b);
    for (size_t k = 0; k < s->E; k++) {
        const ptreg_pose_edge *e = &edges[k];
        if (e->source == e->target)
            continue; /* its residual does not move */
        double A[16], J[36], JtI[36];
        edge_left(e, poses, A);
        for (int c = 0; c < 6; c++) {
            double AG[16], Q[16], col[6];
            mul4(A, generator[c], AG);
            mul4(AG, poses + 16 * e->source, Q);
            linearized(Q, col);
            for (int r = 0; r < 6; r++)
                J[6 * r + c] = col[r];
        }
        for (int c = 0; c < 6; c++)
            for (int j = 0; j < 6; j++) {
                double v = 0;
                for (int r = 0; r < 6; r++)
                    v += J[6 * r + c] * e->information[6 * r + j];
                JtI[6 * c + j] = v;
            }
        const double l = edge_weight(e);
        const double *z = zeta + 6 * k;
        double *Ds = s->diag + 36 * e->source, *Dt = s->diag + 36 * e->target;
        double *Po = s->edge_pair[k] == SIZE_MAX ? NULL : s->off + 36 * s->edge_pair[k];
        for (int c = 0; c < 6; c++) {
            for (int d = 0; d < 6; d++) {
                double v = 0;
                for (int j = 0; j < 6; j++)
                    v += JtI[6 * c + j] * J[6 * j + d];
                v *= l;
                Ds[6 * c + d] += v;
                Dt[6 * c + d] += v;
                if (Po)
                    Po[6 * c + d] -= v;
            }
            double g = 0;
            for (int j = 0; j < 6; j++)
                g += JtI[6 * c + j] * z[j];
            g *= l;
            s->b[6 * e->source + c] -= g;
            s->b[6 * e->target + c] += g;
        }
    }
    for (size_t f = 0; f < s->nfree; f++)
        memcpy(s->rhs + 6 * f, s->b + 6 * s->node_of[f], 6 * sizeof *s->rhs);
}

static double system_max_diagonal(const lm_system *s)
{
    double m = -INFINITY;
    for (size_t i = 0; i < s->N; i++)
        for (int r = 0; r < 6; r++)
            m = fmax(m, s->diag[36 * i + 7 * r]);
    return m;
}

static double system_max_right_term(const lm_system *s)
{
    double m = -INFINITY;
    for (size_t i = 0; i < 6 * s->N; i++)
        m = fmax(m, s->b[i]);
    return m;
}

/* Dense (H + lambda I) delta = rhs by Cholesky, from the same upper
 * triangle the sparse path reads. */
static ptreg_status solve_dense(lm_system *s, double lambda, ptreg_error *err)
{
    const size_t n = s->n;
    double *M = s->dense;
    memset(M, 0, n * n * sizeof *M);
    for (size_t bc = 0; bc < s->nfree; bc++) {
        const double *D = s->diag + 36 * s->node_of[bc];
        for (int i = 0; i < 6; i++)
            for (int j = i; j < 6; j++)
                M[(6 * bc + i) * n + 6 * bc + j] = D[6 * i + j] + (i == j ? lambda : 0);
        for (size_t p = s->col_start[bc]; p < s->col_start[bc + 1]; p++)
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++)
                    M[(6 * s->pair_a[p] + i) * n + 6 * bc + j] = s->off[36 * p + 6 * i + j];
    }
    for (size_t r = 0; r < n; r++) /* the lower triangle from the upper */
        for (size_t c = 0; c < r; c++)
            M[r * n + c] = M[c * n + r];
    for (size_t j = 0; j < n; j++) { /* L L', L in the lower triangle */
        double d = M[j * n + j];
        for (size_t k = 0; k < j; k++)
            d -= M[j * n + k] * M[j * n + k];
        if (!(d > 0))
            return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                                   "pose graph: the normal equations are not positive definite (unknown %zu)", j);
        const double ljj = sqrt(d);
        M[j * n + j] = ljj;
        for (size_t i = j + 1; i < n; i++) {
            double v = M[i * n + j];
            for (size_t k = 0; k < j; k++)
                v -= M[i * n + k] * M[j * n + k];
            M[i * n + j] = v / ljj;
        }
    }
    double *x = s->delta;
    for (size_t i = 0; i < n; i++) {
        double v = s->rhs[i];
        for (size_t k = 0; k < i; k++)
            v -= M[i * n + k] * x[k];
        x[i] = v / M[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {
        double v = x[i];
        for (size_t k = i + 1; k < n; k++)
            v -= M[k * n + i] * x[k];
        x[i] = v / M[i * n + i];
    }
    return PTREG_OK;
}

static ptreg_status solve_cholmod(lm_system *s, double lambda, ptreg_error *err)
{
    SuiteSparse_long *Ap = s->A->p, *Ai = s->A->i;
    double *Ax = s->A->x;
    size_t pos = 0;
    for (size_t bc = 0; bc < s->nfree; bc++) {
        const double *D = s->diag + 36 * s->node_of[bc];
        for (int j = 0; j < 6; j++) {
            Ap[6 * bc + j] = (SuiteSparse_long)pos;
            for (size_t p = s->col_start[bc]; p < s->col_start[bc + 1]; p++)
                for (int i = 0; i < 6; i++) {
                    Ai[pos] = (SuiteSparse_long)(6 * s->pair_a[p] + i);
                    Ax[pos++] = s->off[36 * p + 6 * i + j];
                }
            for (int i = 0; i <= j; i++) {
                Ai[pos] = (SuiteSparse_long)(6 * bc + i);
                Ax[pos++] = D[6 * i + j] + (i == j ? lambda : 0);
            }
        }
    }
    Ap[s->n] = (SuiteSparse_long)pos;
    if (!s->L) {
        s->L = cholmod_l_analyze(s->A, &s->cc);
        if (!s->L)
            return ptreg_error_set(err, s->cc.status == CHOLMOD_OUT_OF_MEMORY ? PTREG_ERR_NOMEM : PTREG_ERR_RUNTIME,
                                   "pose graph: CHOLMOD could not analyse the normal equations (status %d)",
                                   s->cc.status);
    }
    if (!cholmod_l_factorize(s->A, s->L, &s->cc) || s->cc.status == CHOLMOD_OUT_OF_MEMORY)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory factoring the normal equations");
    if (s->cc.status == CHOLMOD_NOT_POSDEF || s->L->minor < s->L->n)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                               "pose graph: the normal equations are not positive definite (unknown %zu)",
                               (size_t)s->L->minor);
    memcpy(s->B->x, s->rhs, s->n * sizeof *s->rhs);
    cholmod_dense *X
    = cholmod_l_solve(CHOLMOD_A, s->L, s->B, &s->cc);
    if (!X)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory solving the normal equations");
    memcpy(s->delta, X->x, s->n * sizeof *s->delta);
    cholmod_l_free_dense(&X, &s->cc);
    return PTREG_OK;
}

static ptreg_status system_solve(lm_system *s, double lambda, ptreg_error *err)
{
    if (!s->n)
        return PTREG_OK;
    return s->solver == PTREG_POSE_SOLVER_DENSE ? solve_dense(s, lambda, err) : solve_cholmod(s, lambda, err);
}

/* ---- one Levenberg-Marquardt run (Open3D's OptimizePoseGraph) ---- */

static ptreg_status lm_run(double *poses, ptreg_pose_edge *edges, size_t E, size_t N,
                           const ptreg_pose_graph_options *opt, int *iterations, ptreg_error *err)
{
    lm_system s;
    ptreg_status st = system_setup(&s, edges, E, N, opt->reference_node, opt->solver, err);
    if (st)
        return st;
    double *zeta = malloc((E ? E : 1) * 6 * sizeof *zeta);
    double *zeta_new = malloc((E ? E : 1) * 6 * sizeof *zeta_new);
    double *poses_new = malloc(N * 16 * sizeof *poses_new);
    if (!zeta || !zeta_new || !poses_new) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu edges", E);
        goto done;
    }
    const double mu = line_process_weight(edges, E, opt);
    residuals(edges, E, poses, zeta);
    double current = objective(edges, E, zeta, mu);
    update_confidence(edges, E, zeta, mu);
    double xnorm = pose_vector_norm(poses, N);
    system_assemble(&s, edges, poses, zeta);
    double lambda = LM_TAU * system_max_diagonal(&s), ni = 2, rho = 0;
    int stop = system_max_right_term(&s) < LM_MIN_RIGHT_TERM;
    for (int iter = 0; !stop && iter < opt->max_iter; iter++) {
        ++*iterations;
        int lm_count = 0;
        do {
            if ((st = system_solve(&s, lambda, err)))
                goto done;
            double dn = 0;
            for (size_t i = 0; i < s.n; i++)
                dn += s.delta[i] * s.delta[i];
            stop = stop || sqrt(dn) < LM_MIN_RELATIVE_INCREMENT * (xnorm + LM_MIN_RELATIVE_INCREMENT);
            if (!stop) {
                memcpy(poses_new, poses, N * 16 * sizeof *poses);
                for (size_t f = 0; f < s.nfree; f++) {
                    double M[16];
                    double *T = poses_new + 16 * s.node_of[f];
                    vector6_to_matrix(s.delta + 6 * f, M);
                    mul4(M, T, T);
                }
                residuals(edges, E, poses_new, zeta_new);
                const double fresh = objective(edges, E, zeta_new, mu);
                double pred = 0;
                for (size_t i = 0; i < s.n; i++)
                    pred += s.delta[i] * (lambda * s.delta[i] + s.rhs[i]);
                rho = (current - fresh) / (pred + 1e-3);
                if (rho > 0) {
                    if (current - fresh < LM_MIN_RELATIVE_RESIDUAL_INCREMENT * current) {
                        stop = 1;
                        break;
                    }
                    const double alpha = 1.0 - pow(2 * rho - 1, 3);
                    lambda *= fmax(LM_LOWER_SCALE_FACTOR, fmin(alpha, LM_UPPER_SCALE_FACTOR));
                    ni = 2;
                    current = fresh;
                    double *t = zeta;
                    zeta = zeta_new, zeta_new = t;
                    memcpy(poses, poses_new, N * 16 * sizeof *poses);
                    xnorm = pose_vector_norm(poses, N);
                    update_confidence(edges, E, zeta, mu);
                    system_assemble(&s, edges, poses, zeta);
                    if (system_max_right_term(&s) < LM_MIN_RIGHT_TERM) {
                        stop = 1;
                        break;
                    }
                } else {
                    lambda *= ni;
                    ni *= 2;
                }
            }
            lm_count++;
            stop = stop || lm_count >= LM_MAX_ITERATION_LM;
        } while (!(rho > 0 || stop));
        stop = stop || current < LM_MIN_RESIDUAL;
    }
done:
    free(zeta);
    free(zeta_new);
    free(poses_new);
    system_free(&s);
    return st;
}

/* Open3D's CreatePoseGraphWithoutInvalidEdges: an uncertain edge stays
 * while its confidence is above the threshold. Returns the new count. */
static size_t prune(ptreg_pose_edge *edges, size_t E, double threshold)
{
    size_t kept = 0;
    for (size_t k = 0; k < E; k++)
        if (!edges[k].uncertain || edges[k].confidence > threshold)
            edges[kept++] = edges[k];
    return kept;
}

/* The objective at its line process's optimum (l in closed form). */
static double optimal_objective(ptreg_pose_edge *edges, size_t E, const double *poses,
                                const ptreg_pose_graph_options *opt, double *zeta)
{
    const double mu = line_process_weight(edges, E, opt);
    residuals(edges, E, poses, zeta);
    update_confidence(edges, E, zeta, mu);
    return objective(edges, E, zeta, mu);
}

/* Every node reaches the reference over the edges, or the first that does
 * not is named. */
static ptreg_status check_connected(const ptreg_pose_graph *g, size_t ref, ptreg_error *err)
{
    const size_t N = g->node_count, E = g->edge_count;
    size_t *start = calloc(N + 1, sizeof *start), *adj = malloc((E ? 2 * E : 1) * sizeof *adj);
    size_t *stack = malloc(N * sizeof *stack);
    unsigned char *seen = calloc(N, 1);
    ptreg_status st = PTREG_OK;
    if (!start || !adj || !stack || !seen) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu nodes", N);
        goto done;
    }
    for (size_t k = 0; k < E; k++)
        start[g->edges[k].source + 1]++, start[g->edges[k].target + 1]++;
    for (size_t i = 0; i < N; i++)
        start[i + 1] += start[i];
    for (size_t k = 0; k < E; k++) {
        const size_t s = g->edges[k].source, t = g->edges[k].target;
        adj[start[s]++] = t;
        adj[start[t]++] = s;
    }
    for (size_t i = N; i > 0; i--) /* back to the starts */
        start[i] = start[i - 1];
    start[0] = 0;
    size_t top = 0;
    stack[top++] = ref;
    seen[ref] = 1;
    while (top) {
        const size_t i = stack[--top];
        for (size_t a = start[i]; a < start[i + 1]; a++)
            if (!seen[adj[a]]) {
                seen[adj[a]] = 1;
                stack[top++] = adj[a];
            }
    }
    for (size_t i = 0; i < N; i++)
        if (!seen[i]) {
            st = ptreg_error_set(err, PTREG_ERR_FORMAT,
                                 "pose graph: node %zu: no path of edges to the reference node "
                                 "%zu",
                                 i, ref);
            break;
        }
done:
    free(start);
    free(adj);
    free(stack);
    free(seen);
    return st;
}

static ptreg_status check_options(const ptreg_pose_graph *g, const ptreg_pose_graph_options *opt, ptreg_error *err)
{
    const ptreg_status st = ptreg_options_check(ptreg_pose_graph_option_table(), opt, err);
    if (st)
        return st;
    if (opt->reference_node >= g->node_count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pose graph: reference node %zu of %zu nodes", opt->reference_node,
                               g->node_count);
    return PTREG_OK;
}

ptreg_status ptreg_pose_graph_optimize(ptreg_pose_graph *g, const ptreg_pose_graph_options *opt,
                                       ptreg_pose_graph_result *result, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    ptreg_pose_graph_options defaults;
    if (!opt) {
        ptreg_pose_graph_options_default(&defaults);
        opt = &defaults;
    }
    if (result)
        memset(result, 0, sizeof *result);
    if (!g)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pose graph: no graph");
    ptreg_status st = pose_graph_check_named(NULL, g, err);
    if (st || (st = check_options(g, opt, err)) || (st = check_connected(g, opt->reference_node, err)))
        return st;
    const size_t N = g->node_count, E0 = g->edge_count;
    /* Work on copies: the caller's graph changes only on success. */
    double *poses = malloc(N * 16 * sizeof *poses);
    ptreg_pose_edge *edges = malloc((E0 ? E0 : 1) * sizeof *edges);
    double *zeta = malloc((E0 ? E0 : 1) * 6 * sizeof *zeta);
    if (!poses || !edges || !zeta) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu nodes and %zu edges", N, E0);
        goto done;
    }
    memcpy(poses, g->nodes, N * 16 * sizeof *poses);
    memcpy(edges, g->edges, E0 * sizeof *edges);
    ptreg_pose_graph_result r;
    memset(&r, 0, sizeof r);
    {
        ptreg_pose_edge *probe = malloc((E0 ? E0 : 1) * sizeof *probe);
        if (!probe) {
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu edges", E0);
            goto done;
        }
        memcpy(probe, edges, E0 * sizeof *edges);
        r.initial_cost = optimal_objective(probe, E0, poses, opt, zeta);
        free(probe);
    }
    size_t E = E0;
    if ((st = lm_run(poses, edges, E, N, opt, &r.iterations, err)))
        goto done;
    E = prune(edges, E, opt->edge_prune_threshold);
    if ((st = lm_run(poses, edges, E, N, opt, &r.iterations, err)))
        goto done;
    E = prune(edges, E, opt->edge_prune_threshold);
    r.pruned = E0 - E;
    {
        ptreg_pose_edge *probe = malloc((E ? E : 1) * sizeof *probe);
        if (!probe) {
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu edges", E);
            goto done;
        }
        memcpy(probe, edges, E * sizeof *edges);
        r.final_cost = optimal_objective(probe, E, poses, opt, zeta);
        free(probe);
    }
    memcpy(g->nodes, poses, N * 16 * sizeof *poses);
    memcpy(g->edges, edges, E * sizeof *edges);
    g->edge_count = E;
    r.time_ms = ptreg_time_ms() - t0;
    if (result)
        *result = r;
done:
    free(poses);
    free(edges);
    free(zeta);
    return st;
}
