/*
 * BLAKE3, 4 inputs at once on 128-bit vectors: the layout of blake3_x8.c, for what is left of a
 * level after the wide kernels (a 4 KiB blob is 4 chunks, then 2 parents). Each input's 64-byte
 * block is four rows of 4 words, transposed 4x4 four times. Built with -mavx2 (VEX encoding, so no
 * SSE/AVX transition), and again as blake3_x4_vl.c with AVX-512 VL (one rotate instruction).
 */
#if (defined(BLAKE3_VL) && !defined(RS_NO_AVX512)) || (!defined(BLAKE3_VL) && !defined(RS_NO_AVX2))
#include <immintrin.h>

#include "blake3_kernels.h"

#ifdef BLAKE3_VL
#define KERNEL blake3_many4_avx512vl
#define STEP blake3_step4_avx512vl
#define ROT(x, n) _mm_ror_epi32(x, n)
#else
#define KERNEL blake3_many4_avx2
#define STEP blake3_step4_avx2
#define ROT(x, n) rot##n(x)

static inline __m128i rot16(__m128i x) { return _mm_shuffle_epi8(x, _mm_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13)); }
static inline __m128i rot8(__m128i x) { return _mm_shuffle_epi8(x, _mm_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12)); }
static inline __m128i rot12(__m128i x) { return _mm_or_si128(_mm_srli_epi32(x, 12), _mm_slli_epi32(x, 20)); }
static inline __m128i rot7(__m128i x) { return _mm_or_si128(_mm_srli_epi32(x, 7), _mm_slli_epi32(x, 25)); }
#endif

#define LANES 4

#define G(a, b, c, d, x, y)                               \
    do {                                                  \
        v[a] = _mm_add_epi32(_mm_add_epi32(v[a], v[b]), x); \
        v[d] = ROT(_mm_xor_si128(v[d], v[a]), 16);        \
        v[c] = _mm_add_epi32(v[c], v[d]);                 \
        v[b] = ROT(_mm_xor_si128(v[b], v[c]), 12);        \
        v[a] = _mm_add_epi32(_mm_add_epi32(v[a], v[b]), y); \
        v[d] = ROT(_mm_xor_si128(v[d], v[a]), 8);         \
        v[c] = _mm_add_epi32(v[c], v[d]);                 \
        v[b] = ROT(_mm_xor_si128(v[b], v[c]), 7);         \
    } while (0)

/* Rows r[0..4) of 4 words each become columns. */
static inline void transpose4(__m128i r[4]) {
    __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpackhi_epi32(r[0], r[1]);
    __m128i t2 = _mm_unpacklo_epi32(r[2], r[3]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
    r[0] = _mm_unpacklo_epi64(t0, t2);
    r[1] = _mm_unpackhi_epi64(t0, t2);
    r[2] = _mm_unpacklo_epi64(t1, t3);
    r[3] = _mm_unpackhi_epi64(t1, t3);
}

/*
 * What the kernel and its step share, as macros over the caller's own v[], m[] and h[] arrays (as
 * inline functions taking them, the 16-lane kernel ran 15% slower: its state left the registers).
 * LOAD_BLOCK: block b of each lane's row as the 16 message vectors; COMPRESS: the rounds of v by m,
 * h[0..8) its chaining values; STORE_CVS: lanes [0, n) of h as n chaining values at out.
 */
#define LOAD_BLOCK(row, b)                                                                                  \
    do {                                                                                                    \
        for (int j = 0; j < LANES; j++) {                                                                   \
            const uint8_t *p = (row)[j] + (b) * BLAKE3_BLOCK_BYTES;                                         \
            for (int q = 0; q < 4; q++) m[4 * q + j] = _mm_loadu_si128((const __m128i *)(p + 16 * q));     \
        }                                                                                                   \
        for (int q = 0; q < 4; q++) transpose4(m + 4 * q);                                                  \
    } while (0)
#define COMPRESS()                                                              \
    do {                                                                        \
        for (int r = 0; r < 7; r++) BLAKE3_ROUND(blake3_schedule[r]);           \
        for (int i = 0; i < 8; i++) h[i] = _mm_xor_si128(v[i], v[i + 8]);       \
    } while (0)
#define STORE_CVS(n, out)                                                        \
    do {                                                                         \
        transpose4(h);                                                           \
        transpose4(h + 4);                                                       \
        for (size_t j = 0; j < (n); j++) {                                       \
            _mm_storeu_si128((__m128i *)((out) + 32 * j), h[j]);                 \
            _mm_storeu_si128((__m128i *)((out) + 32 * j + 16), h[4 + j]);        \
        }                                                                        \
    } while (0)

void KERNEL(const blake3_lane_set *in, size_t n, size_t blocks, uint8_t flags, uint8_t flags_start, uint8_t flags_end, uint8_t *out) {
    __m128i h[8];
    for (int i = 0; i < 8; i++) h[i] = _mm_set1_epi32((int)blake3_iv[i]);
    const __m128i counter_lo = _mm_loadu_si128((const __m128i *)in->lo), counter_hi = _mm_loadu_si128((const __m128i *)in->hi);
    for (size_t b = 0; b < blocks; b++) {
        __m128i m[16];
        LOAD_BLOCK(in->row, b);
        uint32_t f = flags | (b == 0 ? flags_start : 0) | (b == blocks - 1 ? flags_end : 0);
        __m128i v[16] = {
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
            _mm_set1_epi32((int)blake3_iv[0]), _mm_set1_epi32((int)blake3_iv[1]),
            _mm_set1_epi32((int)blake3_iv[2]), _mm_set1_epi32((int)blake3_iv[3]),
            counter_lo, counter_hi, _mm_set1_epi32(BLAKE3_BLOCK_BYTES), _mm_set1_epi32((int)f),
        };
        COMPRESS();
    }
    STORE_CVS(n, out);
}

void STEP(const blake3_step_set *in, size_t n, uint8_t *cv) {
    __m128i h[8], m[16];
    for (size_t j = 0; j < LANES; j++) {
        const uint8_t *c = cv + 32 * (j < n ? j : 0);
        h[j] = _mm_loadu_si128((const __m128i *)c);
        h[4 + j] = _mm_loadu_si128((const __m128i *)(c + 16));
    }
    transpose4(h);
    transpose4(h + 4);
    LOAD_BLOCK(in->row, 0);
    __m128i v[16] = {
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
        _mm_set1_epi32((int)blake3_iv[0]), _mm_set1_epi32((int)blake3_iv[1]),
        _mm_set1_epi32((int)blake3_iv[2]), _mm_set1_epi32((int)blake3_iv[3]),
        _mm_loadu_si128((const __m128i *)in->lo), _mm_loadu_si128((const __m128i *)in->hi),
        _mm_loadu_si128((const __m128i *)in->len), _mm_loadu_si128((const __m128i *)in->flg),
    };
    COMPRESS();
    STORE_CVS(n, cv);
}
#endif
