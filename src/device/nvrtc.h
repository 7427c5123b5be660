/* NVRTC, loaded at run time (cuda.c): used by the CUDA backend, and by the
 * test that compiles every kernel for sm_90 on machines without a GPU. In
 * a build without the CUDA backend these answer PTREG_ERR_UNSUPPORTED. */
#ifndef PTREG_DEVICE_NVRTC_H
#define PTREG_DEVICE_NVRTC_H

#include <stddef.h>

#include "ptreg/core.h"

typedef struct nvrtc_output {
    char *image; /* cubin, or PTX text */
    size_t size;
    char *log; /* the compiler's log (with verbose: ptxas's resources), or NULL */
} nvrtc_output;

/* Whether NVRTC can be loaded; note says why not. */
int nvrtc_available(char *note, size_t note_size);
/* Compiles source (a whole program: kernel_program_source) with the
 * -D options in defines for arch (90: sm_90), to a cubin, or to PTX for
 * compute_<arch> (ptx = 1). verbose asks ptxas for its resource report. */
ptreg_status nvrtc_compile(const char *source, const char *defines, const char *label, int arch, int ptx, int verbose,
                           nvrtc_output *out, ptreg_error *err);
void nvrtc_output_free(nvrtc_output *out);

#endif
