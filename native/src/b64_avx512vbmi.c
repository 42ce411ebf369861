/*
 * AVX-512 VBMI base64: 48 input bytes to 64 characters per step (built with -mavx512vbmi).
 *
 * 1. vpermb spreads the 16 groups of 3 bytes a b c into 16 dwords [c b a a], so each dword holds
 *    the group's 24 bits in its low bits, a first (the top byte is never looked at).
 * 2. vpmultishiftqb picks, per output byte, the 8 bits at a chosen offset of its qword: 18, 12,
 *    6 and 0 for the first dword, 50, 44, 38, 32 for the second; the top 2 of the 8 are junk.
 * 3. vpermb with the 64-character alphabet as the table maps each byte by its low 6 bits, so the
 *    junk bits are ignored and no masking is needed.
 * Input is read with masked loads, which never touch bytes past the 48 taken.
 */
#ifndef RS_NO_AVX512VBMI
#include <immintrin.h>

#include "b64_kernels.h"

#define STEP_MASK 0x0000ffffffffffffull /* 48 bytes */

/* Group g's bytes 3g + 2, 3g + 1, 3g, 3g into dword g. */
#define G(g) 3 * (g) + 2, 3 * (g) + 1, 3 * (g), 3 * (g)
static const uint8_t spread_idx[64] = {G(0), G(1), G(2),  G(3),  G(4),  G(5),  G(6),  G(7),
                                       G(8), G(9), G(10), G(11), G(12), G(13), G(14), G(15)};
#undef G
static const char alphabet_chars[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_kernel_avx512vbmi(const uint8_t *src, size_t len, uint8_t *dst) {
    const __m512i spread = _mm512_loadu_si512(spread_idx);
    const __m512i shifts = _mm512_set1_epi64(0x20262c3200060c12ll); /* bytes 18 12 6 0 50 44 38 32 */
    const __m512i alphabet = _mm512_loadu_si512(alphabet_chars);
    size_t i = 0;
    uint8_t *o = dst;
    for (; i + 96 <= len; i += 96, o += 128) {
        __m512i a = _mm512_maskz_loadu_epi8(STEP_MASK, src + i);
        __m512i b = _mm512_maskz_loadu_epi8(STEP_MASK, src + i + 48);
        a = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(spread, a)), alphabet);
        b = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(spread, b)), alphabet);
        _mm512_storeu_si512(o, a);
        _mm512_storeu_si512(o + 64, b);
    }
    for (; i + 48 <= len; i += 48, o += 64) {
        __m512i a = _mm512_maskz_loadu_epi8(STEP_MASK, src + i);
        a = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(spread, a)), alphabet);
        _mm512_storeu_si512(o, a);
    }
    return i;
}
#endif
