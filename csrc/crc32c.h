/*
 * CRC-32C (Castagnoli), as used by Kafka record batches (magic 2), and the
 * IEEE CRC-32 of legacy messages.
 *
 * The backend is chosen once, by kc_crc32c_init(): on x86-64 with AVX-512
 * VPCLMULQDQ, long buffers folded by carry-less multiplication; otherwise the
 * CRC instructions (SSE4.2 on x86-64, ARMv8 on aarch64), six independent
 * streams over long buffers combined, which hides the instruction's latency; or
 * a portable slicing-by-8 table.
 */
#ifndef KCODEC_CRC32C_H
#define KCODEC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Select the backend: `wanted` NULL, "" or "auto" takes the fastest the CPU
 * has; a backend's name takes that one, and -1 is returned (the portable one
 * then selected) when the CPU or the build lacks it. Not thread-safe: call it
 * once, at module import, before any kc_crc32c() call. */
int kc_crc32c_init(const char *wanted);

/* "vpclmulqdq", "sse4.2", "armv8" or "portable". */
const char *kc_crc32c_backend(void);

/* CRC-32C of data, continuing from crc (the result of a previous call, or 0 to
 * start): kc_crc32c(kc_crc32c(0, a, n), b, m) == CRC-32C of a followed by b. */
uint32_t kc_crc32c(uint32_t crc, const void *data, size_t len);

/* CRC-32 (IEEE 802.3, zlib's), for legacy magic 0/1 messages, continued the same way.
 * Set up by kc_crc32c_init() too: on x86-64 folded by carry-less multiplication
 * (VPCLMULQDQ with the "vpclmulqdq" backend, PCLMULQDQ with "sse4.2"), otherwise the
 * portable slicing-by-8 table. */
uint32_t kc_crc32(uint32_t crc, const void *data, size_t len);

#endif
