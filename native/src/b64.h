/*
 * Base64 encoder (RFC 4648 standard alphabet, '=' padding: the same text as Node's
 * Buffer.toString('base64')) that writes into a caller's buffer, so the NDJSON get stream builds
 * each line in place instead of through a 1.4 MB JavaScript string per MiB.
 *
 * Paths: a portable scalar one, AVX2 (24 bytes in, 32 out per step) and AVX-512 VBMI (48 in, 64
 * out), picked once by CPUID; BLOBSTORE_B64_PATH or b64_path_force pins one for tests and benches.
 */
#ifndef BLOBSTORE_B64_H
#define BLOBSTORE_B64_H

#include <stddef.h>
#include <stdint.h>

/* Paths, widest last. */
enum b64_path {
    B64_PATH_PORTABLE = 0,
    B64_PATH_AVX2 = 1,
    B64_PATH_AVX512VBMI = 2,
    B64_PATH_COUNT = 3,
};

/* b64_path_force results. */
enum b64_status {
    B64_OK = 0,
    B64_E_PATH_UNKNOWN = 1,
    B64_E_PATH_UNAVAILABLE = 2,
};

/* Characters the encoding of len bytes takes: 4 * ceil(len / 3). */
static inline size_t b64_encoded_length(size_t len) { return (len + 2) / 3 * 4; }

/*
 * Writes the encoding of src[0..len) to dst[0..b64_encoded_length(len)) and returns that length.
 * dst must not overlap src. Nothing is allocated; no terminating NUL is written.
 */
size_t b64_encode(const uint8_t *src, size_t len, uint8_t *dst);

const char *b64_path_name(int path);
int b64_path_compiled(int path);  /* 1 when the build includes this path */
int b64_path_supported(int path); /* 1 when compiled and the CPU and OS support it */
int b64_path_current(void);       /* the path in use (probes the CPU on first call) */
/* Pins a path by name ("auto" picks the widest supported); returns an enum b64_status. */
int b64_path_force(const char *name);

#endif
