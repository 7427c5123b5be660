/* A volume on the page (ptreg/report.h): three orthogonal slices through
 * its centre, sampled down to at most SLICE_MAX_SIDE pixels a side, in one
 * grey scale over the slices' quantiles; what ptreg harris3d --html shows
 * under its keypoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ptreg/report.h"
#include "report/report_impl.h"

/* A slice's largest side on the page: a bigger volume's slices are sampled
 * down (nearest voxel), which keeps the page small and the view smooth. */
#define SLICE_MAX_SIDE 512
/* The grey runs over these quantiles of the slices' voxels: a few hot or
 * cold voxels (CT metal, padding) would otherwise wash the rest out. */
#define GREY_LOW_QUANTILE 0.005
#define GREY_HIGH_QUANTILE 0.995

/* One of the three orthogonal slices through the centre: its pixels run
 * along axis `across`, its rows along `down`, at the middle of `fixed`. */
typedef struct volume_slice {
    int across, down, fixed;
    const char *name;
    float *pixels;
    size_t w, h;
} volume_slice;

static size_t slice_side(size_t n)
{
    const size_t step = (n + SLICE_MAX_SIDE - 1) / SLICE_MAX_SIDE;
    return (n + step - 1) / step;
}

/* Pixel i of a side of `side` pixels over n voxels: the voxel under its centre. */
static size_t voxel_under(size_t i, size_t side, size_t n)
{
    return (size_t)(((double)i + 0.5) * (double)n / (double)side);
}

static int sample_slice(const ptreg_volume *vol, volume_slice *s)
{
    const size_t dims[3] = {vol->nx, vol->ny, vol->nz};
    s->w = slice_side(dims[s->across]), s->h = slice_side(dims[s->down]);
    s->pixels = malloc(s->w * s->h * sizeof *s->pixels);
    if (!s->pixels)
        return 1;
    size_t at[3];
    at[s->fixed] = dims[s->fixed] / 2;
    for (size_t j = 0; j < s->h; j++) {
        at[s->down] = voxel_under(j, s->h, dims[s->down]);
        for (size_t i = 0; i < s->w; i++) {
            at[s->across] = voxel_under(i, s->w, dims[s->across]);
            s->pixels[i + s->w * j] = ptreg_volume_voxel(vol, at[0] + dims[0] * (at[1] + dims[1] * at[2]));
        }
    }
    return 0;
}

static int compare_floats(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The grey's black and white: quantiles of the slices' finite pixels, or
 * their extremes when the quantiles meet (a mostly flat volume). */
static int grey_range(const volume_slice *s, int count, float *lo, float *hi)
{
    size_t n = 0;
    for (int k = 0; k < count; k++)
        n += s[k].w * s[k].h;
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return 1;
    size_t m = 0;
    for (int k = 0; k < count; k++)
        for (size_t i = 0; i < s[k].w * s[k].h; i++)
            if (isfinite(s[k].pixels[i]))
                v[m++] = s[k].pixels[i];
    qsort(v, m, sizeof *v, compare_floats);
    *lo = m ? v[(size_t)(GREY_LOW_QUANTILE * (double)(m - 1))] : 0.0f;
    *hi = m ? v[(size_t)(GREY_HIGH_QUANTILE * (double)(m - 1))] : 1.0f;
    if (!(*hi > *lo) && m)
        *lo = v[0], *hi = v[m - 1];
    if (!(*hi > *lo))
        *hi = *lo + 1.0f;
    free(v);
    return 0;
}

/* A slice's rectangle in physical coordinates: voxel centres at origin +
 * index * spacing, so the in-plane edges lie half a voxel outside them. */
static ptreg_status add_slice(ptreg_report *report, const ptreg_volume *vol, const volume_slice *s, float lo, float hi,
                              ptreg_error *err)
{
    const size_t dims[3] = {vol->nx, vol->ny, vol->nz};
    double corner[3], across[3] = {0, 0, 0}, down[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        corner[k] = vol->origin[k] - 0.5 * vol->spacing[k];
    corner[s->fixed] = vol->origin[s->fixed] + (double)(dims[s->fixed] / 2) * vol->spacing[s->fixed];
    across[s->across] = (double)dims[s->across] * vol->spacing[s->across];
    down[s->down] = (double)dims[s->down] * vol->spacing[s->down];
    char name[64];
    snprintf(name, sizeof name, "%s (%c = %zu)", s->name, "xyz"[s->fixed], dims[s->fixed] / 2);
    return ptreg_report_add_slice(report, name, s->pixels, s->w, s->h, lo, hi, corner, across, down, err);
}

ptreg_status ptreg_report_add_volume_slices(ptreg_report *report, const ptreg_volume *vol, ptreg_error *err)
{
    volume_slice s[3] = {
        {0, 1, 2, "slice xy", NULL, 0, 0}, {0, 2, 1, "slice xz", NULL, 0, 0}, {1, 2, 0, "slice yz", NULL, 0, 0}};
    int failed = 0;
    for (int k = 0; k < 3 && !failed; k++)
        failed = sample_slice(vol, &s[k]);
    float lo = 0, hi = 1;
    failed = failed ? failed : grey_range(s, 3, &lo, &hi);
    ptreg_status st = failed ? ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the slices") : PTREG_OK;
    for (int k = 0; k < 3 && !st; k++)
        st = add_slice(report, vol, &s[k], lo, hi, err);
    for (int k = 0; k < 3; k++)
        free(s[k].pixels);
    return st;
}
