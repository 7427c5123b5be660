/* The inputs of ptreg batch. Atom-probe data: .pos and .epos records (byte
 * order, every field), sizes that are not whole records, the same files as
 * clouds, and range files (.rrng and .rng: compositions, names, counts
 * checked against the file). Pairs files: round trips, every check of the
 * header, offsets and size. And a seeded mutation run over all of them. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "ptreg/apt.h"
#include "ptreg/io.h"
#include "hooks.h"
#include "core/numeric.h"

static char tmp_dir[64];

static void put_be32(unsigned char *p, uint32_t u)
{
    p[0] = (unsigned char)(u >> 24), p[1] = (unsigned char)(u >> 16), p[2] = (unsigned char)(u >> 8);
    p[3] = (unsigned char)u;
}

static void put_be_float(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    put_be32(p, u);
}

static void test_pos(void)
{
    /* 1.0f is 3f 80 00 00 in big-endian order */
    unsigned char rec[32] = {0x3f, 0x80, 0, 0};
    put_be_float(rec + 4, -2.5f);
    put_be_float(rec + 8, 0.125f);
    put_be_float(rec + 12, 26.98f);
    put_be_float(rec + 16, 3.0f);
    put_be_float(rec + 28, 13.5f);
    ptreg_apt a;
    ptreg_error err;
    CHECK(ptreg_apt_read_memory(rec, 32, PTREG_APT_POS, "x.pos", &a, &err) == PTREG_OK);
    CHECK(a.n == 2 && a.xyz[0] == 1.0f && a.xyz[1] == -2.5f && a.xyz[2] == 0.125f && a.mq[0] == 26.98f);
    CHECK(a.xyz[3] == 3.0f && a.mq[1] == 13.5f && a.tof == NULL);
    ptreg_apt_free(&a);
    /* the format from the name */
    CHECK(ptreg_apt_read_memory(rec, 16, PTREG_APT_AUTO, "a/b.POS", &a, &err) == PTREG_OK && a.n == 1);
    ptreg_apt_free(&a);
    CHECK(ptreg_apt_read_memory(rec, 16, PTREG_APT_AUTO, "b.ply", &a, &err) == PTREG_ERR_ARG);
    /* not a whole number of records: the byte where the last breaks off */
    CHECK(ptreg_apt_read_memory(rec, 23, PTREG_APT_POS, "t.pos", &a, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "t.pos: byte 16") && strstr(err.message, "truncated"), "%s", err.message);
    CHECK(a.n == 0 && a.xyz == NULL);
    CHECK(ptreg_apt_read_memory(rec, 0, PTREG_APT_POS, "e.pos", &a, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "empty"), "%s", err.message);
}

static void test_epos(void)
{
    unsigned char rec[88] = {0};
    for (int r = 0; r < 2; r++) {
        unsigned char *p = rec + 44 * r;
        for (int k = 0; k < 9; k++)
            put_be_float(p + 4 * k, (float)(10 * r + k) + 0.5f);
        put_be32(p + 36, 7u + (uint32_t)r);
        put_be32(p + 40, 0x01020304u);
    }
    ptreg_apt a;
    ptreg_error err;
    CHECK(ptreg_apt_read_memory(rec, sizeof rec, PTREG_APT_EPOS, "x.epos", &a, &err) == PTREG_OK);
    CHECK(a.n == 2 && a.xyz[3] == 10.5f && a.mq[1] == 13.5f && a.tof[0] == 4.5f && a.vdc[1] == 15.5f);
    CHECK(a.vpulse[0] == 6.5f && a.detector[0] == 7.5f && a.detector[3] == 18.5f);
    CHECK(a.pulse_delta[0] == 7 && a.pulse_delta[1] == 8 && a.ions_per_pulse[1] == 0x01020304u);
    ptreg_apt_free(&a);
    CHECK(ptreg_apt_read_memory(rec, 87, PTREG_APT_EPOS, "x.epos", &a, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "byte 44"), "%s", err.message);
    /* as a cloud, by extension */
    ptreg_cloud c;
    CHECK(ptreg_cloud_read_memory(rec, sizeof rec, PTREG_FORMAT_EPOS, "x.epos", &c, &err) == PTREG_OK);
    CHECK(c.n == 2 && c.xyz[4] == 11.5f);
    ptreg_cloud_free(&c);
}

