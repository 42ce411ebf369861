/*
 * The segment log's batch write (binding_fs.c's write_batch_run), answered by a callback. Through
 * N-API's async work with a promise, as pwriteEach is, a call makes a resource object, a name
 * string and the promise: a few hundred bytes of young generation per batch, dozens per store. Here the work goes straight
 * to libuv's thread pool (uv_queue_work, its request malloc'ed) and the answer is one call of a
 * callback the sink holds, with two small integers: nothing on the JavaScript heap per batch.
 *
 *   batchSink(callback) -> sink          callback(token, errno) runs once per batch, on this thread
 *   batchTurn(sink)                      callback(-1, 0) runs once in this loop turn's check phase
 *                                        (where setImmediate's callbacks run, after the turn's I/O
 *                                        callbacks: the log forms its batch there; setImmediate
 *                                        makes an object per call, this nothing)
 *   writeBatchTo(sink, token, fd, parts, count, position, directFd, readBackFd?, readBackPosition?, readBackLength?)
 *       -> 0, or EINVAL for bad arguments
 *       parts: [buffer, offset, length, buffer, offset, length, ...], the first `count` triples
 *       of it written as one stream (the array is the log's, reused: it may be longer)
 *       (write_batch_run), then fdatasync(fd); the buffers must stay untouched until the callback.
 *       Then the read-back range, if given, is read back into the page cache (read_back_run).
 *   readBackTo(sink, fd, position, length) -> 0, or an errno when nothing was queued
 *       the read-back alone, in the thread pool; nobody is called back
 *
 * The callback runs inside a callback scope of the sink's async context, as Node's own I/O
 * callbacks do: promises it settles run their reactions before control returns to libuv.
 */
#include <stdlib.h>
#include <uv.h>

#include "binding.h"

typedef struct {
    napi_env env;
    napi_ref callback;
    napi_ref resource;
    napi_async_context context;
    uv_loop_t *loop;
    int pending; /* batches queued and not answered */
    int dead;    /* the sink was collected: answer nobody, free once nothing is pending */
    uv_check_t check; /* batchTurn: runs in the check phase once armed */
    uv_idle_t idle;   /* keeps the poll phase from blocking while the check is armed (as Node's setImmediate does) */
    int armed;
    int open_handles; /* check and idle, until their close callbacks ran */
} batch_sink;

typedef struct {
    uv_work_t req;
    batch_sink *sink;
    napi_ref parts_ref; /* keeps the parts array (and its buffers) alive until the answer */
    int32_t token; /* -1: a read-back alone (readBackTo), answered by nobody */
    write_job job;
} batch_req;

static void handle_closed(uv_handle_t *handle) {
    batch_sink *sink = handle->data;
    if (--sink->open_handles == 0) free(sink);
}

static void sink_free(napi_env env, batch_sink *sink) {
    napi_delete_reference(env, sink->callback);
    napi_delete_reference(env, sink->resource);
    napi_async_destroy(env, sink->context);
    /* The handles close on the loop: the sink is freed once both have. */
    uv_close((uv_handle_t *)&sink->check, handle_closed);
    uv_close((uv_handle_t *)&sink->idle, handle_closed);
}

static void sink_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    batch_sink *sink = data;
    sink->dead = 1;
    if (sink->pending == 0) sink_free(env, sink);
}

static void batch_execute(uv_work_t *req) {
    batch_req *r = req->data;
    if (r->token < 0) read_back_run(&r->job);
    else write_batch_run(&r->job);
}

static void call_back(batch_sink *sink, int32_t token, int err);

static void batch_after(uv_work_t *req, int status) {
    batch_req *r = req->data;
    batch_sink *sink = r->sink;
    napi_env env = sink->env;
    int err = status == 0 ? r->job.err : EIO;
    sink->pending--;
    if (r->parts_ref != NULL) napi_delete_reference(env, r->parts_ref);
    free(r->job.parts);
    int32_t token = r->token;
    free(r);
    if (sink->dead) {
        if (sink->pending == 0) sink_free(env, sink);
        return;
    }
    if (token >= 0) call_back(sink, token, err);
}

