/*
 * C tests of the codec, run under AddressSanitizer + UBSan by `make test`: every compiled path
 * against the reference on awkward lengths, every erasure pattern of 4+2 and 8+2, parity built
 * by rs_encode_update, bad input.
 * Shards are separate exact-size allocations so any read or write past an end is caught.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "gf.h"
#include "reference.h"
#include "rs.h"

#include "check.h"


typedef struct stripe {
    int k, m;
    size_t len;
    uint8_t *shards[RS_N_MAX];
    uint8_t *expect[RS_N_MAX];
    size_t lens[RS_N_MAX];
} stripe;

/* Random data, reference parity in expect[], garbage in the parity shards to be computed. */
static void stripe_init(stripe *s, int k, int m, size_t len) {
    s->k = k;
    s->m = m;
    s->len = len;
    for (int i = 0; i < k + m; i++) {
        s->shards[i] = malloc(len ? len : 1);
        s->expect[i] = malloc(len ? len : 1);
        s->lens[i] = len;
        for (size_t x = 0; x < len; x++) s->shards[i][x] = (uint8_t)rnd();
        if (i < k) memcpy(s->expect[i], s->shards[i], len);
    }
    ref_encode(k, m, s->expect, s->expect + k, len);
}

static void stripe_free(stripe *s) {
    for (int i = 0; i < s->k + s->m; i++) {
        free(s->shards[i]);
        free(s->expect[i]);
    }
}

/*
 * Moves every shard to `off` bytes past a 64-byte boundary of an allocation of its own (kept in
 * `bases`), ending exactly where that allocation ends; stripe_free_at_offset frees them.
 */
static void stripe_move_to_offset(stripe *s, size_t off, void **bases) {
    for (int i = 0; i < s->k + s->m; i++) {
        if (posix_memalign(&bases[i], 64, off + s->len) != 0) abort();
        memcpy((uint8_t *)bases[i] + off, s->shards[i], s->len);
        free(s->shards[i]);
        s->shards[i] = (uint8_t *)bases[i] + off;
    }
}

static void stripe_free_at_offset(stripe *s, void **bases) {
    for (int i = 0; i < s->k + s->m; i++) {
        free(bases[i]);
        s->shards[i] = NULL; /* free(NULL) in stripe_free */
    }
    stripe_free(s);
}

static int stripe_matches(const stripe *s) {
    for (int i = 0; i < s->k + s->m; i++) {
        if (s->len && memcmp(s->shards[i], s->expect[i], s->len) != 0) return 0;
    }
    return 1;
}

/* Wipes the shards with present[i] == 0, reconstructs, and compares with the expected stripe. */
static int erase_and_reconstruct(stripe *s, const uint8_t *present) {
    for (int i = 0; i < s->k + s->m; i++) {
        if (!present[i]) memset(s->shards[i], 0xa5, s->len);
    }
    int status = rs_reconstruct(s->k, s->m, s->shards, s->lens, present);
    return status == RS_OK && stripe_matches(s);
}

static void random_present(int n, int missing, uint8_t *present) {
    memset(present, 1, (size_t)n);
    for (int gone = 0; gone < missing;) {
        int i = (int)(rnd() % (uint64_t)n);
        if (present[i]) {
            present[i] = 0;
            gone++;
        }
    }
}

static const size_t lengths[] = {0,  1,  2,   15,  16,  17,  31,   32,   33,   63,    64,
                                 65, 127, 128, 129, 191, 255, 1000, 4095, 4097, 65537, 300001};

