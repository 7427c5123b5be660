/* ptreg: the command-line tool. Dispatches to one command per file. */
#define _DEFAULT_SOURCE /* setenv, execv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/json.h"
#include "cli/report.h"
#include "ptreg/device.h"
#include "ptreg/io.h"

typedef struct command_entry {
    const cli_command *cmd;
    int (*run)(int argc, char **argv);
} command_entry;

static const command_entry commands[] = {
    {&cli_cmd_icp, cli_run_icp},
    {&cli_cmd_register, cli_run_register},
    {&cli_cmd_correspond, cli_run_correspond},
    {&cli_cmd_evaluate, cli_run_evaluate},
    {&cli_cmd_multiway, cli_run_multiway},
    {&cli_cmd_track, cli_run_track},
    {&cli_cmd_odometry, cli_run_odometry},
    {&cli_cmd_localize, cli_run_localize},
    {&cli_cmd_eval, cli_run_eval},
    {&cli_cmd_emicp, cli_run_emicp},
    {&cli_cmd_cpd, cli_run_cpd},
    {&cli_cmd_harris3d, cli_run_harris3d},
    {&cli_cmd_normals, cli_run_normals},
    {&cli_cmd_pfh, cli_run_pfh},
    {&cli_cmd_fpfh, cli_run_fpfh},
    {&cli_cmd_batch, cli_run_batch},
    {&cli_cmd_lddmm, cli_run_lddmm},
    {&cli_cmd_warp, cli_run_warp},
    {&cli_cmd_index, cli_run_index},
    {&cli_cmd_synth, cli_run_synth},
    {&cli_cmd_convert, cli_run_convert},
    {&cli_cmd_filter, cli_run_filter},
    {&cli_cmd_info, cli_run_info},
    {&cli_cmd_view, cli_run_view},
    {&cli_cmd_devices, cli_run_devices},
    {&cli_cmd_tune, cli_run_tune},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out)
{
    fprintf(out, "usage: ptreg <command> [options]\n\n"
                 "Accelerated point-set registration and 3-D features.\n\ncommands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i].cmd->name, commands[i].cmd->summary);
    fprintf(out, "  %-10s %s\n", "help", "'ptreg help COMMAND' shows a command's options");
    fprintf(out, "  %-10s %s\n", "version", "print the version (also --version)");
    fprintf(out, "\nExit codes: 0 ok, 2 usage, 3 bad input, 4 runtime failure.\n"
                 "Environment: PTREG_NUM_THREADS (threads), PTREG_ISA (generic|avx2|avx512 cap),\n"
                 "PTREG_DEVICE (the device of --device auto; see ptreg devices).\n"
                 "See man ptreg.\n");
}

static const command_entry *find_command(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (!strcmp(commands[i].cmd->name, name))
            return &commands[i];
    return NULL;
}

static int print_version(void)
{
#ifdef PTREG_HAVE_MPI
    const char *mpi = "yes";
#else
    const char *mpi = "no";
#endif
    printf("ptreg %s (cpu: %s; cuda: %s; opencl: %s; mpi: %s)\n", ptreg_version(), ptreg_cpu_isa_name(),
           ptreg_backend_built(PTREG_BACKEND_CUDA) ? "yes" : "no",
           ptreg_backend_built(PTREG_BACKEND_OPENCL) ? "yes" : "no", mpi);
    return EXIT_OK;
}

/* track and odometry wait for a sensor's frames; libgomp's workers spin 300,000 turns
 * (about 14 ms of a core) after every parallel region before they sleep,
 * and a 10 Hz stream paid 1.9 times its frames' CPU time so
 * (bench/track_idle.py). libgomp reads GOMP_SPINCOUNT once, as it loads:
 * the command starts itself again with 10,000 turns (about 0.4 ms, which
 * the gaps inside a frame stay under: no change in latency) unless the
 * caller chose a wait policy. */
static void quiet_idle_workers(char **argv)
{
    if (getenv("GOMP_SPINCOUNT") || getenv("OMP_WAIT_POLICY"))
        return;
    if (setenv("GOMP_SPINCOUNT", "10000", 1) == 0)
        execv("/proc/self/exe", argv);
    /* it could not: the run goes on as it is, spinning */
    unsetenv("GOMP_SPINCOUNT");
}

int main(int argc, char **argv)
{
    cli_json_init();
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--version") || !strcmp(name, "version"))
        return print_version();
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(name, "help")) {
        /* 'ptreg help help' asks what help itself does: the list of commands */
        if (argc < 3 || !strcmp(argv[2], "help")) {
            print_usage(stdout);
            return EXIT_OK;
        }
        /* the man page's option lists, and its lists of JSON fields */
        const int man = !strcmp(argv[2], "--man") && argc > 3, man_json = !strcmp(argv[2], "--man-json") && argc > 3;
        const command_entry *e = find_command(argv[man || man_json ? 3 : 2]);
        if (!e) {
            fprintf(stderr, "ptreg help: unknown command '%s'\n", argv[man || man_json ? 3 : 2]);
            return EXIT_USAGE;
        }
        (man ? cli_print_man_options : man_json ? cli_print_man_json : cli_print_help)(e->cmd);
        return EXIT_OK;
    }
    const command_entry *e = find_command(name);
    if (e == find_command("track") || e == find_command("odometry") || e == find_command("localize"))
        quiet_idle_workers(argv);
    if (!e) {
        fprintf(stderr, "ptreg: unknown command '%s'\n\n", name);
        print_usage(stderr);
        return EXIT_USAGE;
    }
    ptreg_atomic_journal_begin();
    int rc = e->run(argc - 2, argv + 2);
    /* contexts, streams and kernels given back: a leak checker (the CUDA
     * stand-in) then sees everything the command made released */
    ptreg_devices_release();
    /* A step that went on without an allocation (the tuner's winner, JSON
     * not printed) may have changed the result: not a success. */
    if (rc == EXIT_OK && cli_out_of_memory()) {
        fprintf(stderr, "ptreg %s: out of memory along the way: the result is not trusted\n", argv[1]);
        rc = EXIT_RUNTIME;
    }
    rc = cli_report_finish(rc);
    ptreg_atomic_journal_end(rc != EXIT_OK);
    return rc;
}
