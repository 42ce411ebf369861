#include "cpu.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0 says which register states the OS saves on context switch. */
static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

cpu_features cpu_features_read(void) {
    cpu_features f = {0};
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    f.ssse3 = (c >> 9) & 1;
    f.sse42 = (c >> 20) & 1;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx) return f;
    uint64_t xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) return f;           /* XMM and YMM state */
    int zmm_os = (xcr0 & 0xe6) == 0xe6;          /* plus opmask, ZMM0-15 high halves, ZMM16-31 */
    f.avx = 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.avx2 = (b >> 5) & 1;
    f.avx512bw = zmm_os && ((b >> 16) & 1) && ((b >> 30) & 1);
    f.avx512vbmi = f.avx512bw && ((c >> 1) & 1);
    f.avx512vl = f.avx512bw && ((b >> 31) & 1);
    f.gfni = (c >> 8) & 1;
    return f;
}
#else
cpu_features cpu_features_read(void) {
    cpu_features f = {0};
    return f;
}
#endif
