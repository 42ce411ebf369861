/*
 * Kernel dispatch: probes the CPU once, picks the widest supported path, and lets the
 * BLOBSTORE_EC_PATH environment variable (or rs_path_force) pin one for tests and benches.
 * Paths compiled out with RS_NO_<PATH> are never offered.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "paths.h"
#include "dispatch.h"
#include "rs.h"


#if !defined(RS_NO_SSSE3) && !defined(RS_NO_AVX2)
static int cpu_has_avx; /* set by the probe */

/* The SSSE3 kernel is legacy-SSE code: clear dirty upper vector halves first where AVX exists. */
static void ssse3_after_avx(const rs_matrix *mx, const uint8_t *const *in, uint8_t *const *out,
                            size_t off, size_t len, unsigned flags) {
    if (cpu_has_avx) rs_zero_upper();
    rs_kernel_ssse3(mx, in, out, off, len, flags);
}
#define SSSE3_ENTRY ssse3_after_avx
#elif !defined(RS_NO_SSSE3)
#define SSSE3_ENTRY rs_kernel_ssse3
#endif

static const char *const path_names[RS_PATH_COUNT] = {"portable", "ssse3", "avx2", "gfni256",
                                                      "gfni512"};

static rs_kernel *const path_kernels[RS_PATH_COUNT] = {
    rs_kernel_portable,
#ifndef RS_NO_SSSE3
    SSSE3_ENTRY,
#else
    NULL,
#endif
#ifndef RS_NO_AVX2
    rs_kernel_avx2,
#else
    NULL,
#endif
#ifndef RS_NO_GFNI256
    rs_kernel_gfni256,
#else
    NULL,
#endif
#ifndef RS_NO_GFNI512
    rs_kernel_gfni512,
#else
    NULL,
#endif
};

static path_set paths = {path_names, RS_PATH_COUNT, 0, -1};

static unsigned probe_paths(void) {
    cpu_features f = cpu_features_read();
    unsigned runs = 1u << RS_PATH_PORTABLE;
    if (f.ssse3) runs |= 1u << RS_PATH_SSSE3;
    if (!f.avx) return runs;
#if !defined(RS_NO_SSSE3) && !defined(RS_NO_AVX2)
    cpu_has_avx = 1; /* rs_zero_upper (in the AVX2 file) holds only vzeroupper, an AVX instruction */
#endif
    if (f.avx2) runs |= 1u << RS_PATH_AVX2;
    if (f.avx2 && f.gfni) runs |= 1u << RS_PATH_GFNI256;
    if (f.avx512bw && f.gfni) runs |= 1u << RS_PATH_GFNI512;
    return runs;
}

static void probe(void) {
    unsigned compiled = 0;
    for (int p = 0; p < RS_PATH_COUNT; p++) compiled |= (unsigned)(path_kernels[p] != NULL) << p;
    path_set_init(&paths, compiled & probe_paths(), "BLOBSTORE_EC_PATH");
}

const char *rs_path_name(int path) {
    return path >= 0 && path < RS_PATH_COUNT ? path_names[path] : "unknown";
}

int rs_path_compiled(int path) {
    return path >= 0 && path < RS_PATH_COUNT && path_kernels[path] != NULL;
}

PATH_SET_FUNCTIONS(rs, paths, probe)

int rs_path_force(const char *name) {
    int p = rs_path_pin(name);
    if (p == PATH_UNKNOWN) return RS_STATUS(RS_E_PATH_UNKNOWN, 0);
    if (p == PATH_UNAVAILABLE) {
        for (int q = 0; q < RS_PATH_COUNT; q++) {
            if (strcmp(name, path_names[q]) == 0) return RS_STATUS(RS_E_PATH_UNAVAILABLE, q);
        }
    }
    return RS_OK;
}

rs_kernel *rs_kernel_current(void) { return path_kernels[rs_path_current()]; }
