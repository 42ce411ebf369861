/* The codec entry points: argument checks, then the strip loop over the kernel of the path. */
#include "rs.h"

#include <stdint.h>
#include <string.h>

#include "dispatch.h"
#include "gf.h"
#include "plan.h"

/*
 * Strips bound the working set of one kernel call: a pass of up to RS_ROWS_PER_PASS rows reads
 * k inputs and writes its rows, and a second pass (more than 8 rows) then finds the same inputs
 * in L2, as does the portable kernel, which goes over the inputs once per row. A single pass
 * (m <= 8 on the SIMD paths) streams each byte once whatever the strip size: 64 KiB to 64 MiB
 * strips measured the same on 1 MiB shards.
 */
#define RS_STRIP_INPUT_BYTES (256 * 1024) /* k * strip, about a quarter of L2 */
#define RS_STRIP_MIN_BYTES 4096

/*
 * Stripes whose shards add up to more than this go out with non-temporal stores: far beyond
 * L3 (32 MiB here) every output line would otherwise be read from DRAM before being written.
 * Measured with gfni512: 16 MiB shards +30% (4+2 and 8+2); 1 MiB shards, still cache-resident,
 * -30% on encode, so the bound sits well above the cache size.
 */
#define RS_STREAM_MIN_STRIPE_BYTES ((size_t)64 << 20)

static size_t strip_bytes(int k) {
    size_t s = RS_STRIP_INPUT_BYTES / (size_t)k;
    s &= ~(size_t)63;
    return s < RS_STRIP_MIN_BYTES ? RS_STRIP_MIN_BYTES : s;
}

static int check_km(int k, int m) {
    if (k < 1 || k > RS_K_MAX) return RS_STATUS(RS_E_K_RANGE, 0);
    if (m < 1 || m > RS_M_MAX) return RS_STATUS(RS_E_M_RANGE, 0);
    return RS_OK;
}

static int check_shards(int n, uint8_t *const shards[], const size_t lens[]) {
    for (int i = 0; i < n; i++) {
        if (shards[i] == NULL && lens[i] != 0) return RS_STATUS(RS_E_SHARD_TYPE, i);
        if (lens[i] != lens[0]) return RS_STATUS(RS_E_SHARD_LENGTH, i);
    }
    return RS_OK;
}

static int overlaps(const uint8_t *a, const uint8_t *b, size_t len) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + len && y < x + len;
}

/* An output that overlaps an input or another output would read or write half-computed bytes. */
static int check_overlap(const rs_plan *p, uint8_t *const shards[], size_t len) {
    for (int o = 0; o < p->rows; o++) {
        const uint8_t *out = shards[p->out_idx[o]];
        for (int j = 0; j < p->k; j++) {
            if (overlaps(out, shards[p->in_idx[j]], len)) return RS_STATUS(RS_E_OVERLAP, p->out_idx[o]);
        }
        for (int q = 0; q < o; q++) {
            if (overlaps(out, shards[p->out_idx[q]], len)) return RS_STATUS(RS_E_OVERLAP, p->out_idx[o]);
        }
    }
    return RS_OK;
}

/*
 * When every shard sits at the same offset from a 64-byte boundary (slices of one buffer with a
 * stride that is a multiple of 64, or separate allocations from one allocator), a short head
 * brings the bulk onto the boundary: misaligned 64-byte loads split cache lines and cost ~20%
 * (4+2, 64 KiB shards, gfni512). Returns the head length, 0 when already aligned or mixed.
 */
static size_t aligning_head(int k, int rows, const uint8_t *const *in, uint8_t *const *out,
                            size_t len) {
    const uintptr_t r = (uintptr_t)out[0] % 64;
    for (int j = 0; j < k; j++) {
        if ((uintptr_t)in[j] % 64 != r) return 0;
    }
    for (int o = 1; o < rows; o++) {
        if ((uintptr_t)out[o] % 64 != r) return 0;
    }
    const size_t head = r ? 64 - r : 0;
    return head < len ? head : len;
}

/* Streaming stores need 64-byte aligned outputs from `start` on; strips keep that alignment. */
static int stream_outputs(int k, int rows, uint8_t *const *out, size_t start, size_t len) {
    if ((size_t)(k + rows) * len < RS_STREAM_MIN_STRIPE_BYTES) return 0;
    for (int o = 0; o < rows; o++) {
        if ((uintptr_t)(out[o] + start) % 64 != 0) return 0;
    }
    return 1;
}

/*
 * Runs groups of rows (RS_ROWS_PER_PASS each) from in[0..k) into out[0..rows): an aligning head,
 * then strips. `accumulate` (RS_KERNEL_ACCUMULATE or 0) XORs into the outputs; it never streams,
 * as its outputs are read first (no read-for-ownership to skip) and the next update of the
 * stripe reads them again, so they had better stay in cache.
 */
static void run_groups(const rs_matrix *group, int groups, int k, int rows,
                       const uint8_t *const *in, uint8_t *const *out, size_t len,
                       unsigned accumulate) {
    rs_kernel *kernel = rs_kernel_current();
    const size_t head = aligning_head(k, rows, in, out, len);
    for (int g = 0; head > 0 && g < groups; g++) {
        kernel(&group[g], in, out + g * RS_ROWS_PER_PASS, 0, head, accumulate);
    }
    const size_t strip = strip_bytes(k);
    const int stream = !accumulate && stream_outputs(k, rows, out, head, len);
    const unsigned flags = accumulate | (stream ? RS_KERNEL_STREAM : 0);
    for (size_t off = head; off < len; off += strip) {
        const size_t n = len - off < strip ? len - off : strip;
        for (int g = 0; g < groups; g++) {
            kernel(&group[g], in, out + g * RS_ROWS_PER_PASS, off, n, flags);
        }
    }
}

