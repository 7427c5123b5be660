/* ptreg I/O: point clouds (PLY, PCD, XYZ/CSV/TXT, VTK legacy POLYDATA, LAS;
 * mesh vertices from OBJ, STL and OFF),
 * 4x4 transform files, volumes (raw, NRRD, NIfTI-1) and keypoints. */
#ifndef PTREG_IO_H
#define PTREG_IO_H

#include <stdio.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_format {
    PTREG_FORMAT_AUTO = 0, /* by file extension: .ply .pcd .xyz .txt .csv .pts .vtk .pos .epos .las .obj .stl
                            * .off .bin */
    PTREG_FORMAT_PLY,
    PTREG_FORMAT_PCD,
    PTREG_FORMAT_XYZ, /* whitespace- or comma-separated text (.xyz .txt .csv .pts) */
    PTREG_FORMAT_VTK,
    PTREG_FORMAT_POS,  /* atom probe (apt.h): the ions' positions; written with m/q 0 */
    PTREG_FORMAT_EPOS, /* atom probe, read only */
    PTREG_FORMAT_LAS,  /* ASPRS LAS 1.0-1.4 (.las; .laz is refused: compressed); written as LAS 1.2 */
    PTREG_FORMAT_OBJ,  /* Wavefront OBJ mesh: its vertices (v, and vn when one per vertex); read only */
    PTREG_FORMAT_STL,  /* STL mesh, ASCII or binary: its distinct vertices; read only */
    PTREG_FORMAT_OFF,  /* ASCII OFF mesh (and COFF, NOFF): its vertices; read only */
    PTREG_FORMAT_KITTI /* KITTI velodyne scan (.bin): float32 x y z reflectance records; reflectance is
                          the intensity / 65535 */
} ptreg_format;

/* The format named by a path's extension (case-insensitive), or
 * PTREG_FORMAT_AUTO when the extension is unknown. */
PTREG_API ptreg_format ptreg_format_from_path(const char *path);
/* "ply", "pcd", "xyz", "vtk", "pos", "epos", "las", "obj", "stl", "off", "bin"; parses the same names
 * (and "csv", "txt", "pts", "laz"). */
PTREG_API const char *ptreg_format_name(ptreg_format format);
PTREG_API int ptreg_format_parse(const char *name, ptreg_format *format); /* -1 when unknown */

/* Reads a cloud. Points with a non-finite coordinate (including the NaN
 * points of organised PCD clouds) are dropped and counted in
 * cloud->dropped_nonfinite; a file with no usable point left is
 * PTREG_ERR_FORMAT. On failure *cloud is left empty and err names the file
 * and the place (line or byte offset). */
PTREG_API ptreg_status ptreg_cloud_read(const char *path, ptreg_format format, ptreg_cloud *cloud, ptreg_error *err);

/* What a read keeps, and how. */
typedef struct ptreg_read_options {
    ptreg_format format; /* AUTO (default): by extension, then by content */
    int crop;            /* keep only points inside the box (world coordinates, bounds included) */
    double crop_min[3], crop_max[3];
    int classes; /* LAS: keep only the points of classes c with keep_class[c] set; with
                               * another format PTREG_ERR_ARG (no classification to filter on) */
    unsigned char keep_class[256];
    int attributes;  /* fill cloud->intensity (LAS, PLY, PCD, text) and, from LAS,
                               * cloud->classification (default 0) */
    int skip_colors; /* 1: leave cloud->rgb NULL; default 0: a file's colours are kept */
    int origin_auto; /* default 1: a first point with a coordinate beyond
                               * PTREG_ORIGIN_THRESHOLD gives the cloud an origin; 0: origin 0 */
} ptreg_read_options;

PTREG_API void ptreg_read_options_default(ptreg_read_options *opt);
/* ptreg_cloud_read and ptreg_cloud_read_memory with options (NULL: the
 * defaults). The binary formats are read through a memory map whose pages
 * are let go as the reading passes them: no second copy of the points. */
PTREG_API ptreg_status ptreg_cloud_read_with(const char *path, const ptreg_read_options *opt, ptreg_cloud *cloud,
                                             ptreg_error *err);

/* Reads a cloud in pieces of at most `piece` points, handing each to fn as
 * it fills (fn may change the piece's arrays but not keep them): memory
 * stays bounded by one piece whatever the file's size. Every piece has the
 * origin the first point chose; non-finite points are dropped (and
 * counted in the piece's dropped_nonfinite) before fn sees them. fn's
 * status, when not PTREG_OK, ends the read. A file with no usable point is
 * PTREG_ERR_FORMAT as for ptreg_cloud_read. */
