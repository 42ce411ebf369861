#ifndef BLOBSTORE_PATHS_H
#define BLOBSTORE_PATHS_H

#include <pthread.h>
#include <stdatomic.h>

/*
 * A dispatcher's kernel paths (dispatch.c for Reed-Solomon, b64.c for base64): path 0 is the
 * portable one and always runs; each other runs when it is compiled in and the CPU probe allows it.
 * The current path is the widest that runs, unless an environment variable or a call pins one.
 */
typedef struct {
    const char *const *names;
    int count;
    unsigned runnable; /* bit p: path p is compiled in and this CPU and OS run it */
    atomic_int current;
} path_set;

#define PATH_UNKNOWN (-1)
#define PATH_UNAVAILABLE (-2)

/* Once, before any other call: `runnable` as above; the path `env_var` names if it runs here,
 * else the widest (an unknown or unavailable name falls back here; the TypeScript loader rejects it). */
void path_set_init(path_set *s, unsigned runnable, const char *env_var);
int path_set_runs(const path_set *s, int path);
/* The path called `name` ("auto": the widest) made current: the path, or PATH_UNKNOWN / PATH_UNAVAILABLE. */
int path_set_force(path_set *s, const char *name);

/*
 * The functions every dispatcher has over its path set `set`, probed once by its probe() on
 * first use: <prefix>_path_supported(path), <prefix>_path_current(), and a static
 * <prefix>_path_pin(name) (path_set_force after the probe) that its <prefix>_path_force maps to
 * its own statuses.
 */
#define PATH_SET_FUNCTIONS(prefix, set, probe)                     \
    static pthread_once_t prefix##_probe_once = PTHREAD_ONCE_INIT; \
    int prefix##_path_supported(int path) {                        \
        pthread_once(&prefix##_probe_once, probe);                 \
        return path_set_runs(&set, path);                          \
    }                                                              \
    int prefix##_path_current(void) {                              \
        pthread_once(&prefix##_probe_once, probe);                 \
        return atomic_load(&set.current);                          \
    }                                                              \
    static int prefix##_path_pin(const char *name) {               \
        pthread_once(&prefix##_probe_once, probe);                 \
        return path_set_force(&set, name);                         \
    }

/* A pin's result as a dispatcher's status: `ok`, or its code for an unknown or unavailable name. */
static inline int path_pin_status(int pinned, int ok, int unknown, int unavailable) {
    return pinned == PATH_UNKNOWN ? unknown : pinned == PATH_UNAVAILABLE ? unavailable : ok;
}

#endif
