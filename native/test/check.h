/* The native tests' check macro and counters, and their random numbers (test_rs.c, test_b64.c, test_crc32c.c). */
#ifndef BLOBSTORE_TEST_CHECK_H
#define BLOBSTORE_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int failures;
static int checks;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        checks++;                                                \
        if (!(cond)) {                                           \
            failures++;                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

/* xorshift64: seed rng_state, then rnd() */
static uint64_t rng_state;
static inline uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#endif
