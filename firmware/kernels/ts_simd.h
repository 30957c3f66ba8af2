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

#include "ts_fixedpoint.h"

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

/* TS_REG("rN") puts a local register variable, an operand of an asm block, in register rN in
 * unoptimised builds. The hot asm blocks of ts_conv2d_s8.c and ts_depthwise_conv2d_s8.c take 9-13
 * core registers; GCC 12 at -O0 (an IDE's Debug build) on a core with an FPU finds no more than 7
 * for an asm block's inputs by itself and stops with "'asm' operand has impossible constraints",
 * and named registers are accepted. Optimised builds let the allocator choose, so -Os/-O2 compile
 * exactly the code the blocks were tuned with (naming them there cost 0.2-0.4% more instructions
 * per KWS and VWW inference on the M7).
 * -O1 on an FPU core fails the same way in ts_conv2d_s8.c: define TS_ASM_FIXED_REGISTERS to name
 * the registers at every level. r7 is never named (the frame pointer of unoptimised Thumb code,
 * which addresses the blocks' memory operands), nor sp and pc; lr is (the function then saves it).
 * Nothing may be called between setting such a variable and its block: a call clobbers r0-r3,
 * r12 and lr. */
#if (defined(__GNUC__) || defined(__clang__)) && (!defined(__OPTIMIZE__) || defined(TS_ASM_FIXED_REGISTERS))
#define TS_REG(r) __asm__(r)
#else
#define TS_REG(r)
#endif

/* Keeps a hot loop in a function of its own, so the register allocator sees only that loop's values. */
#if defined(__GNUC__) || defined(__clang__)
#define TS_NOINLINE __attribute__((noinline))
#else
#define TS_NOINLINE
#endif

/* Inlined into every caller, so a body shared by two entries (a constant argument each) is compiled
 * once per entry with that constant folded in. */
#if defined(__GNUC__) || defined(__clang__)
#define TS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TS_ALWAYS_INLINE inline
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


/* ---- Requantisation in five instructions (DSP cores) ------------------------------------------
 * ts_requantize(x, m, shift) + out_off, for a layer whose accumulators are known to satisfy
 * |x| * 2^(left + 1) < 2^31 (left = max(shift, 0), right = r = max(-shift, 0) <= 22, m >= 0):
 *   s2 = x << (left + 1) (exact), h = srdhm(x << left, m) = floor((s2 * m + 2^31) / 2^32), which is
 *   SMMLAR's rounding; rdivpot(h, r) + out_off = (h + A) >> r with
 *   A = 2^(r-1) - [h < 0] + out_off * 2^r (r >= 1), A = out_off (r = 0): the rounding right shift
 *   with ties away from zero is floor((h + 2^(r-1) - [h < 0]) / 2^r), and out_off * 2^r is a
 *   multiple of 2^r. [h < 0] equals [x < 0] except when x < 0 and h == 0 (x * m >= -2^30), where
 *   either value gives 0. So the result is SMMLAR(s2, m, A) >> r, A from a per-channel base minus
 *   [x < 0] when r >= 1. |h + A| < 2^30 + 2^21 + 2^29: no overflow. Checked against ts_requantize
 *   by tests/test_kernels_fast.py (ts_rq_emulated below is the same arithmetic in portable C).
 * The bound is per channel: its accumulators lie in [bias - reach, bias + reach] (ts_acc_reach).
 * A channel outside those limits (a pruned channel: a tiny scale, r up to 31, a bias near 2^30)
 * can still be a constant: ts_requantize is monotone in x for m >= 0 (srdhm and rdivpot both round
 * to nearest), so when it gives one value at both ends of the range it gives it everywhere, and
 * ts_rq holds that value as m = 0, l1 = 1, base = value + out_off, rr = 0 (SMMLAR(s2, 0, base) =
 * base). Only compile-time tables carry such channels (codegen/lower_conv.py, rq_fields). */
typedef struct {
    int32_t m;    /* the multiplier */
    int32_t l1;   /* left + 1 */
    int32_t base; /* 2^(r-1) + out_off * 2^r, or out_off when r == 0 */
    int32_t rr;   /* r | (r >= 1) << 8: ASR reads the low byte, the neg correction bit 8 */
} ts_rq;

static inline void ts_rq_prepare(int32_t m, int32_t shift, int32_t out_off, ts_rq *q)
{
    const int32_t left = shift > 0 ? shift : 0, r = shift > 0 ? 0 : -shift;
    q->m = m;
    q->l1 = left + 1;
    q->base = r > 0 ? (int32_t)((1u << (r - 1)) + (uint32_t)out_off * (1u << r)) : out_off;
    q->rr = r | (r > 0 ? 256 : 0);
}

/* How far a channel's accumulators get from its bias: `products` products of |q + input_offset|
 * times |w| <= 128. */
