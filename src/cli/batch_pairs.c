/* ptreg batch --pairs: every pair of a pairs file registered (under
 * mpirun, each rank its share), the rows written and the summary printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/device.h"
#include "ptreg/emicp.h"
#include "ptreg/io.h"
#include "ptreg/transform.h"

/* Where the registrations ran: auto and PTREG_DEVICE resolved as the
 * library resolves them. */
const char *batch_resolved_device(const batch_request *r, char *buf, size_t size)
{
    ptreg_device on;
    if (ptreg_batch_resolve_device(&r->batch, &on, NULL))
        on = r->batch.device;
    return ptreg_device_format(&on, buf, size);
}

/* Rows of 9: qw qx qy qz tx ty tz rms iterations. */
static void pair_rows(size_t n, const double *T, const int *iterations, const double *rms, double *rows)
{
    for (size_t i = 0; i < n; i++) {
        const double *t = T + 16 * i;
        double R[9], *row = rows + 9 * i;
        ptreg_transform_rotation(t, R);
        ptreg_matrix_to_quaternion(R, row);
        row[4] = t[3], row[5] = t[7], row[6] = t[11];
        row[7] = rms[i];
        row[8] = iterations[i];
    }
}

typedef struct pairs_report {
    const batch_request *r;
    size_t pairs, points;
    uint64_t stops[PTREG_STOP_SIGMA_FINAL + 1];
    double iterations_sum, iterations_max, rms_sum;
    ptreg_batch_stats stats; /* time: the slowest rank's; terms: summed */
    double read_ms, total_ms;
    int ranks;
} pairs_report;

static void tally_pairs(const double *rows, const int *stop, size_t n, pairs_report *rep)
{
    for (size_t i = 0; i < n; i++) {
        rep->stops[stop[i]]++;
        rep->iterations_sum += rows[9 * i + 8];
        rep->iterations_max = fmax(rep->iterations_max, rows[9 * i + 8]);
        rep->rms_sum += rows[9 * i + 7];
    }
}

static int print_pairs_report(const pairs_report *rep)
{
    const double s = rep->stats.time_ms * 1e-3, n = rep->pairs ? (double)rep->pairs : 1.0;
    const double per_s = s > 0 ? (double)rep->pairs / s : 0.0, gpts = s > 0 ? rep->stats.pair_terms / s / 1e9 : 0.0;
    char device[32];
    batch_resolved_device(rep->r, device, sizeof device);
    /* the engines are the CPU's: a device runs its own kernel */
    const char *engine = strcmp(device, "cpu")            ? "device"
                         : rep->r->engine == ENGINE_LOOP  ? "loop"
                         : rep->r->engine == ENGINE_PLAIN ? "plain"
                                                          : "lanes";
    if (!rep->r->json) {
        printf("ptreg batch: %s, %zu pairs (%zu points), engine %s on %s, %d threads, %d ranks\n", rep->r->input,
               rep->pairs, rep->points, engine, rep->stats.isa ? rep->stats.isa : "", ptreg_get_num_threads(),
               rep->ranks);
        printf("  iterations mean %.2f, max %.0f; rms mean %.4g\n", rep->iterations_sum / n, rep->iterations_max,
               rep->rms_sum / n);
        printf("  registration %.1f ms: %.0f pairs/s, %.3f Gpts/s\n", rep->stats.time_ms, per_s, gpts);
        if (rep->r->output)
            printf("  wrote %s\n", rep->r->output);
        return EXIT_OK;
    }
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "batch");
    cli_json_string(j, "mode", "pairs");
    cli_json_string(j, "input", rep->r->input);
    cli_json_number(j, "pairs", (double)rep->pairs);
    cli_json_number(j, "points", (double)rep->points);
    cli_json_string(j, "engine", engine);
    cli_json_bool(j, "translation", rep->r->batch.translation);
    cJSON *stops = cJSON_CreateObject();
    for (int k = 0; k <= PTREG_STOP_SIGMA_FINAL; k++)
        if (rep->stops[k])
            cli_json_number(stops, ptreg_stop_reason_name((ptreg_stop_reason)k), (double)rep->stops[k]);
    cli_json_put(j, "stop_reasons", stops);
    cli_json_number(j, "iterations_mean", rep->iterations_sum / n);
    cli_json_number(j, "iterations_max", rep->iterations_max);
    cli_json_number(j, "rms_mean", rep->rms_sum / n);
    cli_json_number(j, "read_ms", rep->read_ms);
    ptreg_batch_stats all = rep->stats; /* its rates over every rank's pairs */
    all.pairs = rep->pairs, all.pairs_per_s = per_s, all.gpts = gpts;
    cli_json_result(j, ptreg_result_table_find("batch_stats"), &all);
    cli_json_number(j, "total_ms", rep->total_ms);
    cli_json_string(j, "device", device);
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_number(j, "ranks", rep->ranks);
    if (rep->r->output)
        cli_json_string(j, "output", rep->r->output);
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

