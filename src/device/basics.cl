/* Kernels that exercise the device layer itself (tests/test_device.c): an
 * index pattern, and a block sum through local memory with barriers, the
 * shape of every reduction in ptreg (partials per group, summed in a fixed
 * order by a second launch). WG: the work-group size (-DWG=...). */

KERNEL ptreg_basics_iota(GLOBAL u32 *out, u32 n, u32 scale, u32 offset)
{
    u32 i = GLOBAL_ID_X;
    if (i < n)
        out[i] = i * scale + offset;
}

/* partial[g] = the sum of x over group g's WG elements, by a tree in local
 * memory (every thread reaches every barrier). */
KERNEL ptreg_basics_block_sum(GLOBAL const float *x, u32 n, GLOBAL float *partial)
{
    SHARED float tile[WG];
    u32 i = GLOBAL_ID_X, t = LOCAL_ID_X;
    tile[t] = i < n ? x[i] : 0.0f;
    BARRIER();
    for (u32 stride = WG / 2; stride > 0; stride /= 2) {
        if (t < stride)
            tile[t] += tile[t + stride];
        BARRIER();
    }
    if (t == 0)
        partial[GROUP_ID_X] = tile[0];
}

#if PTREG_FP64
/* The partials summed in group order, in double, by one thread. */
KERNEL ptreg_basics_total(GLOBAL const float *partial, u32 groups, GLOBAL double *total)
{
    if (GLOBAL_ID_X == 0) {
        double s = 0.0;
        for (u32 g = 0; g < groups; g++)
            s += partial[g];
        total[0] = s;
    }
}
#endif
