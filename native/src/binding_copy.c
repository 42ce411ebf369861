/*
 * copyBytes: a memcpy JavaScript can call with an ArrayBuffer as the source. uWS hands a request
 * body's bytes over as an ArrayBuffer valid for one callback; a Uint8Array view of it to copy
 * from is an object per request (96 bytes of young generation), this call makes none.
 */
#include <string.h>

#include "binding.h"

/* copyBytes(src, dst, dstOffset) -> src's length, copied to dst[dstOffset ..); -1 when an argument is not bytes or src does not fit */
napi_value js_copy_bytes(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    uint8_t *src, *dst;
    size_t src_len, dst_len;
    uint64_t at;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || !source_bytes(env, argv[0], &src, &src_len) ||
        !typed_array_bytes(env, argv[1], &dst, &dst_len) || !get_whole(env, argv[2], (double)dst_len, &at) || dst_len - at < src_len) {
        return make_int(env, -1);
    }
    /* memmove: a caller may copy within one buffer. */
    if (src_len > 0) memmove(dst + at, src, src_len);
    return make_int(env, (int)src_len);
}

/*
 * pageOffset(view) -> the view's first byte's address modulo 4096; -1 when it is not bytes.
 * A buffer a read copies into from the page cache must not start just past a page boundary:
 * glibc's mmapped allocations start 16 bytes into a page, and on AMD Zen 3 the kernel's copy into
 * such a buffer runs at a fifth of its speed (each store lands 16 bytes ahead of the page it reads,
 * the same offset within 4 KiB, and the loads wait on it). util/aligned-buffer.ts aligns with this.
 */
napi_value js_page_offset(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    uint8_t *data;
    size_t len;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !typed_array_bytes(env, argv[0], &data, &len)) {
        return make_int(env, -1);
    }
    return make_int(env, (int)((uintptr_t)data & 4095u));
}
