/*
 * BLAKE3: the portable compression function, the tree over it, and the path choice.
 *
 * The tree: the input is cut into 1 KiB chunks (leaves, each hashed block by block with its index
 * as counter); a parent hashes its two children's chaining values as one block; the left child of
 * every parent covers the largest power of two of chunks that leaves the right one at least one.
 * Joining a level's neighbours in pairs, an odd last one moving up unchanged, builds the same
 * tree, and lets the SIMD kernels take 4, 8 or 16 chunks, then as many parents, of a level at once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "blake3.h"
#include "blake3_kernels.h"
#include "cpu.h"
#include "paths.h"

/* A subtree of at most this many chunks (1 MiB) is hashed level by level in stack arrays. */
#define FLAT_CHUNKS 1024

const uint32_t blake3_iv[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store_cv(uint8_t *out, const uint32_t cv[8]) {
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)cv[i];
        out[4 * i + 1] = (uint8_t)(cv[i] >> 8);
        out[4 * i + 2] = (uint8_t)(cv[i] >> 16);
        out[4 * i + 3] = (uint8_t)(cv[i] >> 24);
    }
}

static inline void g(uint32_t *v, int a, int b, int c, int d, uint32_t x, uint32_t y) {
    v[a] += v[b] + x;
    v[d] = rotr(v[d] ^ v[a], 16);
    v[c] += v[d];
    v[b] = rotr(v[b] ^ v[c], 12);
    v[a] += v[b] + y;
    v[d] = rotr(v[d] ^ v[a], 8);
    v[c] += v[d];
    v[b] = rotr(v[b] ^ v[c], 7);
}

#define G(a, b, c, d, x, y) g(v, a, b, c, d, x, y)

/* One compression; cv becomes the first half of its output (all a chaining value or a 32-byte digest needs). */
static void compress(uint32_t cv[8], const uint8_t block[BLAKE3_BLOCK_BYTES], uint32_t block_len, uint64_t counter, uint32_t flags) {
    uint32_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load32(block + 4 * i);
    memcpy(v, cv, 32);
    memcpy(v + 8, blake3_iv, 16);
    v[12] = (uint32_t)counter;
    v[13] = (uint32_t)(counter >> 32);
    v[14] = block_len;
    v[15] = flags;
#pragma GCC unroll 7
    for (int r = 0; r < 7; r++) {
        BLAKE3_ROUND(blake3_schedule[r]);
    }
    for (int i = 0; i < 8; i++) cv[i] = v[i] ^ v[i + 8];
}

/* A chunk of 0..1024 bytes (0 only as the whole, empty input); `last` is ROOT when it is the whole input. */
static void chunk(const uint8_t *in, size_t len, uint64_t counter, uint32_t last, uint8_t out[BLAKE3_OUT_BYTES]) {
    uint32_t cv[8];
    memcpy(cv, blake3_iv, 32);
    size_t blocks = len == 0 ? 1 : (len + BLAKE3_BLOCK_BYTES - 1) / BLAKE3_BLOCK_BYTES;
    for (size_t b = 0; b < blocks; b++) {
        size_t n = len - b * BLAKE3_BLOCK_BYTES;
        if (n > BLAKE3_BLOCK_BYTES) n = BLAKE3_BLOCK_BYTES;
        /* The empty input's one block is all padding (and `in` may be NULL then). */
        uint8_t padded[BLAKE3_BLOCK_BYTES];
        const uint8_t *p = padded;
        if (n == BLAKE3_BLOCK_BYTES) {
            p = in + b * BLAKE3_BLOCK_BYTES;
        } else {
            memset(padded, 0, sizeof padded);
            if (n > 0) memcpy(padded, in + b * BLAKE3_BLOCK_BYTES, n);
        }
        uint32_t flags = (b == 0 ? BLAKE3_CHUNK_START : 0) | (b == blocks - 1 ? BLAKE3_CHUNK_END | last : 0);
        compress(cv, p, (uint32_t)n, counter, flags);
    }
    store_cv(out, cv);
}

