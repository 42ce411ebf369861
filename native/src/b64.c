/*
 * The base64 entry point, the portable path and the path choice. The portable code is also what
 * every SIMD path ends with (the last < one vector step of input, and the padding).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "b64_kernels.h"
#include "cpu.h"
#include "paths.h"

static const uint8_t alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* pairs[v] is the two characters of the 12-bit value v, in memory order (filled by probe()). */
static uint16_t pairs[4096];

static void fill_pairs(void) {
    for (unsigned v = 0; v < 4096; v++) {
        uint8_t two[2] = {alphabet[v >> 6], alphabet[v & 63]};
        memcpy(&pairs[v], two, 2);
    }
}

/* Whole groups of 3 bytes (two 12-bit table lookups each), then the 1- or 2-byte tail with its padding. */
static size_t encode_portable(const uint8_t *src, size_t len, uint8_t *dst) {
    uint8_t *o = dst;
    size_t i = 0;
    for (; i + 3 <= len; i += 3, o += 4) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
        memcpy(o, &pairs[v >> 12], 2);
        memcpy(o + 2, &pairs[v & 0xfff], 2);
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)src[i] << 16;
        o[0] = alphabet[v >> 18];
        o[1] = alphabet[(v >> 12) & 63];
        o[2] = '=';
        o[3] = '=';
        o += 4;
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;
        o[0] = alphabet[v >> 18];
        o[1] = alphabet[(v >> 12) & 63];
        o[2] = alphabet[(v >> 6) & 63];
        o[3] = '=';
        o += 4;
    }
    return (size_t)(o - dst);
}

static const char *const path_names[B64_PATH_COUNT] = {"portable", "avx2", "avx512vbmi"};

static b64_kernel *const path_kernels[B64_PATH_COUNT] = {
    NULL, /* portable: encode_portable does it all */
#ifndef RS_NO_AVX2
    b64_kernel_avx2,
#else
    NULL,
#endif
#ifndef RS_NO_AVX512VBMI
    b64_kernel_avx512vbmi,
#else
    NULL,
#endif
};

static path_set paths = {path_names, B64_PATH_COUNT, 0, -1};

static unsigned probe_paths(void) {
    cpu_features f = cpu_features_read();
    unsigned runs = 1u << B64_PATH_PORTABLE;
    if (f.avx2) runs |= 1u << B64_PATH_AVX2;
    if (f.avx512vbmi) runs |= 1u << B64_PATH_AVX512VBMI;
    return runs;
}

static void probe(void) {
    fill_pairs();
    unsigned compiled = 0;
    for (int p = 0; p < B64_PATH_COUNT; p++) compiled |= (unsigned)b64_path_compiled(p) << p;
    path_set_init(&paths, compiled & probe_paths(), "BLOBSTORE_B64_PATH");
}

const char *b64_path_name(int path) { return path >= 0 && path < B64_PATH_COUNT ? path_names[path] : "unknown"; }

int b64_path_compiled(int path) {
    return path == B64_PATH_PORTABLE || (path > 0 && path < B64_PATH_COUNT && path_kernels[path] != NULL);
}

PATH_SET_FUNCTIONS(b64, paths, probe)

int b64_path_force(const char *name) { return path_pin_status(b64_path_pin(name), B64_OK, B64_E_PATH_UNKNOWN, B64_E_PATH_UNAVAILABLE); }

size_t b64_encode(const uint8_t *src, size_t len, uint8_t *dst) {
    b64_kernel *k = path_kernels[b64_path_current()];
    size_t done = k ? k(src, len, dst) : 0;
    return done / 3 * 4 + encode_portable(src + done, len - done, dst + done / 3 * 4);
}