static void test_pos_files(void)
{
    float xyz[9] = {1, 2, 3, NAN, 0, 0, -1, -2, -3}, mq[3] = {27, 28, 29};
    char path[128];
    snprintf(path, sizeof path, "%s/a.pos", tmp_dir);
    ptreg_error err;
    CHECK(ptreg_apt_write_pos(path, xyz, mq, 3, &err) == PTREG_OK);
    ptreg_apt a;
    CHECK(ptreg_apt_read(path, PTREG_APT_AUTO, &a, &err) == PTREG_OK);
    CHECK(a.n == 3 && a.xyz[6] == -1.0f && a.mq[2] == 29.0f && a.xyz[3] != a.xyz[3]);
    ptreg_apt_free(&a);
    /* a cloud keeps the finite points only, as every reader does */
    ptreg_cloud c;
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err) == PTREG_OK);
    CHECK(c.n == 2 && c.dropped_nonfinite == 1 && c.xyz[3] == -1.0f);
    /* and clouds can be written as .pos */
    snprintf(path, sizeof path, "%s/b.pos", tmp_dir);
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_OK);
    ptreg_cloud_free(&c);
    CHECK(ptreg_apt_read(path, PTREG_APT_AUTO, &a, &err) == PTREG_OK && a.n == 2 && a.mq[0] == 0.0f);
    ptreg_apt_free(&a);
    snprintf(path, sizeof path, "%s/missing.pos", tmp_dir);
    CHECK(ptreg_apt_read(path, PTREG_APT_AUTO, &a, &err) == PTREG_ERR_IO && strstr(err.message, "missing.pos"));
}

/* ptreg_apt_read_pieces: the whole read's values, piece by piece with
 * each piece's first index, for .pos and .epos; a broken file refused
 * before any piece; the function's failure ends the read. */
typedef struct pieces_seen {
    const ptreg_apt *whole;
    size_t pieces, next, stop_after;
    int skipping;     /* pieces may be left out: no order to check */
    size_t firsts[8]; /* the first pieces' first ions */
} pieces_seen;

static ptreg_status see_piece(void *ctx, const ptreg_apt *piece, size_t first, ptreg_error *err)
{
    pieces_seen *s = ctx;
    CHECK((s->skipping || first == s->next) && piece->n >= 1 && first + piece->n <= s->whole->n);
    if (s->pieces < 8)
        s->firsts[s->pieces] = first;
    CHECK(!memcmp(piece->xyz, s->whole->xyz + 3 * first, 3 * piece->n * sizeof(float)));
    CHECK(!memcmp(piece->mq, s->whole->mq + first, piece->n * sizeof(float)));
    CHECK(!s->whole->tof || !memcmp(piece->tof, s->whole->tof + first, piece->n * sizeof(float)));
    CHECK(!s->whole->ions_per_pulse ||
          !memcmp(piece->ions_per_pulse, s->whole->ions_per_pulse + first, piece->n * sizeof(uint32_t)));
    s->next = first + piece->n;
    if (++s->pieces == s->stop_after)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "enough");
    return PTREG_OK;
}

static void check_pieces(const char *path, size_t piece, size_t expect_pieces)
{
    ptreg_apt whole;
    ptreg_error err;
    CHECK(ptreg_apt_read(path, PTREG_APT_AUTO, &whole, &err) == PTREG_OK);
    pieces_seen s = {&whole, 0, 0, 0, 0, {0}};
    CHECK_MSG(ptreg_apt_read_pieces(path, PTREG_APT_AUTO, piece, NULL, see_piece, &s, &err) == PTREG_OK, "%s",
              err.message);
    CHECK(s.pieces == expect_pieces && s.next == whole.n);
    ptreg_apt_free(&whole);
}

