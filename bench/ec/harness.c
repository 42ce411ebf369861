/*
 * C harness: our kernel (each path) beside ISA-L on the same buffers, in one run.
 * Encode, reconstruct of two lost data shards, and update (the parity built by adding the k data
 * shards one at a time: rs_encode_update, ISA-L's ec_encode_data_update) for each shape and shard
 * size; GB/s counts the data bytes (k * shard) per second on one core, so an update figure is per
 * data byte like encode's. Prints one JSON line per measurement; an update line also carries
 * ratioEncode, the median over repetitions of (update / our encode) on the same path.
 * Shards are consecutive slices of one 2 MiB-aligned buffer, as the engine lays them out.
 * Candidates take turns within each repetition; ratioIsal is the median over repetitions of
 * (ours / ISA-L) from the same repetition, which the machine's background load disturbs less.
 * ISA-L's decode tables are prepared outside the timed loop, as our plan cache does. Besides
 * ISA-L's own dispatch ("isal", AVX-512 here), its AVX2, SSE and base versions run too, so each
 * of our paths has a peer of about the same instruction set (ratioPeer).
 *
 *   harness [reps] [min_ms] [k+m/KiB]    defaults: 7 repetitions of at least 30 ms, every shape
 *   (harness 15 40 4+2/16384 runs only 4+2 with 16 MiB shards)
 */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rs.h"

#define REPS_MAX 31
static int reps = 7;
static double min_s = 0.030;

typedef struct job {
    int k, m;
    size_t len;
    uint8_t *base;
    uint8_t *shards[RS_N_MAX];
    size_t lens[RS_N_MAX];
    uint8_t present[RS_N_MAX];
    uint8_t *isal_in[RS_N_MAX], *isal_out[RS_N_MAX];
    uint8_t *enc_tables, *dec_tables;
    int lost[2];
} job;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Candidates: our paths 0..RS_PATH_COUNT-1, then ISA-L's dispatcher and its per-ISA versions. */
typedef void isal_fn(int len, int k, int rows, unsigned char *tables, unsigned char **in,
                     unsigned char **out);
static isal_fn *const isal_fns[] = {ec_encode_data, ec_encode_data_avx2, ec_encode_data_sse,
                                    ec_encode_data_base};
typedef void isal_update_fn(int len, int k, int rows, int index, unsigned char *tables,
                            unsigned char *data, unsigned char **parity);
static isal_update_fn *const isal_update_fns[] = {ec_encode_data_update, ec_encode_data_update_avx2,
                                                  ec_encode_data_update_sse, ec_encode_data_update_base};
static const char *const isal_names[] = {"isal", "isal-avx2", "isal-sse", "isal-base"};
#define ISAL_COUNT 4
#define CANDIDATES (RS_PATH_COUNT + ISAL_COUNT)
#define ISAL_AUTO RS_PATH_COUNT
/* The ISA-L version of about the same instruction set as each of our paths. */
static const int isal_peer[RS_PATH_COUNT] = {ISAL_AUTO + 3, ISAL_AUTO + 2, ISAL_AUTO + 1, ISAL_AUTO,
                                             ISAL_AUTO};

static const char *candidate_name(int c) { return c < RS_PATH_COUNT ? rs_path_name(c) : isal_names[c - ISAL_AUTO]; }
static int candidate_runs(int c) { return c >= RS_PATH_COUNT || rs_path_supported(c); }

enum op { OP_ENCODE, OP_RECONSTRUCT, OP_UPDATE, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"encode", "reconstruct", "update"};

/* One update of the whole stripe: each data shard added to the parity in turn. */
static void update_all(job *j, int c) {
    for (int i = 0; i < j->k; i++) {
        if (c >= RS_PATH_COUNT) {
            isal_update_fns[c - ISAL_AUTO]((int)j->len, j->k, j->m, i, j->enc_tables, j->shards[i],
                                           j->shards + j->k);
        } else {
            rs_encode_update(j->k, j->m, i, j->shards[i], j->shards + j->k, j->len);
        }
    }
}