/* A parent of the two chaining values in pair[0..64); `extra` is ROOT for the top of the tree. */
static void parent(const uint8_t pair[2 * BLAKE3_OUT_BYTES], uint32_t extra, uint8_t out[BLAKE3_OUT_BYTES]) {
    uint32_t cv[8];
    memcpy(cv, blake3_iv, 32);
    compress(cv, pair, BLAKE3_BLOCK_BYTES, 0, BLAKE3_PARENT | extra);
    store_cv(out, cv);
}

static void many_portable(const uint8_t *in, size_t stride, size_t n, size_t blocks, uint64_t counter, int increment, uint8_t flags,
                          uint8_t flags_start, uint8_t flags_end, uint8_t *out) {
    for (size_t j = 0; j < n; j++, in += stride, out += BLAKE3_OUT_BYTES) {
        uint32_t cv[8];
        memcpy(cv, blake3_iv, 32);
        for (size_t b = 0; b < blocks; b++) {
            uint32_t f = flags | (b == 0 ? flags_start : 0) | (b == blocks - 1 ? flags_end : 0);
            compress(cv, in + b * BLAKE3_BLOCK_BYTES, BLAKE3_BLOCK_BYTES, counter + (increment ? j : 0), f);
        }
        store_cv(out, cv);
    }
}

static const char *const path_names[BLAKE3_PATH_COUNT] = {"portable", "avx2", "avx512"};

/* Each path's kernels, widest first: a level is taken as wide as it goes, the rest narrower. */
typedef struct {
    size_t lanes;
    blake3_many_kernel *kernel;
    blake3_step_kernel *step;
} width;
#define WIDTHS 3
static const width path_widths[BLAKE3_PATH_COUNT][WIDTHS] = {
    {{0, NULL, NULL}}, /* portable: many_portable */
#ifndef RS_NO_AVX2
    {{8, blake3_many8_avx2, blake3_step8_avx2}, {4, blake3_many4_avx2, blake3_step4_avx2}},
#else
    {{0, NULL, NULL}},
#endif
#ifndef RS_NO_AVX512
    {{16, blake3_many16_avx512, blake3_step16_avx512}, {8, blake3_many8_avx512vl, blake3_step8_avx512vl}, {4, blake3_many4_avx512vl, blake3_step4_avx512vl}},
#else
    {{0, NULL, NULL}},
#endif
};

static path_set paths = {path_names, BLAKE3_PATH_COUNT, 0, -1};

static void probe(void) {
    cpu_features f = cpu_features_read();
    unsigned runs = 1u << BLAKE3_PATH_PORTABLE;
    if (f.avx2 && blake3_path_compiled(BLAKE3_PATH_AVX2)) runs |= 1u << BLAKE3_PATH_AVX2;
    if (f.avx512vl && blake3_path_compiled(BLAKE3_PATH_AVX512)) runs |= 1u << BLAKE3_PATH_AVX512;
    path_set_init(&paths, runs, "BLOBSTORE_BLAKE3_PATH");
}

const char *blake3_path_name(int path) { return path >= 0 && path < BLAKE3_PATH_COUNT ? path_names[path] : "unknown"; }

int blake3_path_compiled(int path) {
    return path == BLAKE3_PATH_PORTABLE || (path > 0 && path < BLAKE3_PATH_COUNT && path_widths[path][0].kernel != NULL);
}

PATH_SET_FUNCTIONS(blake3, paths, probe)

int blake3_path_force(const char *name) { return path_pin_status(blake3_path_pin(name), BLAKE3_OK, BLAKE3_E_PATH_UNKNOWN, BLAKE3_E_PATH_UNAVAILABLE); }

