/* The neighbourhood engine in bounded memory: a cloud too large for one
 * k-d tree beside its results is cut into tiles of nearby points (median
 * splits of an index array, 4 bytes a point), and each tile's
 * neighbourhoods are found in a tree of the tile and a halo of the points
 * within H of it. A list is final when everything it could hold lies in
 * the halo (its reach, the k-th distance or the radius, within H); a tile
 * with a list that is not is searched again with H doubled. The lists are
 * those of one tree over the whole cloud, bit for bit: the same points,
 * and a tile's points kept in the cloud's index order, so ties fall the
 * same way. */
#ifndef PTREG_NN_TILES_H
#define PTREG_NN_TILES_H

#include "nn/hoods.h"

/* Clouds from this many points on are searched by tiles (below, one tree)
 * of this many points. */
#define NN_TILED_MIN ((size_t)1 << 22)
#define NN_TILE_POINTS ((size_t)1 << 20)

/* Every point's neighbourhood (nb as nn_check_neighborhood takes it; radius
 * lists sorted), tile by tile, each tile of at most tile_points points,
 * handed to fn in blocks of final lists (point[] and the lists' indices in
 * the whole cloud; each point once). */
ptreg_status nn_hoods_tiled(const float *xyz, size_t n, const ptreg_neighborhood *nb, size_t tile_points,
                            nn_block_fn fn, void *ctx, ptreg_error *err);

#endif
