/*
 * GFNI kernel, 256-bit form (built with -mavx2 -mgfni).
 *
 *     c * x = A(c) . x          one vgf2p8affineqb per 32 bytes, A(c) = gf_affine_matrix(c)
 *
 * Multiplication by a constant is linear over GF(2), so one affine instruction does what the
 * split-nibble path needs two shuffles, two masks and a shift for.
 */
#ifndef RS_NO_GFNI256
#include <immintrin.h>

#include "kernels.h"
#include "rs.h"

/*
 * Up to 4 rows go two vectors (64 bytes) per step: each broadcast matrix serves two affine
 * instructions; more rows would overflow the 16 ymm registers and go one vector at a time.
 */
RS_INLINE void gfni256_rows(const int R, const rs_matrix *mx, const uint8_t *const *in,
                            uint8_t *const *out, size_t off, size_t len, int stream, int accumulate) {
    RS_LOCAL_POINTERS(mx, in, out, R, accumulate);
    const uint64_t *const affine = mx->affine;
    size_t i = off;
    for (; R <= 4 && i + 64 <= off + len; i += 64) {
        __m256i a0[RS_ROWS_PER_PASS], a1[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) {
            a0[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i)) : _mm256_setzero_si256();
            a1[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i + 32)) : _mm256_setzero_si256();
        }
        for (int j = 0; j < k; j++) {
            const uint64_t *a = affine + (size_t)j * R;
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(src[j] + i));
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(src[j] + i + 32));
            for (int r = 0; r < R; r++) {
                __m256i mat = _mm256_set1_epi64x((long long)a[r]);
                a0[r] = _mm256_xor_si256(a0[r], _mm256_gf2p8affine_epi64_epi8(x0, mat, 0));
                a1[r] = _mm256_xor_si256(a1[r], _mm256_gf2p8affine_epi64_epi8(x1, mat, 0));
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) {
                _mm256_stream_si256((__m256i *)(dst[r] + i), a0[r]);
                _mm256_stream_si256((__m256i *)(dst[r] + i + 32), a1[r]);
            } else {
                _mm256_storeu_si256((__m256i *)(dst[r] + i), a0[r]);
                _mm256_storeu_si256((__m256i *)(dst[r] + i + 32), a1[r]);
            }
        }
    }
    for (; i < off + len; i += 32) {
        __m256i acc[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) acc[r] = accumulate ? _mm256_loadu_si256((const __m256i *)(dst[r] + i)) : _mm256_setzero_si256();
        for (int j = 0; j < k; j++) {
            const uint64_t *a = affine + (size_t)j * R;
            __m256i x = _mm256_loadu_si256((const __m256i *)(src[j] + i));
            for (int r = 0; r < R; r++) {
                __m256i p = _mm256_gf2p8affine_epi64_epi8(x, _mm256_set1_epi64x((long long)a[r]), 0);
                acc[r] = _mm256_xor_si256(acc[r], p);
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) _mm256_stream_si256((__m256i *)(dst[r] + i), acc[r]);
            else _mm256_storeu_si256((__m256i *)(dst[r] + i), acc[r]);
        }
    }
}

RS_SIMD_KERNEL(rs_kernel_gfni256, gfni256_rows, 32, 1)
#endif
