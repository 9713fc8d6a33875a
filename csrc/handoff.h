/*
 * What a thread waiting for another's signal spins on (kcodec/_handoff.pyx): a
 * sequentially consistent load, add and exchange, a pause for the spin loop, and a clock
 * to bound it (monotonic but on Windows). gcc and clang builtins, MSVC intrinsics.
 */
#ifndef KCODEC_HANDOFF_H
#define KCODEC_HANDOFF_H

#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#include <time.h>

static inline int64_t kc_atomic_load(int64_t *p) { return _InterlockedOr64((volatile __int64 *)p, 0); }
static inline int64_t kc_atomic_add(int64_t *p, int64_t v)
{
    return _InterlockedExchangeAdd64((volatile __int64 *)p, v) + v;
}
static inline int32_t kc_atomic_exchange(int32_t *p, int32_t v)
{
    return (int32_t)_InterlockedExchange((volatile long *)p, (long)v);
}
static inline void kc_cpu_relax(void)
{
#if defined(_M_X64) || defined(_M_IX86)
    _mm_pause();
#elif defined(_M_ARM64)
    __yield();
#endif
}
/* the wall clock (UCRT's is precise to 100 ns): the caller bounds a spin by it, guarding
 * against a clock set back */
static inline int64_t kc_clock_ns(void)
{
    struct timespec now;
    timespec_get(&now, TIME_UTC);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}
#else
static inline int64_t kc_atomic_load(int64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline int64_t kc_atomic_add(int64_t *p, int64_t v)
{
    return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}
static inline int32_t kc_atomic_exchange(int32_t *p, int32_t v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
static inline void kc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}
#if defined(__APPLE__)
#include <mach/mach_time.h>
static inline int64_t kc_clock_ns(void)
{
    static mach_timebase_info_data_t base;
    if (base.denom == 0)
        mach_timebase_info(&base);
    return (int64_t)(mach_absolute_time() * base.numer / base.denom);
}
#else
#include <time.h>
static inline int64_t kc_clock_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}
#endif
#endif

#endif
