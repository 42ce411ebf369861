/*
 * BLAKE3, 16 inputs at once (built with -mavx512f -mavx512bw): blake3_x8.c's layout on 512-bit
 * vectors, where one input's 64-byte block is one row, so a 16x16 transpose (32-bit words: two
 * unpack steps within 128-bit lanes, then two 128-bit lane shuffles) turns 16 blocks into the 16
 * message vectors. AVX-512 rotates in one instruction.
 */
#ifndef RS_NO_AVX512
#include <immintrin.h>

#include "blake3_kernels.h"

#define LANES 16

#define G(a, b, c, d, x, y)                                        \
    do {                                                           \
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), x); \
        v[d] = _mm512_ror_epi32(_mm512_xor_si512(v[d], v[a]), 16); \
        v[c] = _mm512_add_epi32(v[c], v[d]);                       \
        v[b] = _mm512_ror_epi32(_mm512_xor_si512(v[b], v[c]), 12); \
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), y); \
        v[d] = _mm512_ror_epi32(_mm512_xor_si512(v[d], v[a]), 8);  \
        v[c] = _mm512_add_epi32(v[c], v[d]);                       \
        v[b] = _mm512_ror_epi32(_mm512_xor_si512(v[b], v[c]), 7);  \
    } while (0)

/* Rows r[0..16) of 16 words each become columns: afterwards r[i] holds word i of every former row. */
static inline void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    /* u[4g + w], 128-bit lane L: word 4L + w of rows 4g..4g+3 */
    for (int g = 0; g < 4; g++) {
        u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    /* Word 4L + w gathers lane L of u[w], u[4 + w], u[8 + w], u[12 + w]: a 4x4 transpose of 128-bit lanes. */
    for (int w = 0; w < 4; w++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[w], u[4 + w], 0x88), x1 = _mm512_shuffle_i32x4(u[w], u[4 + w], 0xdd);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + w], u[12 + w], 0x88), y1 = _mm512_shuffle_i32x4(u[8 + w], u[12 + w], 0xdd);
        r[w] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + w] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[8 + w] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
        r[12 + w] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
    }
}

/*
 * What the kernel and its step share, as macros over the caller's own v[], m[] and h[] arrays (as
 * inline functions taking them, this kernel ran 15% slower: its state left the registers).
 * COMPRESS: the rounds of v by m, unrolled (the schedule's indices constants), h[0..8) its
 * chaining values; STORE_CVS: lanes [0, n) of h as n chaining values at out (rows 8..15 are
 * padding: after the transpose, input j's chaining value is the low half of h[j]).
 */
#define COMPRESS()                                                                \
    do {                                                                          \
        _Pragma("GCC unroll 7") for (int r = 0; r < 7; r++) BLAKE3_ROUND(blake3_schedule[r]); \
        for (int i = 0; i < 8; i++) h[i] = _mm512_xor_si512(v[i], v[i + 8]);      \
    } while (0)
#define STORE_CVS(n, out)                                                                                           \
    do {                                                                                                            \
        for (int i = 8; i < 16; i++) h[i] = _mm512_setzero_si512();                                                 \
        transpose16(h);                                                                                             \
        for (size_t j = 0; j < (n); j++) _mm256_storeu_si256((__m256i *)((out) + 32 * j), _mm512_castsi512_si256(h[j])); \
    } while (0)

void blake3_many16_avx512(const blake3_lane_set *in, size_t n, size_t blocks, uint8_t flags, uint8_t flags_start, uint8_t flags_end, uint8_t *out) {
    __m512i h[16];
    for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi32((int)blake3_iv[i]);
    const __m512i counter_lo = _mm512_loadu_si512(in->lo), counter_hi = _mm512_loadu_si512(in->hi);
    for (size_t b = 0; b < blocks; b++) {
        __m512i m[16];
        for (int j = 0; j < LANES; j++) m[j] = _mm512_loadu_si512(in->row[j] + b * BLAKE3_BLOCK_BYTES);
        transpose16(m);
        uint32_t f = flags | (b == 0 ? flags_start : 0) | (b == blocks - 1 ? flags_end : 0);
        __m512i v[16] = {
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
            _mm512_set1_epi32((int)blake3_iv[0]), _mm512_set1_epi32((int)blake3_iv[1]),
            _mm512_set1_epi32((int)blake3_iv[2]), _mm512_set1_epi32((int)blake3_iv[3]),
            counter_lo, counter_hi, _mm512_set1_epi32(BLAKE3_BLOCK_BYTES), _mm512_set1_epi32((int)f),
        };
        COMPRESS();
    }
    STORE_CVS(n, out);
}

void blake3_step16_avx512(const blake3_step_set *in, size_t n, uint8_t *cv) {
    __m512i h[16], m[16];
    /* Lane j's chaining value is row j's low half (the high half zero): transposed, h[0..8) are its words. */
    for (size_t j = 0; j < LANES; j++) h[j] = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(cv + 32 * (j < n ? j : 0))));
    transpose16(h);
    for (int j = 0; j < LANES; j++) m[j] = _mm512_loadu_si512(in->row[j]);
    transpose16(m);
    __m512i v[16] = {
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
        _mm512_set1_epi32((int)blake3_iv[0]), _mm512_set1_epi32((int)blake3_iv[1]),
        _mm512_set1_epi32((int)blake3_iv[2]), _mm512_set1_epi32((int)blake3_iv[3]),
        _mm512_loadu_si512(in->lo), _mm512_loadu_si512(in->hi), _mm512_loadu_si512(in->len), _mm512_loadu_si512(in->flg),
    };
    COMPRESS();
    STORE_CVS(n, cv);
}
#endif