/*
 * n inputs, `stride` apart, through the current path's kernels, widest first; 2 or 3 left over go
 * through the narrowest with lanes to spare (still ~2x faster than one at a time), one alone
 * through the portable code.
 */
static void many(const uint8_t *in, size_t stride, size_t n, size_t blocks, uint64_t counter, int increment, uint8_t flags,
                 uint8_t flags_start, uint8_t flags_end, uint8_t *out) {
    const width *w = path_widths[blake3_path_current()];
    const width *narrowest = NULL;
    blake3_lane_set set;
    for (int k = 0; k < WIDTHS && w[k].kernel != NULL; k++) {
        narrowest = &w[k];
        for (; n >= w[k].lanes; n -= w[k].lanes, in += w[k].lanes * stride, out += w[k].lanes * BLAKE3_OUT_BYTES) {
            blake3_lanes_strided(&set, in, stride, w[k].lanes, counter, increment);
            w[k].kernel(&set, w[k].lanes, blocks, flags, flags_start, flags_end, out);
            if (increment) counter += w[k].lanes;
        }
    }
    if (n >= 2 && narrowest != NULL) {
        blake3_lanes_strided(&set, in, stride, n, counter, increment);
        narrowest->kernel(&set, n, blocks, flags, flags_start, flags_end, out);
    } else {
        many_portable(in, stride, n, blocks, counter, increment, flags, flags_start, flags_end, out);
    }
}

/* A subtree of 2..FLAT_CHUNKS chunks: all its leaves, then its levels, SIMD-wide; the top parent last. */
__attribute__((noinline)) static void subtree_flat(const uint8_t *in, size_t len, uint64_t counter, uint8_t cv[BLAKE3_OUT_BYTES], uint8_t *root) {
    uint8_t a[FLAT_CHUNKS * BLAKE3_OUT_BYTES], b[FLAT_CHUNKS / 2 * BLAKE3_OUT_BYTES + BLAKE3_OUT_BYTES];
    size_t n = (len + BLAKE3_CHUNK_BYTES - 1) / BLAKE3_CHUNK_BYTES;
    size_t whole = len / BLAKE3_CHUNK_BYTES;
    many(in, BLAKE3_CHUNK_BYTES, whole, BLAKE3_CHUNK_BYTES / BLAKE3_BLOCK_BYTES, counter, 1, 0, BLAKE3_CHUNK_START, BLAKE3_CHUNK_END, a);
    if (whole < n) chunk(in + whole * BLAKE3_CHUNK_BYTES, len - whole * BLAKE3_CHUNK_BYTES, counter + whole, 0, a + whole * BLAKE3_OUT_BYTES);
    uint8_t *src = a, *dst = b;
    while (n > 2) {
        size_t pairs = n / 2;
        many(src, 2 * BLAKE3_OUT_BYTES, pairs, 1, 0, 0, BLAKE3_PARENT, 0, 0, dst);
        if (n & 1) memcpy(dst + pairs * BLAKE3_OUT_BYTES, src + (n - 1) * BLAKE3_OUT_BYTES, BLAKE3_OUT_BYTES);
        n = pairs + (n & 1);
        uint8_t *t = src;
        src = dst;
        dst = t;
    }
    parent(src, 0, cv);
    if (root) parent(src, BLAKE3_ROOT, root);
}

/* The largest power of two below n (n >= 2). */
static uint64_t left_count(uint64_t n) {
    uint64_t p = 1;
    while (p * 2 < n) p *= 2;
    return p;
}

