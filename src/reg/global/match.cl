/* Feature matching's nearest descriptors on a device (match_device.c drives
 * it): the CPU's distance (global_kernels_isa.c: each one summed over the
 * dimensions in order, separate multiplies and adds) and tie rules, so the
 * answers are the CPU's. Descriptors are rows of DIM floats; a row holding
 * a NaN has no descriptor: as a source row it is nobody's and has none, as a
 * target row it is at infinity. -D options: DIM. */

/* The squared distance of source row i and target row j. */
FN float desc_dist2(GLOBAL const float *source, u32 i, GLOBAL const float *target, u32 j)
{
    GLOBAL const float *x = source + (size_t)i * DIM, *y = target + (size_t)j * DIM;
    float d = 0.0f;
    for (u32 k = 0; k < DIM; k++) {
        float diff = x[k] - y[k];
        d += diff * diff;
    }
    return d;
}

/* Source row i's nearest target row (ties: the lower index; UINT32 max for
 * a row without a descriptor) and its second least distance (over every
 * row but the nearest: a tie with the nearest counts). */
FN u32 desc_nearest(GLOBAL const float *source, GLOBAL const u8 *source_nan, u32 i, GLOBAL const float *target,
                    GLOBAL const u8 *target_nan, u32 nt, float *second)
{
    u32 arg = NO_NEIGHBOR;
    float best = INF_F;
    *second = INF_F;
    for (u32 j = 0; !source_nan[i] && j < nt; j++) {
        float d = target_nan[j] ? INF_F : desc_dist2(source, i, target, j);
        if (d < best) {
            *second = best;
            best = d;
            arg = j;
        } else if (d < *second) {
            *second = d;
        }
    }
    return arg;
}

/* Each source row's nearest target row. One thread per source row. */
KERNEL ptreg_match_rows(GLOBAL const float *source, GLOBAL const u8 *source_nan, u32 ns, GLOBAL const float *target,
                        GLOBAL const u8 *target_nan, u32 nt, GLOBAL u32 *row_best)
{
    u32 i = GLOBAL_ID_X;
    float second;
    if (i < ns)
        row_best[i] = desc_nearest(source, source_nan, i, target, target_nan, nt, &second);
}

/* The same, and each row's second least distance (Lowe's ratio test). */
KERNEL ptreg_match_rows_second(GLOBAL const float *source, GLOBAL const u8 *source_nan, u32 ns,
                               GLOBAL const float *target, GLOBAL const u8 *target_nan, u32 nt, GLOBAL u32 *row_best,
                               GLOBAL float *row_second)
{
    u32 i = GLOBAL_ID_X;
    float second;
    if (i >= ns)
        return;
    row_best[i] = desc_nearest(source, source_nan, i, target, target_nan, nt, &second);
    row_second[i] = second;
}

/* Each target row's nearest source row with a descriptor (ties: the lower
 * index; none: UINT32 max). One thread per target row. */
KERNEL ptreg_match_columns(GLOBAL const float *source, GLOBAL const u8 *source_nan, u32 ns,
                           GLOBAL const float *target, GLOBAL const u8 *target_nan, u32 nt, GLOBAL u32 *col_best)
{
    u32 j = GLOBAL_ID_X;
    if (j >= nt)
        return;
    u32 arg = NO_NEIGHBOR;
    float best = INF_F;
    for (u32 i = 0; i < ns; i++) {
        if (source_nan[i])
            continue;
        float d = target_nan[j] ? INF_F : desc_dist2(source, i, target, j);
        if (d < best) {
            best = d;
            arg = i;
        }
    }
    col_best[j] = arg;
}
