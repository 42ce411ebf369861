/*
 * C tests of BLAKE3, run under AddressSanitizer + UBSan by `make test`, on every path the CPU has:
 *   - digests of the input pattern BLAKE3's own test vectors use (byte i is i % 251) at lengths
 *     on every edge of a block, a chunk and a tree level, as another implementation computed them
 *     (@napi-rs/blake-hash, the BLAKE3 crate);
 *   - random inputs at random source alignments give the portable path's digest;
 *   - the tree: 1 MiB subtrees' chaining values joined by blake3_root, and a lone first subtree's
 *     root, are the digest of the whole; a piece's 64 KiB parts joined by blake3_join are the
 *     piece's own chaining value, a short last part included.
 * Inputs are exact-size allocations, so a read past either end is caught.
 */
#include <stdlib.h>
#include <string.h>

#include "blake3.h"

#include "check.h"

static const struct {
    size_t len;
    const char *hex;
} vectors[] = {
    {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
    {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
    {63, "e9bc37a594daad83be9470df7f7b3798297c3d834ce80ba85d6e207627b7db7b"},
    {64, "4eed7141ea4a5cd4b788606bd23f46e212af9cacebacdc7d1f4c6dc7f2511b98"},
    {65, "de1e5fa0be70df6d2be8fffd0e99ceaa8eb6e8c93a63f2d8d1c30ecb6b263dee"},
    {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
    {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
    {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
    {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
    {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
    {3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
    {3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
    {4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
    {4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
    {5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"},
    {5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
    {8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
    {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
    {16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
    {31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
    {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
    {1048576, "74cb441fd087764ca9c3694da742ebe30cbeb3060a17009ca81825c7a8d10343"},
    {1048577, "2f053cd7472cf0cd2f9adaf45c1180255b91b9a865404a63671a0ee5f792ed33"},
    {3145733, "a7bb55bed0c04f58879d1fc1cafb27e14e931f4411fe63baf5b2d5a60357bffb"},
};

#define PIECE (1024 * 1024)

static void to_hex(const uint8_t d[BLAKE3_OUT_BYTES], char hex[2 * BLAKE3_OUT_BYTES + 1]) {
    for (int i = 0; i < BLAKE3_OUT_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void test_vectors(const char *path) {
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        size_t len = vectors[v].len;
        uint8_t *in = malloc(len ? len : 1), d[BLAKE3_OUT_BYTES];
        char hex[2 * BLAKE3_OUT_BYTES + 1];
        for (size_t i = 0; i < len; i++) in[i] = (uint8_t)(i % 251);
        blake3_hash(in, len, d);
        to_hex(d, hex);
        CHECK(strcmp(hex, vectors[v].hex) == 0, "%s: %zu bytes: %s", path, len, hex);
        free(in);
    }
    /* An empty typed array may hand over no pointer at all. */
    uint8_t d[BLAKE3_OUT_BYTES];
    char hex[2 * BLAKE3_OUT_BYTES + 1];
    blake3_hash(NULL, 0, d);
    to_hex(d, hex);
    CHECK(strcmp(hex, vectors[0].hex) == 0, "%s: empty input at NULL", path);
}

/* The whole input's digest from its 1 MiB subtrees, as a blob file's writer builds it. */
static void test_tree(const char *path, size_t len) {
    uint8_t *in = malloc(len);
    for (size_t i = 0; i < len; i++) in[i] = (uint8_t)rnd();
    size_t n = (len + PIECE - 1) / PIECE;
    uint8_t *cvs = malloc(n * BLAKE3_OUT_BYTES), whole[BLAKE3_OUT_BYTES], joined[BLAKE3_OUT_BYTES], alone[BLAKE3_OUT_BYTES];
    blake3_hash(in, len, whole);
    for (size_t k = 0; k < n; k++) {
        size_t at = k * PIECE, piece = len - at < PIECE ? len - at : PIECE;
        blake3_subtree(in + at, piece, (uint64_t)k * (PIECE / BLAKE3_CHUNK_BYTES), cvs + k * BLAKE3_OUT_BYTES, k == 0 ? alone : NULL);
    }
    if (n >= 2) {
        blake3_root(cvs, n, joined);
        CHECK(memcmp(joined, whole, BLAKE3_OUT_BYTES) == 0, "%s: %zu bytes: joined subtrees", path, len);
    } else {
        CHECK(memcmp(alone, whole, BLAKE3_OUT_BYTES) == 0, "%s: %zu bytes: a lone subtree's root", path, len);
    }
    free(cvs);
    free(in);
}

/* A piece's chaining value (piece number k of an input) from its 64 KiB parts, as a reader hashes a chunk as it arrives. */
static void test_join(const char *path, size_t len, uint64_t k) {
    enum { PART = 64 * 1024 };
    uint8_t *in = malloc(len);
    for (size_t i = 0; i < len; i++) in[i] = (uint8_t)rnd();
    size_t n = (len + PART - 1) / PART;
    uint64_t counter = k * (PIECE / BLAKE3_CHUNK_BYTES);
    uint8_t *cvs = malloc(n * BLAKE3_OUT_BYTES), whole[BLAKE3_OUT_BYTES], joined[BLAKE3_OUT_BYTES];
    blake3_subtree(in, len, counter, whole, NULL);
    for (size_t p = 0; p < n; p++) {
        size_t at = p * PART, part = len - at < PART ? len - at : PART;
        blake3_subtree(in + at, part, counter + at / BLAKE3_CHUNK_BYTES, cvs + p * BLAKE3_OUT_BYTES, NULL);
    }
    blake3_join(cvs, n, joined);
    CHECK(memcmp(joined, whole, BLAKE3_OUT_BYTES) == 0, "%s: %zu bytes at piece %llu: joined parts", path, len, (unsigned long long)k);
    free(cvs);
    free(in);
}

/*
 * blake3_hash_each against blake3_hash one input at a time: runs of inputs of every kind (empty,
 * one chunk, a few whole chunks, a short last chunk of one byte, of whole blocks or of 1023 bytes,
 * past EACH_CHUNKS), so that lanes fill, flush part-full, and cross group boundaries, at every count
 * from 1 to 40.
 */
static void test_each(const char *path) {
    enum { MAX = 40 };
    static const size_t kinds[] = {0, 1, 1024, 1025, 1088, 2048, 3000, 3008, 4096, 4097, 4200, 8192, 9215, 15000, 16384, 16385, 40000};
    const size_t nkinds = sizeof kinds / sizeof kinds[0];
    uint8_t *ins[MAX], *outs[MAX], digests[MAX][BLAKE3_OUT_BYTES], want[BLAKE3_OUT_BYTES];
    size_t lens[MAX];
    for (size_t n = 1; n <= MAX; n++) {
        for (size_t i = 0; i < n; i++) {
            lens[i] = rnd() % 4 == 0 ? (size_t)(rnd() % 20000) : kinds[rnd() % nkinds];
            ins[i] = malloc(lens[i] + 1);
            for (size_t b = 0; b < lens[i]; b++) ins[i][b] = (uint8_t)rnd();
            outs[i] = digests[i];
        }
        blake3_hash_each((const uint8_t *const *)ins, lens, n, outs);
        for (size_t i = 0; i < n; i++) {
            blake3_hash(ins[i], lens[i], want);
            CHECK(memcmp(digests[i], want, BLAKE3_OUT_BYTES) == 0, "%s: hash_each: input %zu of %zu (%zu bytes)", path, i, n, lens[i]);
            free(ins[i]);
        }
    }
}

int main(void) {
    rng_state = 0x9E3779B97F4A7C15ull;
    /* The portable path's digests of random inputs, for the other paths to match. */
    enum { RANDOM = 48 };
    size_t lens[RANDOM], aligns[RANDOM];
    uint8_t *inputs[RANDOM], expect[RANDOM][BLAKE3_OUT_BYTES];
    CHECK(blake3_path_force("portable") == BLAKE3_OK, "force portable");
    for (int r = 0; r < RANDOM; r++) {
        lens[r] = r < 16 ? (size_t)(rnd() % 4096) : r < 40 ? (size_t)(rnd() % (64 * 1024)) : (size_t)(rnd() % (3 * PIECE));
        aligns[r] = (size_t)(rnd() % 64);
        inputs[r] = malloc(lens[r] + aligns[r] + 1);
        for (size_t i = 0; i < lens[r] + aligns[r]; i++) inputs[r][i] = (uint8_t)rnd();
        blake3_hash(inputs[r] + aligns[r], lens[r], expect[r]);
    }
    for (int p = 0; p < BLAKE3_PATH_COUNT; p++) {
        const char *name = blake3_path_name(p);
        if (!blake3_path_supported(p)) {
            printf("blake3 %s: skipped (%s)\n", name, blake3_path_compiled(p) ? "not supported by this CPU" : "compiled out");
            continue;
        }
        CHECK(blake3_path_force(name) == BLAKE3_OK, "force %s", name);
        CHECK(blake3_path_current() == p, "current is %s", name);
        test_vectors(name);
        for (int r = 0; r < RANDOM; r++) {
            uint8_t d[BLAKE3_OUT_BYTES];
            blake3_hash(inputs[r] + aligns[r], lens[r], d);
            CHECK(memcmp(d, expect[r], BLAKE3_OUT_BYTES) == 0, "%s: random input of %zu bytes at +%zu", name, lens[r], aligns[r]);
        }
        const size_t tree_lens[] = {1, 1024, 4097, PIECE, PIECE + 1, PIECE + 1024, 2 * PIECE, 3 * PIECE - 1, 3 * PIECE + 5000, 5 * PIECE + 1};
        for (size_t t = 0; t < sizeof tree_lens / sizeof tree_lens[0]; t++) test_tree(name, tree_lens[t]);
        const size_t join_lens[] = {1, 1024, 65536, 65537, 100 * 1024, 200 * 1024 + 7, 3 * 65536, PIECE - 1, PIECE};
        for (size_t t = 0; t < sizeof join_lens / sizeof join_lens[0]; t++) test_join(name, join_lens[t], t % 3 == 0 ? 0 : 5 + t);
        test_each(name);
        printf("blake3 %s: ok\n", name);
    }
    CHECK(blake3_path_force("nonesuch") == BLAKE3_E_PATH_UNKNOWN, "unknown path name");
    CHECK(blake3_path_force("auto") == BLAKE3_OK, "auto");
    for (int r = 0; r < RANDOM; r++) free(inputs[r]);
    printf("blake3: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
