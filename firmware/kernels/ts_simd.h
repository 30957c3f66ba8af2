/*
 * ts_simd.h - what the kernels' fast paths share (private to firmware/kernels): 4-byte loads and,
 * where the compiler defines __ARM_FEATURE_DSP (Cortex-M4, M7, M33, M55), the SIMD32 byte-unpacking
 * steps. Without DSP (host, Cortex-M0/M3) TS_DSP is 0 and the kernels use plain C loops instead.
 *
 * Unpacking: a little-endian word w = [b0 b1 b2 b3] (b0 = lowest address) becomes two words of
 * two signed 16-bit lanes, "even" = [b0 | b2] and "odd" = [b1 | b3] (bottom | top half). The
 * *_off forms add a 16-bit value to both lanes in the same instruction (SXTAB16), which is how the
 * input offset reaches every product for free: int8 + offset stays within int16 because the offset
 * is minus an int8 zero point. SMLAD then adds both lane products to a 32-bit accumulator; the
 * accumulator bound of ts_kernels.h keeps every partial sum in range, so the result is the same
 * integer as the portable loop's, only summed in another order.
 */
#ifndef TS_SIMD_H
#define TS_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define TS_DSP 1
#else
#define TS_DSP 0
#endif

/* Four consecutive bytes as one word; memcpy compiles to a single (unaligned) LDR on Armv7-M/v8-M. */
static inline uint32_t ts_load4(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Keeps a hot loop in a function of its own, so the register allocator sees only that loop's values. */
#if defined(__GNUC__) || defined(__clang__)
#define TS_NOINLINE __attribute__((noinline))
#else
#define TS_NOINLINE
#endif

#if TS_DSP

/* A 16-bit value in both halves, for the *_off forms. */
static inline uint32_t ts_pack2x16(int32_t v) { return ((uint32_t)v & 0xFFFFu) * 0x10001u; }

static inline uint32_t ts_even(uint32_t w) { return __sxtb16(w); }
static inline uint32_t ts_even_off(uint32_t w, uint32_t off2) { return __sxtab16(off2, w); }

#if defined(__GNUC__) || defined(__clang__)
/* SXTB16/SXTAB16 with their built-in ROR #8: one instruction (GCC 12 does not fold a rotate). */
static inline uint32_t ts_odd(uint32_t w)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
    return r;
}
static inline uint32_t ts_odd_off(uint32_t w, uint32_t off2)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(off2), "r"(w));
    return r;
}
#else
static inline uint32_t ts_odd(uint32_t w) { return __sxtb16(w >> 8); }
static inline uint32_t ts_odd_off(uint32_t w, uint32_t off2) { return __sxtab16(off2, w >> 8); }
#endif

static inline int32_t ts_smlad(uint32_t a, uint32_t b, int32_t acc) { return __smlad(a, b, acc); }
static inline int32_t ts_smlabb(uint32_t a, uint32_t b, int32_t acc) { return __smlabb(a, b, acc); }
static inline int32_t ts_smlatt(uint32_t a, uint32_t b, int32_t acc) { return __smlatt(a, b, acc); }

#endif /* TS_DSP */

#endif /* TS_SIMD_H */
