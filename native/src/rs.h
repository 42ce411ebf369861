/*
 * blobstore Reed-Solomon codec: the C API under the N-API binding.
 *
 * Systematic RS over GF(2^8) (polynomial 0x11d). A stripe is k data shards followed by m parity
 * shards, all of the same length. The encoding matrix is part of the on-disk format (see
 * RS_FORMAT_VERSION and gf.c): rows 0..k-1 are the identity, and parity row i, column j holds
 * 1 / ((k + i) XOR j), a Cauchy matrix, so any k of the k + m shards reconstruct the stripe.
 *
 * Every entry point validates its arguments and returns a status: 0 on success, otherwise
 * RS_STATUS(code, index) where index names the offending shard when there is one.
 */
#ifndef BLOBSTORE_RS_H
#define BLOBSTORE_RS_H

#include <stddef.h>
#include <stdint.h>

/* Bump when the encoding matrix or the shard layout changes: old parity would no longer decode. */
#define RS_FORMAT_VERSION 1

#define RS_K_MAX 64 /* data shards per stripe */
#define RS_M_MAX 16 /* parity shards per stripe */
#define RS_N_MAX (RS_K_MAX + RS_M_MAX)

/* Status codes; the TypeScript side (src/ec/errors.ts) maps each to an EcError code. */
enum rs_code {
    RS_OK = 0,
    RS_E_K_RANGE = 1,         /* k outside 1..RS_K_MAX */
    RS_E_M_RANGE = 2,         /* m outside 1..RS_M_MAX */
    RS_E_SHARD_COUNT = 3,     /* wrong number of shards in an array */
    RS_E_SHARD_TYPE = 4,      /* shard is not a buffer (or a NULL pointer with a length) */
    RS_E_SHARD_LENGTH = 5,    /* shard length differs from shard 0 */
    RS_E_TOO_MANY_MISSING = 6,/* fewer than k shards present */
    RS_E_PRESENT_TYPE = 7,    /* present[] is not an array of booleans of length k + m */
    RS_E_ARG_TYPE = 8,        /* k or m is not an integer, or shards is not an array */
    RS_E_OVERLAP = 9,         /* an output shard overlaps another shard */
    RS_E_NO_MEMORY = 10,
    RS_E_PATH_UNKNOWN = 11,   /* kernel path name not recognised */
    RS_E_PATH_UNAVAILABLE = 12,/* kernel path compiled out or not supported by this CPU */
    RS_E_INTERNAL = 13,       /* singular matrix: a bug, the Cauchy matrix is always invertible */
    RS_E_INDEX_RANGE = 14,    /* data shard index outside 0..k-1 */
};

#define RS_STATUS(code, index) ((int)(code) | ((int)(index) << 8))
#define RS_STATUS_CODE(status) ((status) & 0xff)
#define RS_STATUS_INDEX(status) ((status) >> 8)

/*
 * Computes parity: shards[0..k-1] are read, shards[k..k+m-1] are written. lens[i] is the length of
 * shards[i]; all must be equal.
 */
int rs_encode(int k, int m, uint8_t *const shards[], const size_t lens[]);

/*
 * Adds data shard `index`'s share to the m parity shards, in place:
 *
 *     parity[j][x] ^= coef(k + j, index) * data[x]      for j < m, x < len
 *
 * Encoding is linear, so from zeroed parity one call per data shard, in any order, gives exactly
 * rs_encode's parity: a stripe's parity can be built as its data shards arrive, with only the m
 * parity shards kept (ISA-L's ec_encode_data_update). Calling it twice for the same data undoes
 * it (XOR). No parity shard may overlap the data or another parity shard (RS_E_OVERLAP); errors
 * name shards by their index in the stripe: the data `index`, parity j k + j.
 */
int rs_encode_update(int k, int m, int index, const uint8_t *data, uint8_t *const parity[],
                     size_t len);

/*
 * Fills every shard i with present[i] == 0 (data and parity) from the first k present shards.
 */
int rs_reconstruct(int k, int m, uint8_t *const shards[], const size_t lens[],
                   const uint8_t present[]);

/*
 * As rs_reconstruct, but computes only the missing data shards: a degraded read needs no parity.
 * The missing parity shards are left as they are (they must still have the common length).
 */
int rs_reconstruct_data(int k, int m, uint8_t *const shards[], const size_t lens[],
                        const uint8_t present[]);

/* Writes the (k + m) x k encoding matrix, row-major, into out[(k + m) * k]. */
int rs_encoding_matrix(int k, int m, uint8_t *out);

/* Kernel paths, widest last. */
enum rs_path {
    RS_PATH_PORTABLE = 0,
    RS_PATH_SSSE3 = 1,
    RS_PATH_AVX2 = 2,
    RS_PATH_GFNI256 = 3,
    RS_PATH_GFNI512 = 4,
    RS_PATH_COUNT = 5,
};

const char *rs_path_name(int path);
int rs_path_compiled(int path);   /* 1 when the build includes this path */
int rs_path_supported(int path);  /* 1 when compiled and the CPU and OS support it */
int rs_path_current(void);        /* the path in use (probes the CPU on first call) */
/* Forces a path by name ("auto" picks the widest supported); returns a status. */
int rs_path_force(const char *name);

/* Per-thread decode-matrix cache statistics, and a way to free it (at thread exit). */
typedef struct rs_cache_stats {
    uint64_t hits;
    uint64_t misses;
    int entries;
    int capacity;
} rs_cache_stats;
void rs_cache_get_stats(rs_cache_stats *out);
void rs_cache_clear(void);

#endif
