/* Compiler hints for the hot paths. Inlining their small functions must not be left to the
 * compiler's budget: one function more in a caller can make it stop inlining the varint
 * readers into the record loop, which costs a tenth of a decode. KC_UNLIKELY marks a test
 * that fails only on input the fast path leaves to others, so that its branch is laid out
 * away from the loop. */
#ifndef KCODEC_INLINE_H
#define KCODEC_INLINE_H

#if defined(_MSC_VER)
#define KC_ALWAYS_INLINE __forceinline
#define KC_NOINLINE __declspec(noinline)
#define KC_UNLIKELY(condition) (condition)
#else
#define KC_ALWAYS_INLINE inline __attribute__((always_inline))
#define KC_NOINLINE __attribute__((noinline))
#define KC_UNLIKELY(condition) __builtin_expect(!!(condition), 0)
#endif

#endif
