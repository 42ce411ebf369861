/*
 * N-API binding. Every function validates its JavaScript arguments and returns a status number
 * (rs.h); src/ec/errors.ts turns nonzero statuses into EcError. Shards are read in place: the
 * pointers come straight from the Buffers, ArrayBuffers or typed arrays, never copied.
 */
#include <node_api.h>
#include <string.h>

#include "binding.h"
#include "rs.h"

#define NAPI_CALL(env, call)                                  \
    do {                                                      \
        if ((call) != napi_ok) return fail_internal(env);     \
    } while (0)

napi_value make_int(napi_env env, int v) {
    napi_value out;
    napi_create_int32(env, v, &out);
    return out;
}

static napi_value fail_internal(napi_env env) { return make_int(env, RS_STATUS(RS_E_INTERNAL, 0)); }

/* Reads a JavaScript integer; returns 0 when v is not a number with an integral value. */
static int get_int(napi_env env, napi_value v, int *out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) return 0;
    if (!(d >= -1e9 && d <= 1e9) || d != (double)(int)d) return 0;
    *out = (int)d;
    return 1;
}

int get_whole(napi_env env, napi_value v, double max, uint64_t *out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0 && d <= max) || d != (double)(uint64_t)d) return 0;
    *out = (uint64_t)d;
    return 1;
}

int get_range(napi_env env, const uint8_t *base, size_t size, napi_value offset, napi_value length, const uint8_t **p, size_t *n) {
    uint64_t at, count;
    if (!get_whole(env, offset, (double)size, &at) || !get_whole(env, length, (double)(size - at), &count)) return 0;
    *p = base + at;
    *n = (size_t)count;
    return 1;
}

int typed_array_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len) {
    bool is = false;
    if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return 0;
    napi_typedarray_type type;
    size_t count, offset;
    napi_value ab;
    void *p;
    if (napi_get_typedarray_info(env, v, &type, &count, &p, &ab, &offset) != napi_ok) return 0;
    static const size_t width[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8}; /* by napi_typedarray_type */
    if ((unsigned)type >= sizeof width / sizeof width[0]) return 0;
    *data = p;
    *len = count * width[type];
    return 1;
}

int source_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len) {
    if (typed_array_bytes(env, v, data, len)) return 1;
    bool is = false;
    if (napi_is_arraybuffer(env, v, &is) == napi_ok && is) {
        void *p;
        if (napi_get_arraybuffer_info(env, v, &p, len) != napi_ok) return 0;
        *data = p;
        return 1;
    }
    return 0;
}

/*
 * Reads count elements of a JavaScript array into vals[first..]. Element getters (user code) may
 * run here, so every value is fetched before any pointer is taken: a getter that detaches a
 * buffer cannot leave us holding a stale pointer.
 */
static int get_values(napi_env env, napi_value arr, int first, int count, napi_value *vals) {
    bool is = false;
    uint32_t n = 0;
    if (napi_is_array(env, arr, &is) != napi_ok || !is) return RS_STATUS(RS_E_ARG_TYPE, 0);
    if (napi_get_array_length(env, arr, &n) != napi_ok || n != (uint32_t)count) {
        return RS_STATUS(RS_E_SHARD_COUNT, first);
    }
    for (int i = 0; i < count; i++) {
        if (napi_get_element(env, arr, (uint32_t)i, &vals[first + i]) != napi_ok) {
            return RS_STATUS(RS_E_SHARD_TYPE, first + i);
        }
    }
    return RS_OK;
}

/* Pointers and lengths of n shard values; no JavaScript runs from here to the kernel's end. */
static int get_all_bytes(napi_env env, int n, napi_value *vals, uint8_t **ptrs, size_t *lens) {
    for (int i = 0; i < n; i++) {
        if (!source_bytes(env, vals[i], &ptrs[i], &lens[i])) return RS_STATUS(RS_E_SHARD_TYPE, i);
    }
    return RS_OK;
}

static int get_km(napi_env env, napi_value *argv, int *k, int *m) {
    if (!get_int(env, argv[0], k) || !get_int(env, argv[1], m)) return RS_STATUS(RS_E_ARG_TYPE, 0);
    if (*k < 1 || *k > RS_K_MAX) return RS_STATUS(RS_E_K_RANGE, 0);
    if (*m < 1 || *m > RS_M_MAX) return RS_STATUS(RS_E_M_RANGE, 0);
    return RS_OK;
}