static void test_pieces(void)
{
    enum { N = 1000 };
    float *xyz = malloc(3 * N * sizeof *xyz), *mq = malloc(N * sizeof *mq);
    for (size_t i = 0; i < 3 * N; i++)
        xyz[i] = (float)i * 0.25f - 7.0f;
    for (size_t i = 0; i < N; i++)
        mq[i] = (float)(i % 60);
    char path[128];
    snprintf(path, sizeof path, "%s/pieces.pos", tmp_dir);
    ptreg_error err;
    CHECK(ptreg_apt_write_pos(path, xyz, mq, N, &err) == PTREG_OK);
    check_pieces(path, 1, N);
    check_pieces(path, 333, 4);
    check_pieces(path, N, 1);
    check_pieces(path, 5 * N, 1);
    pieces_seen s = {NULL, 0, 0, 2, 0, {0}};
    ptreg_apt whole;
    CHECK(ptreg_apt_read(path, PTREG_APT_AUTO, &whole, &err) == PTREG_OK);
    s.whole = &whole;
    CHECK(ptreg_apt_read_pieces(path, PTREG_APT_AUTO, 100, NULL, see_piece, &s, &err) == PTREG_ERR_RUNTIME &&
          s.pieces == 2 && strstr(err.message, "enough"));
    /* pieces skipped: neither decoded nor handed on; the others as ever */
    const uint8_t skip[4] = {1, 0, 1, 0};
    s = (pieces_seen){&whole, 0, 0, 0, 1, {0}};
    CHECK(ptreg_apt_read_pieces(path, PTREG_APT_AUTO, 333, skip, see_piece, &s, &err) == PTREG_OK && s.pieces == 2 &&
          s.firsts[0] == 333 && s.firsts[1] == 999);
    ptreg_apt_free(&whole);
    CHECK(ptreg_apt_read_pieces(path, PTREG_APT_AUTO, 0, NULL, see_piece, &s, &err) == PTREG_ERR_ARG);
    /* .epos: every field, pieces of 7 records */
    unsigned char rec[44 * 20];
    for (size_t i = 0; i < sizeof rec; i++)
        rec[i] = (unsigned char)(i * 37 + 11);
    snprintf(path, sizeof path, "%s/pieces.epos", tmp_dir);
    FILE *f = fopen(path, "wb");
    fwrite(rec, 1, sizeof rec, f);
    fclose(f);
    check_pieces(path, 7, 3);
    /* a truncated file: refused, naming the byte, before any piece */
    f = fopen(path, "ab");
    fwrite(rec, 1, 5, f);
    fclose(f);
    s = (pieces_seen){&whole, 0, 0, 0, 0, {0}};
    CHECK(ptreg_apt_read_pieces(path, PTREG_APT_AUTO, 7, NULL, see_piece, &s, &err) == PTREG_ERR_FORMAT &&
          strstr(err.message, "byte 880") && s.pieces == 0);
    free(xyz);
    free(mq);
}

static const char rrng[] = "[Ions]\r\nNumber=3\r\nIon1=Al\r\nIon2=Mg\r\nIon3=O\r\n"
                           "[Ranges]\r\nNumber=4\r\n"
                           "Range1=26.8000 27.2000 Vol:0.01661 Al:1 Color:33FFFF\r\n"
                           "Range2=13.4 13.6 vol:0.01661 Al:1 color:33FFFF\r\n"
                           "Range3=11.9 12.2 Vol:0.02325 Mg:1 Color:FF00FF\r\n"
                           "Range4=43.0 43.4 Vol:0.03 Al:1 O:1 Color:00FF00\r\n";

