/* Building plans (decode matrices) and the bounded per-thread cache that keeps them. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "gf.h"

typedef struct plan_cache {
    rs_plan *entries[RS_CACHE_CAPACITY];
    int count;
    uint64_t tick;
    uint64_t hits;
    uint64_t misses;
} plan_cache;

static __thread plan_cache cache;

static void present_key(int n, const uint8_t present[], uint64_t key[2]) {
    key[0] = key[1] = 0;
    for (int i = 0; i < n; i++) {
        if (present[i]) key[i >> 6] |= 1ull << (i & 63);
    }
}

/*
 * Row vectors (length k) of the missing shards in terms of the chosen inputs. With B the rows of
 * the encoding matrix E for the inputs and D = B^-1, data shard d is row d of D, parity shard p
 * is E[p] * D.
 */
static int decode_rows(const rs_plan *p, uint8_t *rowsOut) {
    const int k = p->k;
    uint8_t enc[RS_N_MAX * RS_K_MAX], sub[RS_K_MAX * RS_K_MAX], dec[RS_K_MAX * RS_K_MAX];
    gf_encoding_matrix(k, p->m, enc);
    for (int r = 0; r < k; r++) memcpy(sub + r * k, enc + p->in_idx[r] * k, (size_t)k);
    if (gf_invert(k, sub, dec) != 0) return RS_STATUS(RS_E_INTERNAL, 0);
    for (int o = 0; o < p->rows; o++) {
        const int s = p->out_idx[o];
        uint8_t *row = rowsOut + o * k;
        if (s < k) {
            memcpy(row, dec + s * k, (size_t)k);
            continue;
        }
        for (int c = 0; c < k; c++) {
            uint8_t v = 0;
            for (int t = 0; t < k; t++) v ^= gf_mul(enc[s * k + t], dec[t * k + c]);
            row[c] = v;
        }
    }
    return RS_OK;
}

/* Lays one group's rows out input-major in the three table formats the kernels read. */
static void fill_group(rs_matrix *g, const uint8_t *rows, int k, int first, uint8_t *coef,
                       uint64_t *affine, uint8_t *nibble) {
    g->k = k;
    g->coef = coef;
    g->affine = affine;
    g->nibble = nibble;
    for (int j = 0; j < k; j++) {
        for (int r = 0; r < g->rows; r++) {
            const uint8_t c = rows[(first + r) * k + j];
            const int at = j * g->rows + r;
            coef[at] = c;
            affine[at] = gf_affine_matrix(c);
            for (int n = 0; n < 16; n++) {
                nibble[at * 32 + n] = gf_mul(c, (uint8_t)n);
                nibble[at * 32 + 16 + n] = gf_mul(c, (uint8_t)(n << 4));
            }
        }
    }
}

static rs_plan *plan_build(int k, int m, const uint8_t present[], const uint64_t key[2],
                           int data_only, int *status) {
    const int n = k + m, outputs = data_only ? k : n;
    int rows = 0, inputs = 0;
    for (int i = 0; i < outputs; i++) rows += !present[i];
    /* One block: the plan, then affine (8-byte aligned), nibble and coefficient tables. */
    const size_t cells = (size_t)rows * (size_t)k;
    rs_plan *p = malloc(sizeof(rs_plan) + cells * (8 + 32 + 1));
    if (p == NULL) {
        *status = RS_STATUS(RS_E_NO_MEMORY, 0);
        return NULL;
    }
    memset(p, 0, sizeof *p);
    p->k = k;
    p->m = m;
    p->present[0] = key[0];
    p->present[1] = key[1];
    p->data_only = data_only;
    p->rows = rows;
    for (int i = 0, o = 0; i < n; i++) {
        if (!present[i] && i < outputs) p->out_idx[o++] = (uint8_t)i;
        else if (present[i] && inputs < k) p->in_idx[inputs++] = (uint8_t)i;
    }
    uint8_t rowvec[RS_N_MAX * RS_K_MAX];
    *status = decode_rows(p, rowvec);
    if (*status != RS_OK) {
        free(p);
        return NULL;
    }
    uint64_t *affine = (uint64_t *)(p + 1);
    uint8_t *nibble = (uint8_t *)(affine + cells);
    uint8_t *coef = nibble + cells * 32;
    for (int first = 0; first < rows; first += RS_ROWS_PER_PASS) {
        rs_matrix *g = &p->group[p->groups++];
        g->rows = rows - first < RS_ROWS_PER_PASS ? rows - first : RS_ROWS_PER_PASS;
        const size_t at = (size_t)first * (size_t)k;
        fill_group(g, rowvec, k, first, coef + at, affine + at, nibble + at * 32);
    }
    return p;
}

static void cache_insert(rs_plan *p) {
    if (cache.count < RS_CACHE_CAPACITY) {
        cache.entries[cache.count++] = p;
        return;
    }
    int oldest = 0;
    for (int i = 1; i < cache.count; i++) {
        if (cache.entries[i]->last_use < cache.entries[oldest]->last_use) oldest = i;
    }
    free(cache.entries[oldest]);
    cache.entries[oldest] = p;
}

const rs_plan *rs_plan_get(int k, int m, const uint8_t present[], int data_only, int *status) {
    uint64_t key[2];
    present_key(k + m, present, key);
    cache.tick++;
    for (int i = 0; i < cache.count; i++) {
        rs_plan *p = cache.entries[i];
        if (p->k == k && p->m == m && p->present[0] == key[0] && p->present[1] == key[1] &&
            p->data_only == data_only) {
            p->last_use = cache.tick;
            cache.hits++;
            return p;
        }
    }
    gf_init();
    rs_plan *p = plan_build(k, m, present, key, data_only, status);
    if (p == NULL) return NULL;
    p->last_use = cache.tick;
    cache.misses++;
    cache_insert(p);
    return p;
}

void rs_cache_get_stats(rs_cache_stats *out) {
    out->hits = cache.hits;
    out->misses = cache.misses;
    out->entries = cache.count;
    out->capacity = RS_CACHE_CAPACITY;
}

void rs_cache_clear(void) {
    for (int i = 0; i < cache.count; i++) free(cache.entries[i]);
    memset(&cache, 0, sizeof cache);
}
