#include "paths.h"

#include <stdlib.h>
#include <string.h>

static int by_name(const path_set *s, const char *name) {
    for (int p = 0; p < s->count; p++) {
        if (strcmp(name, s->names[p]) == 0) return p;
    }
    return PATH_UNKNOWN;
}

static int widest(const path_set *s) {
    for (int p = s->count - 1; p > 0; p--) {
        if (path_set_runs(s, p)) return p;
    }
    return 0;
}

int path_set_runs(const path_set *s, int path) { return path >= 0 && path < s->count && ((s->runnable >> path) & 1u); }

void path_set_init(path_set *s, unsigned runnable, const char *env_var) {
    s->runnable = runnable | 1u;
    const char *env = getenv(env_var);
    int forced = env ? by_name(s, env) : PATH_UNKNOWN;
    atomic_store(&s->current, forced >= 0 && path_set_runs(s, forced) ? forced : widest(s));
}

int path_set_force(path_set *s, const char *name) {
    int p = strcmp(name, "auto") == 0 ? widest(s) : by_name(s, name);
    if (p < 0) return PATH_UNKNOWN;
    if (!path_set_runs(s, p)) return PATH_UNAVAILABLE;
    atomic_store(&s->current, p);
    return p;
}
