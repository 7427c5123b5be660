/* libFuzzer entry point for the text files of transforms: one 4x4
 * (ptreg_transform_read's parser: 16 finite numbers with a bottom row from
 * the file or (0, 0, 0, 1)), many poses (each rigid) and index pairs (each
 * below the limit, never with itself), chosen by the input's length mod 3,
 * the pairs' inputs read as correspondences too (indices below the limits, a
 * weight >= 0 on every pair or none), and every input as a trajectory (TUM
 * or KITTI); else an error naming the input (and the line where it has
 * one). See run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(ptreg_status s, const ptreg_error *err)
{
    if (s != PTREG_ERR_FORMAT || strncmp(err->message, "fuzz: ", 6))
        abort();
}

static void one_transform(const uint8_t *data, size_t size)
{
    double T[16];
    ptreg_error err;
    ptreg_status s = ptreg_transform_read_memory(data, size, "fuzz", T, &err);
    if (s == PTREG_OK) {
        for (int i = 0; i < 16; i++)
            if (!isfinite(T[i]))
                abort();
    } else if (!strstr(err.message, "fuzz: line ")) {
        abort();
    }
    if (s)
        check_error(s, &err);
}

static void poses(const uint8_t *data, size_t size)
{
    double *P = NULL;
    size_t n = 0;
    ptreg_error err;
    ptreg_status s = ptreg_poses_read_memory(data, size, "fuzz", &P, &n, &err);
    if (s == PTREG_OK) {
        if (!n || !P)
            abort();
        for (size_t i = 0; i < n; i++)
            if (P[16 * i + 15] != 1.0 || P[16 * i + 12] != 0.0)
                abort();
    } else if (P) {
        abort();
    } else {
        check_error(s, &err);
    }
    free(P);
}

static void pairs(const uint8_t *data, size_t size)
{
    size_t *ij = NULL, n = 0;
    ptreg_error err;
    ptreg_status s = ptreg_index_pairs_read_memory(data, size, "fuzz", 100, &ij, &n, &err);
    if (s == PTREG_OK) {
        for (size_t k = 0; k < n; k++)
            if (ij[2 * k] >= 100 || ij[2 * k + 1] >= 100 || ij[2 * k] == ij[2 * k + 1])
                abort();
    } else {
        check_error(s, &err);
    }
    free(ij);
}

static void correspondences(const uint8_t *data, size_t size)
{
    uint32_t *si = NULL, *ti = NULL;
    double *w = NULL;
    size_t n = 0;
    ptreg_error err;
    ptreg_status s = ptreg_correspondences_read_memory(data, size, "fuzz", 100, 50, &si, &ti, &w, &n, &err);
    if (s == PTREG_OK) {
        if (!n || !si || !ti)
            abort();
        for (size_t k = 0; k < n; k++)
            if (si[k] >= 100 || ti[k] >= 50 || (w && !(w[k] >= 0.0 && isfinite(w[k]))))
                abort();
    } else if (si || ti || w) {
        abort();
    } else {
        check_error(s, &err);
    }
    free(si), free(ti), free(w);
}

/* Every input as a trajectory too (TUM or KITTI, ptreg eval's): finite
 * poses with a bottom row (0, 0, 0, 1), rigid rotations, increasing times. */
static void trajectory(const uint8_t *data, size_t size)
{
    ptreg_trajectory tr;
    ptreg_error err;
    ptreg_status s = ptreg_trajectory_read_memory(data, size, "fuzz", &tr, &err);
    if (s != PTREG_OK) {
        if (tr.n || tr.t || tr.pose)
            abort();
        check_error(s, &err);
        return;
    }
    if (!tr.n)
        abort();
    for (size_t i = 0; i < tr.n; i++) {
        const double *T = tr.pose + 16 * i;
        for (int k = 0; k < 16; k++)
            if (!isfinite(T[k]))
                abort();
        if (T[12] != 0.0 || T[13] != 0.0 || T[14] != 0.0 || T[15] != 1.0 || (i && !(tr.t[i] > tr.t[i - 1])))
            abort();
        for (int r = 0; r < 3; r++)
            if (fabs(T[4 * r] * T[4 * r] + T[4 * r + 1] * T[4 * r + 1] + T[4 * r + 2] * T[4 * r + 2] - 1.0) > 1e-3)
                abort();
    }
    ptreg_trajectory_free(&tr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trajectory(data, size);
    if (size % 3 == 0)
        one_transform(data, size);
    else if (size % 3 == 2)
        poses(data, size);
    else {
        pairs(data, size);
        correspondences(data, size);
    }
    return 0;
}
