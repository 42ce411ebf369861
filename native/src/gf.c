/* GF(2^8) tables, the encoding matrix (part of the on-disk format) and matrix inversion. */
#include "gf.h"

#include <pthread.h>
#include <string.h>

uint8_t gf_mul_table[256][256];
static uint8_t gf_log[256];
static uint8_t gf_exp[510]; /* doubled so exp[log a + log b] needs no reduction */
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

static void gf_build(void) {
    unsigned x = 1;
    for (int i = 0; i < 255; i++) {
        gf_exp[i] = (uint8_t)x;
        gf_exp[i + 255] = (uint8_t)x;
        gf_log[x] = (uint8_t)i;
        x <<= 1; /* multiply by the generator 2 */
        if (x & 0x100) x ^= GF_POLY;
    }
    for (int a = 0; a < 256; a++) {
        for (int b = 0; b < 256; b++) {
            gf_mul_table[a][b] = (a == 0 || b == 0) ? 0 : gf_exp[gf_log[a] + gf_log[b]];
        }
    }
}

void gf_init(void) { pthread_once(&gf_once, gf_build); }

uint8_t gf_mul(uint8_t a, uint8_t b) { return gf_mul_table[a][b]; }

uint8_t gf_inv(uint8_t a) { return gf_exp[255 - gf_log[a]]; }

/*
 * The Cauchy matrix with x_i = k + i (parity rows) and y_j = j (data columns): every square
 * submatrix of a Cauchy matrix is invertible, and stacking it under the identity keeps that
 * property for any choice of k rows. This is the same matrix as ISA-L's gf_gen_cauchy1_matrix,
 * which lets the bench check our parity against ISA-L byte for byte.
 */
void gf_encoding_matrix(int k, int m, uint8_t *out) {
    memset(out, 0, (size_t)(k + m) * (size_t)k);
    for (int i = 0; i < k; i++) out[i * k + i] = 1;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < k; j++) out[(k + i) * k + j] = gf_inv((uint8_t)((k + i) ^ j));
    }
}

static void gf_swap_rows(int n, uint8_t *a, int r1, int r2) {
    for (int c = 0; c < n; c++) {
        uint8_t t = a[r1 * n + c];
        a[r1 * n + c] = a[r2 * n + c];
        a[r2 * n + c] = t;
    }
}

/* Gauss-Jordan elimination; row operations are applied to a and inv alike. */
int gf_invert(int n, uint8_t *a, uint8_t *inv) {
    memset(inv, 0, (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++) inv[i * n + i] = 1;
    for (int col = 0; col < n; col++) {
        int pivot = col;
        while (pivot < n && a[pivot * n + col] == 0) pivot++;
        if (pivot == n) return -1;
        if (pivot != col) {
            gf_swap_rows(n, a, pivot, col);
            gf_swap_rows(n, inv, pivot, col);
        }
        uint8_t scale = gf_inv(a[col * n + col]);
        for (int c = 0; c < n; c++) {
            a[col * n + c] = gf_mul(a[col * n + c], scale);
            inv[col * n + c] = gf_mul(inv[col * n + c], scale);
        }
        for (int r = 0; r < n; r++) {
            uint8_t f = a[r * n + col];
            if (r == col || f == 0) continue;
            for (int c = 0; c < n; c++) {
                a[r * n + c] ^= gf_mul(f, a[col * n + c]);
                inv[r * n + c] ^= gf_mul(f, inv[col * n + c]);
            }
        }
    }
    return 0;
}

/*
 * vgf2p8affineqb computes, for each byte x, output bit i = parity(A.byte[7 - i] AND x).
 * Multiplication by c is linear: c * x = XOR over set bits b of x of (c * 2^b), so output bit i
 * of c * x takes bit b of x exactly when bit i of c * 2^b is set.
 */
uint64_t gf_affine_matrix(uint8_t c) {
    uint64_t matrix = 0;
    for (int i = 0; i < 8; i++) {
        uint8_t row = 0;
        for (int b = 0; b < 8; b++) {
            if ((gf_mul(c, (uint8_t)(1u << b)) >> i) & 1u) row |= (uint8_t)(1u << b);
        }
        matrix |= (uint64_t)row << (8 * (7 - i));
    }
    return matrix;
}
