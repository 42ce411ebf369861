/*
 * N-API glue of BLAKE3 (blake3.h). It never throws: each function returns 0, or a negative status
 * for arguments it cannot take, which src/hash/native-blake3.ts turns into an error. Digests and
 * chaining values are written into the caller's buffers: nothing is allocated per call.
 */
#include <stdbool.h>

#include "binding.h"
#include "blake3.h"
#include "crc32c.h"

enum {
    B3_ARG_SRC = -1,   /* src is not a typed array */
    B3_ARG_DST = -2,   /* a destination is not a typed array, or its offset leaves no 32 bytes */
    B3_ARG_COUNT = -3, /* counter or count is not a whole number in range, or does not fit src */
};

/* 32 writable bytes at argv[i][argv[i + 1]]; NULL when the arguments do not give them. */
static uint8_t *out_bytes(napi_env env, const napi_value *argv, size_t i) {
    uint8_t *dst;
    size_t len;
    uint64_t at;
    if (!typed_array_bytes(env, argv[i], &dst, &len) || !get_whole(env, argv[i + 1], (double)len, &at) || len - at < BLAKE3_OUT_BYTES) return NULL;
    return dst + at;
}

/* blake3Hash(src, dst, dstOffset) -> 0: the digest of src at dst[dstOffset .. + 32) */
static napi_value js_blake3_hash(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    uint8_t *src, *out;
    size_t len;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || !source_bytes(env, argv[0], &src, &len)) {
        return make_int(env, B3_ARG_SRC);
    }
    if (!(out = out_bytes(env, argv, 1))) return make_int(env, B3_ARG_DST);
    blake3_hash(src, len, out);
    return make_int(env, 0);
}

/*
 * blake3Subtree(src, counter, cv, cvOffset[, root, rootOffset]) -> 0: the chaining value of src as
 * the subtree whose first 1 KiB chunk is number `counter` of the whole input; with `root` (counter
 * 0 only) also the digest of src alone.
 */
static napi_value js_blake3_subtree(napi_env env, napi_callback_info info) {
    size_t argc = 6;
    napi_value argv[6];
    uint8_t *src, *cv, *root = NULL;
    size_t len;
    uint64_t counter;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || !typed_array_bytes(env, argv[0], &src, &len)) {
        return make_int(env, B3_ARG_SRC);
    }
    if (!get_whole(env, argv[1], 9007199254740991.0, &counter)) return make_int(env, B3_ARG_COUNT);
    if (!(cv = out_bytes(env, argv, 2))) return make_int(env, B3_ARG_DST);
    if (argc == 5) return make_int(env, B3_ARG_DST); /* a root without its offset */
    if (argc >= 6) {
        napi_valuetype t;
        if (napi_typeof(env, argv[4], &t) != napi_ok) return make_int(env, B3_ARG_DST);
        if (t != napi_undefined) {
            if (counter != 0) return make_int(env, B3_ARG_COUNT);
            if (!(root = out_bytes(env, argv, 4))) return make_int(env, B3_ARG_DST);
        }
    }
    blake3_subtree(src, len, counter, cv, root);
    return make_int(env, 0);
}

/*
 * blake3Root(cvs, count, dst, dstOffset) -> 0: the digest joined from cvs[0 .. 32 * count), count >= 2;
 * blake3Join(...) the same arguments -> 0: their chaining value as one subtree, count >= 1
 */
static napi_value js_blake3_cvs(napi_env env, napi_callback_info info, int root) {
    size_t argc = 4;
    napi_value argv[4];
    uint8_t *cvs, *out;
    size_t len;
    uint64_t count;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || !typed_array_bytes(env, argv[0], &cvs, &len)) {
        return make_int(env, B3_ARG_SRC);
    }
    if (!get_whole(env, argv[1], (double)(len / BLAKE3_OUT_BYTES), &count) || count < (root ? 2u : 1u)) return make_int(env, B3_ARG_COUNT);
    if (!(out = out_bytes(env, argv, 2))) return make_int(env, B3_ARG_DST);
    if (root) blake3_root(cvs, (size_t)count, out);
    else blake3_join(cvs, (size_t)count, out);
    return make_int(env, 0);
}

