/*
 * A plain reference for the C tests: shift-and-add multiplication, brute-force inverses and the
 * encoding matrix written straight from its definition. Slow and obviously correct.
 */
#ifndef BLOBSTORE_TEST_REFERENCE_H
#define BLOBSTORE_TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

static uint8_t ref_mul(uint8_t a, uint8_t b) {
    unsigned x = a, y = b, product = 0;
    while (y) {
        if (y & 1) product ^= x;
        y >>= 1;
        x <<= 1;
        if (x & 0x100) x ^= 0x11d;
    }
    return (uint8_t)product;
}

static uint8_t ref_inv(uint8_t a) {
    for (unsigned b = 1; b < 256; b++) {
        if (ref_mul(a, (uint8_t)b) == 1) return (uint8_t)b;
    }
    return 0;
}

/* Coefficient of data shard j in parity shard i. */
static uint8_t ref_coef(int k, int i, int j) { return ref_inv((uint8_t)((k + i) ^ j)); }

/* parity[i][x] = XOR over j of coef(i, j) * data[j][x] */
static void ref_encode(int k, int m, uint8_t *const *data, uint8_t *const *parity, size_t len) {
    uint8_t table[256];
    for (int i = 0; i < m; i++) {
        for (size_t x = 0; x < len; x++) parity[i][x] = 0;
        for (int j = 0; j < k; j++) {
            uint8_t c = ref_coef(k, i, j);
            for (unsigned v = 0; v < 256; v++) table[v] = ref_mul(c, (uint8_t)v);
            for (size_t x = 0; x < len; x++) parity[i][x] ^= table[data[j][x]];
        }
    }
}

#endif