static void test_path_random(const char *path) {
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        for (int round = 0; round < 3; round++) {
            size_t len = lengths[li];
            int k = 1 + (int)(rnd() % (len > 5000 ? 12 : 32)), m = 1 + (int)(rnd() % 8);
            stripe s;
            stripe_init(&s, k, m, len);
            int status = rs_encode(k, m, s.shards, s.lens);
            CHECK(status == RS_OK && stripe_matches(&s), "%s encode k=%d m=%d len=%zu status=%d", path,
                  k, m, len, status);
            uint8_t present[RS_N_MAX];
            random_present(k + m, 1 + (int)(rnd() % (uint64_t)m), present);
            CHECK(erase_and_reconstruct(&s, present), "%s reconstruct k=%d m=%d len=%zu", path, k, m, len);
            stripe_free(&s);
        }
    }
}

/* Every pattern of 1..m missing shards (bit i of mask set: shard i missing). */
static void test_all_patterns(const char *path, int k, int m, size_t len) {
    stripe s;
    stripe_init(&s, k, m, len);
    CHECK(rs_encode(k, m, s.shards, s.lens) == RS_OK, "%s encode %d+%d", path, k, m);
    int patterns = 0;
    for (unsigned mask = 1; mask < (1u << (k + m)); mask++) {
        if (__builtin_popcount(mask) > m) continue;
        uint8_t present[RS_N_MAX];
        for (int i = 0; i < k + m; i++) present[i] = !((mask >> i) & 1u);
        CHECK(erase_and_reconstruct(&s, present), "%s %d+%d pattern %#x", path, k, m, mask);
        patterns++;
    }
    CHECK(patterns > 0, "no patterns");
    stripe_free(&s);
}

/* Wide stripes: more than one pass of rows, and k at its maximum. */
static void test_wide(const char *path) {
    const int shapes[][2] = {{10, 16}, {64, 16}, {64, 1}, {1, 16}, {17, 9}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int k = shapes[i][0], m = shapes[i][1];
        stripe s;
        stripe_init(&s, k, m, 1000 + 64 * i + i);
        CHECK(rs_encode(k, m, s.shards, s.lens) == RS_OK && stripe_matches(&s), "%s wide encode %d+%d", path, k, m);
        uint8_t present[RS_N_MAX];
        random_present(k + m, m, present);
        CHECK(erase_and_reconstruct(&s, present), "%s wide reconstruct %d+%d", path, k, m);
        stripe_free(&s);
    }
}

/*
 * A stripe past the streaming bound (rs.c), so the wide paths use non-temporal stores; the
 * shards are 64-byte aligned as streaming needs, the length odd so a scalar tail follows.
 */
static void test_streaming(const char *path) {
    const int k = 3, m = 1;
    const size_t len = ((size_t)16 << 20) + 65;
    stripe s;
    s.k = k;
    s.m = m;
    s.len = len;
    for (int i = 0; i < k + m; i++) {
        s.shards[i] = aligned_alloc(64, len + 63);
        s.expect[i] = malloc(len);
        s.lens[i] = len;
        for (size_t x = 0; x < len; x++) s.shards[i][x] = (uint8_t)(x * 131 + (size_t)i * 7 + (x >> 11));
        if (i < k) memcpy(s.expect[i], s.shards[i], len);
    }
    ref_encode(k, m, s.expect, s.expect + k, len);
    CHECK(rs_encode(k, m, s.shards, s.lens) == RS_OK && stripe_matches(&s), "%s streaming encode", path);
    uint8_t present[4] = {1, 0, 1, 0};
    present[3] = 1;
    CHECK(erase_and_reconstruct(&s, present), "%s streaming reconstruct", path);
    stripe_free(&s);
}

/*
 * Every shard at the same offset from a 64-byte boundary, so rs.c runs a short head before the
 * aligned bulk. Each shard still ends exactly where its allocation ends.
 */
static void test_common_offset(const char *path) {
    const size_t offsets[] = {1, 17, 48, 63};
    const size_t lens[] = {1, 30, 63, 64, 65, 200, 4097};
    for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int k = 5, m = 3;
            const size_t off = offsets[oi], len = lens[li];
            stripe s;
            stripe_init(&s, k, m, len);
            void *bases[RS_N_MAX];
            stripe_move_to_offset(&s, off, bases);
            CHECK(rs_encode(k, m, s.shards, s.lens) == RS_OK && stripe_matches(&s),
                  "%s offset %zu len %zu encode", path, off, len);
            uint8_t present[RS_N_MAX];
            random_present(k + m, m, present);
            CHECK(erase_and_reconstruct(&s, present), "%s offset %zu len %zu reconstruct", path, off, len);
            stripe_free_at_offset(&s, bases);
        }
    }
}

