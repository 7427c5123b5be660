/* KITTI's velodyne scans (.bin): little-endian float32 records x, y, z,
 * reflectance, 16 bytes each, nothing else (the odometry benchmark's
 * devkit, readme.txt). The point count is the file's size / 16; a size
 * that is not a whole number of records is an error naming where the
 * last record breaks off. Reflectance (0 to 1) is kept as intensity
 * (x 65535) when the options ask for attributes, and written back the
 * same way. */
#include "io/io_internal.h"

#include <math.h>

#define KITTI_RECORD 16

ptreg_status io_read_kitti(const io_in *in, ptreg_cloud *cloud)
{
    if (in->size % KITTI_RECORD)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size - in->size % KITTI_RECORD,
                            "a KITTI .bin file is 16-byte records (x y z reflectance, float32): %zu whole ones, "
                            "then %zu bytes (truncated?)",
                            in->size / KITTI_RECORD, in->size % KITTI_RECORD);
    const size_t n = in->size / KITTI_RECORD;
    ptreg_status st = io_cloud_reserve(in, cloud, n, 0);
    st = st ? st : io_cloud_add_intensity(in, cloud);
    for (size_t i = 0; !st && i < n; i++) {
        const unsigned char *r = in->data + KITTI_RECORD * i;
        io_point p = {{0, 0, 0}, {0, 0, 0}, 0, 0, {0, 0, 0}};
        for (int k = 0; k < 3; k++)
            p.xyz[k] = io_load_float(r + 4 * k, IO_F32, 0);
        p.intensity = io_intensity_u16(65535.0 * io_load_float(r + 12, IO_F32, 0));
        st = io_cloud_store(in, cloud, &p);
        io_cloud_at(in, KITTI_RECORD * (i + 1));
    }
    return st ? st : io_cloud_finish(in, cloud, n, 0, in->size);
}

void io_write_kitti(FILE *f, const ptreg_cloud *cloud)
{
    enum { CHUNK = 1024 };
    unsigned char buf[CHUNK * KITTI_RECORD];
    for (size_t i = 0; i < cloud->n; i += CHUNK) {
        const size_t m = cloud->n - i < CHUNK ? cloud->n - i : CHUNK;
        for (size_t j = 0; j < m; j++) {
            const float *q = cloud->xyz + 3 * (i + j);
            unsigned char *r = buf + KITTI_RECORD * j;
            for (int k = 0; k < 3; k++)
                io_store_f32le(r + 4 * k, q[k]);
            io_store_f32le(r + 12, cloud->intensity ? (float)(cloud->intensity[i + j] / 65535.0) : 0.0f);
        }
        fwrite(buf, KITTI_RECORD, m, f);
    }
}
