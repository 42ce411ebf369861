/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78; iSCSI, ext4 and Ceph BlueStore use it):
 * the check a small blob's bytes carry in the index for reads from disk, where the SSE4.2 CRC32
 * instruction makes it a fraction of BLAKE3's cost (docs/adr/0012-hot-path.md).
 *
 * Paths: a portable slicing-by-8 one and SSE4.2 (8 bytes per instruction, three streams at once),
 * picked once by CPUID; BLOBSTORE_CRC32C_PATH or crc32c_path_force pins one for tests and benches.
 */
#ifndef BLOBSTORE_CRC32C_H
#define BLOBSTORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

enum crc32c_path {
    CRC32C_PATH_PORTABLE = 0,
    CRC32C_PATH_SSE42 = 1,
    CRC32C_PATH_COUNT = 2,
};

enum crc32c_status {
    CRC32C_OK = 0,
    CRC32C_E_PATH_UNKNOWN = 1,
    CRC32C_E_PATH_UNAVAILABLE = 2,
};

/*
 * The CRC-32C of buf[0..len) continuing from `crc` (0 to start; the result of an earlier call
 * to go on with more bytes). crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t crc32c(uint32_t crc, const uint8_t *buf, size_t len);

const char *crc32c_path_name(int path);
int crc32c_path_compiled(int path);
int crc32c_path_supported(int path);
int crc32c_path_current(void);
/* Pins a path by name ("auto" picks the widest supported); returns an enum crc32c_status. */
int crc32c_path_force(const char *name);

#endif
