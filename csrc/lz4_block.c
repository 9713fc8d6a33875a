/* Decoding one LZ4 block; see lz4_block.h for what is accepted. */
#include "lz4_block.h"

#include "copy_match.h"
#include "inline.h"

#include <string.h>

/* The end-of-block limits of liblz4's parser (its MFLIMIT and LASTLITERALS, and the input
 * a sequence with a match needs after its literals: offset, next token, last literals). */
enum { OUT_ROOM_AFTER_LITERALS = 12, IN_ROOM_AFTER_LITERALS = 8, LAST_LITERALS = 5,
       LITERAL_EXTENSION_ROOM = 15, MATCH_EXTENSION_ROOM = 5, MIN_MATCH = 4 };

/* A match; short ones are copied 32 or 16 bytes at a time (as far back as they reach), into
 * the slack; longer ones go faster through memcpy. Fixed-size moves instead of a call per
 * match made the blocks of 100-byte records decode ~15% faster. */
static inline void copy_match(uint8_t *op, size_t offset, size_t length)
{
    if (offset >= 32 && length <= 256)
        kc_wild_copy32(op, op - offset, length);
    else if (offset >= 16 && length <= 64)
        kc_wild_copy16(op, op - offset, length);
    else
        kc_copy_match(op, offset, length);
}

ptrdiff_t kc_lz4_block(const uint8_t *src, size_t n, uint8_t *dst, size_t cap)
{
    const uint8_t *ip = src;
    const uint8_t *const iend = src + n;
    uint8_t *op = dst;
    uint8_t *const oend = dst + cap;
    if (n == 0 || cap == 0)
        return KC_LZ4_UNDECIDED;
    for (;;) {
        /* here ip < iend: the last sequence returns, and a match leaves input after it */
        unsigned token = *ip++;
        size_t literals = token >> 4;
        if (literals == 15) {
            unsigned s;
            do {   /* liblz4 stops (or fails, as of 1.10) at a 255 that reaches its limit */
                if ((size_t)(iend - ip) <= LITERAL_EXTENSION_ROOM)
                    return KC_LZ4_UNDECIDED;
                s = *ip++;
                literals += s;
            } while (s == 255);
        }
        size_t in_room = (size_t)(iend - ip), out_room = (size_t)(oend - op);
        /* This test and the offset's below are marked unlikely (the last sequence, once a
         * block; malformed input) so that their code is kept out of the sequence loop:
         * unmarked, the loop's speed hung on where the linker placed it, and blocks of
         * 100-byte records took ~15% longer in three placements of four. */
        if (KC_UNLIKELY(literals + OUT_ROOM_AFTER_LITERALS > out_room ||
                        literals + IN_ROOM_AFTER_LITERALS > in_room)) {
            /* the last sequence */
            if (literals != in_room || literals > out_room)
                return KC_LZ4_UNDECIDED;
            memcpy(op, ip, literals);
            return (ptrdiff_t)(op + literals - dst);
        }
        if (literals <= 32 && in_room >= 32) {   /* a key's literals, say: no call */
            memcpy(op, ip, 16);   /* within the slack: literals + 12 <= out_room */
            memcpy(op + 16, ip + 16, 16);
        } else {
            memcpy(op, ip, literals);
        }
        ip += literals;
        op += literals;
        size_t offset = (size_t)ip[0] | (size_t)ip[1] << 8;
        ip += 2;
        size_t length = token & 15;
        if (length == 15) {
            unsigned s;
            do {   /* at least 6 bytes are left after the offset */
                s = *ip++;
                length += s;
                if ((size_t)(iend - ip) <= MATCH_EXTENSION_ROOM)
                    return KC_LZ4_UNDECIDED;
            } while (s == 255);
        }
        length += MIN_MATCH;
        if (KC_UNLIKELY(offset == 0 || offset > (size_t)(op - dst) ||
                        length + LAST_LITERALS > (size_t)(oend - op)))
            return KC_LZ4_UNDECIDED;
        copy_match(op, offset, length);   /* within the slack: length + 5 <= room */
        op += length;
    }
}
