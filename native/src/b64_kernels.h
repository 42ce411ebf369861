/*
 * Base64 kernels. A SIMD kernel encodes the longest prefix of src it can take in whole vector
 * steps (a multiple of 3 bytes) and returns how many bytes it consumed, having written 4/3 of that
 * to dst; b64_encode finishes the rest, padding included, with the portable code.
 */
#ifndef BLOBSTORE_B64_KERNELS_H
#define BLOBSTORE_B64_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef size_t b64_kernel(const uint8_t *src, size_t len, uint8_t *dst);

#ifndef RS_NO_AVX2
b64_kernel b64_kernel_avx2;
#endif
#ifndef RS_NO_AVX512VBMI
b64_kernel b64_kernel_avx512vbmi;
#endif

#endif
