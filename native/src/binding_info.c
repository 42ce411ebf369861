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

static const path_list *list_of(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
    void *data = NULL;
    if (napi_get_cb_info(env, info, argc, argv, NULL, &data) != napi_ok) return NULL;
    return data;
}

static napi_value js_path_current(napi_env env, napi_callback_info info) {
    size_t argc = 0;
    const path_list *list = list_of(env, info, &argc, NULL);
    napi_value out;
    napi_create_string_utf8(env, list->name(list->current()), NAPI_AUTO_LENGTH, &out);
    return out;
}

static napi_value js_path_set(napi_env env, napi_callback_info info) {
    size_t argc = 1, n = 0;
    napi_value argv[1];
    const path_list *list = list_of(env, info, &argc, argv);
    char name[32];
    if (argc < 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof name, &n) != napi_ok) return make_int(env, list->unknown);
    return make_int(env, list->force(name));
}

static napi_value js_path_all(napi_env env, napi_callback_info info) {
    size_t argc = 0;
    const path_list *list = list_of(env, info, &argc, NULL);
    napi_value arr;
    if (napi_create_array_with_length(env, (size_t)list->count, &arr) != napi_ok) return NULL;
    for (int p = 0; p < list->count; p++) {
        napi_value obj, name;
        napi_create_object(env, &obj);
        napi_create_string_utf8(env, list->name(p), NAPI_AUTO_LENGTH, &name);
        set_prop(env, obj, "name", name);
        set_prop(env, obj, "compiled", make_bool(env, list->compiled(p)));
        set_prop(env, obj, "supported", make_bool(env, list->supported(p)));
        napi_set_element(env, arr, (uint32_t)p, obj);
    }
    return arr;
}

int define_path_functions(napi_env env, napi_value exports, const path_list *list, const char *current, const char *set, const char *all) {
    void *data = (void *)list;
    napi_property_descriptor props[] = {
        {current, NULL, js_path_current, NULL, NULL, NULL, napi_default, data},
        {set, NULL, js_path_set, NULL, NULL, NULL, napi_default, data},
        {all, NULL, js_path_all, NULL, NULL, NULL, napi_default, data},
    };
    return napi_define_properties(env, exports, sizeof props / sizeof props[0], props) == napi_ok;
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