/* rs_reconstruct_data fills the missing data shards and leaves missing parity untouched. */
static void test_data_only(const char *path) {
    stripe s;
    stripe_init(&s, 6, 3, 333);
    CHECK(rs_encode(6, 3, s.shards, s.lens) == RS_OK, "%s data-only encode", path);
    uint8_t present[9] = {1, 0, 1, 1, 0, 1, 1, 0, 1};
    memset(s.shards[1], 0, 333);
    memset(s.shards[4], 0, 333);
    memset(s.shards[7], 0x5a, 333);
    CHECK(rs_reconstruct_data(6, 3, s.shards, s.lens, present) == RS_OK, "%s data-only status", path);
    CHECK(memcmp(s.shards[1], s.expect[1], 333) == 0 && memcmp(s.shards[4], s.expect[4], 333) == 0,
          "%s data-only data", path);
    int untouched = 1;
    for (int x = 0; x < 333; x++) untouched &= s.shards[7][x] == 0x5a;
    CHECK(untouched, "%s data-only leaves parity alone", path);
    stripe_free(&s);
}

/* Zeroes the parity shards, then adds every data shard in a random order with rs_encode_update. */
static int update_all(stripe *s, const char *path) {
    int order[RS_K_MAX];
    for (int i = 0; i < s->k; i++) order[i] = i;
    for (int i = s->k - 1; i > 0; i--) {
        int j = (int)(rnd() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int j = 0; j < s->m; j++) memset(s->shards[s->k + j], 0, s->len);
    for (int i = 0; i < s->k; i++) {
        int status = rs_encode_update(s->k, s->m, order[i], s->shards[order[i]], s->shards + s->k, s->len);
        if (status != RS_OK) {
            fprintf(stderr, "%s update %d+%d index %d: status %d\n", path, s->k, s->m, order[i], status);
            return 0;
        }
    }
    return 1;
}

/* The parity rs_encode computes on the current path, for comparison with the update's. */
static int matches_encode(const stripe *s) {
    uint8_t *shards[RS_N_MAX];
    int same = 1;
    for (int i = 0; i < s->k + s->m; i++) shards[i] = i < s->k ? s->shards[i] : malloc(s->len ? s->len : 1);
    same = rs_encode(s->k, s->m, shards, s->lens) == RS_OK;
    for (int j = 0; j < s->m; j++) {
        same = same && (s->len == 0 || memcmp(shards[s->k + j], s->shards[s->k + j], s->len) == 0);
        free(shards[s->k + j]);
    }
    return same;
}

/*
 * Parity built by updates, data shards in a random order, equals rs_encode's and the reference's:
 * awkward lengths (0, odd tails, not a multiple of any vector width), one and two passes of rows.
 * Adding a data shard twice takes it out again; replacing one (old out, new in) re-encodes.
 */
static void test_update(const char *path) {
    const int shapes[][2] = {{4, 2}, {8, 2}, {1, 1}, {5, 3}, {10, 4}, {3, 9}, {17, 16}, {64, 2}};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const size_t len = lengths[li];
            const int k = shapes[si][0], m = shapes[si][1];
            if (len > 5000 && k * m > 16) continue; /* the reference is slow under ASan */
            stripe s;
            stripe_init(&s, k, m, len);
            CHECK(update_all(&s, path) && stripe_matches(&s), "%s update %d+%d len=%zu", path, k, m, len);
            CHECK(matches_encode(&s), "%s update %d+%d len=%zu equals rs_encode", path, k, m, len);
            const int i = (int)(rnd() % (uint64_t)k);
            CHECK(rs_encode_update(k, m, i, s.shards[i], s.shards + k, len) == RS_OK, "%s remove", path);
            CHECK(rs_encode_update(k, m, i, s.shards[i], s.shards + k, len) == RS_OK, "%s add back", path);
            CHECK(stripe_matches(&s), "%s update %d+%d len=%zu: twice is none", path, k, m, len);
            CHECK(rs_encode_update(k, m, i, s.shards[i], s.shards + k, len) == RS_OK, "%s old out", path);
            for (size_t x = 0; x < len; x++) s.shards[i][x] = (uint8_t)rnd();
            CHECK(rs_encode_update(k, m, i, s.shards[i], s.shards + k, len) == RS_OK, "%s new in", path);
            CHECK(matches_encode(&s), "%s update %d+%d len=%zu: replaced shard %d", path, k, m, len, i);
            stripe_free(&s);
        }
    }
}

