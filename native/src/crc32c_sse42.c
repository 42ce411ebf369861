/*
 * CRC-32C with SSE4.2's CRC32 instruction, 8 bytes at a time. The instruction's latency is three
 * cycles and it issues one a cycle, so the buffer goes in rounds of three streams of
 * CRC32C_STREAM_BYTES run side by side, whose CRCs are then joined (each shifted over the streams
 * after it: crc32c.c's tables), and the tail in one stream.
 *
 *   round: [ a: S bytes ][ b: S bytes ][ c: S bytes ]
 *   crc(.. a b c) = shift(crc(.. a), 2S) ^ shift(crc0(b), S) ^ crc0(c)   (crc0: from a zero register)
 */
#include "crc32c_kernels.h"

#ifndef RS_NO_SSE42
#include <nmmintrin.h>
#include <string.h>

static uint64_t load64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static uint32_t one_stream(uint32_t c, const uint8_t *p, size_t len) {
    uint64_t c64 = c;
    for (; len >= 8; len -= 8, p += 8) c64 = _mm_crc32_u64(c64, load64(p));
    c = (uint32_t)c64;
    for (; len > 0; len--) c = _mm_crc32_u8(c, *p++);
    return c;
}

uint32_t crc32c_kernel_sse42(uint32_t raw, const uint8_t *p, size_t len) {
    const size_t s = CRC32C_STREAM_BYTES;
    for (; len >= 3 * s; len -= 3 * s, p += 3 * s) {
        uint64_t ca = raw, cb = 0, cc = 0;
        for (size_t i = 0; i < s; i += 8) {
            ca = _mm_crc32_u64(ca, load64(p + i));
            cb = _mm_crc32_u64(cb, load64(p + s + i));
            cc = _mm_crc32_u64(cc, load64(p + 2 * s + i));
        }
        raw = crc32c_shift_stream((uint32_t)ca, 1) ^ crc32c_shift_stream((uint32_t)cb, 0) ^ (uint32_t)cc;
    }
    return one_stream(raw, p, len);
}
#endif
