/*
 * C tests of CRC-32C, run under AddressSanitizer + UBSan by `make test`: the standard check value
 * and RFC 3720's vectors, every length 0..4*3072 at source alignments 0..7 and random lengths up
 * to 1 MiB against a bit-at-a-time reference, continuation across calls, on every path the CPU has.
 * Inputs are exact-size allocations, so a read past either end is caught.
 */
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

#include "check.h"


/* The reference: one bit at a time, reflected polynomial 0x82F63B78. */
static uint32_t ref_crc(const uint8_t *p, size_t len) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static int check_one(size_t len, size_t align) {
    uint8_t *base = malloc(len + align ? len + align : 1);
    uint8_t *src = base + align;
    for (size_t i = 0; i < len; i++) src[i] = (uint8_t)rnd();
    int ok = crc32c(0, src, len) == ref_crc(src, len);
    /* In two calls, cut anywhere: the same CRC. */
    size_t cut = len ? (size_t)(rnd() % (len + 1)) : 0;
    ok = ok && crc32c(crc32c(0, src, cut), src + cut, len - cut) == ref_crc(src, len);
    free(base);
    return ok;
}

static void test_vectors(const char *path) {
    const uint8_t *check = (const uint8_t *)"123456789";
    CHECK(crc32c(0, check, 9) == 0xE3069283u, "%s: check value", path);
    uint8_t buf[32];
    memset(buf, 0, sizeof buf);
    CHECK(crc32c(0, buf, 32) == 0x8A9136AAu, "%s: 32 zeros", path);
    memset(buf, 0xff, sizeof buf);
    CHECK(crc32c(0, buf, 32) == 0x62A8AB43u, "%s: 32 x 0xff", path);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK(crc32c(0, buf, 32) == 0x46DD794Eu, "%s: 0..31", path);
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    CHECK(crc32c(0, buf, 32) == 0x113FDB5Cu, "%s: 31..0", path);
    CHECK(crc32c(0, buf, 0) == 0, "%s: empty", path);
}

int main(void) {
    for (int p = 0; p < CRC32C_PATH_COUNT; p++) {
        const char *name = crc32c_path_name(p);
        if (!crc32c_path_supported(p)) {
            printf("crc32c %s: skipped (%s)\n", name, crc32c_path_compiled(p) ? "not supported by this CPU" : "compiled out");
            continue;
        }
        CHECK(crc32c_path_force(name) == CRC32C_OK, "force %s", name);
        CHECK(crc32c_path_current() == p, "current is %s", name);
        rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)p;
        int before = failures;
        test_vectors(name);
        for (size_t len = 0; len <= 4 * 3072; len += len < 200 ? 1 : 61) {
            for (size_t align = 0; align < 8; align++) CHECK(check_one(len, align), "%s: length %zu at alignment %zu", name, len, align);
        }
        for (int i = 0; i < 40; i++) {
            size_t len = (size_t)(rnd() % (1 << 20));
            CHECK(check_one(len, (size_t)(rnd() % 8)), "%s: random length %zu", name, len);
        }
        printf("crc32c %s: %s\n", name, failures == before ? "ok" : "FAILED");
    }
    CHECK(crc32c_path_force("nonesuch") == CRC32C_E_PATH_UNKNOWN, "unknown path name");
    CHECK(crc32c_path_force("auto") == CRC32C_OK, "auto");
    printf("crc32c: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
