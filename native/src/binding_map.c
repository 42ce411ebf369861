/*
 * Reads of small records from segment files mapped into memory: a record whose pages the page
 * cache is known to hold is copied out of the mapping with no system call, where a pread costs
 * one kernel entry per GET (a third of the calls the bare server makes per request). Which pages
 * are held is never assumed: a page counts once a read without waiting (preadv2 RWF_NOWAIT, the
 * path a record not yet known takes) has found it in memory, and when the kernel is seen to give
 * pages back (src/engine/page-evictions.ts watches its counters) every mapping in use is checked
 * again page by page (mincore, in the thread pool), which drops the marks of pages gone; when the
 * mappings in use span more than RECHECK_MAX_PAGES, every mark is dropped at once instead (a new
 * generation). A recheck adds no mark: a page of the log not yet written may be in memory now
 * (readahead) and dropped by the O_DIRECT write of its batch. A mark out of date for that long
 * costs one read from the disk on the calling thread, never wrong bytes: the mapping is the file.
 * A fault the kernel cannot serve (an I/O error, a file cut short) raises SIGBUS, which is caught
 * around the copy and answered -EIO. Pages of 4 KiB only (elsewhere mapOpen answers -ENOTSUP).
 *
 *   mapOpen(fd, length) -> handle >= 0, or -errno      maps [0, length) of the file, read-only, shared
 *   mapRead(handle, fd, buffer, length, position) -> bytes read, or -errno
 *                                                      (-EAGAIN: not all in memory; read it elsewhere)
 *   mapClose(handle)                                   no read of it may be running
 *   mapRecheck(pauseMs = 0) -> Promise<number>         marks of pages no longer in memory dropped: the
 *                                                      marked pages still held, or -1 when every mark
 *                                                      was dropped (pauseMs: each mapping is held that
 *                                                      long, for tests of a close during a recheck)
 *   mapStats() -> { mapped, pinned, fromMap, probed }  files mapped, held by a recheck; reads from
 *                                                      mappings, reads that probed
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "binding.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

#define PAGE_SHIFT 12
#define PAGE_BYTES ((size_t)1 << PAGE_SHIFT)
/* Mappings in use spanning more pages than this (8 GiB) are not rechecked page by page (~1.5 ms
   per 256 MiB): every mark is dropped at once. */
#define RECHECK_MAX_PAGES ((size_t)2 << 20)

typedef struct {
    uint8_t *base; /* NULL: a free slot */
    size_t length;
    size_t pages;
    /* One bit per page: found in memory (by a read without waiting, or the last recheck). */
    _Atomic uint64_t *known;
    /* A page has been marked since the mapping was made: rechecks look at it. */
    _Atomic int used;
    /* Rechecks looking at it now; a mapping closed meanwhile is unmapped by the last of them. */
    int pins;
    int closing;
    /* Its marks are of this generation; an older one's are dropped before use. */
    _Atomic uint32_t generation;
} mapping;

/*
 * Slots in blocks that never move once made, so a read needs no lock; opening, closing and the
 * rechecks' pins take `table_lock` (engines may run on more than one thread of a process).
 */
#define BLOCK_SLOTS 1024
#define MAX_BLOCKS 1024
static mapping *blocks[MAX_BLOCKS];
static size_t block_count;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t from_map, probed;
/* Bumped to drop every mark at once. */
static _Atomic uint32_t generation = 1;

/*
 * The copy under way, if any, and where a SIGBUS in it returns to. Volatile: the compiler knows
 * memcpy reads none of them, and would otherwise drop the stores around it.
 */
#define SIGNAL_TLS __thread __attribute__((tls_model("initial-exec")))
/* Initial-exec: read in the handler without __tls_get_addr, which may allocate. */
static SIGNAL_TLS sigjmp_buf *volatile guard;
static SIGNAL_TLS const uint8_t *volatile guard_lo;
static SIGNAL_TLS const uint8_t *volatile guard_hi;
static struct sigaction previous_bus;
static int bus_installed;