/* callback(token, err) inside a callback scope of the sink's async context. */
static void call_back(batch_sink *sink, int32_t token, int err) {
    napi_env env = sink->env;
    napi_handle_scope handles;
    if (napi_open_handle_scope(env, &handles) != napi_ok) return;
    napi_value resource, callback, recv, argv[2], result;
    napi_callback_scope scope;
    if (napi_get_reference_value(env, sink->resource, &resource) == napi_ok &&
        napi_open_callback_scope(env, resource, sink->context, &scope) == napi_ok) {
        napi_get_reference_value(env, sink->callback, &callback);
        napi_get_undefined(env, &recv);
        napi_create_int32(env, token, &argv[0]);
        napi_create_int32(env, err, &argv[1]);
        if (napi_call_function(env, recv, callback, 2, argv, &result) == napi_pending_exception) {
            napi_value exception;
            napi_get_and_clear_last_exception(env, &exception);
            napi_fatal_exception(env, exception);
        }
        napi_close_callback_scope(env, scope);
    }
    napi_close_handle_scope(env, handles);
}

static void on_idle(uv_idle_t *idle) { (void)idle; }

static void on_check(uv_check_t *check) {
    batch_sink *sink = check->data;
    uv_check_stop(&sink->check);
    uv_idle_stop(&sink->idle);
    sink->armed = 0;
    if (!sink->dead) call_back(sink, -1, 0);
}

napi_value js_batch_turn(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    batch_sink *sink = NULL;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_external(env, argv[0], (void **)&sink) != napi_ok ||
        sink == NULL) {
        return make_int(env, EINVAL);
    }
    if (!sink->armed) {
        sink->armed = 1;
        uv_check_start(&sink->check, on_check);
        uv_idle_start(&sink->idle, on_idle);
    }
    return make_int(env, 0);
}

napi_value js_batch_sink(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], resource, name, out;
    napi_valuetype type;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok ||
        type != napi_function) {
        napi_throw_type_error(env, NULL, "batchSink(callback): expected a function");
        return NULL;
    }
    batch_sink *sink = calloc(1, sizeof *sink);
    if (sink == NULL) {
        napi_throw_error(env, NULL, "batchSink: out of memory");
        return NULL;
    }
    sink->env = env;
    if (napi_get_uv_event_loop(env, &sink->loop) != napi_ok || napi_create_object(env, &resource) != napi_ok ||
        napi_create_string_utf8(env, "blobstore.batchSink", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_async_init(env, resource, name, &sink->context) != napi_ok) {
        free(sink);
        napi_throw_error(env, NULL, "batchSink: could not set up");
        return NULL;
    }
    uv_check_init(sink->loop, &sink->check);
    uv_idle_init(sink->loop, &sink->idle);
    sink->check.data = sink;
    sink->idle.data = sink;
    sink->open_handles = 2;
    /* Active only while armed: an armed turn keeps the loop alive until it runs, as setImmediate does. */
    napi_create_reference(env, argv[0], 1, &sink->callback);
    napi_create_reference(env, resource, 1, &sink->resource);
    if (napi_create_external(env, sink, sink_finalize, NULL, &out) != napi_ok) {
        sink_free(env, sink);
        return NULL;
    }
    return out;
}

/* A read-back range from three arguments (fd, position, length) into `job`; false when one is not a whole number in range. */
static bool get_read_back(napi_env env, const napi_value *argv, write_job *job) {
    uint64_t fd, position, length;
    if (!get_whole(env, argv[0], INT32_MAX, &fd) || !get_whole(env, argv[1], 9007199254740991.0, &position) ||
        !get_whole(env, argv[2], 9007199254740991.0, &length)) {
        return false;
    }
    job->read_back_fd = (int)fd;
    job->read_back_position = (int64_t)position;
    job->read_back_length = (int64_t)length;
    return true;
}

