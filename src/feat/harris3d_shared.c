/* What 3-D Harris's CPU path (harris3d.c) and device path
 * (harris3d_device.c) share: the window's Gaussian and the thinning of the
 * keypoints found. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "feat/harris3d_impl.h"

/* The window reaches 2 sigma, where the weight is e^-2 = 0.14 of the
 * centre's: wide enough to average, narrow enough that the window's edge
 * still counts. */
double ptreg_harris3d_sigma(const ptreg_harris3d_options *opt)
{
    return opt->sigma > 0 ? opt->sigma : (opt->window - 1) / 4.0;
}

/* 1-D Gaussian weights over [-r, r], summing to 1. */
void harris3d_gaussian_weights(int r, double sigma, double *w)
{
    double sum = 0;
    for (int t = -r; t <= r; t++)
        sum += w[t + r] = exp(-(double)(t * t) / (2 * sigma * sigma));
    for (int t = 0; t <= 2 * r; t++)
        w[t] /= sum;
}

void harris3d_weights(int r, double sigma, float *w)
{
    double wd[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    harris3d_gaussian_weights(r, sigma, wd);
    for (int t = 0; t <= 2 * r; t++)
        w[t] = (float)wd[t];
}

/* Greedy thinning, best first: a keypoint closer than d to one already
 * kept is dropped. Kept points are binned in cells of at least d voxels, so
 * only the 27 cells around a point can hold one that close. */
size_t harris3d_thin(ptreg_keypoint *kp, size_t n, double d, size_t top, size_t nx, size_t ny, size_t nz)
{
    size_t cell = (size_t)ceil(d) < 4 ? 4 : (size_t)ceil(d);
    size_t gx = (nx + cell - 1) / cell, gy = (ny + cell - 1) / cell, gz = (nz + cell - 1) / cell;
    size_t *head = malloc(gx * gy * gz * sizeof *head), *next = malloc((n ? n : 1) * sizeof *next);
    if (!head || !next) {
        free(head);
        free(next);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < gx * gy * gz; i++)
        head[i] = SIZE_MAX;
    size_t kept = 0;
    for (size_t i = 0; i < n && (!top || kept < top); i++) {
        ptreg_keypoint p = kp[i];
        size_t cx = p.x / cell, cy = p.y / cell, cz = p.z / cell;
        int close = 0;
        for (size_t z = cz ? cz - 1 : 0; z <= cz + 1 && z < gz && !close; z++)
            for (size_t y = cy ? cy - 1 : 0; y <= cy + 1 && y < gy && !close; y++)
                for (size_t x = cx ? cx - 1 : 0; x <= cx + 1 && x < gx && !close; x++)
                    for (size_t j = head[x + gx * (y + gy * z)]; j != SIZE_MAX && !close; j = next[j]) {
                        double ex = (double)kp[j].x - p.x, ey = (double)kp[j].y - p.y, ez = (double)kp[j].z - p.z;
                        close = ex * ex + ey * ey + ez * ez < d * d;
                    }
        if (close)
            continue;
        /* kp[kept] is free: every point before i was kept or dropped. */
        size_t c = cx + gx * (cy + gy * cz);
        kp[kept] = p;
        next[kept] = head[c];
        head[c] = kept++;
    }
    free(head);
    free(next);
    return kept;
}
