/*
 * The multiply-accumulate kernels: one portable reference and per-ISA twins with one signature.
 * Each computes, for a group of up to RS_ROWS_PER_PASS output rows,
 *
 *     for i in [off, off + len):
 *         for r in [0, rows):
 *             out[r][i] = XOR over j in [0, k) of coef(j, r) * in[j][i]      (GF(2^8) products)
 *
 * holding the rows' accumulators in registers so each input byte is loaded once. SIMD kernels
 * run the bulk in vector strides and hand the tail (len mod vector width) to the portable kernel,
 * passing RS_KERNEL_ACCUMULATE on. They work from local copies of the in[] and out[] pointers and
 * the tables' address: a vector store may alias anything, so each would otherwise be loaded again
 * after every store (4+2, 64 KiB shards: update +40% on avx2 and +70% on ssse3, encode +5%).
 */
#ifndef BLOBSTORE_KERNELS_H
#define BLOBSTORE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define RS_ROWS_PER_PASS 8

/* One group of rows, tables in input-major order: entry (j, r) is at index j * rows + r. */
typedef struct rs_matrix {
    int k;
    int rows;
    const uint8_t *coef;    /* coefficients */
    const uint64_t *affine; /* 8x8 bit matrices for vgf2p8affineqb (gf_affine_matrix) */
    const uint8_t *nibble;  /* 32 bytes each: c * n for n = 0..15, then c * (n << 4) */
} rs_matrix;

/*
 * RS_KERNEL_STREAM asks for non-temporal stores (outputs are then 64-byte aligned): for stripes
 * far larger than the cache they skip the read-for-ownership of each output line. Kernels
 * without streaming stores ignore it.
 */
#define RS_KERNEL_STREAM 1u

/*
 * RS_KERNEL_ACCUMULATE adds the products into the outputs, out[r][i] ^= XOR over j of ...,
 * instead of replacing them (rs_encode_update). A SIMD kernel starts each stride's accumulators
 * from out[r][i .. i + width) where it would start from zero and stores them back to the same
 * bytes; the portable kernel XORs its first input in like the others. The SIMD kernels compile it
 * for the update's one input (k = 1, a constant: no loop over inputs) and hand any other k to the
 * portable kernel. An output byte is read
 * only by the step that then writes it, so this is safe as long as no output overlaps an input or
 * another output (rs.c checks). Never combined with RS_KERNEL_STREAM: the outputs were just
 * read, so there is no read-for-ownership to skip.
 */
#define RS_KERNEL_ACCUMULATE 2u

typedef void rs_kernel(const rs_matrix *mx, const uint8_t *const *in, uint8_t *const *out,
                       size_t off, size_t len, unsigned flags);

rs_kernel rs_kernel_portable;
#ifndef RS_NO_SSSE3
rs_kernel rs_kernel_ssse3;
#endif
#ifndef RS_NO_AVX2
rs_kernel rs_kernel_avx2;
void rs_zero_upper(void); /* vzeroupper; only on CPUs with AVX */
#endif
#ifndef RS_NO_GFNI256
rs_kernel rs_kernel_gfni256;
#endif
#ifndef RS_NO_GFNI512
rs_kernel rs_kernel_gfni512;
#endif

/* Calls body(R, ...) with R a compile-time constant equal to mx->rows, so loops over rows unroll. */
#define RS_FOR_ROWS(body, mx, ...)                     \
    switch ((mx)->rows) {                              \
    case 1: body(1, mx, __VA_ARGS__); break;         \
    case 2: body(2, mx, __VA_ARGS__); break;         \
    case 3: body(3, mx, __VA_ARGS__); break;         \
    case 4: body(4, mx, __VA_ARGS__); break;         \
    case 5: body(5, mx, __VA_ARGS__); break;         \
    case 6: body(6, mx, __VA_ARGS__); break;         \
    case 7: body(7, mx, __VA_ARGS__); break;         \
    default: body(8, mx, __VA_ARGS__); break;          \
    }

#define RS_INLINE static inline __attribute__((always_inline))

/*
 * The start of every SIMD kernel's rows: `k` inputs (1 for an update: the loop over inputs folds
 * away) and local copies src[], dst[] of the input and output pointers. Vector stores may alias
 * anything (the vector types are may_alias): pointers read through in[] or out[] would be loaded
 * again after each store.
 */
#define RS_LOCAL_POINTERS(mx, in, out, R, accumulate)                                                \
    const int k = (accumulate) ? 1 : (mx)->k;                                                        \
    const uint8_t *src[RS_K_MAX];                                                                    \
    uint8_t *dst[RS_ROWS_PER_PASS];                                                                  \
    for (int j_ = 0; j_ < k; j_++) src[j_] = (in)[j_];                                               \
    for (int r_ = 0; r_ < (R); r_++) dst[r_] = (out)[r_]

/*
 * The entry every SIMD kernel shares: an update (RS_KERNEL_ACCUMULATE) with other than one input
 * goes to the portable kernel; the bulk runs `rows` in VEC-byte strides, expanded per row count
 * with `accumulate` a constant (its test stays out of the encode loop); the tail goes to the
 * portable kernel. STREAMS: the kernel has non-temporal stores, fenced before later stores.
 */
#define RS_SIMD_KERNEL(name, rows, VEC, STREAMS)                                                     \
    void name(const rs_matrix *mx, const uint8_t *const *in, uint8_t *const *out, size_t off,       \
              size_t len, unsigned flags) {                                                          \
        const unsigned accumulate = flags & RS_KERNEL_ACCUMULATE;                                    \
        const int stream = (STREAMS) && (flags & RS_KERNEL_STREAM) != 0;                             \
        size_t bulk = len & ~(size_t)((VEC) - 1);                                                    \
        if (accumulate && mx->k != 1) { /* compiled for one input only */                            \
            rs_kernel_portable(mx, in, out, off, len, accumulate);                                   \
            return;                                                                                  \
        }                                                                                            \
        if (bulk && accumulate) {                                                                    \
            RS_FOR_ROWS(rows, mx, in, out, off, bulk, 0, 1);                                         \
        } else if (bulk) {                                                                           \
            RS_FOR_ROWS(rows, mx, in, out, off, bulk, stream, 0);                                    \
        }                                                                                            \
        if (len > bulk) rs_kernel_portable(mx, in, out, off + bulk, len - bulk, accumulate);         \
        if (stream) _mm_sfence(); /* order the streamed lines before later stores */                 \
    }

#endif
