/*
 * BLAKE3, 8 inputs at once on 256-bit vectors: each of the 16 state vectors holds one state word
 * of all 8 inputs, so a round is the scalar round on vectors. The message blocks arrive one input
 * per row and are transposed 8x8 (32-bit words) into that layout; the chaining values are
 * transposed back at the end. Built with -mavx2, rotations by 16 and 8 are byte shuffles and by 12
 * and 7 two shifts; built again as blake3_x8_vl.c with AVX-512 VL, each is one instruction.
 */
#if (defined(BLAKE3_VL) && !defined(RS_NO_AVX512)) || (!defined(BLAKE3_VL) && !defined(RS_NO_AVX2))
#include <immintrin.h>

#include "blake3_kernels.h"

#ifdef BLAKE3_VL
#define KERNEL blake3_many8_avx512vl
#define STEP blake3_step8_avx512vl
#define ROT(x, n) _mm256_ror_epi32(x, n)
#else
#define KERNEL blake3_many8_avx2
#define STEP blake3_step8_avx2
#define ROT(x, n) rot##n(x)

static inline __m256i rot16(__m256i x) {
    return _mm256_shuffle_epi8(x, _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                                                   2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
}

static inline __m256i rot8(__m256i x) {
    return _mm256_shuffle_epi8(x, _mm256_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
                                                   1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12));
}

static inline __m256i rot12(__m256i x) { return _mm256_or_si256(_mm256_srli_epi32(x, 12), _mm256_slli_epi32(x, 20)); }
static inline __m256i rot7(__m256i x) { return _mm256_or_si256(_mm256_srli_epi32(x, 7), _mm256_slli_epi32(x, 25)); }
#endif

#define LANES 8

#define G(a, b, c, d, x, y)                                        \
    do {                                                           \
        v[a] = _mm256_add_epi32(_mm256_add_epi32(v[a], v[b]), x); \
        v[d] = ROT(_mm256_xor_si256(v[d], v[a]), 16);              \
        v[c] = _mm256_add_epi32(v[c], v[d]);                       \
        v[b] = ROT(_mm256_xor_si256(v[b], v[c]), 12);              \
        v[a] = _mm256_add_epi32(_mm256_add_epi32(v[a], v[b]), y); \
        v[d] = ROT(_mm256_xor_si256(v[d], v[a]), 8);               \
        v[c] = _mm256_add_epi32(v[c], v[d]);                       \
        v[b] = ROT(_mm256_xor_si256(v[b], v[c]), 7);               \
    } while (0)

/* Rows r[0..8) of 8 words each become columns: afterwards r[i] holds word i of every former row. */
static inline void transpose8(__m256i r[8]) {
    __m256i t[8], u[8];
    for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    for (int h = 0; h < 2; h++) { /* rows 0-3, then 4-7: words (0|4), (1|5), (2|6), (3|7) by 128-bit half */
        u[4 * h] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int w = 0; w < 4; w++) {
        r[w] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x20);
        r[4 + w] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x31);
    }
}

/*
 * What the kernel and its step share, as macros over the caller's own v[], m[] and h[] arrays (as
 * inline functions taking them, the 16-lane kernel ran 15% slower: its state left the registers).
 * LOAD_BLOCK: block b of each lane's row as the 16 message vectors; COMPRESS: the rounds of v by m,
 * h[0..8) its chaining values; STORE_CVS: lanes [0, n) of h as n chaining values at out.
 */
#define LOAD_BLOCK(row, b)                                                        \
    do {                                                                          \
        for (int j = 0; j < LANES; j++) {                                         \
            const uint8_t *p = (row)[j] + (b) * BLAKE3_BLOCK_BYTES;               \
            m[j] = _mm256_loadu_si256((const __m256i *)p);                        \
            m[8 + j] = _mm256_loadu_si256((const __m256i *)(p + 32));             \
        }                                                                         \
        transpose8(m);                                                            \
        transpose8(m + 8);                                                        \
    } while (0)
#define COMPRESS()                                                                \
    do {                                                                          \
        for (int r = 0; r < 7; r++) BLAKE3_ROUND(blake3_schedule[r]);             \
        for (int i = 0; i < 8; i++) h[i] = _mm256_xor_si256(v[i], v[i + 8]);      \
    } while (0)
#define STORE_CVS(n, out)                                                                     \
    do {                                                                                      \
        transpose8(h);                                                                        \
        for (size_t j = 0; j < (n); j++) _mm256_storeu_si256((__m256i *)((out) + 32 * j), h[j]); \
    } while (0)

void KERNEL(const blake3_lane_set *in, size_t n, size_t blocks, uint8_t flags, uint8_t flags_start, uint8_t flags_end, uint8_t *out) {
    __m256i h[8];
    for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi32((int)blake3_iv[i]);
    const __m256i counter_lo = _mm256_loadu_si256((const __m256i *)in->lo), counter_hi = _mm256_loadu_si256((const __m256i *)in->hi);
    for (size_t b = 0; b < blocks; b++) {
        __m256i m[16];
        LOAD_BLOCK(in->row, b);
        uint32_t f = flags | (b == 0 ? flags_start : 0) | (b == blocks - 1 ? flags_end : 0);
        __m256i v[16] = {
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
            _mm256_set1_epi32((int)blake3_iv[0]), _mm256_set1_epi32((int)blake3_iv[1]),
            _mm256_set1_epi32((int)blake3_iv[2]), _mm256_set1_epi32((int)blake3_iv[3]),
            counter_lo, counter_hi, _mm256_set1_epi32(BLAKE3_BLOCK_BYTES), _mm256_set1_epi32((int)f),
        };
        COMPRESS();
    }
    STORE_CVS(n, out);
}

void STEP(const blake3_step_set *in, size_t n, uint8_t *cv) {
    __m256i h[8], m[16];
    for (size_t j = 0; j < LANES; j++) h[j] = _mm256_loadu_si256((const __m256i *)(cv + 32 * (j < n ? j : 0)));
    transpose8(h);
    LOAD_BLOCK(in->row, 0);
    __m256i v[16] = {
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
        _mm256_set1_epi32((int)blake3_iv[0]), _mm256_set1_epi32((int)blake3_iv[1]),
        _mm256_set1_epi32((int)blake3_iv[2]), _mm256_set1_epi32((int)blake3_iv[3]),
        _mm256_loadu_si256((const __m256i *)in->lo), _mm256_loadu_si256((const __m256i *)in->hi),
        _mm256_loadu_si256((const __m256i *)in->len), _mm256_loadu_si256((const __m256i *)in->flg),
    };
    COMPRESS();
    STORE_CVS(n, cv);
}
#endif
