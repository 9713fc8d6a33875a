/* xxHash32 (seed given), as the LZ4 frame format uses it for its checksums. */
#ifndef KCODEC_XXH32_H
#define KCODEC_XXH32_H

#include <stddef.h>
#include <stdint.h>

uint32_t kc_xxh32(const void *data, size_t len, uint32_t seed);

#endif
