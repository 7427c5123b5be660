/* What ptreg normals, pfh and fpfh report (cli/features_report.c). */
#ifndef PTREG_CLI_FEATURES_REPORT_H
#define PTREG_CLI_FEATURES_REPORT_H

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "ptreg/features.h"

/* What normals, pfh and fpfh report, in both forms. */
typedef struct feature_report {
    const char *name, *cloud;
    size_t points, missing;
    int bins; /* 0: normals */
    const ptreg_neighborhood *nb;
    const double *viewpoint; /* normals: in the world */
    const char *convention;  /* fpfh's */
    const char *normals;     /* pfh, fpfh: "file" or "estimated" */
    const ptreg_device *on;
    int reference;
    const cJSON *variant; /* fpfh's tuned knobs, or NULL */
    const double *times;  /* each --repeat run's; time_ms is their median */
    int repeat;
} feature_report;

/* The JSON (with --html the page holds it), then the human lines unless --json. */
int cli_feature_print_report(const cli_args *a, const feature_report *f);
/* With --html: the cloud coloured by curvature and some of its normals. */
int cli_feature_report_normals(const ptreg_cloud *c, const float *normals, const float *curvature);
/* With --html: the points coloured by distinctiveness; those without a descriptor in grey. */
int cli_feature_report_descriptors(int bins, const ptreg_cloud *c, const float *rows);

#endif