static inline int64_t ts_acc_reach(int32_t products, int32_t input_offset)
{
    const int64_t lo = -128 + (int64_t)input_offset, hi = 127 + (int64_t)input_offset;
    const int64_t x = lo < 0 ? (-lo > hi ? -lo : hi) : hi;
    return (int64_t)products * x * 128;
}

#define TS_RQ_STEPS 1 /* ts_rq_prepare's SMMLAR steps */
#define TS_RQ_CONST 2 /* one value for every accumulator the channel can meet */

/* Which ts_rq form a channel (m, shift) takes when its accumulators lie in [bias - reach, bias +
 * reach]: TS_RQ_STEPS, TS_RQ_CONST or 0 (neither: the formula's own steps). */
static inline int ts_rq_form(int32_t m, int32_t shift, int32_t bias, int64_t reach)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int64_t b = bias < 0 ? -(int64_t)bias : bias;
    if (m < 0 || shift < -31 || shift > 29 || reach < 0 || b + reach >= ((int64_t)1 << 31)) {
        return 0;
    }
    if (shift >= -22 && ((b + reach) << (left + 1)) < ((int64_t)1 << 31)) {
        return TS_RQ_STEPS;
    }
    if (shift <= 0) { /* no left shift: the formula's int32 steps cannot wrap */
        const int32_t v = ts_requantize((int32_t)(bias - reach), m, shift);
        if (v == ts_requantize((int32_t)(bias + reach), m, shift) && v > -(1 << 30) && v < (1 << 30)) {
            return TS_RQ_CONST;
        }
    }
    return 0;
}

/* 1 when every channel of a layer (bias NULL: all 0) has a ts_rq form among `forms`
 * (TS_RQ_STEPS for ts_rq_prepare, TS_RQ_STEPS | TS_RQ_CONST where a compile-time table is used). */
static inline int ts_rq_ok(const int32_t *multiplier, const int32_t *shift, const int32_t *bias, int32_t n,
                           int64_t reach, int forms)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        if ((ts_rq_form(multiplier[i], shift[i], bias != NULL ? bias[i] : 0, reach) & forms) == 0) {
            return 0;
        }
    }
    return 1;
}

/* ts_rq's arithmetic in portable C (SMMLAR: (A * 2^32 + s2 * m + 2^31) >> 32), for the host check. */
static inline int32_t ts_rq_emulated(int32_t x, const ts_rq *q)
{
    const int32_t s2 = (int32_t)((uint32_t)x << q->l1);
    const int32_t a = q->base - ((s2 < 0 ? q->rr : 0) >> 8);
    const int32_t h = (int32_t)(((int64_t)s2 * q->m + ((int64_t)1 << 31)) >> 32);
    return (h + a) >> (q->rr & 255);
}

#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
#define TS_RQ_ASM 1
/* ts_rq_emulated, saturated to int8, as asm text over operand names, for every asm block of the
 * kernels that requantises: x the accumulator, s2 the register for x << (left + 1) and v the
 * result (either may be x itself), m, l1, base, rr the channel's ts_rq fields, t a scratch (l1 may
 * serve, read before t is written). LSL, AND, SUB, SMMLAR, ASR, SSAT. */
#define TS_RQ_STEPS_ASM(x, s2, v, m, l1, base, rr, t)                                                   \
    "lsl     %[" s2 "], %[" x "], %[" l1 "]\n\t"                                                          \
    "and     %[" t "], %[" rr "], %[" s2 "], asr #31\n\t"                                                 \
    "sub     %[" t "], %[" base "], %[" t "], lsr #8\n\t"                                                 \
    "smmlar  %[" v "], %[" s2 "], %[" m "], %[" t "]\n\t"                                                 \
    "asr     %[" v "], %[" v "], %[" rr "]\n\t"                                                           \
    "ssat    %[" v "], #8, %[" v "]\n\t"

/* The four bytes of w clamped bytewise to [lo, hi] (operands holding the bounds in every byte) as
 * asm text: SSUB8 sets a GE flag per byte, SEL picks; t a scratch. */
#define TS_CLAMP4_ASM(w, lo, hi, t)                                                                     \
    "ssub8   %[" t "], %[" w "], %[" lo "]\n\t"                                                           \
    "sel     %[" w "], %[" w "], %[" lo "]\n\t"                                                           \
    "ssub8   %[" t "], %[" hi "], %[" w "]\n\t"                                                           \
    "sel     %[" w "], %[" w "], %[" hi "]\n\t"

/* ts_rq_emulated, saturated to int8. */
static inline int32_t ts_rq_apply(int32_t x, const ts_rq *q)
{
    int32_t s2, t, v;
    __asm__(TS_RQ_STEPS_ASM("x", "s2", "v", "m", "l1", "base", "rr", "t")
            : [s2] "=&r"(s2), [t] "=&r"(t), [v] "=&r"(v)
            : [x] "r"(x), [l1] "r"(q->l1), [rr] "r"(q->rr), [base] "r"(q->base), [m] "r"(q->m));
    return v;
}

