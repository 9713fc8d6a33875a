/* Inlining the hot paths' small functions must not be left to the compiler's budget: one
 * function more in a caller can make it stop inlining the varint readers into the record
 * loop, which costs a tenth of a decode. */
#ifndef KCODEC_INLINE_H
#define KCODEC_INLINE_H

#if defined(_MSC_VER)
#define KC_ALWAYS_INLINE __forceinline
#define KC_NOINLINE __declspec(noinline)
#else
#define KC_ALWAYS_INLINE inline __attribute__((always_inline))
#define KC_NOINLINE __attribute__((noinline))
#endif

#endif
