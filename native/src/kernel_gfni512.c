/*
 * GFNI kernel, AVX-512 form (built with -mavx512f -mavx512bw -mgfni).
 *
 *     c * x = A(c) . x          one vgf2p8affineqb per 64 bytes, A(c) = gf_affine_matrix(c)
 *
 * The 8x8 matrices are broadcast from memory ({1to8}), so only the accumulators and the input
 * vector occupy registers and all eight rows of a pass fit at once.
 */
#ifndef RS_NO_GFNI512
#include <immintrin.h>

#include "kernels.h"
#include "rs.h"

/*
 * Two vectors (128 bytes) per step while they last: each broadcast matrix serves two affine
 * instructions and the two dependency chains overlap (+8-35% on 64 KiB shards, the same at 1 MiB
 * where memory sets the pace). 16 accumulators of 32 zmm registers leave room for the rest.
 */
RS_INLINE void gfni512_rows(const int R, const rs_matrix *mx, const uint8_t *const *in,
                            uint8_t *const *out, size_t off, size_t len, int stream, int accumulate) {
    RS_LOCAL_POINTERS(mx, in, out, R, accumulate);
    const uint64_t *const affine = mx->affine;
    size_t i = off;
    for (; i + 128 <= off + len; i += 128) {
        __m512i a0[RS_ROWS_PER_PASS], a1[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) {
            a0[r] = accumulate ? _mm512_loadu_si512((const void *)(dst[r] + i)) : _mm512_setzero_si512();
            a1[r] = accumulate ? _mm512_loadu_si512((const void *)(dst[r] + i + 64)) : _mm512_setzero_si512();
        }
        for (int j = 0; j < k; j++) {
            const uint64_t *a = affine + (size_t)j * R;
            __m512i x0 = _mm512_loadu_si512((const void *)(src[j] + i));
            __m512i x1 = _mm512_loadu_si512((const void *)(src[j] + i + 64));
            for (int r = 0; r < R; r++) {
                __m512i mat = _mm512_set1_epi64((long long)a[r]);
                a0[r] = _mm512_xor_si512(a0[r], _mm512_gf2p8affine_epi64_epi8(x0, mat, 0));
                a1[r] = _mm512_xor_si512(a1[r], _mm512_gf2p8affine_epi64_epi8(x1, mat, 0));
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) {
                _mm512_stream_si512((void *)(dst[r] + i), a0[r]);
                _mm512_stream_si512((void *)(dst[r] + i + 64), a1[r]);
            } else {
                _mm512_storeu_si512((void *)(dst[r] + i), a0[r]);
                _mm512_storeu_si512((void *)(dst[r] + i + 64), a1[r]);
            }
        }
    }
    for (; i < off + len; i += 64) {
        __m512i acc[RS_ROWS_PER_PASS];
        for (int r = 0; r < R; r++) acc[r] = accumulate ? _mm512_loadu_si512((const void *)(dst[r] + i)) : _mm512_setzero_si512();
        for (int j = 0; j < k; j++) {
            const uint64_t *a = affine + (size_t)j * R;
            __m512i x = _mm512_loadu_si512((const void *)(src[j] + i));
            for (int r = 0; r < R; r++) {
                acc[r] = _mm512_xor_si512(acc[r], _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64((long long)a[r]), 0));
            }
        }
        for (int r = 0; r < R; r++) {
            if (stream) _mm512_stream_si512((void *)(dst[r] + i), acc[r]);
            else _mm512_storeu_si512((void *)(dst[r] + i), acc[r]);
        }
    }
}

RS_SIMD_KERNEL(rs_kernel_gfni512, gfni512_rows, 64, 1)
#endif
