/* Brute-force exact 1-NN on a device: one thread per query; the target
 * passes through local memory in tiles of WG points, each thread loading
 * one point of a tile. Targets are scanned in index order and a distance
 * replaces the best only when (d, j) is lexicographically smaller, so ties
 * go to the lowest index and the answer is the CPU's, bit for bit (even
 * when every distance overflows to +inf). */

KERNEL ptreg_nn_brute(GLOBAL const float *queries, u32 n, GLOBAL const float *tx, GLOBAL const float *ty,
                      GLOBAL const float *tz, u32 m, GLOBAL u32 *nearest, GLOBAL float *dist2)
{
    SHARED float sx[WG], sy[WG], sz[WG];
    u32 i = GLOBAL_ID_X, t = LOCAL_ID_X;
    int live = i < n;
    GLOBAL const float *qi = queries + 3 * (size_t)i; /* 3 i passes 2^32 at 1.4 G queries */
    float qx = live ? qi[0] : 0.0f, qy = live ? qi[1] : 0.0f, qz = live ? qi[2] : 0.0f;
    float best_d = INF_F;
    u32 best_j = NO_NEIGHBOR;
    for (u32 j0 = 0; j0 < m; j0 += WG) {
        /* every thread takes part in the loads and barriers, live or not */
        u32 j = j0 + t;
        sx[t] = j < m ? tx[j] : 0.0f;
        sy[t] = j < m ? ty[j] : 0.0f;
        sz[t] = j < m ? tz[j] : 0.0f;
        BARRIER();
        u32 count = MIN_U32(WG, m - j0);
        for (u32 k = 0; k < count; k++) {
            float dx = qx - sx[k], dy = qy - sy[k], dz = qz - sz[k];
            float d = (dx * dx + dy * dy) + dz * dz;
            if (d < best_d || (d == best_d && j0 + k < best_j)) {
                best_d = d;
                best_j = j0 + k;
            }
        }
        BARRIER();
    }
    if (live) {
        nearest[i] = best_j;
        dist2[i] = best_d;
    }
}