/* Registers pairs [first, first + count) of the file: rows and stops. */
static int register_pairs(const batch_request *r, const ptreg_pairs_file *pf, size_t first, size_t count, double *rows,
                          int *stop, ptreg_batch_stats *stats)
{
    const ptreg_pair_set set = {count,
                                pf->source,
                                pf->source_offset + first,
                                pf->target,
                                pf->targets > 1 ? pf->target_offset + first : NULL,
                                pf->target_offset[1]};
    double *T = malloc((16 * count + 1) * sizeof *T);
    int *iterations = malloc((count + 1) * sizeof *iterations);
    double *rms = malloc((count + 1) * sizeof *rms);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    cli_device_call_start();
    if (!T || !iterations || !rms)
        st = ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for %zu pairs", count);
    else
        st = ptreg_batch_register(&set, &r->batch, T, iterations, stop, stats, &err);
    cli_device_call_stop();
    st = st ? st : ptreg_batch_rms(&set, T, rms, &err);
    if (!st)
        pair_rows(count, T, iterations, rms, rows);
    free(T);
    free(iterations);
    free(rms);
    if (st) {
        cli_error("batch", "%s: %s", r->input, err.message);
        return cli_exit_code(st, 1);
    }
    return EXIT_OK;
}

int batch_run_pairs(const batch_request *r, const cli_comm *comm)
{
    if (r->output && !batch_has_extension(r->output, "npy") && !batch_has_extension(r->output, "csv")) {
        cli_error("batch", "-o %s: pair results are written as .npy or .csv", r->output);
        return EXIT_USAGE;
    }
    const double t0 = ptreg_time_ms();
    ptreg_pairs_file pf;
    ptreg_error err;
    ptreg_status st = ptreg_pairs_read(r->input, &pf, &err);
    if (st) {
        cli_error("batch", "%s", err.message);
        return cli_exit_code(st, 1);
    }
    pairs_report rep = {.r = r, .pairs = pf.count, .ranks = comm->size, .read_ms = ptreg_time_ms() - t0};
    rep.points = pf.source_offset[pf.count];
    size_t first = 0, count = pf.count;
    cli_comm_split(comm, pf.count, &first, &count);
    double *rows = malloc((9 * count + 1) * sizeof *rows);
    int *stop = malloc((count + 1) * sizeof *stop);
    int rc = rows && stop ? EXIT_OK : EXIT_RUNTIME;
    if (rc)
        cli_error("batch", "out of memory for %zu pairs", count);
    rc = rc ? rc : register_pairs(r, &pf, first, count, rows, stop, &rep.stats);
    rc = cli_comm_agree(comm, rc);
    if (!rc) {
        tally_pairs(rows, stop, count, &rep);
        if (comm->size > 1)
            rc = batch_mpi_pairs(comm, r->output, first, count, rows, &rep.stats, rep.stops, &rep.iterations_sum,
                                 &rep.iterations_max, &rep.rms_sum);
        else if (r->output)
            rc = batch_write_pair_rows(r->output, rows, count);
    }
    rep.total_ms = ptreg_time_ms() - t0;
    if (!rc && comm->rank == 0)
        rc = print_pairs_report(&rep);
    free(rows);
    free(stop);
    ptreg_pairs_file_free(&pf);
    return rc;
}
