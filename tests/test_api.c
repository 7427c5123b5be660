/* The public functions no module test reaches directly (the CLI tests
 * cover some of them end to end): each called, its answer checked. With
 * the module tests this calls every function libptreg.so exports. */
#define _XOPEN_SOURCE 700
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "ptreg/ptreg.h"
#include "hooks.h"
#include "tune/tune_kernels.h"
#include "core/numeric.h"
#include "reg/batch/batch_pairs.h"
#include "pair/pair_engine.h"
#include "io/io_internal.h"

static char tmp[256];

static const char *tmp_path(const char *name)
{
    static char path[320];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

static size_t file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n > 0 ? (size_t)n : 0;
}

static void test_core(void)
{
    ptreg_error err;
    ptreg_error_set(&err, PTREG_ERR_FORMAT, "x");
    ptreg_error_clear(&err);
    CHECK(err.status == PTREG_OK && err.message[0] == '\0');
    CHECK(ptreg_double_to_float(1e300) == INFINITY && ptreg_double_to_float(-1e300) == -INFINITY &&
          ptreg_double_to_float(0.5) == 0.5f);
    float pts[12] = {1, 0, 0, -1, 0, 0, 0, 2, 0, 0, -2, 0};
    double c[3];
    ptreg_points_centroid(pts, 4, c);
    CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0);
    CHECK_NEAR(ptreg_points_rms_radius(pts, 4, c), sqrt(2.5), 1e-12);
    ptreg_cloud cloud;
    CHECK(ptreg_cloud_alloc(&cloud, 3, 0, NULL) == PTREG_OK);
    const float xyz[9] = {0, 0, 0, NAN, 1, 1, 2, 2, 2};
    memcpy(cloud.xyz, xyz, sizeof xyz);
    ptreg_cloud_drop_nonfinite(&cloud);
    CHECK(cloud.n == 2 && cloud.dropped_nonfinite == 1 && cloud.xyz[3] == 2);
    ptreg_cloud_free(&cloud);
    /* a rotation's quaternion, its matrix back, and the rotation of a transform */
    double T[16], axis[3] = {1, 2, 3}, t[3] = {0, 0, 0}, R[9], q[4], R2[9];
    ptreg_transform_from_axis_angle(axis, 40.0, t, T);
    ptreg_transform_rotation(T, R);
    CHECK(R[0] == T[0] && R[4] == T[5] && R[8] == T[10] && R[1] == T[1]);
    ptreg_matrix_to_quaternion(R, q);
    CHECK(q[0] >= 0);
    ptreg_quaternion_to_matrix(q, R2);
    for (int i = 0; i < 9; i++)
        CHECK_NEAR(R2[i], R[i], 1e-12);
    /* moments merged equal moments added in one */
    const double origin[3] = {0, 0, 0}, p[3] = {1, 2, 3}, qq[3] = {3, 2, 1};
    ptreg_moments a, b, both;
    ptreg_moments_init(&a, origin, origin), ptreg_moments_init(&b, origin, origin),
        ptreg_moments_init(&both, origin, origin);
    ptreg_moments_add(&a, p, qq, 1.0), ptreg_moments_add(&b, qq, p, 2.0);
    ptreg_moments_add(&both, p, qq, 1.0), ptreg_moments_add(&both, qq, p, 2.0);
    ptreg_moments_merge(&a, &b);
    CHECK(!memcmp(&a, &both, sizeof a));
    ptreg_shape shape;
    CHECK(ptreg_shape_parse("aircraft", &shape) == 0 && shape == PTREG_SHAPE_AIRCRAFT &&
          ptreg_shape_parse("teapot", &shape) == -1);
    CHECK(!strcmp(ptreg_backend_name(PTREG_BACKEND_CPU), "cpu") &&
          !strcmp(ptreg_backend_name(PTREG_BACKEND_CUDA), "cuda"));
}

