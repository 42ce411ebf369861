/*
 * CRC-32C: the portable path, the zero-shift that joins streams, and the path choice.
 *
 * In scalar terms, for each byte b:  crc = (crc >> 8) ^ table[(crc ^ b) & 0xff]  (reflected,
 * polynomial 0x82F63B78), with crc inverted before and after. Slicing-by-8 takes 8 bytes per
 * step through 8 tables; the SSE4.2 path (crc32c_sse42.c) does the same step in one instruction.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"
#include "crc32c.h"
#include "crc32c_kernels.h"
#include "paths.h"

#define POLY 0x82F63B78u

/* tables[k][b]: the CRC of byte b followed by k zero bytes. */
static uint32_t tables[8][256];

static void fill_tables(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        tables[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++) {
        for (int k = 1; k < 8; k++) tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xff];
    }
}

static uint32_t raw_portable(uint32_t c, const uint8_t *p, size_t len) {
    for (; len > 0 && ((uintptr_t)p & 7) != 0; len--) c = (c >> 8) ^ tables[0][(c ^ *p++) & 0xff];
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;
        c = tables[7][w & 0xff] ^ tables[6][(w >> 8) & 0xff] ^ tables[5][(w >> 16) & 0xff] ^ tables[4][(w >> 24) & 0xff] ^
            tables[3][(w >> 32) & 0xff] ^ tables[2][(w >> 40) & 0xff] ^ tables[1][(w >> 48) & 0xff] ^ tables[0][w >> 56];
    }
    for (; len > 0; len--) c = (c >> 8) ^ tables[0][(c ^ *p++) & 0xff];
    return c;
}

/*
 * The raw CRC of `raw` followed by `len` zero bytes is linear in `raw`: a 32x32 matrix over GF(2),
 * built by squaring the one-zero-bit operator (zlib's crc32_combine method). Used at the probe
 * only, to fill the tables that shift over a stream's length in four lookups.
 */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (int i = 0; vec; vec >>= 1, i++) if (vec & 1) sum ^= mat[i];
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

static uint32_t shift_slow(uint32_t raw, size_t len) {
    uint32_t even[32], odd[32];
    odd[0] = POLY; /* one zero bit */
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two zero bits */
    gf2_square(odd, even); /* four */
    for (;;) {
        gf2_square(even, odd); /* one zero byte, then 2^k of them */
        if (len & 1) raw = gf2_times(even, raw);
        len >>= 1;
        if (len == 0) break;
        gf2_square(odd, even);
        if (len & 1) raw = gf2_times(odd, raw);
        len >>= 1;
        if (len == 0) break;
    }
    return raw;
}

/* shift_tables[k][i][b]: byte b at byte i of a raw CRC, shifted over (k + 1) * CRC32C_STREAM_BYTES zeros. */
static uint32_t shift_tables[2][4][256];

static void fill_shift_tables(void) {
    for (int k = 0; k < 2; k++) {
        uint32_t columns[32];
        for (int j = 0; j < 32; j++) columns[j] = shift_slow(1u << j, (size_t)(k + 1) * CRC32C_STREAM_BYTES);
        for (int i = 0; i < 4; i++) {
            for (uint32_t b = 0; b < 256; b++) shift_tables[k][i][b] = gf2_times(columns, b << (8 * i));
        }
    }
}

uint32_t crc32c_shift_stream(uint32_t raw, int k) {
    return shift_tables[k][0][raw & 0xff] ^ shift_tables[k][1][(raw >> 8) & 0xff] ^ shift_tables[k][2][(raw >> 16) & 0xff] ^
           shift_tables[k][3][raw >> 24];
}

static const char *const path_names[CRC32C_PATH_COUNT] = {"portable", "sse42"};

static crc32c_kernel *const path_kernels[CRC32C_PATH_COUNT] = {
    raw_portable,
#ifndef RS_NO_SSE42
    crc32c_kernel_sse42,
#else
    NULL,
#endif
};

static path_set paths = {path_names, CRC32C_PATH_COUNT, 0, -1};

static void probe(void) {
    fill_tables();
    fill_shift_tables();
    cpu_features f = cpu_features_read();
    unsigned runs = 1u << CRC32C_PATH_PORTABLE;
    if (f.sse42 && path_kernels[CRC32C_PATH_SSE42] != NULL) runs |= 1u << CRC32C_PATH_SSE42;
    path_set_init(&paths, runs, "BLOBSTORE_CRC32C_PATH");
}

const char *crc32c_path_name(int path) { return path >= 0 && path < CRC32C_PATH_COUNT ? path_names[path] : "unknown"; }

int crc32c_path_compiled(int path) { return path >= 0 && path < CRC32C_PATH_COUNT && path_kernels[path] != NULL; }

PATH_SET_FUNCTIONS(crc32c, paths, probe)

int crc32c_path_force(const char *name) { return path_pin_status(crc32c_path_pin(name), CRC32C_OK, CRC32C_E_PATH_UNKNOWN, CRC32C_E_PATH_UNAVAILABLE); }

uint32_t crc32c(uint32_t crc, const uint8_t *buf, size_t len) {
    return ~path_kernels[crc32c_path_current()](~crc, buf, len);
}