static void on_bus(int sig, siginfo_t *info, void *context) {
    const uint8_t *at = (const uint8_t *)info->si_addr;
    int fault = info->si_code == BUS_ADRERR || info->si_code == BUS_OBJERR
#ifdef BUS_MCEERR_AR
                || info->si_code == BUS_MCEERR_AR /* a memory error reports its page's address */
#endif
        ;
    const uint8_t *lo = (const uint8_t *)((uintptr_t)guard_lo & ~(uintptr_t)(PAGE_BYTES - 1));
    if (fault && guard != NULL && at >= lo && at < guard_hi) siglongjmp(*guard, 1);
    /* Not ours: the action there was before, which stays installed for the next copy. */
    if (previous_bus.sa_flags & SA_SIGINFO) {
        previous_bus.sa_sigaction(sig, info, context);
    } else if (previous_bus.sa_handler != SIG_DFL && previous_bus.sa_handler != SIG_IGN) {
        previous_bus.sa_handler(sig);
    } else if (fault) {
        /* Handled by nobody, as the kernel treats a fault: the instruction runs again and ends the process. */
        signal(SIGBUS, SIG_DFL);
    } else if (previous_bus.sa_handler == SIG_DFL) {
        signal(SIGBUS, SIG_DFL);
        raise(SIGBUS);
    }
    /* A sent SIGBUS that was ignored stays ignored. */
}

/* Under table_lock. */
static int install_bus_handler(void) {
    if (bus_installed) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus;
    /* No mask to restore on the way out (sigsetjmp without one saves a system call per copy). */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &previous_bus) != 0) return -errno;
    bus_installed = 1;
    return 0;
}

static int all_known(mapping *m, size_t first, size_t last) {
    uint32_t now = atomic_load_explicit(&generation, memory_order_relaxed);
    if (atomic_load_explicit(&m->generation, memory_order_relaxed) != now) {
        for (size_t w = 0; w * 64 < m->pages; w++) atomic_store_explicit(&m->known[w], 0, memory_order_relaxed);
        atomic_store(&m->generation, now);
        return 0;
    }
    for (size_t p = first; p <= last; p++) {
        if (!(atomic_load_explicit(&m->known[p >> 6], memory_order_relaxed) & ((uint64_t)1 << (p & 63)))) return 0;
    }
    return 1;
}

static void mark(mapping *m, size_t first, size_t last) {
    for (size_t p = first; p <= last; p++) atomic_fetch_or_explicit(&m->known[p >> 6], (uint64_t)1 << (p & 63), memory_order_relaxed);
    if (!atomic_load_explicit(&m->used, memory_order_relaxed)) atomic_store(&m->used, 1);
}

static void unmark(mapping *m, size_t first, size_t last) {
    for (size_t p = first; p <= last; p++) atomic_fetch_and_explicit(&m->known[p >> 6], ~((uint64_t)1 << (p & 63)), memory_order_relaxed);
}

/* memcpy from the mapping, or -EIO when a page of it cannot be had (SIGBUS caught). */
static int guarded_copy(uint8_t *dst, const uint8_t *src, size_t n) {
    sigjmp_buf here;
    if (sigsetjmp(here, 0) != 0) {
        guard = NULL;
        return -EIO;
    }
    guard_lo = src;
    guard_hi = src + n;
    guard = &here;
    atomic_signal_fence(memory_order_seq_cst);
    memcpy(dst, src, n);
    atomic_signal_fence(memory_order_seq_cst);
    guard = NULL;
    return 0;
}

static mapping *slot_at(size_t slot) {
    return &blocks[slot / BLOCK_SLOTS][slot % BLOCK_SLOTS];
}

static void unmap(mapping *m) {
    munmap(m->base, m->length);
    free((void *)m->known);
    memset(m, 0, sizeof *m);
}

