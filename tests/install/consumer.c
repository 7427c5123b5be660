/* A program built against an installed ptreg, through pkg-config and
 * through find_package(ptreg): registers a built-in scan onto its model. */
#include <ptreg/ptreg.h>
#include <stdio.h>

int main(void)
{
    ptreg_cloud model, scan;
    double truth[16];
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 2000, so.max_angle_deg = 5.0, so.noise = 0.001;
    if (ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 6000, 1, &model, NULL) ||
        ptreg_synth_scan(PTREG_SHAPE_AIRCRAFT, &so, &scan, truth, NULL))
        return 1;
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.max_iter = 100;
    ptreg_icp_result r;
    ptreg_error err;
    if (ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &r, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    double angle, translation;
    ptreg_transform_difference(truth, r.transformation, &angle, &translation);
    printf("ptreg %s: %.4f deg\n", ptreg_version(), angle);
    ptreg_icp_result_free(&r);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return angle < 1.0 ? 0 : 1;
}