static void run_once(job *j, int c, int op) {
    if (op == OP_UPDATE) {
        update_all(j, c);
    } else if (c >= RS_PATH_COUNT && op == OP_ENCODE) {
        isal_fns[c - ISAL_AUTO]((int)j->len, j->k, j->m, j->enc_tables, j->shards, j->shards + j->k);
    } else if (c >= RS_PATH_COUNT) {
        isal_fns[c - ISAL_AUTO]((int)j->len, j->k, 2, j->dec_tables, j->isal_in, j->isal_out);
    } else if (op == OP_ENCODE) {
        rs_encode(j->k, j->m, j->shards, j->lens);
    } else {
        rs_reconstruct(j->k, j->m, j->shards, j->lens, j->present);
    }
}

/* Runs candidate c for at least min_s; returns GB/s of data. */
static double measure(job *j, int c, int op) {
    if (c < RS_PATH_COUNT) rs_path_force(rs_path_name(c));
    double start = now_s(), t;
    long iters = 0;
    do {
        for (int n = 0; n < 4; n++) run_once(j, c, op);
        iters += 4;
        t = now_s() - start;
    } while (t < min_s);
    return (double)j->k * (double)j->len * (double)iters / t / 1e9;
}

static void isal_decode_tables(job *j) {
    const int k = j->k, n = j->k + j->m;
    unsigned char a[RS_N_MAX * RS_K_MAX], b[RS_K_MAX * RS_K_MAX], d[RS_K_MAX * RS_K_MAX];
    unsigned char c[2 * RS_K_MAX];
    gf_gen_cauchy1_matrix(a, n, k);
    int in = 0;
    for (int i = 0; i < n && in < k; i++) {
        if (i == j->lost[0] || i == j->lost[1]) continue;
        memcpy(b + in * k, a + i * k, (size_t)k);
        j->isal_in[in++] = j->shards[i];
    }
    gf_invert_matrix(b, d, k);
    for (int e = 0; e < 2; e++) {
        memcpy(c + e * k, d + j->lost[e] * k, (size_t)k);
        j->isal_out[e] = j->shards[j->lost[e]];
    }
    j->dec_tables = malloc((size_t)32 * k * 2);
    ec_init_tables(k, 2, c, j->dec_tables);
    j->enc_tables = malloc((size_t)32 * k * j->m);
    ec_init_tables(k, j->m, a + k * k, j->enc_tables);
}

static void job_init(job *j, int k, int m, size_t len) {
    memset(j, 0, sizeof *j);
    j->k = k;
    j->m = m;
    j->len = len;
    if (posix_memalign((void **)&j->base, 2u << 20, (size_t)(k + m) * len) != 0) abort();
    for (int i = 0; i < k + m; i++) {
        j->shards[i] = j->base + (size_t)i * len;
        j->lens[i] = len;
        j->present[i] = 1;
    }
    for (size_t x = 0; x < (size_t)k * len; x++) j->base[x] = (uint8_t)(x * 2654435761u >> 13);
    j->lost[0] = 1;
    j->lost[1] = k > 2 ? 3 : 0;
    j->present[j->lost[0]] = j->present[j->lost[1]] = 0;
    isal_decode_tables(j);
    /* Real parity, and every page touched: untouched pages all map one zero page, free to read. */
    ec_encode_data((int)len, k, m, j->enc_tables, j->shards, j->shards + k);
}

/*
 * Our parity and ISA-L's must be the same bytes: the same Cauchy matrix. For update, each side
 * builds it from zeroed parity, and ours must also equal our encode's.
 */