void blake3_subtree(const uint8_t *in, size_t len, uint64_t counter, uint8_t cv[BLAKE3_OUT_BYTES], uint8_t *root) {
    size_t n = len <= BLAKE3_CHUNK_BYTES ? 1 : (len + BLAKE3_CHUNK_BYTES - 1) / BLAKE3_CHUNK_BYTES;
    if (n == 1) {
        chunk(in, len, counter, 0, cv);
        if (root) chunk(in, len, counter, BLAKE3_ROOT, root);
    } else if (n <= FLAT_CHUNKS) {
        subtree_flat(in, len, counter, cv, root);
    } else {
        uint8_t pair[2 * BLAKE3_OUT_BYTES];
        size_t left = (size_t)left_count(n) * BLAKE3_CHUNK_BYTES;
        blake3_subtree(in, left, counter, pair, NULL);
        blake3_subtree(in + left, len - left, counter + left / BLAKE3_CHUNK_BYTES, pair + BLAKE3_OUT_BYTES, NULL);
        parent(pair, 0, cv);
        if (root) parent(pair, BLAKE3_ROOT, root);
    }
}

void blake3_hash(const uint8_t *in, size_t len, uint8_t out[BLAKE3_OUT_BYTES]) {
    if (len <= BLAKE3_CHUNK_BYTES) {
        chunk(in, len, 0, BLAKE3_ROOT, out);
        return;
    }
    uint8_t cv[BLAKE3_OUT_BYTES];
    blake3_subtree(in, len, 0, cv, out);
}

/* The chaining value of cvs[0..n) joined as one subtree (n >= 1). */
static void join(const uint8_t *cvs, size_t n, uint32_t extra, uint8_t out[BLAKE3_OUT_BYTES]) {
    if (n == 1) {
        memcpy(out, cvs, BLAKE3_OUT_BYTES);
        return;
    }
    uint8_t pair[2 * BLAKE3_OUT_BYTES];
    size_t left = (size_t)left_count(n);
    join(cvs, left, 0, pair);
    join(cvs + left * BLAKE3_OUT_BYTES, n - left, 0, pair + BLAKE3_OUT_BYTES);
    parent(pair, extra, out);
}

void blake3_root(const uint8_t *cvs, size_t n, uint8_t out[BLAKE3_OUT_BYTES]) { join(cvs, n, BLAKE3_ROOT, out); }

void blake3_join(const uint8_t *cvs, size_t n, uint8_t out[BLAKE3_OUT_BYTES]) { join(cvs, n, 0, out); }

/*
 * blake3_hash_each: several separate inputs at once. A 4 KiB input has only 4 chunks, so alone it
 * fills 4 of a 16-lane kernel's lanes, and a kernel call costs the same however many lanes carry
 * an input: the whole chunks of inputs of 2..EACH_CHUNKS chunks are queued as lanes across inputs
 * (each lane its own row and counter), then their last, short chunks block by block across the
 * inputs (each lane its own state), then their parents level by level, the level's pairs of every input queued as lanes together (a
 * 4 KiB input's three parents would otherwise be three compressions one at a time). Inputs of one
 * chunk or less, or more than EACH_CHUNKS, are wide enough (or small enough) to go through
 * blake3_hash as they are.
 */
#define EACH_CHUNKS 16
/* Inputs whose chaining values wait in one group (16 x 16 x 32 bytes on the stack). */
#define EACH_GROUP 16

/* Inputs of `blocks` whole blocks with the same flags queued for a kernel: lane j's chaining value goes to dst[j]. */
typedef struct {
    blake3_lane_set set;
    uint8_t *dst[BLAKE3_MAX_LANES];
    size_t n;
    size_t blocks;
    uint8_t flags, flags_start, flags_end;
} lane_queue;

static void lanes_init(lane_queue *q, size_t blocks, uint8_t flags, uint8_t flags_start, uint8_t flags_end) {
    q->n = 0;
    q->blocks = blocks;
    q->flags = flags;
    q->flags_start = flags_start;
    q->flags_end = flags_end;
}

