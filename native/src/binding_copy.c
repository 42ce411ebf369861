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