napi_value js_write_batch_to(napi_env env, napi_callback_info info) {
    size_t argc = 10;
    napi_value argv[10];
    batch_sink *sink = NULL;
    int32_t token = 0;
    uint64_t fd, position, triples;
    bool is_array = false;
    uint32_t length = 0;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 6 || napi_get_value_external(env, argv[0], (void **)&sink) != napi_ok ||
        sink == NULL || napi_get_value_int32(env, argv[1], &token) != napi_ok || !get_whole(env, argv[2], INT32_MAX, &fd) ||
        napi_is_array(env, argv[3], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[3], &length) != napi_ok ||
        !get_whole(env, argv[4], (double)(length / 3), &triples) || !get_whole(env, argv[5], 9007199254740991.0, &position)) {
        return make_int(env, EINVAL);
    }
    int64_t direct_fd = -1;
    uint64_t d;
    if (argc >= 7 && get_whole(env, argv[6], INT32_MAX, &d)) direct_fd = (int64_t)d;
    write_job read_back = {0};
    if ((argc >= 10 && !get_read_back(env, argv + 7, &read_back)) || token < 0) return make_int(env, EINVAL);
    batch_req *r = calloc(1, sizeof *r);
    size_t count = (size_t)triples;
    if (r == NULL || (count > 0 && (r->job.parts = calloc(count, sizeof *r->job.parts)) == NULL)) {
        free(r);
        return make_int(env, ENOMEM);
    }
    /* Every value is read before any pointer is kept (binding.c's get_values: no getter runs after). */
    for (size_t i = 0; i < count; i++) {
        napi_value buf, off, len;
        uint8_t *base;
        size_t size;
        if (napi_get_element(env, argv[3], (uint32_t)(3 * i), &buf) != napi_ok || napi_get_element(env, argv[3], (uint32_t)(3 * i + 1), &off) != napi_ok ||
            napi_get_element(env, argv[3], (uint32_t)(3 * i + 2), &len) != napi_ok || !typed_array_bytes(env, buf, &base, &size) ||
            !get_range(env, base, size, off, len, &r->job.parts[i].data, &r->job.parts[i].length)) {
            free(r->job.parts);
            free(r);
            return make_int(env, EINVAL);
        }
    }
    r->req.data = r;
    r->sink = sink;
    r->token = token;
    r->job.fd = (int)fd;
    r->job.direct_fd = (int)direct_fd;
    r->job.position = (int64_t)position;
    r->job.count = count;
    r->job.read_back_fd = read_back.read_back_fd;
    r->job.read_back_position = read_back.read_back_position;
    r->job.read_back_length = read_back.read_back_length;
    if (napi_create_reference(env, argv[3], 1, &r->parts_ref) != napi_ok) {
        free(r->job.parts);
        free(r);
        return make_int(env, ENOMEM);
    }
    if (uv_queue_work(sink->loop, &r->req, batch_execute, batch_after) != 0) {
        napi_delete_reference(env, r->parts_ref);
        free(r->job.parts);
        free(r);
        return make_int(env, EIO);
    }
    sink->pending++;
    return make_int(env, 0);
}

napi_value js_read_back_to(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4];
    batch_sink *sink = NULL;
    write_job read_back = {0};
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || napi_get_value_external(env, argv[0], (void **)&sink) != napi_ok ||
        sink == NULL || !get_read_back(env, argv + 1, &read_back)) {
        return make_int(env, EINVAL);
    }
    batch_req *r = calloc(1, sizeof *r);
    if (r == NULL) return make_int(env, ENOMEM);
    r->req.data = r;
    r->sink = sink;
    r->token = -1;
    r->job = read_back;
    if (uv_queue_work(sink->loop, &r->req, batch_execute, batch_after) != 0) {
        free(r);
        return make_int(env, EIO);
    }
    sink->pending++;
    return make_int(env, 0);
}