napi_value js_map_open(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    uint64_t fd, length;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    if (argc < 2 || !get_whole(env, argv[0], INT32_MAX, &fd) || !get_whole(env, argv[1], (double)((uint64_t)1 << 46), &length) || length == 0) {
        return make_int(env, -EINVAL);
    }
    if (sysconf(_SC_PAGESIZE) != (long)PAGE_BYTES) return make_int(env, -ENOTSUP);
    pthread_mutex_lock(&table_lock);
    int rc = install_bus_handler();
    pthread_mutex_unlock(&table_lock);
    if (rc != 0) return make_int(env, rc);
    void *base = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, (int)fd, 0);
    if (base == MAP_FAILED) return make_int(env, -errno);
    /* Pages are copied out one record at a time: no readahead around a fault. */
    madvise(base, (size_t)length, MADV_RANDOM);
    size_t pages = ((size_t)length + PAGE_BYTES - 1) >> PAGE_SHIFT;
    _Atomic uint64_t *known = calloc(pages / 64 + 1, sizeof(uint64_t));
    if (known == NULL) {
        munmap(base, (size_t)length);
        return make_int(env, -ENOMEM);
    }
    pthread_mutex_lock(&table_lock);
    size_t slot = 0;
    while (slot < block_count * BLOCK_SLOTS && slot_at(slot)->base != NULL) slot++;
    if (slot == block_count * BLOCK_SLOTS) {
        mapping *block = block_count < MAX_BLOCKS ? calloc(BLOCK_SLOTS, sizeof(mapping)) : NULL;
        if (block == NULL) {
            pthread_mutex_unlock(&table_lock);
            free((void *)known);
            munmap(base, (size_t)length);
            return make_int(env, -ENOMEM);
        }
        blocks[block_count++] = block;
    }
    mapping *m = slot_at(slot);
    m->length = (size_t)length;
    m->pages = pages;
    m->known = known;
    m->generation = atomic_load(&generation);
    m->base = base;
    pthread_mutex_unlock(&table_lock);
    return make_int(env, (int)slot);
}

/* The open mapping a handle names, or NULL. */
static mapping *mapping_of(napi_env env, napi_value v) {
    uint64_t slot;
    if (!get_whole(env, v, INT32_MAX, &slot) || slot >= block_count * BLOCK_SLOTS) return NULL;
    mapping *m = slot_at(slot);
    return m->base != NULL && !m->closing ? m : NULL;
}

napi_value js_map_read(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    mapping *m = argc >= 5 ? mapping_of(env, argv[0]) : NULL;
    uint8_t *data;
    size_t len;
    uint64_t fd, length, position;
    if (m == NULL || !get_whole(env, argv[1], INT32_MAX, &fd) || !typed_array_bytes(env, argv[2], &data, &len) ||
        !get_whole(env, argv[3], INT32_MAX, &length) || length > len || !get_whole(env, argv[4], (double)m->length, &position) ||
        position + length > m->length) {
        return make_int(env, -EINVAL);
    }
    if (length == 0) return make_int(env, 0);
    size_t first = (size_t)position >> PAGE_SHIFT, last = (size_t)(position + length - 1) >> PAGE_SHIFT;
    if (all_known(m, first, last)) {
        if (guarded_copy(data, m->base + position, (size_t)length) == 0) {
            atomic_fetch_add_explicit(&from_map, 1, memory_order_relaxed);
            return make_int(env, (int)length);
        }
        unmark(m, first, last);
        return make_int(env, -EIO);
    }
    atomic_fetch_add_explicit(&probed, 1, memory_order_relaxed);
    struct iovec iov = {.iov_base = data, .iov_len = (size_t)length};
    ssize_t n;
    do {
        n = preadv2((int)fd, &iov, 1, (off_t)position, RWF_NOWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return make_int(env, -errno);
    /* Every page the bytes came from was in memory. */
    if ((uint64_t)n == length) mark(m, first, last);
    return make_int(env, (int)n);
}

napi_value js_map_close(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    mapping *m = argc >= 1 ? mapping_of(env, argv[0]) : NULL;
    if (m == NULL) return make_int(env, -EINVAL);
    pthread_mutex_lock(&table_lock);
    if (m->pins > 0) m->closing = 1; /* the recheck looking at it unmaps it */
    else unmap(m);
    pthread_mutex_unlock(&table_lock);
    return make_int(env, 0);
}

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    /* Marked pages found still in memory. */
    uint64_t held;
    unsigned pause_ms;
} recheck_job;

/* Drops the marks of one mapping's pages that mincore finds out of memory. 0, or -errno. */
static int recheck_one(mapping *m, unsigned char **vec, size_t *vec_len, uint64_t *held) {
    if (*vec_len < m->pages) {
        unsigned char *grown = realloc(*vec, m->pages);
        if (grown == NULL) return -ENOMEM;
        *vec = grown;
        *vec_len = m->pages;
    }
    if (mincore(m->base, m->length, *vec) != 0) return -errno;
    for (size_t w = 0; w * 64 < m->pages; w++) {
        uint64_t in_memory = 0;
        for (size_t p = w * 64; p < m->pages && p < w * 64 + 64; p++) in_memory |= (uint64_t)((*vec)[p] & 1) << (p & 63);
        uint64_t before = atomic_fetch_and_explicit(&m->known[w], in_memory, memory_order_relaxed);
        *held += (uint64_t)__builtin_popcountll(before & in_memory);
    }
    return 0;
}

static void recheck_execute(napi_env env, void *data) {
    (void)env;
    recheck_job *job = data;
    unsigned char *vec = NULL;
    size_t vec_len = 0;
    pthread_mutex_lock(&table_lock);
    size_t slots = block_count * BLOCK_SLOTS;
    pthread_mutex_unlock(&table_lock);
    for (size_t slot = 0; slot < slots; slot++) {
        pthread_mutex_lock(&table_lock);
        mapping *m = slot_at(slot);
        int look = m->base != NULL && !m->closing && atomic_load(&m->used);
        if (look) m->pins++;
        pthread_mutex_unlock(&table_lock);
        if (!look) continue;
        if (job->pause_ms > 0) usleep(job->pause_ms * 1000u);
        /* A failure leaves no page of it known: its reads go back to reading without waiting. */
        if (recheck_one(m, &vec, &vec_len, &job->held) != 0) {
            for (size_t w = 0; w * 64 < m->pages; w++) atomic_store(&m->known[w], 0);
        }
        pthread_mutex_lock(&table_lock);
        if (--m->pins == 0 && m->closing) unmap(m);
        pthread_mutex_unlock(&table_lock);
    }
    free(vec);
}

static void recheck_complete(napi_env env, napi_status status, void *data) {
    recheck_job *job = data;
    napi_value n;
    napi_create_double(env, status == napi_ok ? (double)job->held : 0, &n);
    napi_resolve_deferred(env, job->deferred, n);
    napi_delete_async_work(env, job->work);
    free(job);
}

/* Every mark dropped at once (a new generation): what a recheck that cannot run does instead. */
static napi_value forget_all(napi_env env, napi_deferred deferred, napi_value promise) {
    atomic_fetch_add(&generation, 1);
    napi_resolve_deferred(env, deferred, make_int(env, -1));
    return promise;
}

/* The pages of the mappings a recheck would look at. */
static size_t pages_in_use(void) {
    size_t pages = 0;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < block_count * BLOCK_SLOTS; i++) {
        mapping *m = slot_at(i);
        if (m->base != NULL && !m->closing && atomic_load(&m->used)) pages += m->pages;
    }
    pthread_mutex_unlock(&table_lock);
    return pages;
}