/* encode(k, m, data[], parity[]) -> status */
static napi_value js_encode(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 4) return make_int(env, RS_STATUS(RS_E_ARG_TYPE, 0));
    int k, m;
    int status = get_km(env, argv, &k, &m);
    napi_value vals[RS_N_MAX];
    uint8_t *ptrs[RS_N_MAX];
    size_t lens[RS_N_MAX];
    if (status == RS_OK) status = get_values(env, argv[2], 0, k, vals);
    if (status == RS_OK) status = get_values(env, argv[3], k, m, vals);
    if (status == RS_OK) status = get_all_bytes(env, k + m, vals, ptrs, lens);
    if (status == RS_OK) status = rs_encode(k, m, ptrs, lens);
    return make_int(env, status);
}

/*
 * encodeUpdate(k, m, index, data, parity[]) -> status: parity[j] ^= coef(k + j, index) x data.
 * Values sit at their stripe positions (data at index, parity j at k + j) so that statuses name
 * shards as encode's do; the lengths are checked here, as rs_encode_update takes one.
 */
static napi_value js_encode_update(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 5) return make_int(env, RS_STATUS(RS_E_ARG_TYPE, 0));
    int k, m, index = 0;
    int status = get_km(env, argv, &k, &m);
    if (status == RS_OK && !get_int(env, argv[2], &index)) status = RS_STATUS(RS_E_ARG_TYPE, 0);
    if (status == RS_OK && (index < 0 || index >= k)) status = RS_STATUS(RS_E_INDEX_RANGE, 0);
    napi_value vals[RS_N_MAX];
    uint8_t *ptrs[RS_N_MAX];
    size_t lens[RS_N_MAX];
    if (status == RS_OK) status = get_values(env, argv[4], k, m, vals);
    if (status == RS_OK && !source_bytes(env, argv[3], &ptrs[index], &lens[index])) {
        status = RS_STATUS(RS_E_SHARD_TYPE, index);
    }
    for (int j = k; status == RS_OK && j < k + m; j++) {
        if (!source_bytes(env, vals[j], &ptrs[j], &lens[j])) status = RS_STATUS(RS_E_SHARD_TYPE, j);
        else if (lens[j] != lens[index]) status = RS_STATUS(RS_E_SHARD_LENGTH, j);
    }
    if (status == RS_OK) status = rs_encode_update(k, m, index, ptrs[index], ptrs + k, lens[index]);
    return make_int(env, status);
}

static int get_present(napi_env env, napi_value arr, int n, uint8_t *present) {
    bool is = false;
    uint32_t len = 0;
    if (napi_is_array(env, arr, &is) != napi_ok || !is) return RS_STATUS(RS_E_PRESENT_TYPE, 0);
    if (napi_get_array_length(env, arr, &len) != napi_ok || len != (uint32_t)n) {
        return RS_STATUS(RS_E_PRESENT_TYPE, 0);
    }
    for (int i = 0; i < n; i++) {
        napi_value v;
        bool b;
        if (napi_get_element(env, arr, (uint32_t)i, &v) != napi_ok ||
            napi_get_value_bool(env, v, &b) != napi_ok) {
            return RS_STATUS(RS_E_PRESENT_TYPE, i);
        }
        present[i] = b;
    }
    return RS_OK;
}

/* reconstruct(k, m, shards[], present[], dataOnly?) -> status */
static napi_value js_reconstruct(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 4) return make_int(env, RS_STATUS(RS_E_ARG_TYPE, 0));
    bool data_only = false;
    napi_valuetype type = napi_undefined;
    if (argc > 4) NAPI_CALL(env, napi_typeof(env, argv[4], &type));
    if (type != napi_undefined && napi_get_value_bool(env, argv[4], &data_only) != napi_ok) {
        return make_int(env, RS_STATUS(RS_E_ARG_TYPE, 0));
    }
    int k, m;
    int status = get_km(env, argv, &k, &m);
    napi_value vals[RS_N_MAX];
    uint8_t *ptrs[RS_N_MAX];
    size_t lens[RS_N_MAX];
    uint8_t present[RS_N_MAX];
    if (status == RS_OK) status = get_values(env, argv[2], 0, k + m, vals);
    if (status == RS_OK) status = get_present(env, argv[3], k + m, present);
    if (status == RS_OK) status = get_all_bytes(env, k + m, vals, ptrs, lens);
    if (status == RS_OK) {
        status = data_only ? rs_reconstruct_data(k, m, ptrs, lens, present)
                           : rs_reconstruct(k, m, ptrs, lens, present);
    }
    return make_int(env, status);
}