static int same_as_isal(job *j, int op) {
    size_t plen = (size_t)j->m * j->len;
    uint8_t *ours = malloc(plen), *encoded = malloc(plen);
    rs_path_force("auto");
    rs_encode(j->k, j->m, j->shards, j->lens);
    memcpy(encoded, j->shards[j->k], plen);
    if (op == OP_UPDATE) {
        memset(j->shards[j->k], 0, plen);
        update_all(j, rs_path_current());
    }
    memcpy(ours, j->shards[j->k], plen);
    int same = memcmp(ours, encoded, plen) == 0;
    if (op == OP_UPDATE) {
        memset(j->shards[j->k], 0, plen);
        update_all(j, ISAL_AUTO);
    } else {
        ec_encode_data((int)j->len, j->k, j->m, j->enc_tables, j->shards, j->shards + j->k);
    }
    same = same && memcmp(ours, j->shards[j->k], plen) == 0;
    free(ours);
    free(encoded);
    return same;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over repetitions of a / b, sample by sample. */
static double median_ratio(const double *a, const double *b) {
    double ratios[REPS_MAX];
    for (int r = 0; r < reps; r++) ratios[r] = a[r] / b[r];
    qsort(ratios, (size_t)reps, sizeof(double), cmp_double);
    return ratios[reps / 2];
}

static void run_job(int k, int m, size_t len, int op) {
    job j;
    job_init(&j, k, m, len);
    double samples[CANDIDATES][REPS_MAX], sorted[CANDIDATES][REPS_MAX];
    double encode[RS_PATH_COUNT][REPS_MAX]; /* update jobs: our encode, sampled beside the update */
    for (int r = 0; r < reps; r++) { /* interleaved, so load changes hit every candidate alike */
        for (int c = 0; c < CANDIDATES; c++) {
            if (!candidate_runs(c)) continue;
            samples[c][r] = measure(&j, c, op);
            if (op == OP_UPDATE && c < RS_PATH_COUNT) encode[c][r] = measure(&j, c, OP_ENCODE);
        }
    }
    int same = same_as_isal(&j, op);
    for (int c = 0; c < CANDIDATES; c++) {
        if (!candidate_runs(c)) continue;
        memcpy(sorted[c], samples[c], sizeof samples[c]);
        qsort(sorted[c], (size_t)reps, sizeof(double), cmp_double);
        /* Each repetition's ratio pairs samples taken moments apart, under the same load. */
        const int peer = c < RS_PATH_COUNT ? isal_peer[c] : c;
        printf("{\"bench\":\"ec-kernel\",\"impl\":\"%s\",\"op\":\"%s\",\"k\":%d,\"m\":%d,"
               "\"shardBytes\":%zu,\"gbps\":%.3f,\"gbpsMin\":%.3f,\"gbpsMax\":%.3f,"
               "\"ratioIsal\":%.3f,\"peer\":\"%s\",\"ratioPeer\":%.3f,\"reps\":%d,"
               "\"parityMatchesIsal\":%s",
               candidate_name(c), op_names[op], k, m, len,
               sorted[c][reps / 2], sorted[c][0], sorted[c][reps - 1],
               median_ratio(samples[c], samples[ISAL_AUTO]), candidate_name(peer),
               median_ratio(samples[c], samples[peer]), reps, same ? "true" : "false");
        if (op == OP_UPDATE && c < RS_PATH_COUNT) {
            printf(",\"ratioEncode\":%.3f", median_ratio(samples[c], encode[c]));
        }
        printf("}\n");
    }
    fflush(stdout);
    free(j.base);
    free(j.enc_tables);
    free(j.dec_tables);
}

int main(int argc, char **argv) {
    if (argc > 1) reps = atoi(argv[1]) < 1 ? 1 : atoi(argv[1]) > REPS_MAX ? REPS_MAX : atoi(argv[1]);
    if (argc > 2) min_s = atof(argv[2]) / 1000.0;
    int only_k = 0, only_m = 0;
    size_t only_kib = 0;
    if (argc > 3 && sscanf(argv[3], "%d+%d/%zu", &only_k, &only_m, &only_kib) != 3) {
        fprintf(stderr, "bad shape %s (want k+m/KiB)\n", argv[3]);
        return 2;
    }
    const int shapes[][2] = {{4, 2}, {8, 2}};
    const size_t sizes[] = {64u << 10, 1u << 20, 16u << 20};
    for (size_t s = 0; s < 2; s++) {
        for (size_t z = 0; z < 3; z++) {
            if (only_k && (shapes[s][0] != only_k || shapes[s][1] != only_m || sizes[z] != only_kib << 10)) continue;
            for (int op = 0; op < OP_COUNT; op++) run_job(shapes[s][0], shapes[s][1], sizes[z], op);
        }
    }
    return 0;
}
