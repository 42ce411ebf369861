/* blake3_x8.c built for AVX-512 VL (see the Makefile): one rotate instruction. */
#define BLAKE3_VL 1
#include "blake3_x8.c"