static void run_plan(const rs_plan *p, uint8_t *const shards[], size_t len) {
    const uint8_t *in[RS_K_MAX];
    uint8_t *out[RS_N_MAX];
    for (int j = 0; j < p->k; j++) in[j] = shards[p->in_idx[j]];
    for (int o = 0; o < p->rows; o++) out[o] = shards[p->out_idx[o]];
    run_groups(p->group, p->groups, p->k, p->rows, in, out, len, 0);
}

static int run(int k, int m, uint8_t *const shards[], size_t len, const uint8_t present[],
               int data_only) {
    int status = RS_OK;
    const rs_plan *p = rs_plan_get(k, m, present, data_only, &status);
    if (p == NULL) return status;
    if (len == 0 || p->rows == 0) return RS_OK;
    status = check_overlap(p, shards, len);
    if (status != RS_OK) return status;
    run_plan(p, shards, len);
    return RS_OK;
}

/* The present[] of encoding: the k data shards. */
static void data_present(int k, uint8_t present[RS_N_MAX]) {
    memset(present, 0, RS_N_MAX);
    memset(present, 1, (size_t)k);
}

int rs_encode(int k, int m, uint8_t *const shards[], const size_t lens[]) {
    int status = check_km(k, m);
    if (status == RS_OK) status = check_shards(k + m, shards, lens);
    if (status != RS_OK) return status;
    uint8_t present[RS_N_MAX];
    data_present(k, present);
    return run(k, m, shards, lens[0], present, 0);
}

static int check_update(int k, int m, int index, const uint8_t *data, uint8_t *const parity[],
                        size_t len) {
    int status = check_km(k, m);
    if (status != RS_OK) return status;
    if (index < 0 || index >= k) return RS_STATUS(RS_E_INDEX_RANGE, 0);
    if (parity == NULL) return RS_STATUS(RS_E_ARG_TYPE, 0);
    if (data == NULL && len != 0) return RS_STATUS(RS_E_SHARD_TYPE, index);
    for (int j = 0; j < m; j++) {
        if (parity[j] == NULL && len != 0) return RS_STATUS(RS_E_SHARD_TYPE, k + j);
    }
    for (int j = 0; j < m; j++) {
        if (overlaps(parity[j], data, len)) return RS_STATUS(RS_E_OVERLAP, k + j);
        for (int q = 0; q < j; q++) {
            if (overlaps(parity[j], parity[q], len)) return RS_STATUS(RS_E_OVERLAP, k + j);
        }
    }
    return RS_OK;
}

/*
 * The update is the encode plan's column `index` run over one input with RS_KERNEL_ACCUMULATE.
 * Its tables are input-major (entry (j, r) at j * rows + r), so the column is one run of `rows`
 * entries in each group: no tables of its own, and the plan is the one rs_encode caches.
 */
int rs_encode_update(int k, int m, int index, const uint8_t *data, uint8_t *const parity[],
                     size_t len) {
    int status = check_update(k, m, index, data, parity, len);
    if (status != RS_OK || len == 0) return status;
    uint8_t present[RS_N_MAX];
    data_present(k, present);
    const rs_plan *p = rs_plan_get(k, m, present, 0, &status);
    if (p == NULL) return status;
    if (p->rows != m) return RS_STATUS(RS_E_INTERNAL, 0); /* the encode plan writes every parity */
    rs_matrix column[RS_GROUPS_MAX];
    for (int g = 0; g < p->groups; g++) {
        const rs_matrix *whole = &p->group[g];
        const size_t at = (size_t)index * (size_t)whole->rows;
        column[g] = (rs_matrix){.k = 1, .rows = whole->rows, .coef = whole->coef + at,
                                .affine = whole->affine + at, .nibble = whole->nibble + at * 32};
    }
    const uint8_t *in[1] = {data};
    run_groups(column, p->groups, 1, m, in, parity, len, RS_KERNEL_ACCUMULATE);
    return RS_OK;
}

static int reconstruct(int k, int m, uint8_t *const shards[], const size_t lens[],
                       const uint8_t present[], int data_only) {
    int status = check_km(k, m);
    if (status == RS_OK) status = check_shards(k + m, shards, lens);
    if (status != RS_OK) return status;
    int count = 0;
    for (int i = 0; i < k + m; i++) count += present[i] != 0;
    if (count < k) return RS_STATUS(RS_E_TOO_MANY_MISSING, k + m - count);
    return run(k, m, shards, lens[0], present, data_only);
}

int rs_reconstruct(int k, int m, uint8_t *const shards[], const size_t lens[],
                   const uint8_t present[]) {
    return reconstruct(k, m, shards, lens, present, 0);
}

int rs_reconstruct_data(int k, int m, uint8_t *const shards[], const size_t lens[],
                        const uint8_t present[]) {
    return reconstruct(k, m, shards, lens, present, 1);
}

int rs_encoding_matrix(int k, int m, uint8_t *out) {
    int status = check_km(k, m);
    if (status != RS_OK) return status;
    gf_init();
    gf_encoding_matrix(k, m, out);
    return RS_OK;
}
