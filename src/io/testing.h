/* The formats' test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_IO_TESTING_H
#define PTREG_IO_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/io.h"
#include "ptreg/apt.h"
#include "ptreg/lddmm_model.h"

#ifdef __cplusplus
extern "C" {
#endif

ptreg_status ptreg_cloud_read_memory(const void *data, size_t size, ptreg_format format, const char *name,
                                     ptreg_cloud *cloud, ptreg_error *err);

ptreg_status ptreg_cloud_read_memory_with(const void *data, size_t size, const ptreg_read_options *opt,
                                          const char *name, ptreg_cloud *cloud, ptreg_error *err);

ptreg_status ptreg_las_header_read_memory(const void *data, size_t size, const char *name, ptreg_las_header *header,
                                          ptreg_error *err);

ptreg_status ptreg_transform_read_memory(const void *data, size_t size, const char *name, double T[16],
                                         ptreg_error *err);

/* ptreg_trajectory_read's parser on bytes in memory (TUM or KITTI). */
ptreg_status ptreg_trajectory_read_memory(const void *data, size_t size, const char *name, ptreg_trajectory *tr,
                                          ptreg_error *err);

/* A detached NRRD header cannot be read this way. */
ptreg_status ptreg_volume_read_memory(const void *data, size_t size, ptreg_volume_format format, const char *name,
                                      const ptreg_raw_options *raw, ptreg_volume *vol, ptreg_error *err);

ptreg_status ptreg_pairs_read_memory(const void *data, size_t size, const char *name, ptreg_pairs_file *pf,
                                     ptreg_error *err);

ptreg_status ptreg_poses_read_memory(const void *data, size_t size, const char *name, double **poses, size_t *count,
                                     ptreg_error *err);

ptreg_status ptreg_index_pairs_read_memory(const void *data, size_t size, const char *name, size_t limit,
                                           size_t **pairs, size_t *count, ptreg_error *err);

ptreg_status ptreg_correspondences_read_memory(const void *data, size_t size, const char *name, size_t ns, size_t nt,
                                               uint32_t **source, uint32_t **target, double **weights, size_t *count,
                                               ptreg_error *err);

ptreg_status ptreg_apt_read_memory(const void *data, size_t size, ptreg_apt_format format, const char *name,
                                   ptreg_apt *apt, ptreg_error *err);

ptreg_status ptreg_ranges_read_memory(const void *data, size_t size, const char *name, ptreg_ranges *ranges,
                                      ptreg_error *err);

ptreg_status ptreg_lddmm_model_read_memory(const void *data, size_t size, const char *name, ptreg_lddmm_model *model,
                                           ptreg_error *err);

ptreg_status ptreg_landmark_table_read_memory(const void *data, size_t size, const char *name, size_t row, double **xyz,
                                              size_t *n, ptreg_error *err);

size_t ptreg_npy_type_size(ptreg_npy_type type);

const char *ptreg_volume_format_name(ptreg_volume_format format);

void ptreg_pairs_file_init(ptreg_pairs_file *pf);

void ptreg_apt_init(ptreg_apt *apt);

ptreg_status ptreg_pairs_write(const char *path, const ptreg_pairs_file *pf, ptreg_error *err);

/* Reads and checks the header block as the reader does (the same errors,
 * PTREG_ERR_FORMAT naming the byte; LAZ and versions past 1.4
 * PTREG_ERR_UNSUPPORTED). */
ptreg_status ptreg_las_header_read(const char *path, ptreg_las_header *header, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
