/* Global registration's options (global.h): RANSAC's, FGR's and the
 * pipeline's defaults and tables, which ransac.c, fgr.c and register.c
 * check their callers' options against. */
#include "ptreg/global.h"

#include <string.h>

#include "core/options_table.h"
#include "reg/icp/icp_impl.h"
#include "reg/testing.h"

/* ---- RANSAC ---- */

void ptreg_ransac_options_default(ptreg_ransac_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->edge_length = 0.9;
    opt->check_distance = 0.0;
    opt->max_iter = 100000;
    opt->confidence = 0.999;
    opt->seed = 1;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static const ptreg_option ransac_rows[] = {
    OPTION_FIELD(ptreg_ransac_options, max_dist, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET,
                 "D",
                 "a correspondence is an inlier within D after the transform (Open3D's "
                 "max_correspondence_distance); required"),
    OPTION_FIELD(ptreg_ransac_options, edge_length, NULL, DOUBLE, -DBL_MAX, 1, PTREG_OPTION_OPEN_HI, "R",
                 "Open3D's edge-length checker: the sample's edges agree to this ratio; 0: off"),
    OPTION_FIELD(ptreg_ransac_options, check_distance, NULL, DOUBLE, -DBL_MAX, DBL_MAX, 0, "D",
                 "Open3D's distance checker: every sampled pair within D; 0: max_dist; < 0: off"),
    OPTION_FIELD(ptreg_ransac_options, normal_angle, NULL, DOUBLE, 0, DBL_MAX, 0, "A",
                 "Open3D's normal checker, radians (needs both clouds' normals); 0: off"),
    OPTION_FIELD(ptreg_ransac_options, max_iter, NULL, INT, 1, INT_MAX, 0, "N", "hypotheses at most"),
    OPTION_FIELD(ptreg_ransac_options, confidence, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO | PTREG_OPTION_OPEN_HI, "C",
                 "stop once this sure to have drawn an all-inlier sample")};
OPTION_TABLE(ptreg_ransac_option_table, "RANSAC", ptreg_ransac_options, ptreg_ransac_options_default, ransac_rows)

/* ---- Fast Global Registration ---- */

void ptreg_fgr_options_default(ptreg_fgr_options *opt)
{
    opt->division_factor = 1.4;
    opt->max_dist = 0.025;
    opt->iterations = 64;
    opt->tuple_scale = 0.95;
    opt->max_tuples = 1000;
    opt->seed = 1;
}

static const ptreg_option fgr_rows[] = {
    OPTION_FIELD(ptreg_fgr_options, division_factor, NULL, DOUBLE, 1, DBL_MAX, PTREG_OPTION_OPEN_LO, "F",
                 "graduated non-convexity divides mu by F every 4 iterations"),
    OPTION_FIELD(ptreg_fgr_options, max_dist, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO, "D",
                 "mu's floor, in the unit ball's units"),
    OPTION_FIELD(ptreg_fgr_options, iterations, NULL, INT, 1, INT_MAX, 0, "N", "Gauss-Newton iterations"),
    OPTION_FIELD(ptreg_fgr_options, tuple_scale, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO | PTREG_OPTION_OPEN_HI, "S",
                 "the tuple test: every edge of a triple agrees to S both ways"),
    OPTION_FIELD(ptreg_fgr_options, max_tuples, NULL, INT, 1, INT_MAX, 0, "N", "the tuple test's triples at most")};
OPTION_TABLE(ptreg_fgr_option_table, "FGR", ptreg_fgr_options, ptreg_fgr_options_default, fgr_rows)

/* ---- the pipeline ---- */

void ptreg_register_options_default(ptreg_register_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->mutual = 1;
    opt->global = PTREG_GLOBAL_RANSAC;
    ptreg_ransac_options_default(&opt->ransac);
    ptreg_fgr_options_default(&opt->fgr);
    opt->refine = PTREG_ICP_PLANE;
    opt->refine_iter = 30;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static const ptreg_option_name global_names[] = {{"ransac", PTREG_GLOBAL_RANSAC}, {"fgr", PTREG_GLOBAL_FGR}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_register_options, global);
OPTION_ENUM_IS_INT(ptreg_register_options, refine);
/* Python's keywords (the rows' names) came first; the command line spells
 * several its own way. The seed (64 bits) and the flags are the front ends'. */
static const ptreg_option register_rows[] = {
    OPTION_FIELD(ptreg_register_options, voxel, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "V",
                 "the downsampling cube; the neighborhoods scale with it; default the target's bounding-box "
                 "diagonal / 80"),
    OPTION_ENUM(ptreg_register_options, global, "method", "global", global_names, 0,
                "ransac (RANSAC over the feature matches) or fgr (Fast Global Registration, as Open3D's)"),
    OPTION_ENUM(ptreg_register_options, refine, "refine", "method", icp_method_names, 0,
                "the refinement on all points: plane, gicp, symmetric or point"),
    OPTION_FIELD(ptreg_register_options, ratio, NULL, DOUBLE, 0, 1, 0, "R",
                 "Lowe's ratio test: keep a feature match only when its descriptor is nearer than R times the second "
                 "nearest (0: off; 0.8 is Lowe's)"),
    OPTION_FIELD(ptreg_register_options, refine_dist, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO,
                 "D", "the refinement's pair distance; default 0.4 voxels"),
    OPTION_FIELD(ptreg_register_options, refine_iter, NULL, INT, 1, 1000000, 0, "N", "the refinement's iterations"),
    OPTION_NUMBER(ptreg_register_options, ransac.max_dist, "max_dist", "ransac-dist", DOUBLE, 0, 1e30,
                  PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "D", "RANSAC's inlier distance; default 1.5 voxels"),
    OPTION_NUMBER(ptreg_register_options, ransac.max_iter, "ransac_max_iter", "ransac-iter", INT, 1, 100000000, 0, "N",
                  "RANSAC's most hypotheses"),
    OPTION_NUMBER(ptreg_register_options, ransac.confidence, "confidence", NULL, DOUBLE, 0, 1,
                  PTREG_OPTION_OPEN_LO | PTREG_OPTION_OPEN_HI, "C",
                  "RANSAC stops once this sure of an all-inlier sample"),
    OPTION_NUMBER(ptreg_register_options, ransac.edge_length, "edge_length", NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_HI,
                  "E", "RANSAC's edge-length checker: a sample's edges agree to this ratio (0: off)"),
    OPTION_NUMBER(ptreg_register_options, ransac.check_distance, "check_distance", NULL, DOUBLE, -DBL_MAX, DBL_MAX, 0,
                  "D", "RANSAC's distance checker: every sampled pair within D (0: the inlier distance; < 0: off)"),
    OPTION_NUMBER(ptreg_register_options, ransac.normal_angle, "normal_angle", NULL, DOUBLE, 0, DBL_MAX, 0, "A",
                  "RANSAC's normal checker: sampled pairs' normals within A radians (0: off)"),
    OPTION_NUMBER(ptreg_register_options, fgr.iterations, "fgr_iter", NULL, INT, 1, 1000000, 0, "N",
                  "FGR's Gauss-Newton steps"),
    OPTION_NUMBER(ptreg_register_options, fgr.division_factor, "fgr_division_factor", NULL, DOUBLE, 1, DBL_MAX,
                  PTREG_OPTION_OPEN_LO, "F", "FGR's graduated non-convexity divides its scale by F"),
};
OPTION_TABLE(ptreg_register_option_table, "register", ptreg_register_options, ptreg_register_options_default,
             register_rows)
