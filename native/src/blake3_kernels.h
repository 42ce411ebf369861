/*
 * What blake3.c shares with its SIMD kernels: the constants, the flags, and the one operation a
 * kernel does, hashing `lanes` independent inputs side by side (each vector register holds the
 * same state word of every input).
 */
#ifndef BLOBSTORE_BLAKE3_KERNELS_H
#define BLOBSTORE_BLAKE3_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define BLAKE3_BLOCK_BYTES 64

enum {
    BLAKE3_CHUNK_START = 1,
    BLAKE3_CHUNK_END = 2,
    BLAKE3_PARENT = 4,
    BLAKE3_ROOT = 8,
};

/* The initial chaining value (unkeyed hashing): SHA-256's. */
extern const uint32_t blake3_iv[8];
/*
 * blake3_schedule[r][i]: the message word G takes as its i-th input in round r (the permutation
 * 2 6 3 10 7 0 4 13 1 11 12 5 9 14 15 8 applied r times). Here, not in blake3.c, so that each
 * kernel's compiler sees the indices as constants.
 */
static const uint8_t blake3_schedule[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},  {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},  {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},  {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

/* The most lanes a kernel has (AVX-512: 16 inputs side by side). */
#define BLAKE3_MAX_LANES 16

/*
 * A kernel's inputs, one per lane: lane j hashes from row[j] with the counter hi[j]:lo[j]. Lanes
 * past the n a call hashes hold a copy of lane 0 (they are computed and dropped). Strided inputs
 * (the levels of one input's tree) and gathered ones (whole chunks of several small inputs,
 * blake3_hash_each) both arrive this way.
 */
typedef struct {
    const uint8_t *row[BLAKE3_MAX_LANES];
    uint32_t lo[BLAKE3_MAX_LANES];
    uint32_t hi[BLAKE3_MAX_LANES];
} blake3_lane_set;

/*
 * Hashes n inputs (1 <= n <= the kernel's width), lane j's `blocks` whole 64-byte blocks from the
 * IV; every block has `flags`, the first also `flags_start` and the last also `flags_end`. Writes
 * input j's chaining value to out[32j .. 32j + 32). out may not overlap the inputs.
 */
typedef void blake3_many_kernel(const blake3_lane_set *in, size_t n, size_t blocks, uint8_t flags, uint8_t flags_start, uint8_t flags_end,
                                uint8_t *out);

/*
 * One block of each of n inputs (1 <= n <= the kernel's width), each lane with a state of its own:
 * lane j compresses the 64 bytes at row[j] into the chaining value at cv[32j .. 32j + 32) (read,
 * then written) with its counter hi[j]:lo[j], block length len[j] and flags flg[j]. For the short
 * last chunks of several inputs (blake3_hash_each), which differ in their number of blocks and in
 * the length of their last. Lanes past n hold a copy of lane 0, as in blake3_lane_set.
 */
typedef struct {
    const uint8_t *row[BLAKE3_MAX_LANES];
    uint32_t lo[BLAKE3_MAX_LANES];
    uint32_t hi[BLAKE3_MAX_LANES];
    uint32_t len[BLAKE3_MAX_LANES];
    uint32_t flg[BLAKE3_MAX_LANES];
} blake3_step_set;

typedef void blake3_step_kernel(const blake3_step_set *in, size_t n, uint8_t *cv);

/* One round on the including kernel's state v[] and message words m[], by its own G; s: the round's schedule row. */
#define BLAKE3_ROUND(s)                       \
    do {                                      \
        G(0, 4, 8, 12, m[(s)[0]], m[(s)[1]]);   \
        G(1, 5, 9, 13, m[(s)[2]], m[(s)[3]]);   \
        G(2, 6, 10, 14, m[(s)[4]], m[(s)[5]]);  \
        G(3, 7, 11, 15, m[(s)[6]], m[(s)[7]]);  \
        G(0, 5, 10, 15, m[(s)[8]], m[(s)[9]]);  \
        G(1, 6, 11, 12, m[(s)[10]], m[(s)[11]]); \
        G(2, 7, 8, 13, m[(s)[12]], m[(s)[13]]); \
        G(3, 4, 9, 14, m[(s)[14]], m[(s)[15]]); \
    } while (0)

/* Lanes of `n` inputs `stride` apart from `in`, input j's counter counter + j when `increment` (chunks) else counter (parents). */
static inline void blake3_lanes_strided(blake3_lane_set *s, const uint8_t *in, size_t stride, size_t n, uint64_t counter, int increment) {
    for (size_t j = 0; j < BLAKE3_MAX_LANES; j++) {
        uint64_t c = counter + (increment && j < n ? j : 0);
        s->lo[j] = (uint32_t)c;
        s->hi[j] = (uint32_t)(c >> 32);
        s->row[j] = in + (j < n ? j : 0) * stride;
    }
}

/*
 * The kernels by width. blake3_x4.c and blake3_x8.c are each compiled twice: for AVX2 (rotations
 * by byte shuffles and shifts) and, as *_vl.c, for AVX-512 VL (one rotate instruction).
 */
#ifndef RS_NO_AVX2
blake3_many_kernel blake3_many4_avx2, blake3_many8_avx2;
blake3_step_kernel blake3_step4_avx2, blake3_step8_avx2;
#endif
#ifndef RS_NO_AVX512
blake3_many_kernel blake3_many4_avx512vl, blake3_many8_avx512vl, blake3_many16_avx512;
blake3_step_kernel blake3_step4_avx512vl, blake3_step8_avx512vl, blake3_step16_avx512;
#endif

#endif
