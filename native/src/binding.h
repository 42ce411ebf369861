/* Shared by the N-API binding files. */
#ifndef BLOBSTORE_BINDING_H
#define BLOBSTORE_BINDING_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

napi_value make_int(napi_env env, int v);
/* A whole number in 0..max (a JavaScript number holds integers to 2^53) into *out; 0 when v is not one (binding.c). */
int get_whole(napi_env env, napi_value v, double max, uint64_t *out);
/* [offset, offset + length) of the `size` bytes at `base`, both whole numbers, into *p and *n; 0 when they do not fit (binding.c). */
int get_range(napi_env env, const uint8_t *base, size_t size, napi_value offset, napi_value length, const uint8_t **p, size_t *n);
/* The bytes of a typed array (Buffer included); 0 for anything else (binding.c). */
int typed_array_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len);
/* The bytes of a typed array or an ArrayBuffer (what uWS hands a body in: no view made per call); 0 for anything else (binding.c). */
int source_bytes(napi_env env, napi_value v, uint8_t **data, size_t *len);

/* A dispatcher's kernel paths as JavaScript sees them (rs.h, b64.h, crc32c.h). */
typedef struct {
    int count;
    const char *(*name)(int path);
    int (*compiled)(int path);
    int (*supported)(int path);
    int (*current)(void);          /* the path in use */
    int (*force)(const char *name); /* pins a path by name ("auto": the widest supported); a status */
    int unknown;                   /* the status of a name that is not a string */
} path_list;
/*
 * Defines a dispatcher's three functions on exports (binding_info.c):
 *   <current>() -> the name of the path in use
 *   <set>(name) -> the status of list->force(name)
 *   <all>()     -> [{ name, compiled, supported }], path 0 (portable) first
 */
int define_path_functions(napi_env env, napi_value exports, const path_list *list, const char *current, const char *set, const char *all);

/* cacheStats() -> { hits, misses, entries, capacity } of the calling thread */
napi_value js_cache_stats(napi_env env, napi_callback_info info);
/* limits() -> { formatVersion, kMax, mMax } */
napi_value js_limits(napi_env env, napi_callback_info info);
/* fallocate(fd, mode, offset, length) -> Promise<errno> (binding_fs.c) */
napi_value js_fallocate(napi_env env, napi_callback_info info);
/* preadNoWait(fd, buffer, length, position) -> bytes read or -errno; never waits for the disk (binding_fs.c) */
napi_value js_pread_no_wait(napi_env env, napi_callback_info info);
/* fallocateModes() -> { KEEP_SIZE, PUNCH_HOLE } */
napi_value js_fallocate_modes(napi_env env, napi_callback_info info);
/* pwriteEach(fd, parts, position, directFd?) -> Promise<errno>: one pwrite per part, one thread-pool job (binding_fs.c) */
napi_value js_pwrite_each(napi_env env, napi_callback_info info);
/* copyBytes(src, dst, dstOffset) -> bytes copied (all of src), or -1 when they do not fit or an argument is not bytes (binding_copy.c) */
napi_value js_copy_bytes(napi_env env, napi_callback_info info);
napi_value js_page_offset(napi_env env, napi_callback_info info);
/* directWriteBytes() -> number: bytes pwriteEach wrote through an O_DIRECT fd (binding_fs.c) */
napi_value js_direct_write_bytes(napi_env env, napi_callback_info info);
/* One batch of the segment log: parts written as one stream from `position` (through `direct_fd`,
   O_DIRECT, when aligned; -1: none), then fdatasync(fd); `err` the errno of a failure (binding_fs.c).
   Then, when `read_back_length` > 0, [read_back_position, + read_back_length) of `read_back_fd` is
   read back into the page cache (posix_fadvise WILLNEED): earlier batches' blocks, gathered by the log. */
typedef struct {
    int fd;
    int direct_fd;
    int64_t position;
    size_t count;
    struct { const uint8_t *data; size_t length; } *parts;
    int err;
    int read_back_fd;
    int64_t read_back_position;
    int64_t read_back_length;
} write_job;
/* posix_fadvise WILLNEED of the job's read-back range, if it has one: advice, its failure changes nothing. */
void read_back_run(const write_job *job);
void write_batch_run(write_job *job);
/* batchSink(callback) -> a sink; writeBatchTo(sink, token, fd, parts, count, position, directFd, readBackFd?, readBackPosition?,
   readBackLength?) -> 0 or an errno, callback(token, errno) once done; readBackTo(sink, fd, position, length) -> 0 or an errno,
   answered by nobody (binding_batch.c) */
napi_value js_batch_sink(napi_env env, napi_callback_info info);
napi_value js_write_batch_to(napi_env env, napi_callback_info info);
napi_value js_read_back_to(napi_env env, napi_callback_info info);
/* mapOpen(fd, length) -> handle or -errno; mapRead(handle, fd, buffer, length, position) -> bytes or -errno (from the
   mapping when its pages are known to be in memory, else preadv2 RWF_NOWAIT); mapClose(handle);
   mapRecheck() -> Promise<pages in memory> (marks set from mincore); mapStats() -> { mapped, fromMap, probed } (binding_map.c) */
napi_value js_map_open(napi_env env, napi_callback_info info);
napi_value js_map_read(napi_env env, napi_callback_info info);
napi_value js_map_close(napi_env env, napi_callback_info info);
napi_value js_map_recheck(napi_env env, napi_callback_info info);
napi_value js_map_stats(napi_env env, napi_callback_info info);
/* clockTicks() -> monotonic microseconds modulo 2^30, a small integer (binding_clock.c) */
napi_value js_clock_ticks(napi_env env, napi_callback_info info);
/* batchTurn(sink) -> 0: the sink's callback(-1, 0) runs once in this loop turn's check phase (binding_batch.c) */
napi_value js_batch_turn(napi_env env, napi_callback_info info);
/* Adds base64Encode, base64Path, setBase64Path, base64Paths (binding_b64.c); 0 on failure. */
int define_b64(napi_env env, napi_value exports);
/* Adds crc32c, crc32cPath, setCrc32cPath, crc32cPaths (binding_crc32c.c); 0 on failure. */
int define_crc32c(napi_env env, napi_value exports);
/* Adds blake3Hash, blake3Subtree, blake3Root, blake3Path, setBlake3Path, blake3Paths (binding_blake3.c); 0 on failure. */
int define_blake3(napi_env env, napi_value exports);
/* Environment cleanup hook: frees the calling thread's plan cache. */
void cleanup_cache(void *arg);

#endif
