/*
 * File-space calls Node lacks: fallocate(2), run on libuv's thread pool like Node's own fs calls.
 * The engine allocates segment space before records go in (so a full disk refuses a store
 * instead of leaving a hole in an acknowledged record) and punches holes to give space back.
 *
 *   fallocate(fd, mode, offset, length) -> Promise<number>   0, or the errno of the failure
 *   pwriteEach(fd, parts, position) -> Promise<number>        0, or the errno of the failure
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
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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

/*
 * pwriteEach(fd, parts, position, directFd = -1) -> Promise<number>: 0, or the errno of the failure.
 * Writes the parts one after another from `position`, one pwrite(2) per part (each to the end,
 * across short writes), in one thread-pool job. Why not one pwritev: the kernel sizes page-cache
 * folios by a write's length, and a long write takes 2 MiB folios, which on a VM with free page
 * reporting are memory the host took back and faults in again on the copy (src/engine/blob-file.ts);
 * one job, not one per part, keeps the thread-pool round trips of a batch at one.
 *
 * With `directFd` (the same file opened O_DIRECT), a part whose offset and length are multiples of
 * DIRECT_ALIGN goes through it: from its own memory when that is aligned too, else through a
 * per-thread aligned bounce buffer. The bytes then skip the page cache: no copy into new
 * page-cache pages, no writeback (src/engine/blob-file.ts says what it saves). A part the file or
 * the memory refuses (EINVAL), or one no bounce buffer could be had for (ENOMEM), is written
 * through `fd` instead, as are unaligned parts.
 *
 *   directWriteBytes() -> number   bytes written through a direct fd since the addon was loaded
 *
 * write_batch_run: a group commit of the segment log (src/engine/log.ts; called from
 * binding_batch.c's writeBatchTo) in one thread-pool job: the parts written
 * as one stream from `position` (through `directFd` when the batch is whole 4 KiB blocks), then
 * fdatasync(fd). One hop to the pool per batch, as the fdatasync alone was. Then the range the
 * log asks for (earlier batches written through `directFd`) is read back into the page cache
 * (posix_fadvise WILLNEED, by the device, not this CPU), so blobs read soon after their store are
 * in memory.
 */
#define DIRECT_ALIGN 4096
#define BOUNCE_BYTES ((size_t)1 << 20)

/* One per thread-pool thread, allocated on its first direct write and kept (4 threads: 4 MiB). */
static __thread uint8_t *bounce;
static _Atomic uint64_t direct_bytes_total;

/* Writes [p, p + len) at `at` to its end: 0, or the errno. */
static int write_full(int fd, const uint8_t *p, size_t len, int64_t at) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, p + done, len - done, (off_t)(at + (int64_t)done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO; /* no progress and no error: never loop forever */
        done += (size_t)n;
    }
    return 0;
}

/* An aligned part through the O_DIRECT fd: 0, or the errno (EINVAL: not fit for direct I/O here). */
static int write_direct(int fd, const uint8_t *p, size_t len, int64_t at) {
    if ((uintptr_t)p % DIRECT_ALIGN == 0) return write_full(fd, p, len, at);
    if (bounce == NULL) {
        void *mem = NULL;
        if (posix_memalign(&mem, DIRECT_ALIGN, BOUNCE_BYTES) != 0) return ENOMEM;
        bounce = mem;
    }
    for (size_t done = 0; done < len;) {
        size_t n = len - done < BOUNCE_BYTES ? len - done : BOUNCE_BYTES;
        memcpy(bounce, p + done, n);
        int err = write_full(fd, bounce, n, at + (int64_t)done);
        if (err != 0) return err;
        done += n;
    }
    return 0;
}

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    napi_ref parts_ref; /* keeps the parts' memory alive while the job runs */
    write_job b;
} pwrite_job;

static void pwrite_execute(napi_env env, void *data) {
    (void)env;
    pwrite_job *job = data;
    int64_t at = job->b.position;
    for (size_t i = 0; i < job->b.count && job->b.err == 0; i++) {
        const uint8_t *p = job->b.parts[i].data;
        size_t len = job->b.parts[i].length;
        int written = 0;
        if (job->b.direct_fd >= 0 && at % DIRECT_ALIGN == 0 && len % DIRECT_ALIGN == 0 && len > 0) {
            int err = write_direct(job->b.direct_fd, p, len, at);
            if (err == 0) {
                direct_bytes_total += len;
                written = 1;
            } else if (err != EINVAL && err != ENOMEM) { /* EINVAL: not fit for direct I/O; ENOMEM: no bounce buffer */
                job->b.err = err;
                break;
            }
        }
        if (!written) job->b.err = write_full(job->b.fd, p, len, at);
        at += (int64_t)len;
    }
}

/*
 * write_batch_run: the parts are one stream. Through the direct fd when the position and the total are
 * DIRECT_ALIGN multiples: gathered into the thread's bounce buffer a piece at a time (the parts
 * need no alignment of their own). Else, or when the file refuses direct I/O (EINVAL), through
 * `fd`, part by part. Then one fdatasync(fd), which covers what went through either descriptor
 * (both name the same inode).
 */
