#ifndef BLOBSTORE_CPU_H
#define BLOBSTORE_CPU_H

/*
 * What this CPU and its OS can run, read once from CPUID and XCR0 (x86; elsewhere all zero). Each
 * dispatcher maps these to its own paths: dispatch.c (Reed-Solomon), b64.c (base64), crc32c.c and
 * blake3.c.
 */
typedef struct {
    unsigned ssse3 : 1;
    unsigned sse42 : 1;    /* SSE4.2 (its CRC32 instruction) */
    unsigned avx : 1;      /* AVX, with the OS saving YMM state */
    unsigned avx2 : 1;     /* and AVX2 */
    unsigned avx512bw : 1; /* AVX-512 F and BW, with the OS saving opmask and all ZMM state */
    unsigned avx512vbmi : 1;
    unsigned avx512vl : 1; /* and VL: AVX-512 instructions on 128- and 256-bit vectors */
    unsigned gfni : 1;     /* GFNI, where AVX is usable */
} cpu_features;

cpu_features cpu_features_read(void);

#endif
