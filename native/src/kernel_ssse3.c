/*
 * SSSE3 kernel, split-nibble products in 16-byte strides (built with -mssse3).
 *
 *     lo = x & 0x0f;  hi = x >> 4
 *     c * x = LO(c)[lo] ^ HI(c)[hi]          LO(c)[n] = c * n, HI(c)[n] = c * (n << 4)
 *
 * pshufb looks up 16 bytes at once in a 16-entry table, so each product costs two shuffles.
 */
#ifndef RS_NO_SSSE3
#include <tmmintrin.h>

#include "kernels.h"
#include "rs.h"

RS_INLINE void ssse3_rows(const int R, const rs_matrix *mx, const uint8_t *const *in,
                          uint8_t *const *out, size_t off, size_t len, int stream, int accumulate) {
    (void)stream; /* no non-temporal stores on this path */
    RS_LOCAL_POINTERS(mx, in, out, R, accumulate);
    const uint8_t *const nibble = mx->nibble;
    const __m128i mask = _mm_set1_epi8(0x0f);
    for (size_t i = off; i < off + len; i += 16) {
        __m128i acc[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) {
            acc[r] = accumulate ? _mm_loadu_si128((const __m128i *)(dst[r] + i)) : _mm_setzero_si128();
        }
        for (int j = 0; j < k; j++) {
            __m128i x = _mm_loadu_si128((const __m128i *)(src[j] + i));
            __m128i lo = _mm_and_si128(x, mask);
            __m128i hi = _mm_and_si128(_mm_srli_epi64(x, 4), mask);
            const uint8_t *t = nibble + (size_t)j * R * 32;
            for (int r = 0; r < R; r++) {
                __m128i tl = _mm_loadu_si128((const __m128i *)(t + r * 32));
                __m128i th = _mm_loadu_si128((const __m128i *)(t + r * 32 + 16));
                acc[r] = _mm_xor_si128(acc[r], _mm_shuffle_epi8(tl, lo));
                acc[r] = _mm_xor_si128(acc[r], _mm_shuffle_epi8(th, hi));
            }
        }
        for (int r = 0; r < R; r++) _mm_storeu_si128((__m128i *)(dst[r] + i), acc[r]);
    }
}

RS_SIMD_KERNEL(rs_kernel_ssse3, ssse3_rows, 16, 0)
#endif