static napi_value js_blake3_root(napi_env env, napi_callback_info info) { return js_blake3_cvs(env, info, 1); }
static napi_value js_blake3_join(napi_env env, napi_callback_info info) { return js_blake3_cvs(env, info, 0); }

/* Inputs one blake3HashEach call takes at most (its arrays are on the stack). */
#define EACH_MAX 64

/*
 * blake3HashEach(parts, count, crcs) -> 0: `parts` (an array) holds `count` quads [src, offset,
 * length, dst]: the digest of src[offset .. offset + length) goes to dst[0 .. 32), and its CRC-32C
 * to crcs[i] (a Uint32Array of at least `count`). One call for the small stores of an event-loop
 * turn: their 4 KiB bodies share the hash kernels' lanes (blake3_hash_each). No dst or crcs may
 * overlap an input (the CRCs are taken after the digests are written).
 */
static napi_value js_blake3_hash_each(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    uint64_t count;
    bool is_array = false;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return make_int(env, B3_ARG_SRC);
    if (napi_is_array(env, argv[0], &is_array) != napi_ok || !is_array) return make_int(env, B3_ARG_SRC);
    if (!get_whole(env, argv[1], EACH_MAX, &count)) return make_int(env, B3_ARG_COUNT);
    /* Every element is fetched before any pointer is taken (a getter could detach a buffer). */
    napi_value vals[4 * EACH_MAX];
    for (uint32_t k = 0; k < 4 * count; k++) {
        if (napi_get_element(env, argv[0], k, &vals[k]) != napi_ok) return make_int(env, B3_ARG_SRC);
    }
    const uint8_t *ins[EACH_MAX];
    uint8_t *outs[EACH_MAX];
    size_t lens[EACH_MAX];
    for (size_t i = 0; i < count; i++) {
        uint8_t *base, *out;
        const uint8_t *in;
        size_t size, out_size;
        if (!source_bytes(env, vals[4 * i], &base, &size) || !get_range(env, base, size, vals[4 * i + 1], vals[4 * i + 2], &in, &lens[i])) {
            return make_int(env, B3_ARG_SRC);
        }
        if (!typed_array_bytes(env, vals[4 * i + 3], &out, &out_size) || out_size < BLAKE3_OUT_BYTES) return make_int(env, B3_ARG_DST);
        ins[i] = in;
        outs[i] = out;
    }
    uint32_t *crcs;
    size_t crc_bytes;
    if (!typed_array_bytes(env, argv[2], (uint8_t **)&crcs, &crc_bytes) || crc_bytes / sizeof *crcs < count || ((uintptr_t)crcs & 3) != 0) {
        return make_int(env, B3_ARG_DST);
    }
    blake3_hash_each(ins, lens, (size_t)count, outs);
    for (size_t i = 0; i < count; i++) crcs[i] = crc32c(0, ins[i], lens[i]);
    return make_int(env, 0);
}

/* blake3Path() -> the path in use; setBlake3Path(name) -> enum blake3_status ("auto": the widest
 * supported); blake3Paths() -> [{ name, compiled, supported }], portable first */
static const path_list blake3_paths = {
    BLAKE3_PATH_COUNT, blake3_path_name, blake3_path_compiled, blake3_path_supported, blake3_path_current, blake3_path_force, BLAKE3_E_PATH_UNKNOWN,
};

int define_blake3(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"blake3Hash", NULL, js_blake3_hash, NULL, NULL, NULL, napi_default, NULL},
        {"blake3Subtree", NULL, js_blake3_subtree, NULL, NULL, NULL, napi_default, NULL},
        {"blake3Root", NULL, js_blake3_root, NULL, NULL, NULL, napi_default, NULL},
        {"blake3Join", NULL, js_blake3_join, NULL, NULL, NULL, napi_default, NULL},
        {"blake3HashEach", NULL, js_blake3_hash_each, NULL, NULL, NULL, napi_default, NULL},
    };
    return napi_define_properties(env, exports, sizeof props / sizeof props[0], props) == napi_ok &&
           define_path_functions(env, exports, &blake3_paths, "blake3Path", "setBlake3Path", "blake3Paths");
}
