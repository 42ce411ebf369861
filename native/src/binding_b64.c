/*
 * N-API glue of the base64 encoder (b64.h). Like the EC functions it never throws: it returns
 * a count or a negative status, and src/http/base64-encoder.ts turns statuses into errors.
 */
#include <stdbool.h>

#include "b64.h"
#include "binding.h"

/* Negative results of base64Encode. */
enum {
    B64_ARG_SRC = -1,     /* src is not a typed array */
    B64_ARG_DST = -2,     /* dst is not a typed array, or dstOffset not an integer in 0..dst length */
    B64_ARG_SPACE = -3,   /* the encoding does not fit in dst after dstOffset */
    B64_ARG_OVERLAP = -4, /* the output range overlaps src */
};

/* base64Encode(src, dst, dstOffset) -> characters written at dst[dstOffset..], or a status < 0 */
static napi_value js_b64_encode(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return make_int(env, B64_ARG_SRC);
    uint8_t *src, *dst;
    size_t src_len, dst_len;
    uint64_t at;
    if (!typed_array_bytes(env, argv[0], &src, &src_len)) return make_int(env, B64_ARG_SRC);
    if (!typed_array_bytes(env, argv[1], &dst, &dst_len) || !get_whole(env, argv[2], (double)dst_len, &at)) return make_int(env, B64_ARG_DST);
    size_t need = b64_encoded_length(src_len);
    if (need > dst_len - (size_t)at) return make_int(env, B64_ARG_SPACE);
    uint8_t *out = dst + (size_t)at;
    if (need > 0 && src_len > 0 && out < src + src_len && src < out + need) return make_int(env, B64_ARG_OVERLAP);
    napi_value result;
    napi_create_double(env, (double)b64_encode(src, src_len, out), &result);
    return result;
}

/* base64Path() -> the path in use; setBase64Path(name) -> enum b64_status ("auto": the widest
 * supported); base64Paths() -> [{ name, compiled, supported }], portable first */
static const path_list b64_paths = {
    B64_PATH_COUNT, b64_path_name, b64_path_compiled, b64_path_supported, b64_path_current, b64_path_force, B64_E_PATH_UNKNOWN,
};

int define_b64(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"base64Encode", NULL, js_b64_encode, NULL, NULL, NULL, napi_default, NULL},
    };
    return napi_define_properties(env, exports, sizeof props / sizeof props[0], props) == napi_ok &&
           define_path_functions(env, exports, &b64_paths, "base64Path", "setBase64Path", "base64Paths");
}
