#define _GNU_SOURCE /* strdup, RTLD_* */
/* libnvrtc-standin.so: the real NVRTC behind the functions ptreg loads
 * (src/device/cuda.c), plus one thing: every image it hands out (cubin or
 * PTX) is recorded with the source and options that made it (record.c), so
 * that the stand-in driver can run that same source on POCL. Compilation
 * stays real: the image ptreg loads is the real NVRTC's output, byte for
 * byte. ptreg finds this library through PTREG_NVRTC; the real one is
 * $CUDA_STANDIN_REAL_NVRTC, else the first libnvrtc.so.13, libnvrtc.so.12,
 * libnvrtc.so the loader finds. */
#include <nvrtc.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

#define NVRTC_CALLS(X)           \
    X(nvrtcVersion)              \
    X(nvrtcCreateProgram)        \
    X(nvrtcCompileProgram)       \
    X(nvrtcGetProgramLogSize)    \
    X(nvrtcGetProgramLog)        \
    X(nvrtcGetCUBINSize)         \
    X(nvrtcGetCUBIN)             \
    X(nvrtcGetPTXSize)           \
    X(nvrtcGetPTX)               \
    X(nvrtcDestroyProgram)       \
    X(nvrtcGetErrorString)       \
    X(nvrtcGetNumSupportedArchs) \
    X(nvrtcGetSupportedArchs)

#define DECLARE(f) __typeof__(f) *f;
static struct {
    NVRTC_CALLS(DECLARE)
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

static void load_real(void)
{
    const char *env = getenv("CUDA_STANDIN_REAL_NVRTC");
    const char *names[] = {env && *env ? env : "libnvrtc.so.13", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                           "/usr/local/cuda/lib64/libnvrtc.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cuda-standin: the NVRTC recorder found no real NVRTC (set CUDA_STANDIN_REAL_NVRTC)\n");
        return;
    }
#define LOAD(f)                                                         \
    if (!(*(void **)&real.f = dlsym(lib, #f))) {                        \
        fprintf(stderr, "cuda-standin: the real NVRTC lacks %s\n", #f); \
        return;                                                         \
    }
    NVRTC_CALLS(LOAD)
    loaded = 1;
}

static int ready(void)
{
    pthread_once(&once, load_real);
    return loaded;
}

/* What each live program was made from. */
typedef struct program_note {
    struct program_note *next;
    nvrtcProgram program;
    char *source, *name;
    int noptions;
    char **options;
} program_note;

static pthread_mutex_t notes_lock = PTHREAD_MUTEX_INITIALIZER;
static program_note *notes;

static program_note *find_note(nvrtcProgram p)
{
    for (program_note *n = notes; n; n = n->next)
        if (n->program == p)
            return n;
    return NULL;
}

static void free_options(program_note *n)
{
    for (int i = 0; i < n->noptions; i++)
        free(n->options[i]);
    free(n->options);
    n->options = NULL;
    n->noptions = 0;
}

nvrtcResult nvrtcVersion(int *major, int *minor)
{
    return ready() ? real.nvrtcVersion(major, minor) : NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
                               const char *const *headers, const char *const *includeNames)
{
    if (!ready())
        return NVRTC_ERROR_INTERNAL_ERROR;
    if (numHeaders) {
        fprintf(stderr, "cuda-standin: the recorder takes whole sources, not NVRTC headers\n");
        return NVRTC_ERROR_INVALID_INPUT;
    }
    nvrtcResult rc = real.nvrtcCreateProgram(prog, src, name, numHeaders, headers, includeNames);
    if (rc != NVRTC_SUCCESS)
        return rc;
    program_note *n = calloc(1, sizeof *n);
    if (!n || !(n->source = strdup(src)) || !(n->name = strdup(name ? name : ""))) {
        if (n)
            free(n->source);
        free(n);
        real.nvrtcDestroyProgram(prog);
        return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    n->program = *prog;
    pthread_mutex_lock(&notes_lock);
    n->next = notes;
    notes = n;
    pthread_mutex_unlock(&notes_lock);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options)
{
    if (!ready())
        return NVRTC_ERROR_INTERNAL_ERROR;
    pthread_mutex_lock(&notes_lock);
    program_note *n = find_note(prog);
    int ok = n != NULL;
    if (n) {
        free_options(n);
        n->options = calloc((size_t)numOptions + 1, sizeof *n->options);
        ok = n->options != NULL;
        for (int i = 0; ok && i < numOptions; i++, n->noptions++)
            ok = (n->options[i] = strdup(options[i])) != NULL;
    }
    pthread_mutex_unlock(&notes_lock);
    if (!ok)
        return NVRTC_ERROR_INVALID_PROGRAM;
    return real.nvrtcCompileProgram(prog, numOptions, options);
}

/* The image's record, written before ptreg sees the image. */
static nvrtcResult record(nvrtcProgram prog, const char *image, size_t size)
{
    char key[33];
    standin_image_key(image, size, key);
    pthread_mutex_lock(&notes_lock);
    program_note *n = find_note(prog);
    int rc = n ? standin_record_write(key, n->name, n->source, n->noptions, (const char *const *)n->options) : -1;
    pthread_mutex_unlock(&notes_lock);
    if (rc) {
        fprintf(stderr, "cuda-standin: cannot record image %s (CUDA_STANDIN_DIR: %s)\n", key,
                getenv("CUDA_STANDIN_DIR") ? getenv("CUDA_STANDIN_DIR") : "not set");
        return NVRTC_ERROR_INTERNAL_ERROR;
    }
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin)
{
    size_t size = 0;
    if (!ready())
        return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcResult rc = real.nvrtcGetCUBIN(prog, cubin);
    if (rc == NVRTC_SUCCESS)
        rc = real.nvrtcGetCUBINSize(prog, &size);
    return rc == NVRTC_SUCCESS ? record(prog, cubin, size) : rc;
}

nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx)
{
    size_t size = 0;
    if (!ready())
        return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcResult rc = real.nvrtcGetPTX(prog, ptx);
    if (rc == NVRTC_SUCCESS)
        rc = real.nvrtcGetPTXSize(prog, &size);
    return rc == NVRTC_SUCCESS ? record(prog, ptx, size) : rc;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
    if (!ready())
        return NVRTC_ERROR_INTERNAL_ERROR;
    pthread_mutex_lock(&notes_lock);
    for (program_note **p = &notes; *p; p = &(*p)->next)
        if ((*p)->program == *prog) {
            program_note *n = *p;
            *p = n->next;
            free_options(n);
            free(n->source);
            free(n->name);
            free(n);
            break;
        }
    pthread_mutex_unlock(&notes_lock);
    return real.nvrtcDestroyProgram(prog);
}

/* The rest pass straight through. */
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *size)
{
    return ready() ? real.nvrtcGetProgramLogSize(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log)
{
    return ready() ? real.nvrtcGetProgramLog(prog, log) : NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size)
{
    return ready() ? real.nvrtcGetCUBINSize(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *size)
{
    return ready() ? real.nvrtcGetPTXSize(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
}

const char *nvrtcGetErrorString(nvrtcResult result)
{
    return ready() ? real.nvrtcGetErrorString(result) : "the stand-in's NVRTC recorder found no real NVRTC";
}

nvrtcResult nvrtcGetNumSupportedArchs(int *count)
{
    return ready() ? real.nvrtcGetNumSupportedArchs(count) : NVRTC_ERROR_INTERNAL_ERROR;
}

nvrtcResult nvrtcGetSupportedArchs(int *archs)
{
    return ready() ? real.nvrtcGetSupportedArchs(archs) : NVRTC_ERROR_INTERNAL_ERROR;
}