napi_value js_map_recheck(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], promise, name;
    napi_deferred deferred;
    uint64_t pause_ms = 0;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    if (napi_create_promise(env, &deferred, &promise) != napi_ok) return NULL;
    if (argc >= 1 && !get_whole(env, argv[0], 60000, &pause_ms)) pause_ms = 0;
    if (pages_in_use() > RECHECK_MAX_PAGES) return forget_all(env, deferred, promise);
    recheck_job *job = calloc(1, sizeof *job);
    if (job == NULL) return forget_all(env, deferred, promise);
    job->deferred = deferred;
    job->pause_ms = (unsigned)pause_ms;
    napi_create_string_utf8(env, "blobstore.mapRecheck", NAPI_AUTO_LENGTH, &name);
    if (napi_create_async_work(env, NULL, name, recheck_execute, recheck_complete, job, &job->work) != napi_ok ||
        napi_queue_async_work(env, job->work) != napi_ok) {
        free(job);
        return forget_all(env, deferred, promise);
    }
    return promise;
}

napi_value js_map_stats(napi_env env, napi_callback_info info) {
    (void)info;
    size_t mapped = 0, pinned = 0;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < block_count * BLOCK_SLOTS; i++) {
        mapped += slot_at(i)->base != NULL && !slot_at(i)->closing;
        pinned += slot_at(i)->pins > 0;
    }
    pthread_mutex_unlock(&table_lock);
    napi_value obj, v;
    napi_create_object(env, &obj);
    napi_create_double(env, (double)mapped, &v);
    napi_set_named_property(env, obj, "mapped", v);
    napi_create_double(env, (double)pinned, &v);
    napi_set_named_property(env, obj, "pinned", v);
    napi_create_double(env, (double)atomic_load(&from_map), &v);
    napi_set_named_property(env, obj, "fromMap", v);
    napi_create_double(env, (double)atomic_load(&probed), &v);
    napi_set_named_property(env, obj, "probed", v);
    return obj;
}
