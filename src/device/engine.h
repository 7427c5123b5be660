/* An algorithm's engines and the choice among them: each engine says which
 * backends it runs on and whether it runs the caller's options on a given
 * device, asked with that device's description (its double precision, its
 * work-group limit) the way ggml's backends answer supports_op. An
 * algorithm lists its engines once; which devices it can use follows from
 * the list and is written nowhere else. */
#ifndef PTREG_DEVICE_ENGINE_H
#define PTREG_DEVICE_ENGINE_H

#include <stddef.h>

#include "ptreg/device.h"

typedef struct engine {
    unsigned backends; /* PTREG_BACKEND_BIT()s it runs on */
    /* PTREG_OK when it runs `options` (the algorithm's struct) on `device`;
     * else PTREG_ERR_UNSUPPORTED and why in err (may be NULL). NULL: it
     * runs every option. */
    ptreg_status (*supports)(const void *options, const ptreg_device_info *device, ptreg_error *err);
} engine;

/* The backends of a GPU engine: every GPU backend this layer has. */
#define ENGINE_GPU_BACKENDS (PTREG_BACKEND_BIT(PTREG_BACKEND_CUDA) | PTREG_BACKEND_BIT(PTREG_BACKEND_OPENCL))

/* A CPU engine that runs every option: most algorithms'. */
extern const engine engine_cpu;

/* PTREG_ERR_UNSUPPORTED: "WHAT runs on the CPU only, not on DEVICE", for
 * an engine's supports() (a reference loop, which is the CPU's by
 * definition). */
ptreg_status engine_cpu_only(const char *what, const ptreg_device_info *device, ptreg_error *err);

/* The device `request` names (ptreg_device_resolve over the engines'
 * backends) and the engine that runs the options there, in *chosen (may
 * be NULL): the one choice a call makes, which its run then keeps (an
 * algorithm whose engines extend `engine` casts it back). Where the engine
 * cannot run them, auto (and env PTREG_DEVICE's choice) falls back to the
 * CPU, and a device asked for by name is the engine's error. options: the
 * algorithm's struct, as supports() reads it (NULL where none reads it). */
ptreg_status engine_choose(const engine *const *engines, size_t count, const ptreg_device *request, const void *options,
                           const char *operation, ptreg_device *on, const engine **chosen, ptreg_error *err);

#endif