/* The queued inputs through the narrowest kernel that holds them all (their lanes cost the same); one alone through the portable code, as in many(). */
static void lanes_flush(lane_queue *q, const width *w) {
    if (q->n == 0) return;
    if (q->n == 1) {
        uint64_t counter = (uint64_t)q->set.hi[0] << 32 | q->set.lo[0];
        many_portable(q->set.row[0], 0, 1, q->blocks, counter, 0, q->flags, q->flags_start, q->flags_end, q->dst[0]);
        q->n = 0;
        return;
    }
    const width *use = &w[0];
    for (int k = 1; k < WIDTHS && w[k].kernel != NULL; k++) {
        if (w[k].lanes >= q->n) use = &w[k];
    }
    for (size_t j = q->n; j < BLAKE3_MAX_LANES; j++) {
        q->set.row[j] = q->set.row[0];
        q->set.lo[j] = q->set.lo[0];
        q->set.hi[j] = q->set.hi[0];
    }
    uint8_t out[BLAKE3_MAX_LANES * BLAKE3_OUT_BYTES];
    use->kernel(&q->set, q->n, q->blocks, q->flags, q->flags_start, q->flags_end, out);
    for (size_t j = 0; j < q->n; j++) memcpy(q->dst[j], out + j * BLAKE3_OUT_BYTES, BLAKE3_OUT_BYTES);
    q->n = 0;
}

static void lanes_push(lane_queue *q, const width *w, const uint8_t *row, uint64_t counter, uint8_t *dst) {
    q->set.row[q->n] = row;
    q->set.lo[q->n] = (uint32_t)counter;
    q->set.hi[q->n] = (uint32_t)(counter >> 32);
    q->dst[q->n] = dst;
    if (++q->n == w[0].lanes) lanes_flush(q, w);
}

/*
 * The roots of `count` inputs whose leaves' chaining values are in cvs[g][0 .. leaves[g]) (each
 * 2..EACH_CHUNKS), into roots[g]: level by level, each level's pairs of every input through the
 * kernels together, an odd last value moving up unchanged (the tree join() builds); an input's
 * last pair is its root (ROOT flag, a queue of its own). The levels alternate between cvs and
 * `spare`, so no kernel reads what one writes.
 */
static void roots_each(uint8_t (*cvs)[EACH_CHUNKS * BLAKE3_OUT_BYTES], const size_t *leaves, size_t count, uint8_t *const *roots, const width *w) {
    uint8_t spare[EACH_GROUP][EACH_CHUNKS / 2 * BLAKE3_OUT_BYTES];
    uint8_t *src[EACH_GROUP], *dst[EACH_GROUP];
    size_t left[EACH_GROUP];
    for (size_t g = 0; g < count; g++) {
        src[g] = cvs[g];
        dst[g] = spare[g];
        left[g] = leaves[g];
    }
    lane_queue parents, tops;
    lanes_init(&parents, 1, BLAKE3_PARENT, 0, 0);
    lanes_init(&tops, 1, BLAKE3_PARENT | BLAKE3_ROOT, 0, 0);
    for (size_t joining = count; joining > 0;) {
        joining = 0;
        for (size_t g = 0; g < count; g++) {
            size_t m = left[g];
            if (m == 0) continue;
            if (m == 2) {
                lanes_push(&tops, w, src[g], 0, roots[g]);
                left[g] = 0;
                continue;
            }
            size_t pairs = m / 2;
            for (size_t p = 0; p < pairs; p++) lanes_push(&parents, w, src[g] + 2 * p * BLAKE3_OUT_BYTES, 0, dst[g] + p * BLAKE3_OUT_BYTES);
            if (m & 1) memcpy(dst[g] + pairs * BLAKE3_OUT_BYTES, src[g] + (m - 1) * BLAKE3_OUT_BYTES, BLAKE3_OUT_BYTES);
            left[g] = pairs + (m & 1);
            uint8_t *t = src[g];
            src[g] = dst[g];
            dst[g] = t;
            joining++;
        }
        /* The level is done before the next one reads it. */
        lanes_flush(&parents, w);
    }
    lanes_flush(&tops, w);
}

