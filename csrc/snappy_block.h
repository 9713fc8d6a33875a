/*
 * Decoding one raw snappy block (snappy's format_description.txt: the decoded length as a
 * varint, then literals and copies with 1-, 2- or 4-byte offsets), as the blocks of
 * snappy-java's xerial stream hold them.
 *
 * Like the LZ4 decoder (lz4_block.h) it is conservative: it decides only well-formed blocks,
 * which any snappy decoder accepts with the same bytes, and leaves the rest to the snappy
 * library kcodec uses (cramjam), whose verdict is then kcodec's. A block is decided when
 * its length varint has at most 5 bytes and states at most `cap` bytes, every element lies
 * inside the block, every copy's offset is at least 1 and reaches no further back than the
 * block's first byte, nothing is written past the stated length, and the block ends
 * exactly where the stated length is reached.
 *
 * Writes only within dst[0, length + KC_SNAPPY_SLACK).
 */
#ifndef KCODEC_SNAPPY_BLOCK_H
#define KCODEC_SNAPPY_BLOCK_H

#include <stddef.h>
#include <stdint.h>

enum { KC_SNAPPY_SLACK = 32 };
#define KC_SNAPPY_UNDECIDED (-1)

/* Whether p (at least 8 bytes) starts an xerial stream's header (snappy-java's magic). */
static inline int kc_xerial_magic(const uint8_t *p)
{
    return p[0] == 0x82 && p[1] == 'S' && p[2] == 'N' && p[3] == 'A' && p[4] == 'P' &&
           p[5] == 'P' && p[6] == 'Y' && p[7] == 0;
}

/* Whether the length word at p (4 bytes) is the head of an xerial header, which is all that
   snappy-java looks at to take what follows in a stream for a concatenated stream's header. */
static inline int kc_xerial_head(const uint8_t *p)
{
    return p[0] == 0x82 && p[1] == 'S' && p[2] == 'N' && p[3] == 'A';
}

/* The length a block states (its varint prefix), or KC_SNAPPY_UNDECIDED. */
ptrdiff_t kc_snappy_length(const uint8_t *src, size_t n);

/* The block's decoded size (the length it states, at most cap), or KC_SNAPPY_UNDECIDED. */
ptrdiff_t kc_snappy_block(const uint8_t *src, size_t n, uint8_t *dst, size_t cap);

#endif
