/* ptreg synth: the built-in test shapes, a simulated scan and its true pose. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "ptreg/io.h"
#include "ptreg/synth.h"

static const cli_option synth_options[] = {
    {"shape", 0, "NAME",
     "blob (lumpy closed surface, radius ~1), aircraft, or apt-polycrystal (an atom-probe "
     "reconstruction of a polycrystal, in nm: see below) (default blob)"},
    {"model", 'm', "FILE", "write the model: points uniform over the whole surface, with normals", CLI_WRITES_CLOUD},
    {"model-points", 0, "N", "model points (default 40000)"},
    {"output", 'o', "FILE",
     "write the sensed scan; apt-polycrystal: the atoms (.pos with m/q, or any point "
     "format)",
     CLI_WRITES_CLOUD},
    {"points", 'n', "M", "sensed points (default 30000)"},
    {"truth-out", 0, "FILE",
     "write the 4x4 transform taking the scan onto the model; apt-polycrystal: per atom "
     "grain, qw, qx, qy, qz (.npy float32 n x 5, or .csv)",
     "txt json npy csv"},
    {"max-angle", 0, "DEG", "roll, pitch and yaw each drawn from [-DEG, DEG] (default 20)"},
    {"max-translation", 0, "T", "translation components drawn from [-T, T] (default 0.1)"},
    {"noise", 0, "S", "Gaussian noise sigma (default 0.005); apt-polycrystal: along x and y, nm (default 0.05)"},
    {"outliers", 0, "F", "fraction of scan points replaced by uniform outliers (default 0)"},
    {"overlap", 0, "F", "fraction of the visible surface kept by a planar crop (default 1)"},
    {"view", 0, "X,Y,Z", "sensor position, looking at the origin (default 1,-2,5)"},
    {"motif", 0, "NAME", "apt-polycrystal: the lattice, fcc, bcc, hcp (ideal c/a) or sc (default fcc)"},
    {"lattice", 0, "A",
     "apt-polycrystal: the lattice constant, nm; hcp: the nearest-neighbor distance "
     "(default 0.405, aluminium)"},
    {"grains", 0, "N", "apt-polycrystal: grains, Voronoi cells of random points, 1 to 10000 (default 8)"},
    {"box", 0, "X[,Y,Z]",
     "apt-polycrystal: the box [0,X) x [0,Y) x [0,Z), nm; one number: a cube "
     "(default 12)"},
    {"efficiency", 0, "F",
     "apt-polycrystal: detection efficiency, the fraction of atoms kept (each "
     "independently), (0, 1] (default 0.5)"},
    {"noise-depth", 0, "S", "apt-polycrystal: Gaussian sigma along z, nm (default: --noise / 2)"},
    {"solute", 0, "F",
     "apt-polycrystal: fraction of the atoms that are solute, m/q 24 (Mg); the others "
     "27 (Al) (default 0)"},
    {"sequence", 0, "N",
     "an approach of N frames for 'ptreg track' (see below): with --frames-dir and/or "
     "--truth-trajectory-out"},
    {"frames-dir", 0, "DIR",
     "--sequence: write frame_00000.ply ... (binary PLY unless --ascii) into DIR; "
     "--lidar-sequence: velodyne/000000.bin ..., poses.txt, times.txt and calib.txt "
     "(made when missing)",
     CLI_WRITES_FOLDER},
    {"truth-trajectory-out", 0, "FILE",
     "write the true poses of --sequence, a TUM trajectory (timestamp tx "
     "ty tz qx qy qz qw); of --lidar-sequence: in the world's coordinates plus --origin",
     "txt tum"},
    {"lidar-sequence", 0, "N",
     "a LiDAR drive of N frames for 'ptreg odometry' (see below), in KITTI's layout: with "
     "--frames-dir"},
    {"beams", 0, "B", "--lidar-sequence: lasers (default 64)"},
    {"azimuth-step", 0, "DEG", "--lidar-sequence: degrees between firings (default 0.2)"},
    {"speed", 0, "V", "--lidar-sequence: the car's speed, m/s (default 10)"},
    {"lane", 0, "M",
     "--lidar-sequence: drive M metres left of the road's centre line (right if negative, within 2; "
     "default 0): another drive through the same world"},
    {"scan-seed", 0, "S",
     "--lidar-sequence: the frames' noise, dropouts and spin (default: --seed, which also makes the world)"},
    {"origin", 0, "E,N,H",
     "--lidar-sequence: the world's origin in the map's coordinates (e.g. UTM), for "
     "--truth-trajectory-out and --lidar-map (default 0,0,0)"},
    {"lidar-map", 0, "FILE",
     "--lidar-sequence: also write every frame's returns in the world's coordinates (plus --origin) "
     "as one cloud: a prior map for 'ptreg localize'",
     CLI_WRITES_CLOUD},
    {"rate", 0, "HZ", "--sequence, --lidar-sequence: frames per second (default 10)"},
    {"dropouts", 0, "F", "--sequence, --lidar-sequence: each point dropped with probability F (default 0)"},
    {"occlusion", 0, "START[,LENGTH]",
     "--sequence: frames START .. START+LENGTH-1 (LENGTH default 1) have "
     "85% of the view blocked by an occluder near the sensor"},
    {"approach", 0, "FROM,TO",
     "--sequence: the sensor's distance at the first and the last frame, in body "
     "lengths (default 3,1)"},
    {"seed", 0, "S", "random seed (default 1); the same seed gives the same bits"},
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_synth = CLI_COMMAND(
    "synth", "[options]", "Make test data: a scan of a built-in shape in a known pose, or an atom-probe polycrystal.",
    "The scan sees the surface from --view through a depth buffer (front faces, nearest\n"
    "surface per pixel, in raster order) with samples independent of the model's, then\n"
    "is cropped, made noisy, given outliers and moved. Register the scan onto the model\n"
    "and compare with --truth:\n"
    "  ptreg synth --model model.ply -o scan.ply --truth-out truth.txt\n"
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
    "--truth-out writes one row per atom, in the output's order: grain, qw, qx, qy, qz, where\n"
    "q (w >= 0) is the rotation taking the grain's atoms, relative to one of them, onto\n"
    "the crystal's axes (ptreg_motif_lattice's frame): the transpose of the rotation that\n"
    "placed the lattice, what an orientation map of the atoms should find (up to the\n"
    "motif's symmetry). hcp's second basis atom sees the motif turned 180 degrees about c.\n"
    "  ptreg synth --shape apt-polycrystal -o al.pos --truth-out truth.npy --grains 12 --box 20\n"
    "\n"
    "--sequence N makes the approach of an aerial refuelling (default --shape aircraft):\n"
    "a range sensor ahead of and above the model closes in from 3 body lengths to 1 over\n"
    "the N frames with a gentle sway in all six degrees of freedom; each frame is the\n"
    "depth-buffer scan above (--points, --noise, --dropouts, --occlusion) in the sensor's\n"
    "frame (x right, y down, z along the view), at frame / --rate seconds; the truth takes\n"
    "it into the model's frame (what 'ptreg track' should return):\n"
    "  ptreg synth --sequence 300 --model model.ply --frames-dir frames --truth-trajectory-out truth.txt\n"
    "  ptreg track model.ply --frames frames -o trajectory.txt\n"
    "\n"
    "--lidar-sequence N drives a car down a winding, hilly street (straights and turns,\n"
    "building facades, poles, trees and parked cars beside it) at --speed, a spinning\n"
    "scanner on its roof (--beams lasers over KITTI's HDL-64E field, +2 to -24.8 degrees,\n"
    "every --azimuth-step degrees, returns from 2.5 to 120 m, range noise --noise, default\n"
    "0.02 m). Each frame is one turn, written the way KITTI's odometry set is: DIR/velodyne/\n"
    "000000.bin ... (float32 x y z reflectance; x forward, y left, z up), DIR/poses.txt (the\n"
    "true poses, 12 numbers a line, taking each frame into the first frame's), DIR/times.txt\n"
    "and DIR/calib.txt (Tr the identity: the poses are the scanner's); --frames-dir -: the\n"
    "frames alone, a PTF1 stream on stdout (for 'ptreg odometry -'):\n"
    "  ptreg synth --lidar-sequence 1000 --frames-dir seq\n"
    "  ptreg odometry --frames seq/velodyne -o poses.txt --poses kitti\n"
    "  ptreg eval poses.txt seq/poses.txt --align none\n"
    "A prior map and a second drive through it, for 'ptreg localize' (--lidar-map: the\n"
    "returns in the world, at --origin; --lane and --scan-seed: another path, other scans):\n"
    "  ptreg synth --lidar-sequence 900 --frames-dir mapping --lidar-map map.las --origin 500000,5400000,100\n"
    "  ptreg synth --lidar-sequence 300 --frames-dir drive --lane -1.5 --scan-seed 7 --origin 500000,5400000,100 "
    "--truth-trajectory-out drive_truth.txt",
    synth_options, 0, 0);

static int read_synth_options(const cli_args *a, ptreg_shape *shape, size_t *model_points, ptreg_synth_options *o)
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

static int make_outputs(const cli_args *a, ptreg_shape shape, size_t model_points, ptreg_synth_options *so,
                        double truth[16])
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
    if (!rc && cli_has(a, "truth-out"))
        rc = cli_write_transform("synth", cli_string(a, "truth-out", NULL), truth);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return rc;
fail:
    cli_error("synth", "%s", err.message);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return cli_exit_code(st, 0);
}

/* The sequence's options: --sequence N and what only it takes. */
static int read_sequence_options(const cli_args *a, ptreg_synth_sequence_options *o)
{
    const char *name = cli_string(a, "shape", "aircraft");
    if (ptreg_shape_parse(name, &o->shape)) {
        cli_error("synth", "--sequence: --shape '%s' is not blob or aircraft", name);
        return EXIT_USAGE;
    }
    static const char *const not_here[] = {"output",  "truth-out",  "max-angle",   "max-translation", "outliers",
                                           "overlap", "view",       "motif",       "lattice",         "grains",
                                           "box",     "efficiency", "noise-depth", "solute"};
    for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++)
        if (cli_has(a, not_here[i])) {
            cli_error("synth", "--%s is not an option of --sequence", not_here[i]);
            return EXIT_USAGE;
        }
    int rc = cli_size(a, "sequence", 1, 10000000, &o->frames);
    rc = rc ? rc : cli_size(a, "model-points", 1, 100000000, &o->model_points);
    rc = rc ? rc : cli_size(a, "points", 1, 100000000, &o->points);
    rc = rc ? rc : cli_double(a, "noise", 0.0, 1e3, &o->noise);
    rc = rc ? rc : cli_double(a, "dropouts", 0.0, 0.99, &o->dropouts);
    rc = rc ? rc : cli_double(a, "rate", 1e-6, 1e9, &o->rate);
    rc = rc ? rc : cli_u64(a, "seed", &o->seed);
    if (rc)
        return rc;
    const char *occ = cli_string(a, "occlusion", NULL), *app = cli_string(a, "approach", NULL);
    if (occ) {
        unsigned long long start, length = 1;
        char tail;
        int got = sscanf(occ, "%llu,%llu%c", &start, &length, &tail);
        if ((got != 1 && got != 2) || occ[0] == '-' || length < 1) {
            cli_error("synth", "--occlusion: '%s' is not START or START,LENGTH (frames, LENGTH >= 1)", occ);
            return EXIT_USAGE;
        }
        o->occlusion_start = (size_t)start, o->occlusion_length = (size_t)length;
    }
    if (app) {
        char tail;
        if (sscanf(app, "%lf,%lf%c", &o->from, &o->to, &tail) != 2 || !(o->from > 0.75 && o->from < 1e6) ||
            !(o->to > 0.75 && o->to < 1e6)) {
            cli_error("synth", "--approach: '%s' is not FROM,TO (body lengths, each > 0.75)", app);
            return EXIT_USAGE;
        }
    }
    if (!cli_has(a, "model") && !cli_has(a, "frames-dir") && !cli_has(a, "truth-trajectory-out")) {
        cli_error("synth", "--sequence: nothing to write: give --model, --frames-dir and/or --truth-trajectory-out");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* The model and the frames draw from different streams of the one seed. */
#define SEQUENCE_STREAM 0x5e9ull

static int write_sequence(const cli_args *a)
{
    ptreg_synth_sequence_options o;
    ptreg_synth_sequence_options_default(&o);
    int rc = read_sequence_options(a, &o);
    if (rc)
        return rc;
    const int ascii = cli_has(a, "ascii");
    const char *dir = cli_string(a, "frames-dir", NULL), *truth_path = cli_string(a, "truth-trajectory-out", NULL);
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (cli_has(a, "model")) {
        ptreg_cloud model;
        if ((st = ptreg_synth_model(o.shape, o.model_points, o.seed, &model, &err))) {
            cli_error("synth", "%s", err.message);
            return cli_exit_code(st, 0);
        }
        rc = cli_write_cloud("synth", cli_string(a, "model", NULL), &model, ascii);
        ptreg_cloud_free(&model);
        if (rc)
            return rc;
    }
    if (dir && mkdir(dir, 0777) && errno != EEXIST) {
        cli_error("synth", "--frames-dir %s: cannot be made (%s)", dir, strerror(errno));
        return EXIT_RUNTIME;
    }
    ptreg_atomic_file truth;
    if (truth_path && (st = ptreg_atomic_open(truth_path, &truth, &err))) {
        cli_error("synth", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    const uint64_t seed = o.seed;
    o.seed = seed ^ SEQUENCE_STREAM;
    size_t points = 0;
    for (size_t i = 0; !rc && i < o.frames; i++) {
        ptreg_cloud frame;
        double T[16], t, R[9], q[4];
        if ((st = ptreg_synth_sequence_frame(&o, i, &frame, T, &t, &err))) {
            cli_error("synth", "%s", err.message);
            rc = cli_exit_code(st, 0);
            break;
        }
        points += frame.n;
        if (dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/frame_%05zu.%s", dir, i, "ply");
            rc = cli_write_cloud("synth", path, &frame, ascii);
        }
        ptreg_cloud_free(&frame);
        ptreg_transform_rotation(T, R);
        ptreg_matrix_to_quaternion(R, q);
        if (!rc && truth_path &&
            fprintf(truth.fp, "%.6f %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", t, T[3], T[7], T[11], q[1], q[2], q[3],
                    q[0]) < 0) {
            cli_error("synth", "%s: writing failed", truth_path);
            rc = EXIT_RUNTIME;
        }
    }
    o.seed = seed;
    if (truth_path) {
        if (rc)
            ptreg_atomic_abort(&truth);
        else if ((st = ptreg_atomic_commit(&truth, &err))) {
            cli_error("synth", "%s", err.message);
            rc = cli_exit_code(st, 0);
        }
    }
    if (rc)
        return rc;
    if (cli_has(a, "json")) {
        cJSON *j = cJSON_CreateObject();
        cli_json_string(j, "command", "synth");
        cli_json_string(j, "shape", ptreg_shape_name(o.shape));
        cli_json_number(j, "frames", (double)o.frames);
        cli_json_number(j, "points", (double)points);
        cli_json_number(j, "rate", o.rate);
        if (dir)
            cli_json_string(j, "frames_dir", dir);
        if (truth_path)
            cli_json_string(j, "truth_trajectory", truth_path);
        if (cli_has(a, "model")) {
            cli_json_string(j, "model", cli_string(a, "model", NULL));
            cli_json_number(j, "model_points", (double)o.model_points);
        }
        cli_json_number(j, "seed", (double)o.seed);
        return cli_json_print(j);
    }
    printf("sequence: %zu frames of the %s (%zu points in all) at %g Hz", o.frames, ptreg_shape_name(o.shape), points,
           o.rate);
    if (dir)
        printf(", in %s/frame_NNNNN.ply", dir);
    if (truth_path)
        printf("; truth: %s", truth_path);
    printf("\n");
    return EXIT_OK;
}

int cli_run_synth(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_synth, argc, argv, &a, &rc))
        return rc;
    if (cli_has(&a, "sequence") && cli_has(&a, "lidar-sequence")) {
        cli_error("synth", "give --sequence or --lidar-sequence, not both");
        return EXIT_USAGE;
    }
    if (cli_has(&a, "lidar-sequence"))
        return cli_synth_lidar(&a);
    static const char *const lidar_only[] = {"beams",     "azimuth-step", "speed",    "lane",
                                             "scan-seed", "origin",       "lidar-map"};
    for (size_t i = 0; i < sizeof lidar_only / sizeof lidar_only[0]; i++)
        if (cli_has(&a, lidar_only[i])) {
            cli_error("synth", "--%s is an option of --lidar-sequence N", lidar_only[i]);
            return EXIT_USAGE;
        }
    if (cli_has(&a, "sequence"))
        return write_sequence(&a);
    static const char *const sequence_only[] = {"frames-dir", "truth-trajectory-out", "rate", "dropouts", "occlusion",
                                                "approach"};
    for (size_t i = 0; i < sizeof sequence_only / sizeof sequence_only[0]; i++)
        if (cli_has(&a, sequence_only[i])) {
            cli_error("synth", "--%s is an option of --sequence N", sequence_only[i]);
            return EXIT_USAGE;
        }
    if (!strcmp(cli_string(&a, "shape", ""), "apt-polycrystal"))
        return cli_synth_apt(&a);
    ptreg_shape shape;
    size_t model_points = 40000;
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    if ((rc = read_synth_options(&a, &shape, &model_points, &so)))
        return rc;
    if (cli_has(&a, "truth-out") && !cli_has(&a, "output")) {
        cli_error("synth", "--truth-out needs a scan: give --output FILE too");
        return EXIT_USAGE;
    }
    const char *truth_path = cli_string(&a, "truth-out", NULL);
    if (truth_path && !cli_writes_extension(CLI_WRITES_TRANSFORM, truth_path)) { /* .npy .csv: apt's truth */
        cli_error("synth",
                  "--truth-out %s: the transform is written as .txt or .json (.npy and .csv hold "
                  "apt-polycrystal's per-atom truth)",
                  truth_path);
        return EXIT_USAGE;
    }
    double truth[16];
    ptreg_transform_identity(truth);
    if ((rc = make_outputs(&a, shape, model_points, &so, truth)))
        return rc;
    if (cli_has(&a, "json")) {
        cJSON *o = cJSON_CreateObject();
        cli_json_string(o, "command", "synth");
        cli_json_string(o, "shape", ptreg_shape_name(shape));
        if (cli_has(&a, "model")) {
            cli_json_string(o, "model", cli_string(&a, "model", NULL));
            cli_json_number(o, "model_points", (double)model_points);
        }
        if (cli_has(&a, "output")) {
            cli_json_string(o, "output", cli_string(&a, "output", NULL));
            cli_json_number(o, "points", (double)so.points);
            cli_json_put(o, "truth", cli_json_matrix(truth));
        }
        cli_json_number(o, "seed", (double)so.seed);
        return cli_json_print(o);
    }
    if (cli_has(&a, "model"))
        printf("model: %s (%zu points of the %s)\n", cli_string(&a, "model", NULL), model_points,
               ptreg_shape_name(shape));
    if (cli_has(&a, "output")) {
        printf("scan: %s (%zu points); the transform taking it onto the model:\n", cli_string(&a, "output", NULL),
               so.points);
        cli_print_matrix("  ", truth);
    }
    return EXIT_OK;
}
