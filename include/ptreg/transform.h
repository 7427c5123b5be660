/* ptreg's rigid transforms: 4x4 row-major matrices, their algebra and quaternions.
 * (<ptreg/core.h> includes it too.) */
#ifndef PTREG_TRANSFORM_H
#define PTREG_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rigid transforms are 4x4 row-major double matrices, T[4*r + c]. A point p
 * maps to R p + t with R = T[0..2][0..2], t = T[0..2][3]. */
static inline void ptreg_transform_identity(double T[16])
{
    for (int i = 0; i < 16; i++)
        T[i] = i % 5 == 0 ? 1.0 : 0.0;
}
/* out = A * B (apply B first). out may alias A or B. */
PTREG_API void ptreg_transform_mul(const double A[16], const double B[16], double out[16]);
/* Inverse of a rigid transform (R^T, -R^T t). */
PTREG_API void ptreg_transform_invert_rigid(const double T[16], double out[16]);
/* out[i] = T * in[i] for n points; in and out may be the same array. */
PTREG_API void ptreg_transform_points(const double T[16], const float *in, float *out, size_t n);
/* A world transform T as it acts on coordinates relative to origin o:
 * Tr(-o) T Tr(o), the rotation unchanged and t' = R o + t - o. With o = 0
 * it is T, bit for bit. ptreg_transform_to_world is the inverse map,
 * Tr(o) T Tr(-o). out may alias T. */
PTREG_API void ptreg_transform_to_local(const double T[16], const double origin[3], double out[16]);
PTREG_API void ptreg_transform_to_world(const double T[16], const double origin[3], double out[16]);
/* Rotates n vectors (normals) by T's rotation. */
PTREG_API void ptreg_transform_vectors(const double T[16], const float *in, float *out, size_t n);
/* The rotation angle of R(T) in degrees and |t| of A^-1 B: the pose error. */
PTREG_API void ptreg_transform_difference(const double A[16], const double B[16], double *angle_deg,
                                          double *translation);
/* R, the rotation part of T (row-major 3x3). */
PTREG_API void ptreg_transform_rotation(const double T[16], double R[9]);
/* R from a unit quaternion (w, x, y, z); normalises q first. */
PTREG_API void ptreg_quaternion_to_matrix(const double q[4], double R[9]);
/* The unit quaternion (w, x, y, z) of a rotation matrix, with w >= 0. */
PTREG_API void ptreg_matrix_to_quaternion(const double R[9], double q[4]);
/* T from an axis (any length > 0), an angle in degrees and a translation. */
PTREG_API void ptreg_transform_from_axis_angle(const double axis[3], double angle_deg, const double t[3], double T[16]);
/* What the library takes as rigid (ptreg_transform_is_rigid's tol for
 * every initial transform), and how far from it ptreg_transform_make_rigid
 * repairs (Open3D's tutorials ship matrices 7.5e-4 off). */
#define PTREG_RIGID_TOL 1e-6
#define PTREG_NEARLY_RIGID_TOL 1e-2
/* Replaces T's R by the nearest rotation (its polar factor), keeping t,
 * when T is within PTREG_NEARLY_RIGID_TOL of rigid; returns its rigidity
 * error before (T unchanged, and the error returned, when it is further). */
PTREG_API double ptreg_transform_make_rigid(double T[16]);

#ifdef __cplusplus
}
#endif

#endif
