/*
 * clockTicks() -> monotonic microseconds modulo 2^30: a small integer, which JavaScript holds
 * without a heap object. performance.now() answers a double, a 16-byte heap number each call and
 * again each time it is stored in an object or passed on: the 4 KiB PUT's stage timings took a
 * few of them per store (src/metrics/clock.ts). Spans up to 2^30 us (17.8 minutes) subtract
 * correctly modulo 2^30.
 */
#include <time.h>

#include "binding.h"

#define TICKS_MASK ((1u << 30) - 1)

napi_value js_clock_ticks(napi_env env, napi_callback_info info) {
    (void)info;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    return make_int(env, (int)(us & TICKS_MASK));
}
