/* What ptreg icp registers and reports (cli/icp_report.c). */
#ifndef PTREG_CLI_ICP_REPORT_H
#define PTREG_CLI_ICP_REPORT_H

#include "cli/registration.h"
#include "ptreg/icp.h"
#include "ptreg/nn.h"

/* What one `ptreg icp` registers: the source, and the target as a cloud or
 * as a model index (loaded from --target-index, or built here for a
 * Delaunay method so that its build stays out of time_ms). */
typedef struct icp_job {
    const char *source_path, *target_path;
    ptreg_cloud source, target; /* what is registered: with --voxel, the centroids */
    ptreg_cloud source_full;    /* with --voxel: SOURCE as read (for -o) */
    size_t source_points;       /* in the file */
    double voxel, downsample_ms;
    ptreg_model_index *index;
    int index_loaded;     /* from a file (else built here, or none) */
    double index_load_ms; /* reading and checking the file */
    size_t target_points;
    ptreg_device device;    /* resolved */
    ptreg_icp_model *model; /* on a GPU: the model resident there */
    int asked_auto;         /* --nn auto: the JSON says how it chose */
} icp_job;

/* The human lines of a run, after where it ran. */
void cli_icp_print_human(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
                         const cli_result *res);
/* The JSON of a run (cli_result_json's fields, the options, the clouds,
 * the index, the device and the result table's fields), printed. */
int cli_icp_print_json(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
                       const cli_result *res);

#endif