/* Data and parity at one offset from a 64-byte boundary: rs.c runs the aligning head first. */
static void test_update_offset(const char *path) {
    const size_t offsets[] = {1, 17, 48, 63};
    const size_t lens[] = {1, 30, 63, 64, 65, 200, 4097};
    for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int k = 4, m = 3;
            const size_t off = offsets[oi], len = lens[li];
            stripe s;
            stripe_init(&s, k, m, len);
            void *bases[RS_N_MAX];
            stripe_move_to_offset(&s, off, bases);
            CHECK(update_all(&s, path) && stripe_matches(&s), "%s update offset %zu len %zu", path, off, len);
            stripe_free_at_offset(&s, bases);
        }
    }
}

/*
 * The kernel of the path with RS_KERNEL_ACCUMULATE, called directly: out ^= products for every
 * row count, one input (the SIMD kernels' own code) and three (their portable fallback), at
 * lengths with and without a tail.
 */
static void test_kernel_accumulate(const char *path) {
    enum { K = 3, R = RS_ROWS_PER_PASS, LEN = 389 };
    uint8_t coef[K * R], nibble[K * R * 32], in_bytes[K][LEN], before[R][LEN], out_bytes[R][LEN];
    uint64_t affine[K * R];
    gf_init();
    for (int k = 1; k <= K; k += 2) {
        for (int rows = 1; rows <= R; rows++) {
            for (int at = 0; at < k * rows; at++) {
                coef[at] = (uint8_t)rnd();
                affine[at] = gf_affine_matrix(coef[at]);
                for (int n = 0; n < 16; n++) {
                    nibble[at * 32 + n] = gf_mul(coef[at], (uint8_t)n);
                    nibble[at * 32 + 16 + n] = gf_mul(coef[at], (uint8_t)(n << 4));
                }
            }
            const rs_matrix mx = {k, rows, coef, affine, nibble};
            const uint8_t *in[K];
            uint8_t *out[R];
            for (int j = 0; j < k; j++) {
                in[j] = in_bytes[j];
                for (int x = 0; x < LEN; x++) in_bytes[j][x] = (uint8_t)rnd();
            }
            for (int r = 0; r < rows; r++) {
                out[r] = out_bytes[r];
                for (int x = 0; x < LEN; x++) before[r][x] = out_bytes[r][x] = (uint8_t)rnd();
            }
            rs_kernel_current()(&mx, in, out, 0, 256, RS_KERNEL_ACCUMULATE);
            rs_kernel_current()(&mx, in, out, 256, LEN - 256, RS_KERNEL_ACCUMULATE);
            int bad = 0;
            for (int r = 0; r < rows; r++) {
                for (int x = 0; x < LEN; x++) {
                    uint8_t want = before[r][x];
                    for (int j = 0; j < k; j++) want ^= ref_mul(coef[j * rows + r], in_bytes[j][x]);
                    bad += out_bytes[r][x] != want;
                }
            }
            CHECK(bad == 0, "%s kernel accumulate k=%d rows=%d: %d bytes differ", path, k, rows, bad);
        }
    }
}

