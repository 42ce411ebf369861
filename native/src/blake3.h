/*
 * BLAKE3-256 (unkeyed), written from the BLAKE3 paper's specification, with the tree exposed:
 * a large blob file keeps, per 1 MiB chunk, the chaining value of that chunk's subtree in the
 * blob's own BLAKE3 tree, so one pass over the bytes gives both the content hash (the root, from
 * those chaining values) and what each chunk is checked against on a read (docs/adr/0012-hot-path.md).
 *
 * Paths: portable, AVX2 (8 and 4 BLAKE3 chunks or parents at once) and AVX-512 with VL (16, 8 and
 * 4, rotations in one instruction), picked once by CPUID; BLOBSTORE_BLAKE3_PATH or blake3_path_force pins one for tests and benches.
 */
#ifndef BLOBSTORE_BLAKE3_H
#define BLOBSTORE_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

#define BLAKE3_OUT_BYTES 32
/* The tree's leaves: 1 KiB chunks (not the blob file's 1 MiB ones). */
#define BLAKE3_CHUNK_BYTES 1024

enum blake3_path {
    BLAKE3_PATH_PORTABLE = 0,
    BLAKE3_PATH_AVX2 = 1,
    BLAKE3_PATH_AVX512 = 2,
    BLAKE3_PATH_COUNT = 3,
};

enum blake3_status {
    BLAKE3_OK = 0,
    BLAKE3_E_PATH_UNKNOWN = 1,
    BLAKE3_E_PATH_UNAVAILABLE = 2,
};

/* The BLAKE3-256 digest of in[0..len) (the same bytes as any BLAKE3 implementation's). */
void blake3_hash(const uint8_t *in, size_t len, uint8_t out[BLAKE3_OUT_BYTES]);

/*
 * The digests of n separate inputs, ins[i][0..lens[i]) into outs[i][0..32): blake3_hash of each, but
 * small inputs of a few chunks (small stores) share the SIMD kernels' lanes, so a few of them cost
 * about what one does alone. Outputs may not overlap the inputs.
 */
void blake3_hash_each(const uint8_t *const *ins, const size_t *lens, size_t n, uint8_t *const *outs);

/*
 * The chaining value of the subtree over in[0..len) whose first leaf is chunk number `counter`
 * of the whole input. It is a node of the whole input's tree when counter is a multiple of the
 * smallest power of two of chunks that holds len bytes, and when more input follows or precedes
 * it (len > 0). When `root` is not NULL (only for counter 0) it also gets the digest the subtree's
 * bytes would have alone: so a first piece that turns out to be the only one costs no second pass.
 * Outputs may not overlap the input.
 */
void blake3_subtree(const uint8_t *in, size_t len, uint64_t counter, uint8_t cv[BLAKE3_OUT_BYTES], uint8_t *root);

/*
 * The digest of an input made of n >= 2 equal, power-of-two sized subtrees (the last one may be
 * shorter), from their chaining values cvs[0..32n): as BLAKE3 joins them, the left side of each
 * parent taking the largest power of two of them that leaves the right side one or more.
 */
void blake3_root(const uint8_t *cvs, size_t n, uint8_t out[BLAKE3_OUT_BYTES]);

/*
 * The chaining value of the same n >= 1 subtrees joined as one subtree of a larger input (not its
 * root): so the pieces of a chunk hashed as they arrive give the chunk's own chaining value.
 */
void blake3_join(const uint8_t *cvs, size_t n, uint8_t out[BLAKE3_OUT_BYTES]);

const char *blake3_path_name(int path);
int blake3_path_compiled(int path);
int blake3_path_supported(int path);
int blake3_path_current(void);
/* Pins a path by name ("auto" picks the widest supported); returns an enum blake3_status. */
int blake3_path_force(const char *name);

#endif
