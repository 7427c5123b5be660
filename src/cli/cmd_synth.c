/* ptreg synth: the built-in test shapes, a simulated scan and its true pose. */
#include <stdio.h>
#include <string.h>

#include "cli/common.h"
#include "ptreg/synth.h"

static const cli_option synth_options[] = {
    {"shape", 0, "NAME", "blob (lumpy closed surface, radius ~1), aircraft, or apt-polycrystal (an atom-probe "
                         "reconstruction of a polycrystal, in nm: see below) (default blob)"},
    {"model", 'm', "FILE", "write the model: points uniform over the whole surface, with normals"},
    {"model-points", 0, "N", "model points (default 40000)"},
    {"output", 'o', "FILE", "write the sensed scan; apt-polycrystal: the atoms (.pos with m/q, or any point "
                            "format)"},
    {"points", 'n', "M", "sensed points (default 30000)"},
    {"truth", 0, "FILE", "write the 4x4 transform taking the scan onto the model; apt-polycrystal: per atom "
                         "grain, qw, qx, qy, qz (.npy float32 n x 5, or .csv)"},
    {"max-angle", 0, "DEG", "roll, pitch and yaw each drawn from [-DEG, DEG] (default 20)"},
    {"max-translation", 0, "T", "translation components drawn from [-T, T] (default 0.1)"},
    {"noise", 0, "S", "Gaussian noise sigma (default 0.005); apt-polycrystal: along x and y, nm (default 0.05)"},
    {"outliers", 0, "F", "fraction of scan points replaced by uniform outliers (default 0)"},
    {"overlap", 0, "F", "fraction of the visible surface kept by a planar crop (default 1)"},
    {"view", 0, "X,Y,Z", "sensor position, looking at the origin (default 1,-2,5)"},
    {"motif", 0, "NAME", "apt-polycrystal: the lattice, fcc, bcc, hcp (ideal c/a) or sc (default fcc)"},
    {"lattice", 0, "A", "apt-polycrystal: the lattice constant, nm; hcp: the nearest-neighbor distance "
                        "(default 0.405, aluminium)"},
    {"grains", 0, "N", "apt-polycrystal: grains, Voronoi cells of random points, 1 to 10000 (default 8)"},
    {"box", 0, "X[,Y,Z]", "apt-polycrystal: the box [0,X) x [0,Y) x [0,Z), nm; one number: a cube "
                          "(default 12)"},
    {"efficiency", 0, "F", "apt-polycrystal: detection efficiency, the fraction of atoms kept (each "
                           "independently), (0, 1] (default 0.5)"},
    {"noise-depth", 0, "S", "apt-polycrystal: Gaussian sigma along z, nm (default: --noise / 2)"},
    {"solute", 0, "F", "apt-polycrystal: fraction of the atoms that are solute, m/q 24 (Mg); the others "
                       "27 (Al) (default 0)"},
    {"seed", 0, "S", "random seed (default 1); the same seed gives the same bits"},
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_synth = CLI_COMMAND("synth",
    "[options]",
    "Make test data: a scan of a built-in shape in a known pose, or an atom-probe polycrystal.",
    "The scan sees the surface from --view through a depth buffer (front faces, nearest\n"
    "surface per pixel, in raster order) with samples independent of the model's, then\n"
    "is cropped, made noisy, given outliers and moved. Register the scan onto the model\n"
    "and compare with --truth:\n"
    "  ptreg synth --model model.ply -o scan.ply --truth truth.txt\n"
    "  ptreg icp scan.ply model.ply --truth truth.txt\n"
    "\n"
    "--shape apt-polycrystal makes a synthetic atom-probe reconstruction (units: nm) with\n"
    "the grains' orientations known: the box is cut into --grains Voronoi cells of uniform\n"
    "random points, each filled with the --motif lattice (constant --lattice) in a uniform\n"
    "random orientation, a lattice point at the cell's seed; each lattice site in the box\n"
    "is made once, by the grain of the nearest seed. Each atom is then detected with\n"
    "probability --efficiency and moved by Gaussian noise, --noise along x and y,\n"
    "--noise-depth along z (atoms can end up a few sigma outside the box). .pos output\n"
    "carries m/q: 27 (Al) for lattice atoms, 24 (Mg) for the --solute fraction.\n"
    "--truth writes one row per atom, in the output's order: grain, qw, qx, qy, qz, where\n"
    "q (w >= 0) is the rotation taking the grain's atoms, relative to one of them, onto\n"
    "the crystal's axes (ptreg_motif_lattice's frame): the transpose of the rotation that\n"
    "placed the lattice, what an orientation map of the atoms should find (up to the\n"
    "motif's symmetry). hcp's second basis atom sees the motif turned 180 degrees about c.\n"
    "  ptreg synth --shape apt-polycrystal -o al.pos --truth truth.npy --grains 12 --box 20",
    synth_options, 0, 0);

static int read_synth_options(const cli_args *a, ptreg_shape *shape, size_t *model_points,
                              ptreg_synth_options *o)
{
    const char *name = cli_string(a, "shape", "blob");
    if (ptreg_shape_parse(name, shape)) {
        cli_error("synth", "--shape: '%s' is not blob, aircraft or apt-polycrystal", name);
        return EXIT_USAGE;
    }
    static const char *const apt_only[] = {"motif", "lattice", "grains", "box", "efficiency", "noise-depth", "solute"};
    for (size_t i = 0; i < sizeof apt_only / sizeof apt_only[0]; i++)
        if (cli_has(a, apt_only[i])) {
            cli_error("synth", "--%s is an option of --shape apt-polycrystal, not of %s", apt_only[i], name);
            return EXIT_USAGE;
        }
    int rc = 0;
    rc = rc ? rc : cli_size(a, "model-points", 1, 100000000, model_points);
    rc = rc ? rc : cli_size(a, "points", 1, 100000000, &o->points);
    rc = rc ? rc : cli_double(a, "max-angle", 0.0, 180.0, &o->max_angle_deg);
    rc = rc ? rc : cli_double(a, "max-translation", 0.0, 1e6, &o->max_translation);
    rc = rc ? rc : cli_double(a, "noise", 0.0, 1e3, &o->noise);
    rc = rc ? rc : cli_double(a, "outliers", 0.0, 0.99, &o->outliers);
    rc = rc ? rc : cli_double(a, "overlap", 0.01, 1.0, &o->overlap);
    rc = rc ? rc : cli_vec3(a, "view", o->view);
    rc = rc ? rc : cli_u64(a, "seed", &o->seed);
    if (!rc && !cli_has(a, "model") && !cli_has(a, "output")) {
        cli_error("synth", "nothing to write: give --model FILE and/or --output FILE");
        rc = EXIT_USAGE;
    }
    return rc;
}

/* The model and the scan draw from different streams of the one seed. */
#define SCAN_STREAM 0x5ca9ull

static int make_outputs(const cli_args *a, ptreg_shape shape, size_t model_points,
                        ptreg_synth_options *so, double truth[16])
{
    int ascii = cli_has(a, "ascii"), rc = EXIT_OK;
    ptreg_error err;
    ptreg_status st;
    ptreg_cloud model, scan;
    ptreg_cloud_init(&model);
    ptreg_cloud_init(&scan);
    uint64_t seed = so->seed;
    if (cli_has(a, "model") && (st = ptreg_synth_model(shape, model_points, seed, &model, &err)))
        goto fail;
    so->seed = seed ^ SCAN_STREAM;
    if (cli_has(a, "output") && (st = ptreg_synth_scan(shape, so, &scan, truth, &err)))
        goto fail;
    so->seed = seed;
    if (cli_has(a, "model"))
        rc = cli_write_cloud("synth", cli_string(a, "model", NULL), &model, ascii);
    if (!rc && cli_has(a, "output"))
        rc = cli_write_cloud("synth", cli_string(a, "output", NULL), &scan, ascii);
    if (!rc && cli_has(a, "truth"))
        rc = cli_write_transform("synth", cli_string(a, "truth", NULL), truth);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return rc;
fail:
    cli_error("synth", "%s", err.message);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return cli_exit_code(st, 0);
}

int cli_run_synth(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_synth, argc, argv, &a, &rc))
        return rc;
    if (!strcmp(cli_string(&a, "shape", ""), "apt-polycrystal"))
        return cli_synth_apt(&a);
    ptreg_shape shape;
    size_t model_points = 40000;
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    if ((rc = read_synth_options(&a, &shape, &model_points, &so)))
        return rc;
    if (cli_has(&a, "truth") && !cli_has(&a, "output")) {
        cli_error("synth", "--truth needs a scan: give --output FILE too");
        return EXIT_USAGE;
    }
    double truth[16];
    ptreg_transform_identity(truth);
    if ((rc = make_outputs(&a, shape, model_points, &so, truth)))
        return rc;
    if (cli_has(&a, "json")) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "command", "synth");
        cJSON_AddStringToObject(o, "shape", ptreg_shape_name(shape));
        if (cli_has(&a, "model")) {
            cJSON_AddStringToObject(o, "model", cli_string(&a, "model", NULL));
            cJSON_AddNumberToObject(o, "model_points", (double)model_points);
        }
        if (cli_has(&a, "output")) {
            cJSON_AddStringToObject(o, "output", cli_string(&a, "output", NULL));
            cJSON_AddNumberToObject(o, "points", (double)so.points);
            cli_json_put(o, "truth", cli_json_matrix(truth));
        }
        cJSON_AddNumberToObject(o, "seed", (double)so.seed);
        return cli_json_print(o);
    }
    if (cli_has(&a, "model"))
        printf("model: %s (%zu points of the %s)\n", cli_string(&a, "model", NULL), model_points,
               ptreg_shape_name(shape));
    if (cli_has(&a, "output")) {
        printf("scan: %s (%zu points); the transform taking it onto the model:\n",
               cli_string(&a, "output", NULL), so.points);
        cli_print_matrix("  ", truth);
    }
    return EXIT_OK;
}
