/* libFuzzer entry point for the tiled map reader (.ptm, ptreg localize's
 * prior map). The input is written to a file (the reader reads tiles from
 * one, as they are needed) and opened; an open map has every tile read. A
 * bad file must fail with PTREG_ERR_FORMAT naming it, never crash nor
 * allocate beyond what the file holds. See run.sh. */
#define _POSIX_C_SOURCE 200809L
#include "ptreg/odometry.h"
#include "reg/odometry/tiled_map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void read_every_tile(const ptreg_tiled_map *m)
{
    ptreg_tiled_map_info info;
    ptreg_tiled_map_get_info(m, &info);
    const map_tile *tiles = tiled_map_tiles(m);
    const double shift[3] = {0.0, 0.0, 0.0};
    for (size_t t = 0; t < info.tiles; t++) {
        double *pts = malloc(3 * (tiles[t].count ? (size_t)tiles[t].count : 1) * sizeof *pts);
        ptreg_error err;
        if (!pts)
            abort();
        ptreg_status st = tiled_map_read(m, t, shift, pts, &err);
        if (st != PTREG_OK && (st != PTREG_ERR_FORMAT || !strstr(err.message, path)))
            abort();
        free(pts);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_tiles_%ld.ptm", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f))
        abort();
    ptreg_tiled_map *m;
    ptreg_error err;
    ptreg_status st = tiled_map_open(path, &m, &err);
    if (st == PTREG_OK) {
        read_every_tile(m);
        ptreg_tiled_map_close(m);
    } else if (st != PTREG_ERR_FORMAT || !strstr(err.message, path)) {
        abort();
    }
    return 0;
}
