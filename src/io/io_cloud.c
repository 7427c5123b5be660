/* The steps every cloud reader shares: room for the points, each point's
 * way in (origin, crop, classes, pieces) and the clean-up that turns what
 * was read into a usable cloud; and the writers' way back to the world. */
#define _DEFAULT_SOURCE

#include "io/io_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Points between two lettings-go of a memory map's pages: often enough to
 * keep a few MB resident, rarely enough that the calls cost nothing. */
#define RELEASE_EVERY 65536

static ptreg_status out_of_memory(const io_in *in, size_t cap)
{
    return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu points", in->name, cap);
}

ptreg_status io_cloud_reserve(const io_in *in, ptreg_cloud *cloud, size_t cap, int normals)
{
    io_cloud_state *st = in->cloud;
    if (st->piece && cap > st->piece)
        cap = st->piece;
    ptreg_error quiet;
    if (ptreg_cloud_alloc(cloud, cap ? cap : 1, normals, &quiet) != PTREG_OK)
        return out_of_memory(in, cap);
    cloud->n = 0;
    st->cap = cap ? cap : 1;
    return PTREG_OK;
}

ptreg_status io_cloud_add_normals(const io_in *in, ptreg_cloud *cloud)
{
    if (!cloud->normals && !(cloud->normals = malloc(in->cloud->cap * 3 * sizeof(float))))
        return out_of_memory(in, in->cloud->cap);
    return PTREG_OK;
}

ptreg_status io_cloud_add_attributes(const io_in *in, ptreg_cloud *cloud)
{
    const size_t cap = in->cloud->cap;
    if (!in->cloud->opt.attributes)
        return PTREG_OK;
    cloud->intensity = malloc(cap * sizeof *cloud->intensity);
    cloud->classification = malloc(cap);
    return cloud->intensity && cloud->classification ? PTREG_OK : out_of_memory(in, cap);
}

ptreg_status io_cloud_add_intensity(const io_in *in, ptreg_cloud *cloud)
{
    if (!in->cloud->opt.attributes || cloud->intensity)
        return PTREG_OK;
    cloud->intensity = malloc(in->cloud->cap * sizeof *cloud->intensity);
    return cloud->intensity ? PTREG_OK : out_of_memory(in, in->cloud->cap);
}

ptreg_status io_cloud_add_colors(const io_in *in, ptreg_cloud *cloud)
{
    if (in->cloud->opt.skip_colors || cloud->rgb)
        return PTREG_OK;
    cloud->rgb = malloc(in->cloud->cap * 3);
    return cloud->rgb ? PTREG_OK : out_of_memory(in, in->cloud->cap);
}

static double clamp_round(double v, double hi)
{
    if (!(v > 0.0)) /* NaN too */
        return 0.0;
    return v >= hi ? hi : nearbyint(v);
}

/* 8-bit colours as they are, 16-bit ones scaled down (65535 is 255), and
 * floats as fractions of full intensity (1.0 is 255), as PLY writers use
 * them. */
uint8_t io_color_u8(double v, io_type type)
{
    if (type == IO_F32 || type == IO_F64)
        return (uint8_t)clamp_round(v * 255.0, 255.0);
    if (io_type_size(type) >= 2)
        return (uint8_t)clamp_round(v / 257.0, 255.0);
    return (uint8_t)clamp_round(v, 255.0);
}

uint16_t io_intensity_u16(double v) { return (uint16_t)clamp_round(v, 65535.0); }

/* Beyond this a coordinate is no place on Earth (nor near it): such data
 * is float data, an origin would only cost its small values their bits. */
#define ORIGIN_MAX 1e12

/* Per axis, the first point's coordinate rounded to a whole unit where it
 * is too large for float32 to keep a millimetre, else 0: a UTM easting's
 * origin is a round number and a small cloud keeps its bits. Only for
 * readers whose numbers hold more than float32 (a float32 file's values
 * are already what they are). */
static void decide_origin(io_cloud_state *st, ptreg_cloud *cloud, const double xyz[3])
{
    st->origin_decided = 1;
    for (int k = 0; k < 3; k++) {
        const double a = fabs(xyz[k]);
        st->origin[k] = st->wide && st->opt.origin_auto && a >= PTREG_ORIGIN_THRESHOLD && a < ORIGIN_MAX
                            ? nearbyint(xyz[k])
                            : 0.0;
        cloud->origin[k] = st->origin[k];
    }
}

static int kept_by_options(const ptreg_read_options *opt, const io_point *p)
{
    if (opt->classes && !opt->keep_class[p->classification])
        return 0;
    if (!opt->crop)
        return 1;
    for (int k = 0; k < 3; k++)
        if (!(p->xyz[k] >= opt->crop_min[k] && p->xyz[k] <= opt->crop_max[k]))
            return 0;
    return 1;
}

