/*
 * File-space calls Node lacks: fallocate(2), run on libuv's thread pool like Node's own fs calls.
 * The engine allocates segment space before records go in (so a full disk refuses a store
 * instead of leaving a hole in an acknowledged record) and punches holes to give space back.
 *
 *   fallocate(fd, mode, offset, length) -> Promise<number>   0, or the errno of the failure
 *
 * And a read that never waits for the disk: preadv2(RWF_NOWAIT) copies what the page cache holds
 * and fails with EAGAIN rather than block. The GET of a small blob reads on the event loop when
 * its bytes are in memory (cheaper than a thread-pool hop) and goes to the pool when they are not,
 * so a cold read stalls no other request (src/engine/segment-reader.ts).
 *
 *   preadNoWait(fd, buffer, length, position) -> number   bytes read, or -errno
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "binding.h"

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    int fd;
    int mode;
    int64_t offset;
    int64_t length;
    int err;
} fallocate_job;

static void fallocate_execute(napi_env env, void *data) {
    (void)env;
    fallocate_job *job = data;
    int rc;
    do {
        rc = fallocate(job->fd, job->mode, (off_t)job->offset, (off_t)job->length);
    } while (rc != 0 && errno == EINTR);
    job->err = rc == 0 ? 0 : errno;
}

static void fallocate_complete(napi_env env, napi_status status, void *data) {
    fallocate_job *job = data;
    napi_resolve_deferred(env, job->deferred, make_int(env, status == napi_ok ? job->err : EIO));
    napi_delete_async_work(env, job->work);
    free(job);
}

static int get_i64(napi_env env, napi_value v, int64_t *out) {
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) return 0;
    if (!(d >= 0 && d <= 9007199254740991.0) || d != (double)(int64_t)d) return 0;
    *out = (int64_t)d;
    return 1;
}

/* A bad argument is a programming error: the promise resolves with EINVAL, as the call would. */
napi_value js_fallocate(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4], promise, name;
    napi_deferred deferred;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    if (napi_create_promise(env, &deferred, &promise) != napi_ok) return NULL;
    fallocate_job *job = calloc(1, sizeof *job);
    int64_t fd = -1, mode = -1;
    if (job == NULL || argc < 4 || !get_i64(env, argv[0], &fd) || !get_i64(env, argv[1], &mode) ||
        !get_i64(env, argv[2], &job->offset) || !get_i64(env, argv[3], &job->length) || fd > INT32_MAX ||
        mode > INT32_MAX || job->length == 0) {
        free(job);
        napi_resolve_deferred(env, deferred, make_int(env, EINVAL));
        return promise;
    }
    job->fd = (int)fd;
    job->mode = (int)mode;
    job->deferred = deferred;
    napi_create_string_utf8(env, "blobstore.fallocate", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, NULL, name, fallocate_execute, fallocate_complete, job, &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        free(job);
        napi_resolve_deferred(env, deferred, make_int(env, EIO));
    }
    return promise;
}

/* The mode bits of <linux/falloc.h> the engine uses. */
napi_value js_fallocate_modes(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value obj;
    napi_create_object(env, &obj);
    napi_set_named_property(env, obj, "KEEP_SIZE", make_int(env, FALLOC_FL_KEEP_SIZE));
    napi_set_named_property(env, obj, "PUNCH_HOLE", make_int(env, FALLOC_FL_PUNCH_HOLE));
    return obj;
}

/* Linux 4.14 added RWF_NOWAIT for reads; older C libraries lack the constant (the kernel answers EOPNOTSUPP). */
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* A bad argument answers -EINVAL, as the call would. */
napi_value js_pread_no_wait(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    uint8_t *data;
    size_t len;
    int64_t fd = -1, length = -1, position = -1;
    if (argc < 4 || !typed_array_bytes(env, argv[1], &data, &len) || !get_i64(env, argv[0], &fd) || fd > INT32_MAX ||
        !get_i64(env, argv[2], &length) || length > INT32_MAX || (uint64_t)length > len || !get_i64(env, argv[3], &position)) {
        return make_int(env, -EINVAL);
    }
    struct iovec iov = {.iov_base = data, .iov_len = (size_t)length};
    ssize_t n;
    do {
        n = preadv2((int)fd, &iov, 1, (off_t)position, RWF_NOWAIT);
    } while (n < 0 && errno == EINTR);
    return make_int(env, n < 0 ? -errno : (int)n);
}
