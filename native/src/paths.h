#ifndef BLOBSTORE_PATHS_H
#define BLOBSTORE_PATHS_H

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

#endif