/* Lanes [from, from + n) of `all` through `k`'s step kernel (n <= its width), the rest of its lanes copies of the first. */
static void step_lanes(const blake3_step_set *all, size_t from, size_t n, uint8_t *cv, const width *k) {
    blake3_step_set set;
    for (size_t j = 0; j < BLAKE3_MAX_LANES; j++) {
        size_t at = from + (j < n ? j : 0);
        set.row[j] = all->row[at];
        set.lo[j] = all->lo[at];
        set.hi[j] = all->hi[at];
        set.len[j] = all->len[at];
        set.flg[j] = all->flg[at];
    }
    k->step(&set, n, cv);
}

/* The n lanes of `all` (n <= EACH_GROUP), their chaining values in cv[32j ..): as wide as they go, what is left through the narrowest kernel that holds it, one alone portable. */
static void step_each(const blake3_step_set *all, size_t n, uint8_t *cv, const width *w) {
    size_t at = 0;
    while (n - at >= w[0].lanes) {
        step_lanes(all, at, w[0].lanes, cv + at * BLAKE3_OUT_BYTES, &w[0]);
        at += w[0].lanes;
    }
    size_t left = n - at;
    if (left >= 2) {
        const width *use = &w[0];
        for (int k = 1; k < WIDTHS && w[k].step != NULL; k++) {
            if (w[k].lanes >= left) use = &w[k];
        }
        step_lanes(all, at, left, cv + at * BLAKE3_OUT_BYTES, use);
    } else if (left == 1) {
        uint32_t state[8];
        for (int i = 0; i < 8; i++) state[i] = load32(cv + at * BLAKE3_OUT_BYTES + 4 * i);
        compress(state, all->row[at], all->len[at], (uint64_t)all->hi[at] << 32 | all->lo[at], all->flg[at]);
        store_cv(cv + at * BLAKE3_OUT_BYTES, state);
    }
}

/*
 * The short last chunks (1..1023 bytes) of a group's inputs, into cvs[g] at the chunk's index:
 * block by block across the inputs, each lane with its own chaining value, counter, flags and
 * block length (a last block of fewer than 64 bytes is a zero-padded copy), where each chunk was
 * up to 16 compressions one at a time. A group with one such chunk does it alone.
 */