/* Four accumulators of consecutive channels through q[0..3] (ts_rq_apply each), packed into one
 * word, clamped bytewise to [lo, hi] (lim = {lo4, hi4}: the bounds in every byte; SSUB8 sets a GE
 * flag per byte, SEL picks) and stored at out (one unaligned word store). */
static inline void ts_rq4_store(int8_t *out, int32_t a0, int32_t a1, int32_t a2, int32_t a3, const ts_rq *q,
                                const uint32_t *lim)
{
    int32_t m, l1, base, rr, s2;
#define TS_RQ_ONE(a, off)                                                                               \
    "ldrd   %[m], %[l1], [%[q], #" off "]\n\t"                                                           \
    "ldrd   %[base], %[rr], [%[q], #" off " + 8]\n\t" TS_RQ_STEPS_ASM(a, "s2", a, "m", "l1", "base", "rr", "l1")
    __asm__ volatile(TS_RQ_ONE("a0", "0") TS_RQ_ONE("a1", "16") TS_RQ_ONE("a2", "32") TS_RQ_ONE("a3", "48")
            "bfi    %[a0], %[a1], #8, #8\n\t"
            "bfi    %[a0], %[a2], #16, #8\n\t"
            "bfi    %[a0], %[a3], #24, #8\n\t"
            "ldrd   %[m], %[l1], [%[lim]]\n\t" TS_CLAMP4_ASM("a0", "m", "l1", "s2")
            "str    %[a0], [%[out]]"
            : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [m] "=&r"(m), [l1] "=&r"(l1),
              [base] "=&r"(base), [rr] "=&r"(rr), [s2] "=&r"(s2)
            : [q] "r"(q), [lim] "r"(lim), [out] "r"(out)
            : "cc", "memory");
#undef TS_RQ_ONE
}

/* Four int8 results (already saturated) as one word, clamped bytewise to [lo, hi] (lo4, hi4: the
 * bounds in every byte): SSUB8 sets a GE flag per byte, SEL picks. */
static inline uint32_t ts_pack4_clamp(int32_t v0, int32_t v1, int32_t v2, int32_t v3, uint32_t lo4, uint32_t hi4)
{
    uint32_t w = ((uint32_t)v0 & 0xFFu) | (((uint32_t)v1 & 0xFFu) << 8) | (((uint32_t)v2 & 0xFFu) << 16) |
                 ((uint32_t)v3 << 24);
    uint32_t t;
    __asm__(TS_CLAMP4_ASM("w", "lo", "hi", "t")
            : [w] "+r"(w), [t] "=&r"(t)
            : [lo] "r"(lo4), [hi] "r"(hi4)
            : "cc");
    return w;
}
#else
#define TS_RQ_ASM 0
#endif

static inline uint32_t ts_bytes4(int32_t v) { return ((uint32_t)v & 0xFFu) * 0x01010101u; }

static inline void ts_store4(int8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }

/* The low two bytes of v at p (one unaligned STRH on Armv7-M/v8-M). */
static inline void ts_store2(int8_t *p, uint32_t v)
{
    const uint16_t h = (uint16_t)v;
    memcpy(p, &h, sizeof h);
}

#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
/* n bytes from src to dst (disjoint), both pointers and n word-aligned (the caller knows): eight
 * bytes per LDRD/STRD pair, then the last word. A ring's per-pixel copy that has checked the
 * alignment once per row takes this, not ts_copy_bytes's test per call. */
static inline void ts_copy_words(int8_t *dst, const int8_t *src, size_t n)
{
    const int8_t *const end = src + (n & ~(size_t)7);
    uint32_t a, b;
    while (src != end) {
        __asm__ volatile("ldrd    %[a], %[b], [%[s]], #8\n\t"
                         "strd    %[a], %[b], [%[d]], #8"
                         : [a] "=&r"(a), [b] "=&r"(b), [s] "+r"(src), [d] "+r"(dst)
                         :
                         : "memory");
    }
    if (n & 4u) {
        ts_store4(dst, ts_load4(src));
    }
}
#endif

/* n bytes from src to dst (disjoint). newlib-nano's memcpy goes byte by byte (4 instructions a
 * byte); on DSP cores with both pointers and n word-aligned, ts_copy_words. */
static inline void ts_copy_bytes(int8_t *dst, const int8_t *src, size_t n)
{
#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
    if ((((uintptr_t)dst | (uintptr_t)src | n) & 3u) == 0) {
        ts_copy_words(dst, src, n);
        return;
    }
#endif
    memcpy(dst, src, n);
}

#endif /* TS_SIMD_H */
