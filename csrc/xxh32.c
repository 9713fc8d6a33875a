/* xxHash32, from the algorithm's specification (xxhash_spec.md, "XXH32"). */
#include "xxh32.h"

#define P1 0x9E3779B1u
#define P2 0x85EBCA77u
#define P3 0xC2B2AE3Du
#define P4 0x27D4EB2Fu
#define P5 0x165667B1u

static inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint32_t round32(uint32_t acc, uint32_t lane)
{
    return rotl(acc + lane * P2, 13) * P1;
}

uint32_t kc_xxh32(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    const uint8_t *end = p + len;
    uint32_t h;

    if (len >= 16) {
        uint32_t a1 = seed + P1 + P2, a2 = seed + P2, a3 = seed, a4 = seed - P1;
        const uint8_t *limit = end - 16;
        do {
            a1 = round32(a1, le32(p));
            a2 = round32(a2, le32(p + 4));
            a3 = round32(a3, le32(p + 8));
            a4 = round32(a4, le32(p + 12));
            p += 16;
        } while (p <= limit);
        h = rotl(a1, 1) + rotl(a2, 7) + rotl(a3, 12) + rotl(a4, 18);
    } else {
        h = seed + P5;
    }
    h += (uint32_t)len;
    while (p + 4 <= end) {
        h = rotl(h + le32(p) * P3, 17) * P4;
        p += 4;
    }
    while (p < end) {
        h = rotl(h + (*p) * P5, 11) * P1;
        p++;
    }
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}
