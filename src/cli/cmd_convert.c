/* ptreg convert and ptreg info: move clouds between formats, describe them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/device.h"
#include "ptreg/io.h"

static const cli_option convert_options[] = {
    {"output", 'o', "FILE",
     "the converted cloud (format from the extension: ply, pcd, xyz, txt, csv, pts, las, "
     "pos)",
     CLI_WRITES_CLOUD},
    {"transform", 0, "FILE", "move the points (and normals) by this 4x4 transform"},
    {"voxel", 0, "V",
     "keep one point per cube of side V: the centroid of its points (Open3D's VoxelDownSample; "
     "normals averaged and made unit), in the order of each cube's first point; the input is read "
     "in pieces, so memory holds the cubes, not the input's points"},
    {"crop", 0, "X0,Y0,Z0,X1,Y1,Z1",
     "keep only the points inside this box (world coordinates, bounds included), "
     "dropped while reading"},
    {"classes", 0, "LIST",
     "LAS: keep only the points of these classes, e.g. 2,6 (ground, building) or 1-6,9; "
     "while reading"},
    {"no-normals", 0, NULL, "leave normals out"},
    {"device", 0, "DEV",
     "--voxel on this GPU (cuda[:N] or opencl[:N]; the input is read whole): the CPU's points "
     "bit for bit (default cpu: in pieces)"},
    CLI_OPT_ASCII,
};

const cli_command cli_cmd_convert = CLI_COMMAND(
    "convert", "INPUT -o OUTPUT [options]",
    "Convert a cloud between PLY, PCD, XYZ/CSV/TXT, LAS (and read VTK and the vertices of OBJ, STL and OFF "
    "meshes), optionally cropped, moved or downsampled.",
    "Coordinates far from zero (UTM) keep their millimetres: the cloud carries a float64\n"
    "origin and the output is written in world coordinates (double PLY/PCD fields, LAS at\n"
    "scale 0.001 from the origin). Colours are kept in every format (--voxel averages them);\n"
    "intensity goes to PLY, PCD, text and LAS, classification LAS to LAS (without --voxel).\n"
    "Normals cannot go into LAS: give --no-normals to drop them. LAZ is not read: decompress\n"
    "it first.\n"
    "--voxel reads the input twice in pieces, so a file of 10^8 points is downsampled in\n"
    "memory for the voxels kept; with --device cuda[:N]|opencl[:N] the input is read whole\n"
    "and its voxels are made on that GPU (one with double precision), the same points bit\n"
    "for bit.\n\n"
    "Example:\n"
    "  ptreg convert tile.las --classes 2 --voxel 0.5 -o ground.ply\n",
    convert_options, 1, 1);

/* --crop and --classes as read options; LAS attributes kept for a LAS output. */
static int read_options(const cli_args *a, ptreg_read_options *ro)
{
    ptreg_read_options_default(ro);
    ro->attributes = 1;
    const char *crop = cli_string(a, "crop", NULL), *classes = cli_string(a, "classes", NULL);
    if (crop && ptreg_crop_parse(crop, ro->crop_min, ro->crop_max)) {
        cli_error("convert", "--crop: '%s' is not six numbers xmin,ymin,zmin,xmax,ymax,zmax with min <= max", crop);
        return EXIT_USAGE;
    }
    if (classes && ptreg_classes_parse(classes, ro->keep_class)) {
        cli_error("convert", "--classes: '%s' is not a list of classes 0-255 and ranges, e.g. 2,6 or 1-5", classes);
        return EXIT_USAGE;
    }
    ro->crop = crop != NULL;
    ro->classes = classes != NULL;
    return EXIT_OK;
}

/* --voxel --device GPU: the whole cloud read, its voxels made there. */
static int load_downsampled_on(const char *path, const ptreg_read_options *ro, double voxel, const ptreg_device *device,
                               ptreg_cloud *c)
{
    ptreg_cloud whole;
    int rc = cli_load_cloud_with("convert", path, ro, &whole, 0);
    if (rc)
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_voxel_downsample_on(&whole, voxel, device, NULL, c, &err);
    ptreg_cloud_free(&whole);
    if (!st)
        return EXIT_OK;
    cli_error("convert", "%s: %s", path, err.message);
    /* what the device cannot run (found once it is open) is a usage error, as when resolved */
    return st == PTREG_ERR_UNSUPPORTED ? EXIT_USAGE : cli_exit_code(st, 0);
}

/* --device: a GPU named runs --voxel there; nothing else runs on one. */
static int convert_device(const cli_args *a, double voxel, ptreg_device *device)
{
    *device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    if (!cli_has(a, "device"))
        return EXIT_OK;
    int rc = cli_device(a, device);
    if (rc || device->backend == PTREG_BACKEND_CPU)
        return rc;
    if (device->backend == PTREG_BACKEND_AUTO) {
        *device = (ptreg_device){PTREG_BACKEND_CPU, 0};
        return EXIT_OK;
    }
    if (!(voxel > 0.0)) {
        cli_error("convert", "--device %s: only --voxel runs on a device", cli_string(a, "device", ""));
        return EXIT_USAGE;
    }
    ptreg_device on;
    ptreg_error err;
    rc = cli_device_usable(a, ptreg_voxel_resolve_device(device, &on, &err), &err);
    *device = on;
    return rc;
}

/* --voxel reads the file in pieces: memory for the voxels kept, whatever
 * the input's size. */
