/* The .pti file's bytes as docs/FORMATS.md lays them out, for the tests
 * that read, damage and re-seal index files (written from the format's
 * description, not the library's code). */
#ifndef PTREG_TESTS_PTI_BYTES_H
#define PTREG_TESTS_PTI_BYTES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 64
#define CHECKSUM_AT 24
#define SECTION_BYTES 24

enum {
    TAG_META = 1,
    TAG_POINTS,
    TAG_NODES,
    TAG_CELLS,
    TAG_PARENT,
    TAG_LEAVES,
    TAG_NEAR,
    TAG_CHUNKS,
    TAG_INDEX,
    TAG_SLOT,
    TAG_DT_OFFSET,
    TAG_DT_NBR,
    TAG_TUNE = 17
};

/* The whole file (NULL when it cannot be opened); *size its length. */
static inline unsigned char *read_whole(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(buf, 1, (size_t)n, fp);
    fclose(fp);
    return buf;
}

/* The checksum of every byte after the header: four lanes of FNV-1a 64
 * over 64-bit words with a fold, then FNV-1a 64 of the lanes. */
static inline void fix_checksum(unsigned char *buf, size_t size)
{
    const uint64_t basis = 0xcbf29ce484222325ull, prime = 0x100000001b3ull;
    uint64_t lane[4] = {basis, basis, basis, basis}, h = basis;
    for (size_t at = HEADER_BYTES; at + 32 <= size; at += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, buf + at + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * prime;
            lane[k] ^= lane[k] >> 32;
        }
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 8; b++)
            h = (h ^ ((lane[k] >> (8 * b)) & 0xff)) * prime;
    memcpy(buf + CHECKSUM_AT, &h, sizeof h);
}

/* Where the section with `tag` starts (0: none), from the file's table. */
static inline size_t section_offset(const unsigned char *buf, uint32_t tag)
{
    uint32_t sections;
    memcpy(&sections, buf + 32, sizeof sections);
    for (uint32_t i = 0; i < sections; i++) {
        uint32_t t;
        uint64_t offset;
        memcpy(&t, buf + HEADER_BYTES + i * SECTION_BYTES, sizeof t);
        memcpy(&offset, buf + HEADER_BYTES + i * SECTION_BYTES + 8, sizeof offset);
        if (t == tag)
            return (size_t)offset;
    }
    return 0;
}

#endif