typedef ptreg_status (*ptreg_cloud_piece_fn)(void *ctx, ptreg_cloud *piece, ptreg_error *err);
PTREG_API ptreg_status ptreg_cloud_read_pieces(const char *path, const ptreg_read_options *opt, size_t piece,
                                               ptreg_cloud_piece_fn fn, void *ctx, ptreg_error *err);

/* ptreg_voxel_downsample (core.h) of a file, read twice in pieces (the
 * bounds, then each voxel's sums): the same cloud bit for bit, with memory
 * for the occupied voxels and one piece, not for every point. The file's
 * origin is kept; opt's crop and classes apply while reading. */
PTREG_API ptreg_status ptreg_voxel_downsample_file(const char *path, const ptreg_read_options *opt, double voxel,
                                                   ptreg_cloud *out, ptreg_error *err);

/* ---- LAS ---- */

/* What a LAS file's public header block says (ASPRS LAS 1.4 R15), for a
 * summary such as ptreg info's without reading the points. */
typedef struct ptreg_las_header {
    int version_major, version_minor;
    int point_format;     /* point data record format, 0 to 10 */
    size_t record_length; /* bytes per record: the format's own, then any extra bytes */
    uint64_t points;      /* the count read (1.4: the 64-bit one when nonzero), checked against the file */
    double scale[3], offset[3];
    double min[3], max[3];         /* the bounds as the file's writer recorded them (not checked) */
    char system[33], software[33]; /* system identifier, generating software (NUL-terminated) */
} ptreg_las_header;


/* Option values as a command line gives them; 0 on success, -1 (outputs
 * untouched) otherwise.
 * ptreg_classes_parse: LAS classes for ptreg_read_options.keep_class: a
 * comma-separated list of classes 0 to 255 and ranges LO-HI ("2,6",
 * "1-5,9"), blanks allowed around each; keep is cleared, then set for each.
 * ptreg_crop_parse: a crop box "xmin,ymin,zmin,xmax,ymax,zmax", six finite
 * numbers with each minimum at most its maximum. */
PTREG_API int ptreg_classes_parse(const char *list, unsigned char keep[256]);
PTREG_API int ptreg_crop_parse(const char *s, double min[3], double max[3]);

typedef struct ptreg_write_options {
    ptreg_format format; /* AUTO: by extension (an unknown one is PTREG_ERR_ARG, never a guess) */
    int ascii;           /* PLY and PCD: text instead of binary (default binary) */
    int with_normals;    /* write normals when the cloud has them (default 1) */
} ptreg_write_options;

PTREG_API void ptreg_write_options_default(ptreg_write_options *opt);
/* Whether ptreg_cloud_write can put normals in the format: PLY, PCD and
 * text (and AUTO, decided by the path) can; LAS and .pos
 * cannot, and a cloud with normals written there with with_normals set is
 * PTREG_ERR_ARG naming the formats that can (rather than losing them). */
PTREG_API int ptreg_format_holds_normals(ptreg_format format);
/* Writes atomically: to a temporary file in the same folder, then renamed
 * over path, so a failure leaves no partial file. */
PTREG_API ptreg_status ptreg_cloud_write(const char *path, const ptreg_cloud *cloud, const ptreg_write_options *opt,
                                         ptreg_error *err);

/* A 4x4 transform file: 16 numbers (row-major, whitespace/comma separated,
 * '#' comments) or 12 (the top three rows); or JSON, an object with
 * "transformation": 4 rows of 4 numbers (what the commands' --json print),
 * or those rows alone. */
PTREG_API ptreg_status ptreg_transform_read(const char *path, double T[16], ptreg_error *err);
/* Text, four rows of four %.17g numbers; to a path ending .json, JSON:
 * {"transformation": [[r0], [r1], [r2], [r3]]}. Atomic. */
PTREG_API ptreg_status ptreg_transform_write(const char *path, const double T[16], ptreg_error *err);

/* ---- volumes ------------------------------------------------------------- */