static void test_update_errors(void) {
    stripe s;
    stripe_init(&s, 4, 2, 100);
    uint8_t **parity = s.shards + 4;
    CHECK(rs_encode_update(0, 2, 0, s.shards[0], parity, 100) == RS_STATUS(RS_E_K_RANGE, 0), "update k=0");
    CHECK(rs_encode_update(RS_K_MAX + 1, 2, 0, s.shards[0], parity, 100) == RS_STATUS(RS_E_K_RANGE, 0), "update k too big");
    CHECK(rs_encode_update(4, 0, 0, s.shards[0], parity, 100) == RS_STATUS(RS_E_M_RANGE, 0), "update m=0");
    CHECK(rs_encode_update(4, RS_M_MAX + 1, 0, s.shards[0], parity, 100) == RS_STATUS(RS_E_M_RANGE, 0), "update m too big");
    CHECK(rs_encode_update(4, 2, -1, s.shards[0], parity, 100) == RS_STATUS(RS_E_INDEX_RANGE, 0), "index -1");
    CHECK(rs_encode_update(4, 2, 4, s.shards[0], parity, 100) == RS_STATUS(RS_E_INDEX_RANGE, 0), "index k");
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], NULL, 100) == RS_STATUS(RS_E_ARG_TYPE, 0), "no parity array");
    CHECK(rs_encode_update(4, 2, 1, NULL, parity, 100) == RS_STATUS(RS_E_SHARD_TYPE, 1), "NULL data");
    uint8_t *saved = parity[1];
    parity[1] = NULL;
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], parity, 100) == RS_STATUS(RS_E_SHARD_TYPE, 5), "NULL parity");
    CHECK(rs_encode_update(4, 2, 1, NULL, parity, 0) == RS_OK, "NULL shards of length 0");
    parity[1] = s.shards[1];
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], parity, 100) == RS_STATUS(RS_E_OVERLAP, 5), "parity is the data");
    parity[1] = s.shards[1] + 99;
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], parity, 1) == RS_OK, "disjoint bytes of one buffer");
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], parity, 100) == RS_STATUS(RS_E_OVERLAP, 5), "parity overlaps the data");
    parity[1] = parity[0] + 50;
    CHECK(rs_encode_update(4, 2, 1, s.shards[1], parity, 100) == RS_STATUS(RS_E_OVERLAP, 5), "parities overlap");
    parity[1] = saved;
    stripe_free(&s);
}

static void test_matrix(void) {
    uint8_t matrix[RS_N_MAX * RS_K_MAX];
    const int shapes[][2] = {{1, 1}, {4, 2}, {8, 2}, {10, 4}, {32, 8}, {64, 16}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int k = shapes[i][0], m = shapes[i][1], bad = 0;
        CHECK(rs_encoding_matrix(k, m, matrix) == RS_OK, "matrix %d+%d", k, m);
        for (int r = 0; r < k + m; r++) {
            for (int c = 0; c < k; c++) {
                uint8_t want = r < k ? (uint8_t)(r == c) : ref_coef(k, r - k, c);
                bad += matrix[r * k + c] != want;
            }
        }
        CHECK(bad == 0, "matrix %d+%d differs from its definition in %d cells", k, m, bad);
    }
}

