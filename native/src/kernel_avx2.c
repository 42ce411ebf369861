/*
 * AVX2 kernel, split-nibble products in 32-byte strides (built with -mavx2).
 *
 *     lo = x & 0x0f;  hi = x >> 4
 *     c * x = LO(c)[lo] ^ HI(c)[hi]          LO(c)[n] = c * n, HI(c)[n] = c * (n << 4)
 *
 * vpshufb looks up within each 128-bit lane, so each 16-byte table is broadcast to both lanes.
 */
#ifndef RS_NO_AVX2
#include <immintrin.h>

#include "kernels.h"
#include "rs.h"

RS_INLINE __m256i table256(const uint8_t *t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)t));
}

/*
 * Up to 4 rows go two 32-byte vectors per step, so each table broadcast serves 64 bytes
 * (+25-40% here); more rows would need more than the 16 ymm registers, and go one at a time.
 */
RS_INLINE void avx2_rows(const int R, const rs_matrix *mx, const uint8_t *const *in,
                         uint8_t *const *out, size_t off, size_t len, int stream, int accumulate) {
    RS_LOCAL_POINTERS(mx, in, out, R, accumulate);
    const uint8_t *const nibble = mx->nibble;
    const __m256i mask = _mm256_set1_epi8(0x0f);
    size_t i = off;
    for (; R <= 4 && i + 64 <= off + len; i += 64) {
        __m256i acc0[RS_ROWS_PER_PASS], acc1[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) {
            acc0[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i)) : _mm256_setzero_si256();
            acc1[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i + 32)) : _mm256_setzero_si256();
        }
        for (int j = 0; j < k; j++) {
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(src[j] + i));
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(src[j] + i + 32));
            __m256i lo0 = _mm256_and_si256(x0, mask), hi0 = _mm256_and_si256(_mm256_srli_epi64(x0, 4), mask);
            __m256i lo1 = _mm256_and_si256(x1, mask), hi1 = _mm256_and_si256(_mm256_srli_epi64(x1, 4), mask);
            const uint8_t *t = nibble + (size_t)j * R * 32;
            for (int r = 0; r < R; r++) {
                __m256i tl = table256(t + r * 32), th = table256(t + r * 32 + 16);
                acc0[r] = _mm256_xor_si256(acc0[r], _mm256_xor_si256(_mm256_shuffle_epi8(tl, lo0), _mm256_shuffle_epi8(th, hi0)));
                acc1[r] = _mm256_xor_si256(acc1[r], _mm256_xor_si256(_mm256_shuffle_epi8(tl, lo1), _mm256_shuffle_epi8(th, hi1)));
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) {
                _mm256_stream_si256((__m256i *)(dst[r] + i), acc0[r]);
                _mm256_stream_si256((__m256i *)(dst[r] + i + 32), acc1[r]);
            } else {
                _mm256_storeu_si256((__m256i *)(dst[r] + i), acc0[r]);
                _mm256_storeu_si256((__m256i *)(dst[r] + i + 32), acc1[r]);
            }
        }
    }
    for (; i < off + len; i += 32) {
        __m256i acc[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) acc[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i)) : _mm256_setzero_si256();
        for (int j = 0; j < k; j++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(src[j] + i));
            __m256i lo = _mm256_and_si256(x, mask), hi = _mm256_and_si256(_mm256_srli_epi64(x, 4), mask);
            const uint8_t *t = nibble + (size_t)j * R * 32;
            for (int r = 0; r < R; r++) {
                __m256i pl = _mm256_shuffle_epi8(table256(t + r * 32), lo);
                __m256i ph = _mm256_shuffle_epi8(table256(t + r * 32 + 16), hi);
                acc[r] = _mm256_xor_si256(acc[r], _mm256_xor_si256(pl, ph));
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) _mm256_stream_si256((__m256i *)(dst[r] + i), acc[r]);
            else _mm256_storeu_si256((__m256i *)(dst[r] + i), acc[r]);
        }
    }
}

/* Clears dirty upper YMM/ZMM halves: legacy-SSE code after AVX code that skipped vzeroupper
 * (ISA-L's AVX-512 routines, say) otherwise runs at a third of its speed on this CPU. */
void rs_zero_upper(void) { _mm256_zeroupper(); }

RS_SIMD_KERNEL(rs_kernel_avx2, avx2_rows, 32, 1)
#endif
