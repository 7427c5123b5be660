/* Reductions in fixed order, shared by the programs that sum (they list
 * this file before the files that use it). Sums are in double where
 * the device has it (acc_t), else float. Every thread of the group must
 * call these (they hold barriers). -D options: WG (threads per group, a
 * power of two), ITEMS (consecutive items per thread in the kernels that
 * take several). */

#if PTREG_FP64
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* The sum of every thread's v over the group, by a tree in red[] (WG
 * slots): the same order on every run. */
FN acc_t group_sum(LOCAL acc_t *red, acc_t v)
{
    u32 t = LOCAL_ID_X;
    red[t] = v;
    BARRIER();
    for (u32 stride = WG / 2; stride > 0; stride /= 2) {
        if (t < stride)
            red[t] += red[t + stride];
        BARRIER();
    }
    acc_t total = red[0];
    BARRIER(); /* red[] is reused by the next call */
    return total;
}

/* The same for counts; take_max: the largest instead of the sum. */
FN u64 group_sum_u64(LOCAL u64 *red, u64 v, int take_max)
{
    u32 t = LOCAL_ID_X;
    red[t] = v;
    BARRIER();
    for (u32 stride = WG / 2; stride > 0; stride /= 2) {
        if (t < stride)
            red[t] = take_max ? MAX_U32(red[t], red[t + stride]) : red[t] + red[t + stride];
        BARRIER();
    }
    u64 total = red[0];
    BARRIER();
    return total;
}