static int load_downsampled(const char *path, const ptreg_read_options *ro, double voxel, ptreg_cloud *c)
{
    ptreg_error err;
    ptreg_status st = ptreg_voxel_downsample_file(path, ro, voxel, c, &err);
    if (!st)
        return cli_join_frame("convert", path, c);
    const int bad_voxel = st == PTREG_ERR_ARG && !strncmp(err.message, "voxel", 5);
    cli_error("convert", "%s%s", bad_voxel ? "--voxel: " : "", err.message);
    return bad_voxel ? EXIT_USAGE : cli_exit_code(st, 1);
}

int cli_run_convert(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_convert, argc, argv, &a, &rc) ||
        (rc = cli_require(&a, "output", "the output file: -o OUTPUT")))
        return rc;
    double T[16];
    if ((rc = cli_transform_option(&a, "transform", T)))
        return rc;
    double voxel = 0.0;
    if ((rc = cli_double(&a, "voxel", 1e-30, 1e30, &voxel)))
        return rc;
    ptreg_read_options ro;
    ptreg_device device;
    if ((rc = read_options(&a, &ro)) || (rc = convert_device(&a, voxel, &device)))
        return rc;
    ptreg_cloud c;
    rc = voxel > 0.0 && device.backend != PTREG_BACKEND_CPU
             ? load_downsampled_on(a.positional[0], &ro, voxel, &device, &c)
         : voxel > 0.0 ? load_downsampled(a.positional[0], &ro, voxel, &c)
                       : cli_load_cloud_with("convert", a.positional[0], &ro, &c, 0);
    if (rc)
        return rc;
    ptreg_error err;
    if (cli_has(&a, "transform")) {
        ptreg_transform_to_local(T, c.origin, T);
        ptreg_transform_points(T, c.xyz, c.xyz, c.n);
        if (c.normals)
            ptreg_transform_vectors(T, c.normals, c.normals, c.n);
    }
    ptreg_write_options opt;
    ptreg_write_options_default(&opt);
    opt.ascii = cli_has(&a, "ascii");
    opt.with_normals = !cli_has(&a, "no-normals");
    ptreg_status st = ptreg_cloud_write(cli_string(&a, "output", NULL), &c, &opt, &err);
    if (st) {
        cli_error("convert", "%s", err.message);
        rc = cli_exit_code(st, 0);
    }
    ptreg_cloud_free(&c);
    return rc;
}

static const cli_option info_options[] = {
    CLI_OPT_JSON,
};

const cli_command cli_cmd_info = CLI_COMMAND(
    "info", "CLOUD|MODEL.pti [--json]",
    "Describe a cloud (points, normals, colours, dropped non-finite points, bounding box, centroid) or a model "
    "index.",
    NULL, info_options, 1, 1);

int cli_run_info(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_info, argc, argv, &a, &rc))
        return rc;
    if (cli_is_index_path(a.positional[0]))
        return cli_describe_index(a.positional[0], cli_has(&a, "json"));
    ptreg_cloud c;
    if ((rc = cli_load_cloud("info", a.positional[0], &c, 1)))
        return rc;
    /* in the world: the origin added back to the float offsets */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double sum[3] = {0, 0, 0};
    ptreg_points_bounds(c.xyz, c.n, lo, hi);
    for (size_t i = 0; i < c.n; i++)
        for (int k = 0; k < 3; k++)
            sum[k] += c.xyz[3 * i + k];
    double centroid[3];
    for (int k = 0; k < 3; k++) {
        lo[k] += c.origin[k], hi[k] += c.origin[k];
        centroid[k] = c.origin[k] + sum[k] / (double)c.n;
    }
    const int far = c.origin[0] != 0.0 || c.origin[1] != 0.0 || c.origin[2] != 0.0;
    if (cli_has(&a, "json")) {
        cJSON *o = cJSON_CreateObject();
        cli_json_string(o, "file", a.positional[0]);
        cli_json_number(o, "points", (double)c.n);
        cli_json_bool(o, "normals", c.normals != NULL);
        cli_json_bool(o, "colors", c.rgb != NULL);
        cli_json_number(o, "dropped_nonfinite", (double)c.dropped_nonfinite);
        cli_json_put(o, "min", cJSON_CreateDoubleArray(lo, 3));
        cli_json_put(o, "max", cJSON_CreateDoubleArray(hi, 3));
        cli_json_put(o, "centroid", cJSON_CreateDoubleArray(centroid, 3));
        cli_json_put(o, "origin", cJSON_CreateDoubleArray(c.origin, 3));
        rc = cli_json_print(o);
    } else {
        printf("%s: %zu points%s%s", a.positional[0], c.n, c.normals ? " with normals" : "",
               c.rgb ? (c.normals ? " and colours" : " with colours") : "");
        if (c.dropped_nonfinite)
            printf(" (%zu non-finite points dropped)", c.dropped_nonfinite);
        /* a far cloud's numbers to the millimetre: 6 digits of 4,500,000 would be 10 m */
        const char *fmt = far ? "\n  min      %.3f %.3f %.3f\n  max      %.3f %.3f %.3f\n  centroid %.3f %.3f %.3f\n"
                              : "\n  min      %.6g %.6g %.6g\n  max      %.6g %.6g %.6g\n  centroid %.6g %.6g %.6g\n";
        printf(fmt, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], centroid[0], centroid[1], centroid[2]);
        if (far)
            printf("  origin   %.17g %.17g %.17g (points are stored as float offsets from it)\n", c.origin[0],
                   c.origin[1], c.origin[2]);
    }
    ptreg_cloud_free(&c);
    return rc;
}
