/* GF(2^8) arithmetic with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d), and small matrices. */
#ifndef BLOBSTORE_GF_H
#define BLOBSTORE_GF_H

#include <stdint.h>

#define GF_POLY 0x11d

/* gf_mul_table[a][b] = a * b. Filled by gf_init(); 64 KiB, used by the portable kernel. */
extern uint8_t gf_mul_table[256][256];

void gf_init(void); /* idempotent and thread-safe */
uint8_t gf_mul(uint8_t a, uint8_t b);
uint8_t gf_inv(uint8_t a); /* a != 0 */

/* Encoding matrix (k + m) x k, row-major: identity over Cauchy rows 1 / ((k + i) ^ j). */
void gf_encoding_matrix(int k, int m, uint8_t *out);

/* Inverts the n x n matrix a (destroyed) into inv; returns 0, or -1 when a is singular. */
int gf_invert(int n, uint8_t *a, uint8_t *inv);

/* The 8x8 bit matrix for x -> c * x in the layout vgf2p8affineqb expects. */
uint64_t gf_affine_matrix(uint8_t c);

#endif