typedef enum ptreg_volume_format {
    PTREG_VOLUME_AUTO = 0, /* by extension (.nrrd .nhdr .nii .nii.gz .raw), then by content */
    PTREG_VOLUME_RAW,      /* headerless voxels: sizes and type from ptreg_raw_options */
    PTREG_VOLUME_NRRD,     /* NRRD 1-5: raw, gzip or ascii encoding, attached or detached */
    PTREG_VOLUME_NIFTI     /* NIfTI-1 single file (.nii, or .nii.gz) */
} ptreg_volume_format;

/* How to read a headerless volume. Sizes of 0 (and type_set 0) are taken
 * from a file name of the form NAME_XxYxZ_TYPE.raw (tooth_103x94x161_uint8.raw),
 * the naming of the classic volume collections. */
typedef struct ptreg_raw_options {
    size_t dims[3];
    ptreg_voxel_type type;
    int type_set;
    int big_endian;    /* default 0 (little) */
    double spacing[3]; /* default 1, 1, 1 */
} ptreg_raw_options;
PTREG_API void ptreg_raw_options_default(ptreg_raw_options *opt);

/* Reads a volume. raw is used for PTREG_VOLUME_RAW only (may be NULL
 * otherwise). Sizes are checked against what the file holds before
 * anything is allocated; on failure *vol is left empty and err names the
 * file and the place (header line or byte offset). */
PTREG_API ptreg_status ptreg_volume_read(const char *path, ptreg_volume_format format, const ptreg_raw_options *raw,
                                         ptreg_volume *vol, ptreg_error *err);

/* Writes a volume, atomically, in the format of path's extension (any
 * case): .nrrd a NRRD file (attached, raw little-endian data, spacings and
 * origin), .nii a NIfTI-1 single file (the 348-byte header, little-endian,
 * data at byte 352: sizes each at most 32767, the voxel type, spacing, and
 * the origin as the sform's and qform's translation). Another extension
 * (a detached .nhdr, a compressed .nii.gz among them) is PTREG_ERR_ARG,
 * nothing written. */
PTREG_API ptreg_status ptreg_volume_write(const char *path, const ptreg_volume *vol, ptreg_error *err);

/* Writes keypoints, atomically, as PLY (by extension .ply: float x y z
 * score, int i j k) or CSV (.csv .txt: header x,y,z,score,i,j,k): x y z are
 * physical coordinates origin + index * spacing from geometry (voxel
 * indices when geometry is NULL), i j k the voxel. */
PTREG_API ptreg_status ptreg_keypoints_write(const char *path, const ptreg_keypoint *kp, size_t n,
                                             const ptreg_volume *geometry, ptreg_error *err);

/* ---- NumPy arrays ----------------------------------------------------------- */

typedef enum ptreg_npy_type { PTREG_NPY_F32 = 0, PTREG_NPY_F64, PTREG_NPY_I32, PTREG_NPY_U8 } ptreg_npy_type;

/* The longest header ptreg_npy_header writes. */
#define PTREG_NPY_HEADER_MAX 192

/* The header of a C-order rows x cols array (format 1.0; its length, a
 * multiple of 64, is returned): the data follows it, little-endian. */
PTREG_API size_t ptreg_npy_header(ptreg_npy_type type, size_t rows, size_t cols, char buf[PTREG_NPY_HEADER_MAX]);
/* Writes a rows x cols array (values in the host's order), atomically. */
PTREG_API ptreg_status ptreg_npy_write(const char *path, ptreg_npy_type type, const void *data, size_t rows,
                                       size_t cols, ptreg_error *err);

/* ---- pairs files (ptreg batch) ---------------------------------------------- */

/* Many small registration problems (docs/FORMATS.md, "ptreg pairs file"):
 * pair i registers source points [source_offset[i], source_offset[i + 1])
 * onto target i's points, or onto the one shared target (targets == 1).
 * Offsets count points; points are interleaved x y z. */
typedef struct ptreg_pairs_file {
    size_t count;                          /* pairs */
    size_t targets;                        /* 1 (shared) or count */
    size_t *source_offset, *target_offset; /* count + 1, targets + 1 */
    float *source, *target;
} ptreg_pairs_file;

PTREG_API void ptreg_pairs_file_free(ptreg_pairs_file *pf);
/* Reads a pairs file: every pair and target has points, every coordinate
 * is finite, and the size is exactly what the counts imply (else
 * PTREG_ERR_FORMAT naming the byte). On failure *pf is left empty. */
PTREG_API ptreg_status ptreg_pairs_read(const char *path, ptreg_pairs_file *pf, ptreg_error *err);

