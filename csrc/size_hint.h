/*
 * What a compressed records section's own framing says of its decompressed size, read
 * before decompressing it: a likely range, for reserving columns and buffers of about the
 * right size up front. The bytes are not trusted: callers bound what they reserve on it,
 * and the decoders check every size for real.
 *
 *   gzip (1):   the trailer's ISIZE, the size modulo 2^32 (Kafka writes one member);
 *   snappy (2): the sum of the xerial blocks' stated lengths, or the raw block's;
 *   lz4 (3):    the frame's content size when it has one; else stored blocks as they are,
 *               compressed ones full (writers fill every block but the last) and the last
 *               from 1 byte to full, likely decompressing at the others' ratio;
 *   zstd (4):   the first frame's content size when its header states one; else its
 *               raw and RLE blocks as they are, compressed ones up to the block size.
 * Otherwise, or when the framing cannot be read, the range is [0, INT64_MAX]. *likely is
 * the size within [*low, *high] the framing makes likely, or -1 when it says nothing of
 * that (a range of one compressed block, or none).
 */
#ifndef KCODEC_SIZE_HINT_H
#define KCODEC_SIZE_HINT_H

#include <stddef.h>
#include <stdint.h>

void kc_decompressed_size_range(int codec, const uint8_t *p, size_t n, int64_t *low,
                                int64_t *likely, int64_t *high);

/* When p[0, n) is exactly one zstd frame (nothing before or after it, its blocks' headers
 * whole) that asks for a window of at most max_window bytes: the most it decompresses to,
 * by the content size its header states (when its blocks can hold that much) or by its
 * blocks' headers. Otherwise -1. */
int64_t kc_zstd_frame_most(const uint8_t *p, size_t n, uint64_t max_window);

/* kc_zstd_frame_most, but -1 also for a frame that may decompress to more than its window:
 * only a frame that does not is decoded alike by a streaming decoder, whose buffer keeps
 * the last window of output as history (Java's, and python-zstandard's stream reader), and
 * by one writing into a single buffer that holds all of it (kcodec._libzstd), even when
 * the frame is corrupt and refers further back than its window. */
int64_t kc_zstd_frame_most_in_window(const uint8_t *p, size_t n, uint64_t max_window);

/* Whether p[0, n) is whole zstd frames (and skippable frames) one after another, by their
 * headers and block headers: a stream reader that reaches the end of such input has read a
 * frame's end, where input that ends inside a frame is truncated (which Java's reader
 * refuses, and a stream reader meets only as the end of its input). */
int kc_zstd_whole_frames(const uint8_t *p, size_t n);

#endif