static void test_registration_options(void)
{
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    CHECK(!ptreg_icp_uses_gauss_newton(&o));
    o.lm_lambda = 1e-3;
    CHECK(ptreg_icp_uses_gauss_newton(&o));
    o.lm_lambda = 0, o.method = PTREG_ICP_PLANE;
    ptreg_device on;
    CHECK(ptreg_icp_uses_gauss_newton(&o) && ptreg_icp_resolve_device(&o, &on, NULL) == PTREG_OK &&
          on.backend == PTREG_BACKEND_CPU);
    CHECK(ptreg_robust_weight(PTREG_KERNEL_HUBER, 1.0, 4.0) == 0.25 &&
          ptreg_robust_weight(PTREG_KERNEL_NONE, 1, 9) == 1 &&
          ptreg_robust_weight(PTREG_KERNEL_TUKEY, 1.0, 2.0) == 0.0);
    ptreg_lddmm_options l;
    ptreg_lddmm_options_mtl(&l);
    CHECK(l.sigma == 1.5 && l.time_points == 40 && l.max_iter == 400 && l.lambda == 500000 && l.gamma == 1);
    ptreg_pair_gpu g;
    ptreg_pair_gpu_default(&g);
    CHECK(g.wg == 0 && g.exp == -1 && g.groups == 0 && ptreg_pair_gpu_check(&g, "test", NULL) == PTREG_OK);
    g.wg = 100;
    ptreg_error err;
    CHECK(ptreg_pair_gpu_check(&g, "test", &err) == PTREG_ERR_ARG && strstr(err.message, "test"));
    ptreg_pair_options po;
    ptreg_pair_options_default(&po);
    ptreg_pair_plan *plan = NULL;
    const float cols[6] = {0, 0, 0, 1, 1, 1};
    CHECK(ptreg_pair_plan_create(cols, 2, &po, &plan, NULL) == PTREG_OK);
    const char *isa = plan ? ptreg_pair_plan_isa(plan) : "";
    CHECK(!strcmp(isa, "avx512") || !strcmp(isa, "avx2") || !strcmp(isa, "generic"));
    ptreg_pair_plan_destroy(plan);
    /* the batch schedule: EM-ICP's defaults from the target's RMS radius */
    ptreg_batch_options bo;
    ptreg_batch_options_default(&bo);
    const float target[6] = {1, 0, 0, -1, 0, 0};
    double s2i, s2f, d02, radius;
    CHECK(ptreg_batch_schedule(target, 2, &bo, &s2i, &s2f, &d02, &radius, NULL) == PTREG_OK);
    CHECK_NEAR(radius, 1.0, 1e-12);
    CHECK(s2i > s2f && s2f > 0 && d02 == s2i);
    const float same[6] = {1, 1, 1, 1, 1, 1};
    CHECK(ptreg_batch_schedule(same, 2, &bo, &s2i, &s2f, &d02, &radius, NULL) == PTREG_ERR_ARG);
    const float motif[9] = {0, 0, 0, 3, 0, 0, 0, 2, 0};
    CHECK(ptreg_motif_shortest_distance(motif, 3) == 2.0);
    CHECK(!strcmp(ptreg_orientation_flag_name(PTREG_ORIENT_OK), "ok"));
}

static void test_files(void)
{
    CHECK(ptreg_apt_format_from_path("run.epos") == PTREG_APT_EPOS &&
          ptreg_apt_format_from_path("run.POS") == PTREG_APT_POS &&
          ptreg_apt_format_from_path("run.ply") == PTREG_APT_AUTO);
    CHECK(ptreg_volume_format_from_path("ct.nii.gz") == PTREG_VOLUME_NIFTI &&
          ptreg_volume_format_from_path("a.nhdr") == PTREG_VOLUME_NRRD);
    CHECK(!strcmp(ptreg_volume_format_name(PTREG_VOLUME_NRRD), "nrrd"));
    ptreg_apt apt;
    ptreg_apt_init(&apt);
    CHECK(apt.n == 0 && !apt.xyz && !apt.tof);
    ptreg_apt_synth synth;
    ptreg_apt_synth_init(&synth);
    CHECK(synth.n == 0 && !synth.xyz);
    ptreg_pairs_file pf;
    ptreg_pairs_file_init(&pf);
    CHECK(pf.count == 0 && !pf.source);
    /* .npy: a header padded to 64, then the rows */
    char header[PTREG_NPY_HEADER_MAX];
    size_t h = ptreg_npy_header(PTREG_NPY_F32, 3, 2, header);
    char dict[PTREG_NPY_HEADER_MAX + 1] = "";
    memcpy(dict, header + 10, h > 10 ? h - 10 : 0); /* the header's dict, made a C string */
    CHECK(h % 64 == 0 && !memcmp(header, "\x93NUMPY", 6) && strstr(dict, "'shape': (3, 2)") && header[h - 1] == '\n');
    CHECK(ptreg_npy_type_size(PTREG_NPY_F64) == 8 && ptreg_npy_type_size(PTREG_NPY_U8) == 1);
    const float v[6] = {1, 2, 3, 4, 5, NAN};
    CHECK(ptreg_npy_write(tmp_path("a.npy"), PTREG_NPY_F32, v, 3, 2, NULL) == PTREG_OK);
    CHECK(file_size(tmp_path("a.npy")) == h + sizeof v);
    CHECK(ptreg_descriptors_write(tmp_path("d.csv"), v, 3, 2, "fpfh", NULL) == PTREG_OK);
    FILE *f = fopen(tmp_path("d.csv"), "r");
    char line[128] = "";
    CHECK(f && fgets(line, sizeof line, f) && !strncmp(line, "f0,f1", 5));
    if (f)
        fclose(f);
    /* a transform from memory: 12 numbers get the bottom row (0, 0, 0, 1) */
    double T[16];
    ptreg_error terr;
    const char rows[] = "1 0 0 1\n0 1 0 2 # comment\n0,0,1,3\n";
    CHECK(ptreg_transform_read_memory(rows, strlen(rows), "m", T, NULL) == PTREG_OK && T[3] == 1 && T[11] == 3 &&
          T[15] == 1 && T[12] == 0);
    CHECK(ptreg_transform_read_memory("1 2", 3, "m", T, &terr) == PTREG_ERR_FORMAT && strstr(terr.message, "m: line"));
    /* a range file */
    f = fopen(tmp_path("r.rrng"), "w");
    if (f) {
        fputs("[Ions]\nNumber=1\nIon1=Al\n[Ranges]\nNumber=1\nRange1=26.5 27.5 Vol:0.01661 Al:1 Color:33FFFF\n", f);
        fclose(f);
    }
    ptreg_ranges rr;
    CHECK(ptreg_ranges_read(tmp_path("r.rrng"), &rr, NULL) == PTREG_OK && rr.n == 1 && rr.range[0].lo == 26.5 &&
          !strcmp(rr.range[0].ion, "Al"));
    ptreg_ranges_free(&rr);
    ptreg_error err;
    CHECK(ptreg_ranges_read(tmp_path("none.rrng"), &rr, &err) == PTREG_ERR_IO && strstr(err.message, "none.rrng"));
}