/* ---- point descriptors ---------------------------------------------------- */

/* Writes n rows of `bins` float descriptors, atomically, by extension:
 *   .pcd  one field `field` (e.g. "fpfh", "pfh") of COUNT bins, TYPE F,
 *         binary: the layout PCL gives FPFHSignature33 / PFHSignature125,
 *         so pcl::io::loadPCDFile reads it;
 *   .npy  NumPy float32 array of shape (n, bins), C order;
 *   .csv .txt  a header f0,f1,... and one row per point (%.9g, "nan").
 * NaN rows (points without a descriptor) are written as NaN. */
PTREG_API ptreg_status ptreg_descriptors_write(const char *path, const float *values, size_t n, int bins,
                                               const char *field, ptreg_error *err);

/* ---- many poses, index pairs ---- */

/* A poses file: 16 numbers per pose (four rows of four, row-major), '#'
 * comments; each pose rigid (an orthonormal rotation to 1e-6 over 0 0 0 1).
 * *poses (count x 16) is the caller's to free. */
PTREG_API ptreg_status ptreg_poses_read(const char *path, double **poses, size_t *count, ptreg_error *err);
/* "# pose I: LABEL" (labels may be NULL) and four rows per pose, %.17g; atomic. */
PTREG_API ptreg_status ptreg_poses_write(const char *path, const double *poses, size_t count, const char *const *labels,
                                         ptreg_error *err);
/* Two indices per line, each below limit, never one with itself; *pairs
 * (2 x count) is the caller's to free. */
PTREG_API ptreg_status ptreg_index_pairs_read(const char *path, size_t limit, size_t **pairs, size_t *count,
                                              ptreg_error *err);

/* ---- correspondence files ---- */

/* One pair per line: "SOURCE TARGET" or "SOURCE TARGET WEIGHT" (0-based
 * point indices below ns and nt, a weight >= 0), every pair with the same
 * columns, '#' comments, blanks or commas between (docs/FORMATS.md).
 * *source, *target and, with three columns, *weights (else NULL; weights
 * may be NULL) are the caller's to free. No pair is PTREG_ERR_FORMAT. */
PTREG_API ptreg_status ptreg_correspondences_read(const char *path, size_t ns, size_t nt, uint32_t **source,
                                                  uint32_t **target, double **weights, size_t *count, ptreg_error *err);
/* "SOURCE TARGET" per line after a comment naming the columns; atomic. */
PTREG_API ptreg_status ptreg_correspondences_write(const char *path, const uint32_t *source, const uint32_t *target,
                                                   size_t count, ptreg_error *err);

/* ---- trajectories: TUM and KITTI ---- */

typedef enum ptreg_trajectory_format {
    PTREG_TRAJECTORY_TUM = 0, /* "timestamp tx ty tz qx qy qz qw" a line */
    PTREG_TRAJECTORY_KITTI    /* a 3x4 row-major [R | t] a line (12 numbers), no times */
} ptreg_trajectory_format;

/* Poses over time, as TUM and KITTI trajectory files hold them
 * (docs/FORMATS.md). */
typedef struct ptreg_trajectory {
    size_t n;
    double *t;    /* n timestamps, increasing (KITTI: 0, 1, 2, ..., the poses' indices) */
    double *pose; /* n x 16: row-major 4x4 poses */
    ptreg_trajectory_format format;
} ptreg_trajectory;

/* How far from rigid a KITTI line's [R | t] may be (PTREG_RIGID_TOL's
 * measure): the files print about 7 digits. */
#define PTREG_TRAJECTORY_RIGID_TOL 1e-4

/* Reads a trajectory; the first pose line decides its format (8 numbers:
 * TUM, 12: KITTI). Blank lines and '#' comments skipped; a line that is
 * not the format's finite numbers (a TUM quaternion not zero, a KITTI
 * matrix rigid), a timestamp that does not increase, or no pose at all is
 * PTREG_ERR_FORMAT naming the file and line; IO when it cannot be opened.
 * tr holds nothing on failure (ptreg_trajectory_free otherwise). */
PTREG_API ptreg_status ptreg_trajectory_read(const char *path, ptreg_trajectory *tr, ptreg_error *err);
/* The pose at time t: the line whose timestamp rounds to t's microsecond
 * (TUM files carry six decimals), or NULL when none does. */