static void short_chunks_each(const uint8_t *const *ins, const size_t *lens, const size_t *group, size_t grouped,
                              uint8_t (*cvs)[EACH_CHUNKS * BLAKE3_OUT_BYTES], const width *w) {
    /* Per short chunk: its bytes, its index in its input (the counter), its blocks, its last block's length, where its value goes. */
    const uint8_t *at[EACH_GROUP];
    size_t index[EACH_GROUP], blocks[EACH_GROUP], tail[EACH_GROUP], count = 0, most = 0;
    uint8_t *dst[EACH_GROUP];
    for (size_t g = 0; g < grouped; g++) {
        size_t k = group[g], whole = lens[k] / BLAKE3_CHUNK_BYTES, rest = lens[k] % BLAKE3_CHUNK_BYTES;
        if (rest == 0) continue;
        at[count] = ins[k] + whole * BLAKE3_CHUNK_BYTES;
        index[count] = whole;
        blocks[count] = (rest + BLAKE3_BLOCK_BYTES - 1) / BLAKE3_BLOCK_BYTES;
        tail[count] = rest - (blocks[count] - 1) * BLAKE3_BLOCK_BYTES;
        dst[count] = cvs[g] + whole * BLAKE3_OUT_BYTES;
        if (blocks[count] > most) most = blocks[count];
        count++;
    }
    if (count < 2 || w[0].step == NULL) {
        for (size_t i = 0; i < count; i++) chunk(at[i], (blocks[i] - 1) * BLAKE3_BLOCK_BYTES + tail[i], index[i], 0, dst[i]);
        return;
    }
    uint8_t pad[EACH_GROUP][BLAKE3_BLOCK_BYTES];
    for (size_t i = 0; i < count; i++) {
        if (tail[i] == BLAKE3_BLOCK_BYTES) continue;
        memset(pad[i], 0, BLAKE3_BLOCK_BYTES);
        memcpy(pad[i], at[i] + (blocks[i] - 1) * BLAKE3_BLOCK_BYTES, tail[i]);
    }
    for (size_t i = 0; i < count; i++) store_cv(dst[i], blake3_iv);
    for (size_t b = 0; b < most; b++) {
        blake3_step_set set;
        uint8_t io[EACH_GROUP * BLAKE3_OUT_BYTES];
        size_t lane_of[EACH_GROUP], n = 0;
        for (size_t i = 0; i < count; i++) {
            if (b >= blocks[i]) continue;
            int last = b == blocks[i] - 1;
            set.row[n] = last && tail[i] < BLAKE3_BLOCK_BYTES ? pad[i] : at[i] + b * BLAKE3_BLOCK_BYTES;
            set.lo[n] = (uint32_t)index[i];
            set.hi[n] = (uint32_t)((uint64_t)index[i] >> 32);
            set.len[n] = last ? (uint32_t)tail[i] : BLAKE3_BLOCK_BYTES;
            set.flg[n] = (b == 0 ? BLAKE3_CHUNK_START : 0) | (last ? BLAKE3_CHUNK_END : 0);
            memcpy(io + n * BLAKE3_OUT_BYTES, dst[i], BLAKE3_OUT_BYTES);
            lane_of[n++] = i;
        }
        step_each(&set, n, io, w);
        for (size_t j = 0; j < n; j++) memcpy(dst[lane_of[j]], io + j * BLAKE3_OUT_BYTES, BLAKE3_OUT_BYTES);
    }
}

void blake3_hash_each(const uint8_t *const *ins, const size_t *lens, size_t n, uint8_t *const *outs) {
    const width *w = path_widths[blake3_path_current()];
    if (w[0].kernel == NULL) {
        for (size_t i = 0; i < n; i++) blake3_hash(ins[i], lens[i], outs[i]);
        return;
    }
    uint8_t cvs[EACH_GROUP][EACH_CHUNKS * BLAKE3_OUT_BYTES];
    size_t group[EACH_GROUP], leaves[EACH_GROUP];
    uint8_t *roots[EACH_GROUP];
    size_t grouped = 0;
    lane_queue q;
    lanes_init(&q, BLAKE3_CHUNK_BYTES / BLAKE3_BLOCK_BYTES, 0, BLAKE3_CHUNK_START, BLAKE3_CHUNK_END);
    for (size_t i = 0; i <= n; i++) {
        if (i < n) {
            size_t len = lens[i];
            size_t chunks = (len + BLAKE3_CHUNK_BYTES - 1) / BLAKE3_CHUNK_BYTES;
            if (chunks <= 1 || chunks > EACH_CHUNKS) {
                blake3_hash(ins[i], len, outs[i]);
                continue;
            }
            uint8_t *cv = cvs[grouped];
            group[grouped++] = i;
            for (size_t c = 0; c < len / BLAKE3_CHUNK_BYTES; c++) lanes_push(&q, w, ins[i] + c * BLAKE3_CHUNK_BYTES, c, cv + c * BLAKE3_OUT_BYTES);
            if (grouped < EACH_GROUP && i + 1 < n) continue;
        }
        /* The group's whole chunks are hashed; then the short last chunks; then their parents. */
        lanes_flush(&q, w);
        short_chunks_each(ins, lens, group, grouped, cvs, w);
        for (size_t g = 0; g < grouped; g++) {
            leaves[g] = (lens[group[g]] + BLAKE3_CHUNK_BYTES - 1) / BLAKE3_CHUNK_BYTES;
            roots[g] = outs[group[g]];
        }
        roots_each(cvs, leaves, grouped, roots, w);
        grouped = 0;
    }
}
