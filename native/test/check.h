/* The native tests' check macro and counters (test_rs.c, test_b64.c). */
#ifndef BLOBSTORE_TEST_CHECK_H
#define BLOBSTORE_TEST_CHECK_H

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

#endif