static void test_index_and_models(void)
{
    const float pts[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    ptreg_kdtree *tree = NULL;
    CHECK(ptreg_kdtree_create(pts, 5, NULL, &tree, NULL) == PTREG_OK && ptreg_kdtree_size(tree) == 5);
    ptreg_kdtree_destroy(tree);
    ptreg_model_index *idx = NULL;
    CHECK(ptreg_model_index_create(pts, 5, NULL, &idx, NULL) == PTREG_OK);
    ptreg_icp_model *model = NULL;
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    CHECK(idx && ptreg_icp_model_create(idx, &cpu, &model, NULL) == PTREG_OK);
    ptreg_icp_model_info info;
    if (model) {
        ptreg_icp_model_get_info(model, &info);
        CHECK(info.device.backend == PTREG_BACKEND_CPU && info.device_bytes == 0 && info.upload_ms == 0);
    }
    ptreg_icp_model_destroy(model);
    ptreg_model_index_destroy(idx);
}

/* The tuner's spaces: each parameter's built-in value is the library's
 * default, so applying the fallback point changes nothing. */
static void fallback_point(const ptreg_tune_space *s, double *point)
{
    for (int p = 0; p < s->param_count; p++)
        point[p] = s->params[p].fallback;
}

static void test_tune_apply(void)
{
    ptreg_tune_space s;
    double point[PTREG_TUNE_MAX_PARAMS];
    int threads = -1;
    ptreg_tune_space_pair(&s);
    fallback_point(&s, point);
    ptreg_pair_options po, dflt;
    ptreg_pair_options_default(&po), ptreg_pair_options_default(&dflt);
    ptreg_tune_pair_apply(point, &po, &threads);
    /* the threads' built-in value is the library's count (all cores) */
    CHECK(po.col_tile == dflt.col_tile && po.row_block == dflt.row_block && po.row_vectors == dflt.row_vectors &&
          po.order == dflt.order && threads == ptreg_get_num_threads());
    ptreg_tune_space_harris(&s);
    fallback_point(&s, point);
    ptreg_harris3d_options ho, hd;
    ptreg_harris3d_options_default(&ho), ptreg_harris3d_options_default(&hd);
    threads = -1;
    ptreg_tune_harris_apply(point, &ho, &threads);
    CHECK(ho.tile_rows == hd.tile_rows && threads == ptreg_get_num_threads());
    ptreg_tune_space_fpfh(&s);
    fallback_point(&s, point);
    threads = -1;
    ptreg_tune_fpfh_apply(point, &threads);
    CHECK(threads == ptreg_get_num_threads());
    ptreg_tune_space_fpfh_device(&s);
    fallback_point(&s, point);
    ptreg_features_gpu fg = {-1, -1};
    ptreg_tune_fpfh_device_apply(point, &fg);
    CHECK(fg.wg == (int)s.params[0].fallback && fg.search_wg == (int)s.params[1].fallback);
    ptreg_tune_space_pair_device(&s);
    fallback_point(&s, point);
    ptreg_pair_gpu pg = {-5, -5, -5};
    ptreg_tune_pair_device_apply(point, &pg);
    CHECK(pg.wg >= 0 && pg.groups >= 0);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/ptreg-api-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_core();
    test_registration_options();
    test_files();
    test_index_and_models();
    test_tune_apply();
    const char *names[] = {"a.npy", "d.csv", "r.rrng"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tmp_path(names[i]));
    rmdir(tmp);
    return check_exit();
}
