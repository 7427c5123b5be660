/* The model as the sensor sees it (track_visible.h). A frame holds only
 * the surface facing the sensor; paired against the whole model, its
 * noisy points near thin parts (wings, a tail) find the far side, which
 * the sensor cannot see, and pull the pose along the part. Model-based
 * trackers leave out what is not visible from the predicted pose; here
 * by the normal alone (back faces), which keeps the culled model exact
 * for any pose near the prediction. */
#include "reg/track/track_visible.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* n . (o - q) > 0 (track_visible.h). A margin
 * either way was measured worse on the aircraft's approach at 0.2% noise:
 * keeping the grazing band of back faces (n . v > -0.35) pulled the pose
 * along the fuselage twice as far; culling grazing front faces too lost
 * frames (bench/NOTES.md). */
int track_visible_faces(const float q[3], const float n[3], const double o[3])
{
    return (double)n[0] * (o[0] - q[0]) + (double)n[1] * (o[1] - q[1]) + (double)n[2] * (o[2] - q[2]) > 0.0;
}

static void drop_culled(track_visible *v)
{
    ptreg_icp_model_destroy(v->model);
    ptreg_model_index_destroy(v->index);
    free(v->kept_xyz), free(v->kept_normals);
    v->model = NULL, v->index = NULL, v->kept_xyz = NULL, v->kept_normals = NULL, v->kept = 0;
}

/* The points facing o into kept_xyz / kept_normals; their count. */
static size_t cull(const track_visible *v, const double o[3], float *xyz, float *normals)
{
    size_t k = 0;
    for (size_t j = 0; j < v->m; j++)
        if (track_visible_faces(v->xyz + 3 * j, v->normals + 3 * j, o)) {
            memcpy(xyz + 3 * k, v->xyz + 3 * j, 3 * sizeof *xyz);
            memcpy(normals + 3 * k, v->normals + 3 * j, 3 * sizeof *normals);
            k++;
        }
    return k;
}

/* A k-d tree only: the Delaunay graph costs seconds, a cull must cost
 * milliseconds. */
static ptreg_status build(track_visible *v, float *xyz, float *normals, size_t k, ptreg_error *err)
{
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = 0;
    ptreg_model_index *index = NULL;
    ptreg_icp_model *model = NULL;
    ptreg_status st = ptreg_model_index_create(xyz, k, &io, &index, err);
    st = st ? st : ptreg_icp_model_create(index, &v->device, &model, err);
    st = st ? st : ptreg_icp_model_set_normals(model, normals, err);
    if (st) {
        ptreg_icp_model_destroy(model);
        ptreg_model_index_destroy(index);
        free(xyz), free(normals);
        return st;
    }
    drop_culled(v);
    v->kept_xyz = xyz, v->kept_normals = normals, v->kept = k;
    v->index = index, v->model = model;
    return PTREG_OK;
}

ptreg_status track_visible_update(track_visible *v, const double o[3], ptreg_error *err)
{
    double moved2 = 0.0, far2 = 0.0;
    for (int k = 0; k < 3; k++) {
        moved2 += (o[k] - v->viewpoint[k]) * (o[k] - v->viewpoint[k]);
        far2 += (v->viewpoint[k] - v->centre[k]) * (v->viewpoint[k] - v->centre[k]);
    }
    /* only the grazing points change side, as the angle moves */
    if (v->ready && moved2 <= v->refresh * v->refresh * far2)
        return PTREG_OK;
    float *xyz = malloc(3 * v->m * sizeof *xyz), *normals = malloc(3 * v->m * sizeof *normals);
    if (!xyz || !normals) {
        free(xyz), free(normals);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory culling the model");
    }
    const size_t k = cull(v, o, xyz, normals);
    v->culls++;
    if (k < 3) {
        /* nothing of the model faces this position (a guess far off):
         * the last culled model, or the whole one, serves */
        free(xyz), free(normals);
        return PTREG_OK;
    }
    ptreg_status st = build(v, xyz, normals, k, err);
    if (!st) {
        memcpy(v->viewpoint, o, sizeof v->viewpoint);
        v->ready = 1;
    }
    return st;
}

void track_visible_free(track_visible *v)
{
    drop_culled(v);
    memset(v, 0, sizeof *v);
}
