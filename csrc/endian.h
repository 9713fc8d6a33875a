/* Big-endian loads and stores for Kafka's fixed-width fields, and little-endian loads for
 * the codecs' framings. */
#ifndef KCODEC_ENDIAN_H
#define KCODEC_ENDIAN_H

#include <stddef.h>
#include <stdint.h>

static inline uint16_t kc_get_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t kc_get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t kc_get_be64(const uint8_t *p)
{
    return ((uint64_t)kc_get_be32(p) << 32) | kc_get_be32(p + 4);
}

static inline void kc_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void kc_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void kc_put_be64(uint8_t *p, uint64_t v)
{
    kc_put_be32(p, (uint32_t)(v >> 32));
    kc_put_be32(p + 4, (uint32_t)v);
}

/* `bytes` (at most 8) little-endian bytes, as the codecs' framings store their sizes. */
static inline uint64_t kc_get_le(const uint8_t *p, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