PTREG_API const double *ptreg_trajectory_at(const ptreg_trajectory *tr, double t);
PTREG_API void ptreg_trajectory_free(ptreg_trajectory *tr);
/* KITTI's calib.txt: its "Tr:" line (the raw data's calib_velo_to_cam:
 * "Tr_velo_to_cam:"), the velodyne-to-camera motion whose frame KITTI's
 * poses.txt is in: pose_camera = Tr pose_velodyne Tr^-1. PTREG_ERR_FORMAT
 * naming the file (and the line of a bad Tr). */
PTREG_API ptreg_status ptreg_kitti_calib_read(const char *path, double Tr[16], ptreg_error *err);

/* ---- the frame stream ---- */

/* Frames one after another on a pipe (docs/FORMATS.md, "frame stream"):
 * each the 4 bytes "PTF1", a little-endian uint64 point count, a
 * little-endian double timestamp, then count x, y, z as little-endian
 * float32. in is the caller's (a pipe, stdin); offset and frames count
 * what has been read, for the messages. */
typedef struct ptreg_frame_stream {
    FILE *in;
    uint64_t offset; /* bytes read */
    size_t frames;   /* frames read */
} ptreg_frame_stream;

/* The next frame: its points (those with a non-finite coordinate dropped
 * and counted; none is a frame too) and its timestamp, or *end = 1 at the
 * stream's clean end. A cut-short header or frame, a missing magic or a
 * count that cannot be held is PTREG_ERR_FORMAT ("frame I at byte B: ...");
 * NOMEM when the points do not fit. Either leaves the stream unusable;
 * frame holds nothing then (ptreg_cloud_free otherwise). Memory grows with
 * the bytes that come, never with the count alone. */
PTREG_API ptreg_status ptreg_frame_stream_next(ptreg_frame_stream *s, ptreg_cloud *frame, double *t, int *end,
                                               ptreg_error *err);

/* ---- atomic output files ---- */

/* How the library writes its files, for its callers' files too: write to a
 * temporary file in the target's folder, then rename it over the target,
 * so readers see the old file or the whole new one, and a failure leaves
 * nothing.
 *
 *     ptreg_atomic_file af;
 *     if (ptreg_atomic_open(path, &af, err) != PTREG_OK) return ...;
 *     fprintf(af.fp, ...);                     // any stdio output
 *     return ptreg_atomic_commit(&af, err);    // or ptreg_atomic_abort(&af)
 *
 * Commit checks every write (the stream's error flag, fflush, fclose)
 * before the rename. No fsync: a crash of the machine may lose the new
 * file, never leave a half-written one under the target's name. */
typedef struct ptreg_atomic_file {
    FILE *fp;         /* the temporary file, open for binary writing */
    char *path;       /* the target */
    char *tmp_path;   /* the temporary file, in the target's folder */
    int shared;       /* set after open: a file kept across runs (the tuner's
                       cache), never journaled, so never removed */
    int journal_room; /* internal: room for its commit is held in the journal */
} ptreg_atomic_file;

/* Creates the temporary file. On failure (PTREG_ERR_IO naming path and the
 * system's reason, or NOMEM) nothing is left on disk and af holds nothing
 * to release. The new file gets the target's permission bits when the
 * target exists, else 0666 less the process's umask, as any new file. A
 * symlink is followed to its target (created when the link dangles), which
 * is replaced: the link stays a link. */
PTREG_API ptreg_status ptreg_atomic_open(const char *path, ptreg_atomic_file *af, ptreg_error *err);
/* Closes the temporary file and renames it over the target. On failure the
 * temporary file is removed and the target is untouched. af is released
 * either way. */
PTREG_API ptreg_status ptreg_atomic_commit(ptreg_atomic_file *af, ptreg_error *err);
/* Closes and removes the temporary file; the target is untouched. Safe to
 * call on an af already committed or aborted. */
PTREG_API void ptreg_atomic_abort(ptreg_atomic_file *af);

/* A run's outputs as one: between begin and end every committed target is
 * noted, and end(1) removes them all, so that a run that fails after
 * writing some of its files leaves none (the CLI: any exit but 0). A file
 * that a removed output had replaced is gone too. Process-wide; library
 * callers that never begin pay nothing. */
PTREG_API void ptreg_atomic_journal_begin(void);
PTREG_API void ptreg_atomic_journal_end(int remove_files);

#ifdef __cplusplus
}
#endif

#endif