static void test_rrng(void)
{
    ptreg_ranges r;
    ptreg_error err;
    CHECK_MSG(ptreg_ranges_read_memory(rrng, strlen(rrng), "r.rrng", &r, &err) == PTREG_OK, "%s", err.message);
    CHECK(r.n == 4 && !strcmp(r.range[0].ion, "Al") && !strcmp(r.range[2].ion, "Mg") && !strcmp(r.range[3].ion, "AlO"));
    CHECK(r.range[0].lo == 26.8 && r.range[0].hi == 27.2 && r.range[0].line == 8 && r.range[3].line == 11);
    CHECK(ptreg_ranges_find(&r, 27.0) == 0 && ptreg_ranges_find(&r, 13.5) == 1 && ptreg_ranges_find(&r, 20) == -1);
    CHECK(ptreg_ranges_has_ion(&r, "Al") && ptreg_ranges_has_ion(&r, "AlO") && !ptreg_ranges_has_ion(&r, "Si"));
    ptreg_ranges_free(&r);
    /* Name: wins over the composition; counts above 1 follow the element */
    const char named[] = "[Ranges]\nNumber=2\nRange1=1 2 Name:Gap Vol:1\nRange2=3 4 Al:2 O:3 Color:FFFFFF\n";
    CHECK(ptreg_ranges_read_memory(named, strlen(named), "n.rrng", &r, &err) == PTREG_OK);
    CHECK(r.n == 2 && !strcmp(r.range[0].ion, "Gap") && !strcmp(r.range[1].ion, "Al2O3"));
    ptreg_ranges_free(&r);
    /* counts are checked against the lines, and the place is named */
    const char *bad[] = {"[Ranges]\nNumber=3\nRange1=1 2 Al:1\n", "[Ranges]\nNumber=1\nRange1=2 1 Al:1\n",
                         "[Ranges]\nNumber=1\nRange1=1 2 Al\n", "[Ranges]\nNumber=1\nRange1=1 2 Vol:1\n",
                         "[Ranges]\nNumber=1\nRange1=x 2 Al:1\n", "[Ions]\nIon1=Al\n",
                         /* an ion in two ranges: the later line is named, and both ranges */
                         "[Ranges]\nNumber=3\nRange1=5 6 O:1\nRange2=1 3 Al:1\nRange3=2.5 2.7 Mg:1\n"};
    const char *where[] = {"line 2", "line 3", "line 3", "line 3", "line 3", "no [Ranges]", "line 5: ranges overlap"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ptreg_ranges_read_memory(bad[i], strlen(bad[i]), "b.rrng", &r, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, "b.rrng") && strstr(err.message, where[i]), "%zu: %s", i, err.message);
        CHECK(r.n == 0 && r.range == NULL);
    }
}

static const char rng_text[] = "2 3\n"
                               "Al\nAl 0.2 1.0 1.0\n"
                               "O\nO 1.0 0.0 0.0\n"
                               "------------------- Al O\n"
                               ". 26.80 27.20 1 0\n"
                               ". 15.9 16.1 0 1\n"
                               ". 43.0 43.4 1 1\n";

static void test_rng(void)
{
    ptreg_ranges r;
    ptreg_error err;
    CHECK_MSG(ptreg_ranges_read_memory(rng_text, strlen(rng_text), "r.rng", &r, &err) == PTREG_OK, "%s", err.message);
    CHECK(r.n == 3 && !strcmp(r.range[0].ion, "Al") && !strcmp(r.range[1].ion, "O") && !strcmp(r.range[2].ion, "AlO"));
    CHECK(ptreg_ranges_find(&r, 16.0) == 1);
    ptreg_ranges_free(&r);
    /* ranges may share an end */
    const char touching[] = "1 2\nAl\nAl 1 1 1\n--- Al\n. 1 2 1\n. 2 3 1\n";
    CHECK(ptreg_ranges_read_memory(touching, strlen(touching), "t.rng", &r, &err) == PTREG_OK && r.n == 2);
    ptreg_ranges_free(&r);
    const char *bad[] = {"2 4\nAl\nAl 1 1 1\nO\nO 1 0 0\n--- Al O\n. 1 2 1 0\n",
                         "900 2\nAl\n",
                         "2 1\nAl\nAl 1 1 1\nO\nO 1 0 0\n--- Al\n. 1 2 1\n",
                         "1 1\nAl\nAl 1 1 1\n--- Al\n. 1 2 x\n",
                         "x y\n",
                         "1 2\nAl\nAl 1 1 1\n--- Al\n. 1 2 1\n. 1.5 1.6 1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ptreg_ranges_read_memory(bad[i], strlen(bad[i]), "b.rng", &r, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, "b.rng: line "), "%zu: %s", i, err.message);
    }
}

