/*
 * CRC-32C (Castagnoli), as used by Kafka record batches (magic 2), and the
 * IEEE CRC-32 of legacy messages.
 *
 * The backend is chosen once, by kc_crc32c_init(): SSE4.2 on x86-64, the ARMv8
 * CRC instructions on aarch64, or a portable slicing-by-8 table. The hardware
 * backends run six independent streams over long buffers and combine them,
 * which hides the latency of the CRC instruction.
 */
#ifndef KCODEC_CRC32C_H
#define KCODEC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Select the backend. A non-zero force_portable selects the table-driven one
 * even when the CPU has CRC instructions. Not thread-safe: call it once, at
 * module import, before any kc_crc32c() call. */
void kc_crc32c_init(int force_portable);

/* "sse4.2", "armv8" or "portable". */
const char *kc_crc32c_backend(void);

/* CRC-32C of data, continuing from crc (the result of a previous call, or 0 to
 * start): kc_crc32c(kc_crc32c(0, a, n), b, m) == CRC-32C of a followed by b. */
uint32_t kc_crc32c(uint32_t crc, const void *data, size_t len);

/* CRC-32 (IEEE 802.3, zlib's), for legacy magic 0/1 messages: portable slicing-by-8,
 * continued the same way. Set up by kc_crc32c_init() too. */
uint32_t kc_crc32(uint32_t crc, const void *data, size_t len);

#endif
