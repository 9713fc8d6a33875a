/*
 * Decoding one LZ4 block (lz4's block format: sequences of a token, literals, a 2-byte
 * match offset and a match) of a frame with independent blocks, as Kafka writes them.
 *
 * Kafka's readers decode blocks with liblz4's LZ4_decompress_safe (through lz4-java, and
 * through cramjam in kcodec), whose verdict on a malformed block depends on which of its
 * internal paths the block takes. This decoder does not try to reproduce that. It is
 * conservative instead: it accepts a block only when it is sure liblz4 accepts it too, with
 * the same bytes, and otherwise returns KC_LZ4_UNDECIDED for the caller to ask liblz4.
 * It accepts exactly the blocks in which:
 *   - each sequence with a match leaves, after its literals, 12 bytes or more of the output
 *     capacity and 8 bytes or more of input (liblz4's end-of-block parsing limits), has an
 *     offset of at least 1 that reaches no further back than the block's start, and ends
 *     its match 5 bytes or more before the capacity;
 *   - a match length's extension bytes end 6 bytes or more before the end of the input
 *     (a next token and the 5 last literals follow any match), and each byte of a literal
 *     length's extension lies more than 15 bytes before it;
 *   - the last sequence is literals alone, ending exactly at the end of the input and
 *     within the capacity.
 * Real blocks from any LZ4 compressor are of this kind; the rest are for liblz4 to judge.
 *
 * It writes only within dst[0, cap + KC_LZ4_SLACK): literals and matches are copied 16 or 32
 * bytes at a time, past the end of what they copy.
 */
#ifndef KCODEC_LZ4_BLOCK_H
#define KCODEC_LZ4_BLOCK_H

#include <stddef.h>
#include <stdint.h>

enum { KC_LZ4_SLACK = 32 };
#define KC_LZ4_UNDECIDED (-1)

/* The block's decoded size, or KC_LZ4_UNDECIDED. */
ptrdiff_t kc_lz4_block(const uint8_t *src, size_t n, uint8_t *dst, size_t cap);

#endif