static int write_gathered_direct(write_job *job, size_t total) {
    if (bounce == NULL) {
        void *mem = NULL;
        if (posix_memalign(&mem, DIRECT_ALIGN, BOUNCE_BYTES) != 0) return ENOMEM;
        bounce = mem;
    }
    int64_t at = job->position;
    size_t fill = 0;
    for (size_t i = 0; i < job->count; i++) {
        const uint8_t *p = job->parts[i].data;
        size_t left = job->parts[i].length;
        while (left > 0) {
            size_t n = left < BOUNCE_BYTES - fill ? left : BOUNCE_BYTES - fill;
            memcpy(bounce + fill, p, n);
            fill += n;
            p += n;
            left -= n;
            if (fill == BOUNCE_BYTES) {
                int err = write_full(job->direct_fd, bounce, fill, at);
                if (err != 0) return err;
                at += (int64_t)fill;
                fill = 0;
            }
        }
    }
    int err = fill > 0 ? write_full(job->direct_fd, bounce, fill, at) : 0;
    if (err == 0) direct_bytes_total += total;
    return err;
}

void write_batch_run(write_job *job) {
    size_t total = 0;
    for (size_t i = 0; i < job->count; i++) total += job->parts[i].length;
    int err = EINVAL;
    int direct = job->direct_fd >= 0 && job->position % DIRECT_ALIGN == 0 && total % DIRECT_ALIGN == 0;
    if (direct) {
        /* A failure after some pieces went through leaves them written: the buffered retry writes
           the same bytes at the same place. */
        err = write_gathered_direct(job, total);
        if (err != 0 && err != EINVAL && err != ENOMEM) {
            job->err = err;
            return;
        }
    }
    if (err != 0) {
        int64_t at = job->position;
        for (size_t i = 0; i < job->count && job->err == 0; i++) {
            job->err = write_full(job->fd, job->parts[i].data, job->parts[i].length, at);
            at += (int64_t)job->parts[i].length;
        }
        if (job->err != 0) return;
    }
    int rc;
    do {
        rc = fdatasync(job->fd);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        job->err = errno;
        return;
    }
    read_back_run(job);
}

/* What went past the page cache is read back into it, by the device (DMA): a blob read soon after
   its store is in memory as after a buffered write, without a copy by this CPU into pages a VM's
   host may have to fault in. The log gathers the range over batches (src/engine/log.ts): each
   call is a device request, and a VM exit to submit it. */
void read_back_run(const write_job *job) {
    if (job->read_back_length > 0)
        (void)posix_fadvise(job->read_back_fd, (off_t)job->read_back_position, (off_t)job->read_back_length, POSIX_FADV_WILLNEED);
}

static void pwrite_complete(napi_env env, napi_status status, void *data) {
    pwrite_job *job = data;
    napi_resolve_deferred(env, job->deferred, make_int(env, status == napi_ok ? job->b.err : EIO));
    napi_delete_reference(env, job->parts_ref);
    napi_delete_async_work(env, job->work);
    free(job->b.parts);
    free(job);
}

/* A bad argument is a programming error: the promise resolves with EINVAL, as the call would. */
static napi_value queue_write(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4], promise, name;
    napi_deferred deferred;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    if (napi_create_promise(env, &deferred, &promise) != napi_ok) return NULL;
    pwrite_job *job = calloc(1, sizeof *job);
    int64_t fd = -1;
    uint32_t count = 0;
    bool is_array = false;
    int ok = job != NULL && argc >= 3 && get_i64(env, argv[0], &fd) && fd <= INT32_MAX && get_i64(env, argv[2], &job->b.position) &&
             napi_is_array(env, argv[1], &is_array) == napi_ok && is_array && napi_get_array_length(env, argv[1], &count) == napi_ok;
    if (ok && count > 0) {
        job->b.parts = calloc(count, sizeof *job->b.parts);
        ok = job->b.parts != NULL;
    }
    for (uint32_t i = 0; ok && i < count; i++) {
        napi_value part, arraybuffer;
        napi_typedarray_type type;
        size_t length, offset;
        void *base;
        ok = napi_get_element(env, argv[1], i, &part) == napi_ok &&
             napi_get_typedarray_info(env, part, &type, &length, &base, &arraybuffer, &offset) == napi_ok && type == napi_uint8_array;
        if (ok) {
            job->b.parts[i].data = base;
            job->b.parts[i].length = length;
        }
    }
    if (!ok) {
        if (job) free(job->b.parts);
        free(job);
        napi_resolve_deferred(env, deferred, make_int(env, EINVAL));
        return promise;
    }
    int64_t direct_fd = -1;
    napi_valuetype direct_type = napi_undefined;
    if (argc >= 4 && napi_typeof(env, argv[3], &direct_type) == napi_ok && direct_type != napi_undefined &&
        (!get_i64(env, argv[3], &direct_fd) || direct_fd > INT32_MAX)) {
        direct_fd = -1; /* -1 (no direct fd) is not a valid i64 here: anything but an fd means none */
    }
    job->b.fd = (int)fd;
    job->b.direct_fd = (int)direct_fd;
    job->b.count = count;
    job->deferred = deferred;
    napi_create_string_utf8(env, "blobstore.pwriteEach", NAPI_AUTO_LENGTH, &name);
    if (napi_create_reference(env, argv[1], 1, &job->parts_ref) != napi_ok ||
        napi_create_async_work(env, NULL, name, pwrite_execute, pwrite_complete, job, &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        free(job->b.parts);
        free(job);
        napi_resolve_deferred(env, deferred, make_int(env, EIO));
    }
    return promise;
}

napi_value js_pwrite_each(napi_env env, napi_callback_info info) {
    return queue_write(env, info);
}

napi_value js_direct_write_bytes(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value out;
    napi_create_double(env, (double)direct_bytes_total, &out);
    return out;
}
