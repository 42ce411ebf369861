/*
 * Portable kernel: one 256-byte product table per coefficient (a row of gf_mul_table).
 *
 *     for r in rows:
 *         out[r][i] = T(coef(0, r))[in[0][i]]                       for every i
 *         out[r][i] ^= T(coef(j, r))[in[j][i]]                      for j = 1..k-1, every i
 *
 * With RS_KERNEL_ACCUMULATE the first input is XORed in too (out[r][i] ^= ...).
 *
 * The caller passes strips (rs.c) small enough that the k input strips and out[r] stay in L2
 * while each row goes over them again.
 * Bytes move eight at a time through 64-bit words; the tail goes byte by byte.
 */
#include <string.h>

#include "gf.h"
#include "kernels.h"

static inline uint64_t lookup8(const uint8_t *t, uint64_t w) {
    return (uint64_t)t[w & 0xff] | (uint64_t)t[(w >> 8) & 0xff] << 8 |
           (uint64_t)t[(w >> 16) & 0xff] << 16 | (uint64_t)t[(w >> 24) & 0xff] << 24 |
           (uint64_t)t[(w >> 32) & 0xff] << 32 | (uint64_t)t[(w >> 40) & 0xff] << 40 |
           (uint64_t)t[(w >> 48) & 0xff] << 48 | (uint64_t)t[w >> 56] << 56;
}

static void mul_set(const uint8_t *t, const uint8_t *src, uint8_t *dst, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        w = lookup8(t, w);
        memcpy(dst + i, &w, 8);
    }
    for (; i < len; i++) dst[i] = t[src[i]];
}

static void mul_xor(const uint8_t *t, const uint8_t *src, uint8_t *dst, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w, d;
        memcpy(&w, src + i, 8);
        memcpy(&d, dst + i, 8);
        d ^= lookup8(t, w);
        memcpy(dst + i, &d, 8);
    }
    for (; i < len; i++) dst[i] ^= t[src[i]];
}

void rs_kernel_portable(const rs_matrix *mx, const uint8_t *const *in, uint8_t *const *out,
                        size_t off, size_t len, unsigned flags) {
    const int k = mx->k;
    const int rows = mx->rows;
    const int accumulate = (flags & RS_KERNEL_ACCUMULATE) != 0;
    for (int r = 0; r < rows; r++) {
        uint8_t *dst = out[r] + off;
        if (accumulate) mul_xor(gf_mul_table[mx->coef[r]], in[0] + off, dst, len);
        else mul_set(gf_mul_table[mx->coef[r]], in[0] + off, dst, len);
        for (int j = 1; j < k; j++) {
            mul_xor(gf_mul_table[mx->coef[j * rows + r]], in[j] + off, dst, len);
        }
    }
}