static void test_errors(void) {
    stripe s;
    stripe_init(&s, 4, 2, 100);
    uint8_t present[RS_N_MAX];
    memset(present, 1, sizeof present);
    CHECK(rs_encode(0, 2, s.shards, s.lens) == RS_STATUS(RS_E_K_RANGE, 0), "k=0");
    CHECK(rs_encode(RS_K_MAX + 1, 2, s.shards, s.lens) == RS_STATUS(RS_E_K_RANGE, 0), "k too big");
    CHECK(rs_encode(4, 0, s.shards, s.lens) == RS_STATUS(RS_E_M_RANGE, 0), "m=0");
    CHECK(rs_encode(4, RS_M_MAX + 1, s.shards, s.lens) == RS_STATUS(RS_E_M_RANGE, 0), "m too big");
    s.lens[3] = 99;
    CHECK(rs_encode(4, 2, s.shards, s.lens) == RS_STATUS(RS_E_SHARD_LENGTH, 3), "length mismatch");
    s.lens[3] = 100;
    uint8_t *saved = s.shards[5];
    s.shards[5] = NULL;
    CHECK(rs_encode(4, 2, s.shards, s.lens) == RS_STATUS(RS_E_SHARD_TYPE, 5), "NULL shard");
    s.shards[5] = s.shards[0];
    CHECK(rs_encode(4, 2, s.shards, s.lens) == RS_STATUS(RS_E_OVERLAP, 5), "output aliases input");
    s.shards[5] = s.shards[4] + 50;
    CHECK(rs_encode(4, 2, s.shards, s.lens) == RS_STATUS(RS_E_OVERLAP, 5), "outputs overlap");
    s.shards[5] = saved;
    present[0] = present[2] = present[5] = 0;
    CHECK(rs_reconstruct(4, 2, s.shards, s.lens, present) == RS_STATUS(RS_E_TOO_MANY_MISSING, 3),
          "three missing of 4+2");
    present[5] = 1;
    CHECK(rs_reconstruct(4, 2, s.shards, s.lens, present) == RS_OK, "two missing of 4+2");
    CHECK(rs_path_force("mmx") == RS_STATUS(RS_E_PATH_UNKNOWN, 0), "unknown path");
    CHECK(rs_path_force("auto") == RS_OK, "auto path");
    stripe_free(&s);
}

/* The cache stays within its bound and counts hits. */
static void test_cache(void) {
    rs_cache_clear();
    stripe s;
    stripe_init(&s, 12, 4, 64);
    CHECK(rs_encode(12, 4, s.shards, s.lens) == RS_OK, "cache encode");
    uint8_t present[RS_N_MAX];
    for (int i = 0; i < 3 * 64; i++) {
        random_present(16, 1 + i % 4, present);
        CHECK(erase_and_reconstruct(&s, present), "cache round %d", i);
    }
    rs_cache_stats st;
    rs_cache_get_stats(&st);
    CHECK(st.entries <= st.capacity && st.capacity > 0, "cache bound %d/%d", st.entries, st.capacity);
    CHECK(erase_and_reconstruct(&s, present), "repeat");
    rs_cache_stats again;
    rs_cache_get_stats(&again);
    CHECK(again.hits == st.hits + 1, "repeated pattern is a cache hit");
    stripe_free(&s);
}

int main(void) {
    rng_state = 0x9e3779b97f4a7c15ull;
    test_matrix();
    test_errors();
    test_update_errors();
    test_cache();
    int paths = 0;
    for (int p = 0; p < RS_PATH_COUNT; p++) {
        const char *name = rs_path_name(p);
        if (!rs_path_supported(p)) {
            printf("path %-8s skipped (%s)\n", name, rs_path_compiled(p) ? "CPU lacks it" : "compiled out");
            continue;
        }
        CHECK(rs_path_force(name) == RS_OK, "force %s", name);
        CHECK(rs_path_current() == p, "current %s", name);
        test_path_random(name);
        test_all_patterns(name, 4, 2, 129);
        test_all_patterns(name, 8, 2, 200);
        test_wide(name);
        test_streaming(name);
        test_common_offset(name);
        test_data_only(name);
        test_update(name);
        test_update_offset(name);
        test_kernel_accumulate(name);
        printf("path %-8s ok\n", name);
        paths++;
    }
    rs_cache_clear();
    printf("%d checks, %d failed, %d paths\n", checks, failures, paths);
    return failures ? 1 : 0;
}