/* A full piece (or the last one) to the caller's function, after the
 * non-finite points are gone; the room is then reused. */
static ptreg_status hand_on(const io_in *in, ptreg_cloud *cloud)
{
    io_cloud_state *st = in->cloud;
    ptreg_cloud_drop_nonfinite(cloud);
    st->dropped += cloud->dropped_nonfinite;
    ptreg_status s = PTREG_OK;
    if (cloud->n) {
        st->kept += cloud->n;
        s = st->fn(st->ctx, cloud, in->err);
    }
    cloud->n = 0;
    cloud->dropped_nonfinite = 0;
    return s;
}

ptreg_status io_cloud_store(const io_in *in, ptreg_cloud *cloud, const io_point *p)
{
    io_cloud_state *st = in->cloud;
    const int finite = isfinite(p->xyz[0]) && isfinite(p->xyz[1]) && isfinite(p->xyz[2]);
    if (finite && !kept_by_options(&st->opt, p))
        return PTREG_OK;
    if (finite && !st->origin_decided)
        decide_origin(st, cloud, p->xyz);
    const size_t i = cloud->n;
    for (int k = 0; k < 3; k++)
        cloud->xyz[3 * i + k] = io_to_float(p->xyz[k] - cloud->origin[k]);
    if (cloud->normals)
        memcpy(cloud->normals + 3 * i, p->normal, sizeof p->normal);
    if (cloud->intensity)
        cloud->intensity[i] = p->intensity;
    if (cloud->classification)
        cloud->classification[i] = p->classification;
    if (cloud->rgb)
        memcpy(cloud->rgb + 3 * i, p->rgb, 3);
    cloud->n++;
    if (cloud->n % RELEASE_EVERY == 0)
        io_let_pages_go(in->data, in->cloud->mapped, &in->cloud->released, in->cloud->pos);
    return st->piece && cloud->n == st->cap ? hand_on(in, cloud) : PTREG_OK;
}

static void *shrink_array(void *p, size_t bytes)
{
    void *q = p ? realloc(p, bytes) : NULL;
    return q ? q : p;
}

/* Readers reserve for the most points the input could hold; a cloud that
 * lives on (a model, a scan kept in memory) should not carry the slack. */
static void shrink(ptreg_cloud *cloud, size_t cap)
{
    if (cloud->n == 0 || cloud->n == cap)
        return;
    size_t bytes = cloud->n * 3 * sizeof(float);
    cloud->xyz = shrink_array(cloud->xyz, bytes);
    cloud->normals = shrink_array(cloud->normals, bytes);
    cloud->intensity = shrink_array(cloud->intensity, cloud->n * sizeof *cloud->intensity);
    cloud->classification = shrink_array(cloud->classification, cloud->n);
    cloud->rgb = shrink_array(cloud->rgb, cloud->n * 3);
}

static ptreg_status no_usable_point(const io_in *in, int is_line, size_t at, int read_any)
{
    const char *why = read_any                                        ? "every point has a non-finite coordinate"
                      : in->cloud->opt.crop || in->cloud->opt.classes ? "none passed the crop box or the classes"
                                                                      : "the file has none";
    return is_line ? io_fail_line(in, PTREG_ERR_FORMAT, at, "no usable point: %s", why)
                   : io_fail_byte(in, PTREG_ERR_FORMAT, at, "no usable point: %s", why);
}

ptreg_status io_cloud_finish(const io_in *in, ptreg_cloud *cloud, size_t cap, int is_line, size_t at)
{
    io_cloud_state *st = in->cloud;
    io_let_pages_go(in->data, in->cloud->mapped, &in->cloud->released, in->cloud->pos);
    if (st->piece) {
        ptreg_status s = hand_on(in, cloud);
        if (s != PTREG_OK)
            return s;
        return st->kept ? PTREG_OK : no_usable_point(in, is_line, at, st->dropped > 0);
    }
    size_t read = cloud->n;
    ptreg_cloud_drop_nonfinite(cloud);
    if (cloud->n == 0)
        return no_usable_point(in, is_line, at, read > 0);
    shrink(cloud, cap);
    return PTREG_OK;
}

/* ---- the writers' side of the origin ---- */

int io_has_origin(const ptreg_cloud *cloud)
{
    return cloud->origin[0] != 0.0 || cloud->origin[1] != 0.0 || cloud->origin[2] != 0.0;
}

void io_format_world(char buf[32], double v)
{
    char text[32]; /* not buf itself: gcc's -fsanitize builds see a NULL buf in the loop's snprintf */
    int digits = 9;
    for (; digits < 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v)
            break;
    }
    snprintf(text, sizeof text, "%.*g", digits, v);
    memcpy(buf, text, sizeof text);
}