/* encodingMatrix(k, m, out) -> status; out receives (k + m) * k bytes, row-major. */
static napi_value js_encoding_matrix(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 3) return make_int(env, RS_STATUS(RS_E_ARG_TYPE, 0));
    int k, m;
    int status = get_km(env, argv, &k, &m);
    uint8_t *out;
    size_t len;
    if (status != RS_OK) return make_int(env, status);
    if (!source_bytes(env, argv[2], &out, &len)) return make_int(env, RS_STATUS(RS_E_SHARD_TYPE, 0));
    if (len != (size_t)(k + m) * (size_t)k) return make_int(env, RS_STATUS(RS_E_SHARD_LENGTH, 0));
    return make_int(env, rs_encoding_matrix(k, m, out));
}

/* kernelPath() -> name of the path in use; setKernelPath(name) -> status ("auto": the widest
 * supported); paths() -> [{ name, compiled, supported }] in order portable .. gfni512 */
static const path_list rs_paths = {
    RS_PATH_COUNT, rs_path_name, rs_path_compiled, rs_path_supported, rs_path_current, rs_path_force, RS_STATUS(RS_E_PATH_UNKNOWN, 0),
};

static napi_value init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"encode", NULL, js_encode, NULL, NULL, NULL, napi_default, NULL},
        {"encodeUpdate", NULL, js_encode_update, NULL, NULL, NULL, napi_default, NULL},
        {"reconstruct", NULL, js_reconstruct, NULL, NULL, NULL, napi_default, NULL},
        {"encodingMatrix", NULL, js_encoding_matrix, NULL, NULL, NULL, napi_default, NULL},
        {"cacheStats", NULL, js_cache_stats, NULL, NULL, NULL, napi_default, NULL},
        {"limits", NULL, js_limits, NULL, NULL, NULL, napi_default, NULL},
        {"fallocate", NULL, js_fallocate, NULL, NULL, NULL, napi_default, NULL},
        {"fallocateModes", NULL, js_fallocate_modes, NULL, NULL, NULL, napi_default, NULL},
        {"preadNoWait", NULL, js_pread_no_wait, NULL, NULL, NULL, napi_default, NULL},
        {"pwriteEach", NULL, js_pwrite_each, NULL, NULL, NULL, napi_default, NULL},
        {"directWriteBytes", NULL, js_direct_write_bytes, NULL, NULL, NULL, napi_default, NULL},
        {"copyBytes", NULL, js_copy_bytes, NULL, NULL, NULL, napi_default, NULL},
        {"pageOffset", NULL, js_page_offset, NULL, NULL, NULL, napi_default, NULL},
        {"batchSink", NULL, js_batch_sink, NULL, NULL, NULL, napi_default, NULL},
        {"writeBatchTo", NULL, js_write_batch_to, NULL, NULL, NULL, napi_default, NULL},
        {"readBackTo", NULL, js_read_back_to, NULL, NULL, NULL, napi_default, NULL},
        {"batchTurn", NULL, js_batch_turn, NULL, NULL, NULL, napi_default, NULL},
        {"clockTicks", NULL, js_clock_ticks, NULL, NULL, NULL, napi_default, NULL},
        {"mapOpen", NULL, js_map_open, NULL, NULL, NULL, napi_default, NULL},
        {"mapRead", NULL, js_map_read, NULL, NULL, NULL, napi_default, NULL},
        {"mapClose", NULL, js_map_close, NULL, NULL, NULL, napi_default, NULL},
        {"mapRecheck", NULL, js_map_recheck, NULL, NULL, NULL, napi_default, NULL},
        {"mapStats", NULL, js_map_stats, NULL, NULL, NULL, napi_default, NULL},
    };
    if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
    if (!define_path_functions(env, exports, &rs_paths, "kernelPath", "setKernelPath", "paths")) return NULL;
    if (!define_b64(env, exports)) return NULL;
    if (!define_crc32c(env, exports)) return NULL;
    if (!define_blake3(env, exports)) return NULL;
    /* Each worker thread has its own plan cache; free it when the thread's environment ends. */
    napi_add_env_cleanup_hook(env, cleanup_cache, NULL);
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
