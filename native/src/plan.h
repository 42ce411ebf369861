/*
 * A plan turns one erasure pattern into the matrix that maps k present shards to the missing
 * ones. Plans are cached per thread (each Piscina worker has its own cache, so no locks).
 */
#ifndef BLOBSTORE_PLAN_H
#define BLOBSTORE_PLAN_H

#include "kernels.h"
#include "rs.h"

/* Bound of the per-thread plan cache (entries); the least recently used plan is evicted. */
#define RS_CACHE_CAPACITY 64
#define RS_GROUPS_MAX ((RS_M_MAX + RS_ROWS_PER_PASS - 1) / RS_ROWS_PER_PASS)

typedef struct rs_plan {
    int k;
    int m;
    uint64_t present[2]; /* bit i set: shard i present (the cache key with k, m, data_only) */
    int data_only;       /* computes only the missing data shards, not the missing parity */
    uint64_t last_use;
    int rows;   /* missing shards to compute */
    int groups; /* passes of up to RS_ROWS_PER_PASS rows */
    uint8_t in_idx[RS_K_MAX];   /* the k shards read: the first k present */
    uint8_t out_idx[RS_N_MAX];  /* the shards written */
    rs_matrix group[RS_GROUPS_MAX];
} rs_plan;

/*
 * Returns the cached plan for (k, m, present, data_only), building it on a miss; NULL with
 * *status set on failure. present[] must have at least k nonzero entries among its k + m.
 */
const rs_plan *rs_plan_get(int k, int m, const uint8_t present[], int data_only, int *status);

#endif
