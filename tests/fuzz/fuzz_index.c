/* libFuzzer entry point for the model index loader (.pti). Most inputs get
 * their file size and checksum repaired first, so that mutations reach the
 * deep checks behind the checksum; the rest are loaded as they are. A load
 * either fails with a message naming the input, or gives an index whose
 * every search answers with a real model point. See run.sh. */
#include "nn/index_impl.h"
#include "ptreg/nn.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER_BYTES 64

static void repair(uint8_t *buf, size_t size)
{
    uint64_t file_size = size, h = pti_checksum(buf + HEADER_BYTES, size - HEADER_BYTES);
    memcpy(buf + 16, &file_size, sizeof file_size);
    memcpy(buf + 24, &h, sizeof h);
}

static void search_all(const ptreg_model_index *idx)
{
    static const float q[] = {0, 0, 0, 1, 2, 3, -50, 7, 0.5f, 1e6f, -1e6f, 3, 0.25f, 0.25f, 0.25f};
    enum { NQ = sizeof q / sizeof q[0] / 3 };
    size_t n;
    ptreg_model_index_points(idx, &n);
    for (int s = PTREG_NN_KDTREE; s <= PTREG_NN_DELAUNAY_PNN; s++) {
        uint32_t nearest[NQ], seed[NQ] = {0, 1, 2, 3, PTREG_NO_NEIGHBOR};
        float d2[NQ];
        if (ptreg_model_index_nearest(idx, q, NQ, (ptreg_nn_method)s, seed, nearest, d2, NULL, NULL))
            continue;
        for (int i = 0; i < NQ; i++)
            if (nearest[i] >= n)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (size >= HEADER_BYTES && data[size - 1] % 8 != 0)
        repair(buf, size);
    ptreg_model_index *idx;
    ptreg_error err;
    ptreg_status st = ptreg_model_index_load_memory(buf, size, "fuzz", &idx, &err);
    free(buf);
    if (st == PTREG_OK) {
        search_all(idx);
        ptreg_model_index_destroy(idx);
    } else if (st != PTREG_ERR_FORMAT || !strstr(err.message, "fuzz")) {
        abort();
    }
    return 0;
}
