/*
 * N-API glue of CRC-32C (crc32c.h). Like the other functions it never throws: crc32c returns the
 * CRC (0..2^32-1) or -1 for arguments it cannot take; src/hash/crc32c.ts turns that into an error.
 */
#include "binding.h"
#include "crc32c.h"

/* crc32c(src[, offset, length]) -> the CRC-32C of src[offset .. offset + length), or -1 */
static napi_value js_crc32c(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    uint8_t *src;
    size_t len;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !source_bytes(env, argv[0], &src, &len)) {
        return make_int(env, -1);
    }
    size_t from = 0, count = len;
    if (argc >= 3) {
        uint64_t at, n;
        if (!get_whole(env, argv[1], (double)len, &at) || !get_whole(env, argv[2], (double)(len - at), &n)) return make_int(env, -1);
        from = (size_t)at;
        count = (size_t)n;
    }
    napi_value out;
    napi_create_uint32(env, crc32c(0, src + from, count), &out);
    return out;
}

/* crc32cPath() -> the path in use; setCrc32cPath(name) -> enum crc32c_status ("auto": the widest
 * supported); crc32cPaths() -> [{ name, compiled, supported }], portable first */
static const path_list crc32c_paths = {
    CRC32C_PATH_COUNT, crc32c_path_name, crc32c_path_compiled, crc32c_path_supported, crc32c_path_current, crc32c_path_force, CRC32C_E_PATH_UNKNOWN,
};

int define_crc32c(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"crc32c", NULL, js_crc32c, NULL, NULL, NULL, napi_default, NULL},
    };
    return napi_define_properties(env, exports, sizeof props / sizeof props[0], props) == napi_ok &&
           define_path_functions(env, exports, &crc32c_paths, "crc32cPath", "setCrc32cPath", "crc32cPaths");
}
