/* The binding's introspection functions: paths, cache statistics, limits. */
#include "binding.h"
#include "rs.h"

static void set_prop(napi_env env, napi_value obj, const char *key, napi_value v) {
    napi_set_named_property(env, obj, key, v);
}

static napi_value make_bool(napi_env env, int v) {
    napi_value out;
    napi_get_boolean(env, v != 0, &out);
    return out;
}

static napi_value make_double(napi_env env, double v) {
    napi_value out;
    napi_create_double(env, v, &out);
    return out;
}

napi_value js_paths(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value arr;
    if (napi_create_array_with_length(env, RS_PATH_COUNT, &arr) != napi_ok) return NULL;
    for (int p = 0; p < RS_PATH_COUNT; p++) {
        napi_value obj, name;
        napi_create_object(env, &obj);
        napi_create_string_utf8(env, rs_path_name(p), NAPI_AUTO_LENGTH, &name);
        set_prop(env, obj, "name", name);
        set_prop(env, obj, "compiled", make_bool(env, rs_path_compiled(p)));
        set_prop(env, obj, "supported", make_bool(env, rs_path_supported(p)));
        napi_set_element(env, arr, (uint32_t)p, obj);
    }
    return arr;
}

napi_value js_cache_stats(napi_env env, napi_callback_info info) {
    (void)info;
    rs_cache_stats s;
    rs_cache_get_stats(&s);
    napi_value obj;
    if (napi_create_object(env, &obj) != napi_ok) return NULL;
    set_prop(env, obj, "hits", make_double(env, (double)s.hits));
    set_prop(env, obj, "misses", make_double(env, (double)s.misses));
    set_prop(env, obj, "entries", make_int(env, s.entries));
    set_prop(env, obj, "capacity", make_int(env, s.capacity));
    return obj;
}

napi_value js_limits(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value obj;
    if (napi_create_object(env, &obj) != napi_ok) return NULL;
    set_prop(env, obj, "formatVersion", make_int(env, RS_FORMAT_VERSION));
    set_prop(env, obj, "kMax", make_int(env, RS_K_MAX));
    set_prop(env, obj, "mMax", make_int(env, RS_M_MAX));
    return obj;
}

void cleanup_cache(void *arg) {
    (void)arg;
    rs_cache_clear();
}
