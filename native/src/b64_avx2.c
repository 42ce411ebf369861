/*
 * AVX2 base64: 24 input bytes to 32 characters per step (built with -mavx2).
 *
 * 1. vpermd puts input bytes 0..11 in the low lane and 12..23 in the high lane; vpshufb turns each
 *    3-byte group a b c into the little-endian dword [b a c b], so the 16-bit words are a:b, b:c.
 * 2. The four 6-bit fields are cut out with masks and moved into place with 16-bit multiplies
 *    (a high-half multiply is a right shift, a low-half one a left shift, per word).
 * 3. Each 6-bit value v becomes its character as v + offset(class of v): 'A' for 0..25, 'a' - 26
 *    for 26..51, '0' - 52 for 52..61, then '+' and '/'. The class index is v - 51 saturated at 0
 *    (0 for v <= 51, 1..12 above), forced to 13 for v < 26; vpshufb looks the offset up.
 */
#ifndef RS_NO_AVX2
#include <immintrin.h>

#include "b64_kernels.h"

static inline __m256i encode_step(__m256i in) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5);
    const __m256i groups = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
                                            1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    __m256i x = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(in, lanes), groups);
    /* word a:b: a's top 6 bits (10..15) to byte 0, bits 4..9 to byte 1;
       word b:c: bits 6..11 to byte 2, bits 0..5 to byte 3. */
    __m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(x, _mm256_set1_epi32(0x0fc0fc00)),
                                    _mm256_set1_epi32(0x04000040));
    __m256i lo = _mm256_mullo_epi16(_mm256_and_si256(x, _mm256_set1_epi32(0x003f03f0)),
                                    _mm256_set1_epi32(0x01000010));
    __m256i v = _mm256_or_si256(hi, lo);
    const __m256i offsets = _mm256_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0,
                                             71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    __m256i cls = _mm256_subs_epu8(v, _mm256_set1_epi8(51));
    __m256i upper = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), v); /* v < 26; v <= 63 so signed is fine */
    cls = _mm256_or_si256(cls, _mm256_and_si256(upper, _mm256_set1_epi8(13)));
    return _mm256_add_epi8(v, _mm256_shuffle_epi8(offsets, cls));
}

size_t b64_kernel_avx2(const uint8_t *src, size_t len, uint8_t *dst) {
    size_t i = 0;
    uint8_t *o = dst;
    /* Each step loads 32 bytes and uses 24: stop while 32 are still there to read. */
    for (; i + 56 <= len; i += 48, o += 64) {
        __m256i a = encode_step(_mm256_loadu_si256((const __m256i *)(src + i)));
        __m256i b = encode_step(_mm256_loadu_si256((const __m256i *)(src + i + 24)));
        _mm256_storeu_si256((__m256i *)o, a);
        _mm256_storeu_si256((__m256i *)(o + 32), b);
    }
    for (; i + 32 <= len; i += 24, o += 32) {
        _mm256_storeu_si256((__m256i *)o, encode_step(_mm256_loadu_si256((const __m256i *)(src + i))));
    }
    return i;
}
#endif
