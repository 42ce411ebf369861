/* The SIMD kernels of crc32c.c: the raw (pre- and post-inverted) CRC of a whole buffer. */
#ifndef BLOBSTORE_CRC32C_KERNELS_H
#define BLOBSTORE_CRC32C_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t crc32c_kernel(uint32_t raw, const uint8_t *buf, size_t len);

/* The SSE4.2 path's streams: three of this many bytes per round (crc32c_sse42.c). */
#define CRC32C_STREAM_BYTES 1024

/*
 * A raw CRC shifted over CRC32C_STREAM_BYTES (k = 0) or twice as many (k = 1) zero bytes: what
 * joins the three streams' CRCs. Four table lookups (crc32c.c fills the tables at the probe).
 */
uint32_t crc32c_shift_stream(uint32_t raw, int k);

#ifndef RS_NO_SSE42
crc32c_kernel crc32c_kernel_sse42;
#endif

#endif
