/* The CUDA driver stand-in's inside (README.md): what its parts share.
 *   image.c    reads a cubin (the real NVRTC's output): kernels, parameters,
 *              registers, shared memory, launch bounds, the CUDA version;
 *   record.c   the records that tie an image to the source NVRTC compiled
 *              (written by the NVRTC recorder, read by the driver);
 *   pocl.c     runs a kernel of that source on POCL, with red zones;
 *   driver.c   the driver API ptreg calls, the limits, faults and report. */
#ifndef PTREG_CUDA_STANDIN_H
#define PTREG_CUDA_STANDIN_H

#include <stddef.h>
#include <stdint.h>

/* ---- images ---- */

#define STANDIN_MAX_PARAMS 128

typedef struct standin_kernel_info {
    char name[128];
    unsigned nparams;
    uint16_t param_offset[STANDIN_MAX_PARAMS];
    uint16_t param_size[STANDIN_MAX_PARAMS];
    unsigned registers;      /* per thread */
    unsigned shared_bytes;   /* static shared memory, without the 1 KiB the system reserves */
    unsigned frame_bytes;    /* local memory per thread (spills, arrays) */
    unsigned max_threads[3]; /* __launch_bounds__ / maxntid; 0: none */
} standin_kernel_info;

typedef struct standin_image {
    int arch;         /* 90 for sm_90 */
    int cuda_version; /* of the compiler that made it: 13000 for 13.0 */
    size_t size;      /* bytes, read from the ELF headers */
    size_t kernel_count;
    standin_kernel_info *kernels;
} standin_image;

/* Reads a cubin; 0, or -1 with why filled. */
int standin_image_read(const void *data, standin_image *image, char *why, size_t why_size);
void standin_image_free(standin_image *image);
const standin_kernel_info *standin_image_kernel(const standin_image *image, const char *name);

/* ---- records ---- */

/* 32 hex digits naming an image by its bytes. */
void standin_image_key(const void *data, size_t size, char key[33]);
/* The folder of records: $CUDA_STANDIN_DIR/images (created), or NULL. */
const char *standin_record_dir(void);
/* Writes the record of an image: the options NVRTC was given and the
 * source. 0 or -1. */
int standin_record_write(const char *key, const char *name, const char *source, int noptions,
                         const char *const *options);
typedef struct standin_record {
    char *name;
    char *source;
    int noptions;
    char **options;
} standin_record;
/* 0, or -1 when there is no record (why filled). */
int standin_record_read(const char *key, standin_record *rec, char *why, size_t why_size);
void standin_record_free(standin_record *rec);

/* ---- POCL ---- */

typedef struct standin_buffer standin_buffer; /* an allocation on POCL */
typedef struct standin_program standin_program;
typedef struct standin_function standin_function;

/* 0, or -1 with why: POCL could not be loaded or has no device. */
int standin_pocl_init(char *why, size_t why_size);
/* POCL's context and queue given back (at exit, once ptreg released all:
 * POCL's worker threads then end before a leak checker stops the world). */
void standin_pocl_shutdown(void);
/* The OpenCL device's largest single allocation. */
uint64_t standin_pocl_max_alloc(void);

/* An allocation of bytes with red zones around it, filled with the fresh
 * pattern. NULL when POCL has no room. */
standin_buffer *standin_buffer_create(size_t bytes);
void standin_buffer_destroy(standin_buffer *b);
int standin_buffer_write(standin_buffer *b, size_t offset, const void *src, size_t bytes);
int standin_buffer_read(standin_buffer *b, size_t offset, void *dst, size_t bytes);
/* Its bytes in the stand-in's memory, which POCL runs on in place: to be
 * read or written only while no launch runs. */
unsigned char *standin_buffer_bytes(standin_buffer *b);
int standin_buffer_fill32(standin_buffer *b, size_t offset, uint32_t word, size_t count);
int standin_buffer_copy(standin_buffer *dst, size_t dst_offset, standin_buffer *src, size_t src_offset, size_t bytes);
/* The first byte of a red zone that is not the pattern any more: its
 * offset from the start of the usable bytes (negative before them), in
 * *at; 0 when both zones are intact, 1 when one was written. */
int standin_buffer_redzone_hit(standin_buffer *b, long long *at);

/* Builds the record's source as OpenCL C (its -D options, the CUDA
 * emulations of prelude), once per source and options. NULL with why. */
standin_program *standin_program_build(const standin_record *rec, char *why, size_t why_size);
void standin_program_release(standin_program *p);
/* The kernel of that name, its parameters checked against the image's:
 * same count, pointers where the OpenCL build has global pointers, and
 * the same sizes elsewhere. NULL with why. */
standin_function *standin_function_create(standin_program *p, const standin_kernel_info *info, char *why,
                                          size_t why_size);
void standin_function_destroy(standin_function *f);
/* Whether parameter i is a global pointer in the OpenCL build; coherent:
 * a pointer to volatile (the incoherent mode's atomics' memory). */
int standin_function_param_is_pointer(const standin_function *f, unsigned i);
int standin_function_param_is_coherent(const standin_function *f, unsigned i);
/* The largest work-group POCL runs this kernel with. */
size_t standin_function_pocl_max_group(const standin_function *f);
/* Argument i: a buffer (b != NULL) or bytes by value. 0 or -1. */
int standin_function_set_arg(standin_function *f, unsigned i, standin_buffer *b, const void *value, size_t size);
/* Runs it and waits; 0, or -1 with why. */
int standin_function_run(standin_function *f, const unsigned grid[3], const unsigned block[3], char *why,
                         size_t why_size);
/* CUDA_STANDIN_INCOHERENT (0: off): how a group's writes reach the others
 * (driver.c's run_incoherent). */
#define STANDIN_INCOHERENT_CUDA 1   /* at the kernel's end, or once the group counted itself in (a release) */
#define STANDIN_INCOHERENT_OPENCL 2 /* at the kernel's end only: OpenCL 1.2 */
int standin_incoherent(void);
/* Group `group` of a 1-D launch of `groups` groups of `block` threads,
 * alone; 0, or -1 with why. */
int standin_function_run_group(standin_function *f, unsigned groups, unsigned group, unsigned block, char *why,
                               size_t why_size);

#endif
