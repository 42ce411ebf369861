/*
 * C tests of the base64 encoder, run under AddressSanitizer + UBSan by `make test`: RFC 4648's
 * vectors, every length 0..3*64+2 at every source alignment 0..7, random lengths up to 1 MiB,
 * all against a bit-at-a-time reference, on every path the CPU has. Inputs and outputs are
 * exact-size allocations, so a read or write past either end is caught.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

#include "check.h"


/* The reference: the input as a bit stream, 6 bits at a time, zero-filled, then '=' to a multiple of 4. */
static size_t ref_encode(const uint8_t *src, size_t len, char *dst) {
    static const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t bits = len * 8, n = 0;
    for (size_t b = 0; b < bits; b += 6) {
        unsigned v = 0;
        for (size_t k = b; k < b + 6; k++) {
            unsigned bit = k < bits ? (src[k / 8] >> (7 - k % 8)) & 1 : 0;
            v = v << 1 | bit;
        }
        dst[n++] = abc[v];
    }
    while (n % 4) dst[n++] = '=';
    return n;
}

/* Encodes len random bytes at source offset `align` of an exact allocation; 1 if it matches. */
static int check_one(size_t len, size_t align) {
    uint8_t *base = malloc(len + align ? len + align : 1);
    uint8_t *src = base + align;
    for (size_t i = 0; i < len; i++) src[i] = (uint8_t)rnd();
    size_t want_len = b64_encoded_length(len);
    char *want = malloc(want_len + 1);
    uint8_t *got = malloc(want_len ? want_len : 1);
    size_t ref_len = ref_encode(src, len, want);
    size_t got_len = b64_encode(src, len, got);
    int ok = ref_len == want_len && got_len == want_len && memcmp(got, want, want_len) == 0;
    free(base);
    free(want);
    free(got);
    return ok;
}

static void test_vectors(const char *path) {
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        uint8_t buf[16];
        size_t n = b64_encode((const uint8_t *)in[i], strlen(in[i]), buf);
        CHECK(n == strlen(out[i]) && memcmp(buf, out[i], n) == 0, "%s RFC 4648 \"%s\"", path, in[i]);
    }
    /* Every 6-bit value in every position: bytes 0..255 contain them all. */
    uint8_t all[255 * 3], enc[255 * 4];
    for (int i = 0; i < 255 * 3; i++) all[i] = (uint8_t)(i * 7 + i / 255);
    char want[255 * 4 + 1];
    size_t n = ref_encode(all, sizeof all, want);
    CHECK(b64_encode(all, sizeof all, enc) == n && memcmp(enc, want, n) == 0, "%s byte patterns", path);
}

static void test_lengths(const char *path) {
    for (size_t len = 0; len <= 3 * 64 + 2; len++) {
        for (size_t align = 0; align < 8; align++) {
            CHECK(check_one(len, align), "%s length %zu align %zu", path, len, align);
        }
    }
}

static void test_random(const char *path) {
    for (int i = 0; i < 40; i++) {
        size_t len = rnd() % (1024 * 1024 + 1), align = rnd() % 64;
        CHECK(check_one(len, align), "%s random length %zu align %zu", path, len, align);
    }
    CHECK(check_one(1024 * 1024, 0), "%s 1 MiB", path);
    CHECK(check_one(1024 * 1024, 1), "%s 1 MiB at offset 1", path);
}

static void test_force(void) {
    CHECK(b64_path_force("mmx") == B64_E_PATH_UNKNOWN, "unknown path");
    CHECK(b64_path_force("auto") == B64_OK, "auto path");
    CHECK(b64_path_force("portable") == B64_OK && b64_path_current() == B64_PATH_PORTABLE, "portable path");
    for (int p = 0; p < B64_PATH_COUNT; p++) {
        if (!b64_path_supported(p)) {
            CHECK(b64_path_force(b64_path_name(p)) == B64_E_PATH_UNAVAILABLE, "unavailable %s", b64_path_name(p));
        }
    }
}

int main(void) {
    const char *seed_env = getenv("B64_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x9e3779b97f4a7c15ull;
    printf("base64 seed %#llx (B64_TEST_SEED)\n", (unsigned long long)seed);
    test_force();
    int paths = 0;
    for (int p = 0; p < B64_PATH_COUNT; p++) {
        const char *name = b64_path_name(p);
        if (!b64_path_supported(p)) {
            printf("base64 path %-10s skipped (%s)\n", name, b64_path_compiled(p) ? "CPU lacks it" : "compiled out");
            continue;
        }
        rng_state = seed ? seed : 1;
        CHECK(b64_path_force(name) == B64_OK && b64_path_current() == p, "force %s", name);
        test_vectors(name);
        test_lengths(name);
        test_random(name);
        printf("base64 path %-10s ok\n", name);
        paths++;
    }
    b64_path_force("auto");
    printf("%d checks, %d failed, %d base64 paths\n", checks, failures, paths);
    return failures ? 1 : 0;
}