/* ---- pairs files ---- */

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

/* Two pairs (2 and 3 source points) onto one shared 2-point target. */
static size_t small_pairs(unsigned char *buf)
{
    memcpy(buf, "PTPAIRS1", 8);
    put_le64(buf + 8, 2);
    put_le64(buf + 16, 1);
    const uint64_t offsets[] = {0, 2, 5, 0, 2};
    for (int i = 0; i < 5; i++)
        put_le64(buf + 24 + 8 * i, offsets[i]);
    for (int i = 0; i < 21; i++) { /* 7 points */
        const float v = (float)i * 0.5f;
        memcpy(buf + 64 + 4 * i, &v, 4);
    }
    return 64 + 84;
}

static void test_pairs_file(void)
{
    unsigned char buf[256];
    const size_t size = small_pairs(buf);
    ptreg_pairs_file pf;
    ptreg_error err;
    CHECK_MSG(ptreg_pairs_read_memory(buf, size, "p.ptpairs", &pf, &err) == PTREG_OK, "%s", err.message);
    CHECK(pf.count == 2 && pf.targets == 1 && pf.source_offset[2] == 5 && pf.target_offset[1] == 2);
    CHECK(pf.source[14] == 7.0f && pf.target[0] == 7.5f && pf.target[5] == 10.0f);
    char path[128];
    snprintf(path, sizeof path, "%s/p.ptpairs", tmp_dir);
    CHECK(ptreg_pairs_write(path, &pf, &err) == PTREG_OK);
    ptreg_pairs_file back;
    CHECK(ptreg_pairs_read(path, &back, &err) == PTREG_OK && back.count == 2);
    CHECK(back.source_offset[1] == 2 && !memcmp(back.source, pf.source, 15 * sizeof(float)));
    ptreg_pairs_file_free(&back);
    ptreg_pairs_file_free(&pf);
    /* each broken in one place: the message names the byte */
    struct {
        size_t at;
        uint64_t value;
        const char *where;
    } bad[] = {{0, 0x5858585858585858ull, "byte 0: not a ptreg pairs file"},
               {8, 0, "byte 8: no pairs"},
               {16, 3, "byte 16: 3 targets for 2 pairs"},
               {8, 1ull << 40, "byte 8:"},
               {24, 1, "byte 24: the first source offset is 1"},
               {32, 0, "byte 32: source 0 has no points"},
               {40, 999, "byte 40: source offset 999 is past"},
               {56, 9, "target offset 9 is past"},
               {40, 4, "byte 136: 4 source and 2 target points end here"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char b[256];
        memcpy(b, buf, size);
        put_le64(b + bad[i].at, bad[i].value);
        CHECK(ptreg_pairs_read_memory(b, size, "b.ptpairs", &pf, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, "b.ptpairs: ") && strstr(err.message, bad[i].where), "%zu: %s", i, err.message);
        CHECK(pf.count == 0 && pf.source == NULL && pf.source_offset == NULL);
    }
    CHECK(ptreg_pairs_read_memory(buf, size - 1, "t.ptpairs", &pf, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "t.ptpairs: byte 64") && strstr(err.message, "truncated"), "%s", err.message);
    const float nan = NAN;
    memcpy(buf + 64 + 4 * 16, &nan, 4);
    CHECK(ptreg_pairs_read_memory(buf, size, "n.ptpairs", &pf, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "n.ptpairs: byte 128: target point 0"), "%s", err.message);
}

/* ---- mutations ---- */

/* A read either succeeds or fails naming the input and a place. */
static void check_outcome(ptreg_status s, const ptreg_error *err, const char *name, int empty_on_failure)
{
    if (s == PTREG_OK)
        return;
    CHECK_MSG(strstr(err->message, name) && (strstr(err->message, ": byte ") || strstr(err->message, ": line ") ||
                                             strstr(err->message, "empty") || strstr(err->message, "no [Ranges]")),
              "%s", err->message);
    CHECK(empty_on_failure);
}

/* One mutated input through every reader of batch inputs, from a buffer
 * of exactly its size (so ASan sees reads past the end). */
static void read_all(const unsigned char *data, size_t size)
{
    unsigned char *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    ptreg_error err;
    ptreg_apt a;
    for (int f = PTREG_APT_POS; f <= PTREG_APT_EPOS; f++) {
        ptreg_status s = ptreg_apt_read_memory(b, size, (ptreg_apt_format)f, "m", &a, &err);
        check_outcome(s, &err, "m", a.n == 0 && a.xyz == NULL);
        if (!s)
            CHECK(a.n == size / (f == PTREG_APT_POS ? 16 : 44));
        ptreg_apt_free(&a);
    }
    ptreg_ranges r;
    ptreg_status s = ptreg_ranges_read_memory(b, size, "m", &r, &err);
    check_outcome(s, &err, "m", r.n == 0 && r.range == NULL);
    for (size_t i = 0; !s && i < r.n; i++)
        CHECK(r.range[i].lo <= r.range[i].hi && r.range[i].ion[0]);
    ptreg_ranges_free(&r);
    ptreg_pairs_file pf;
    s = ptreg_pairs_read_memory(b, size, "m", &pf, &err);
    check_outcome(s, &err, "m", pf.count == 0 && pf.source == NULL);
    for (size_t i = 0; !s && i < pf.count; i++)
        CHECK(pf.source_offset[i] < pf.source_offset[i + 1]);
    ptreg_pairs_file_free(&pf);
    free(b);
}

static void mutate(const unsigned char *data, size_t size, ptreg_rng *rng)
{
    for (size_t cut = 0; cut <= size; cut++)
        read_all(data, cut);
    unsigned char *b = malloc(size);
    for (int round = 0; round < 2000; round++) {
        memcpy(b, data, size);
        for (int k = 0, flips = 1 + (int)(ptreg_rng_next(rng) % 3); k < flips; k++) {
            static const unsigned char specials[] = {0, '\n', ' ', '-', '9', '=', 0xff, 0x80, '['};
            const uint64_t r = ptreg_rng_next(rng);
            b[(size_t)(r % size)] = (r >> 40) & 1 ? (unsigned char)(r >> 48) : specials[(r >> 48) % sizeof specials];
        }
        read_all(b, size);
    }
    free(b);
}

static void test_mutations(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 14);
    unsigned char pairs[256], pos[64], epos[88];
    memset(pos, 0x41, sizeof pos);
    for (size_t i = 0; i < sizeof epos; i++)
        epos[i] = (unsigned char)(i * 37);
    mutate(pairs, small_pairs(pairs), &rng);
    mutate(pos, sizeof pos, &rng);
    mutate(epos, sizeof epos, &rng);
    mutate((const unsigned char *)rrng, strlen(rrng), &rng);
    mutate((const unsigned char *)rng_text, strlen(rng_text), &rng);
}

static void test_shared_data(void)
{
    const char *dir = check_data_dir();
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/apt/cubicTestSmall.pos", dir);
    ptreg_apt a;
    ptreg_error err;
    CHECK_MSG(ptreg_apt_read(path, PTREG_APT_AUTO, &a, &err) == PTREG_OK, "%s", err.message);
    CHECK(a.n == 4000);
    size_t finite = 0;
    for (size_t i = 0; i < 3 * a.n; i++)
        finite += isfinite(a.xyz[i]) != 0;
    CHECK(finite == 3 * a.n);
    ptreg_apt_free(&a);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ptreg_test_apt_XXXXXX");
    if (!mkdtemp(tmp_dir))
        return 1;
    test_pos();
    test_epos();
    test_pos_files();
    test_pieces();
    test_rrng();
    test_rng();
    test_pairs_file();
    test_mutations();
    test_shared_data();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    if (system(cmd))
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return check_exit();
}
