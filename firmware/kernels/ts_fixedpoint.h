/*
 * ts_fixedpoint.h - the integer arithmetic every tinysched kernel shares (private to firmware/kernels).
 *
 * These are the rounding rules of TFLite's reference kernels (gemmlowp fixed point), written out in
 * portable C99 so that the generated code is bit-exact with them:
 *
 *   ts_srdhm(a, b)        "saturating rounding doubling high multiply": round(a * b / 2^31), with
 *                         ties rounded up (gemmlowp's nudge: +0.5 rounds to 1, -0.5 to 0),
 *                         saturating the one overflowing case INT32_MIN^2.
 *   ts_rdivpot(x, e)      x / 2^e rounded to nearest, ties away from zero (0 <= e <= 31).
 *   ts_requantize(x,m,s)  x * m * 2^(s - 31): a left shift for s > 0, then ts_srdhm, then a
 *                         rounding right shift for s < 0 ("double rounding", as TFLite does
 *                         without TFLITE_SINGLE_ROUNDING).
 *   ts_requantize_single  the same multiplier applied with one rounding of the 64-bit product, as
 *                         TFLite's FULLY_CONNECTED does (see below).
 *
 * Right shifts of negative values are assumed to be arithmetic (true of every compiler tinysched
 * targets: GCC, Clang, arm-none-eabi-gcc, IAR, armcc); the check below refuses to build otherwise.
 */
#ifndef TS_FIXEDPOINT_H
#define TS_FIXEDPOINT_H

#include <stdint.h>

#if (-1 >> 1) != -1
#error "tinysched kernels need an arithmetic right shift of negative integers"
#endif

static inline int32_t ts_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t ts_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t ts_clamp_i32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* Wrapping int32 addition (two's complement), defined behaviour where a plain `+` would overflow. */
static inline int32_t ts_wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

static inline int32_t ts_srdhm(int32_t a, int32_t b)
{
    /* The reference computes (ab + nudge) / 2^31 truncated toward zero, with nudge = 2^30 for
     * ab >= 0 and 1 - 2^30 otherwise. Both cases equal floor((ab + 2^30) / 2^31): for ab >= 0 the
     * quotient is non-negative, so truncation is floor; for ab < 0, t = ab + 1 - 2^30 < 0 and
     * trunc(t / 2^31) = ceil(t / 2^31) = floor((t + 2^31 - 1) / 2^31) = floor((ab + 2^30) / 2^31).
     * The branch-free form is one SMLAL and two shifts on Cortex-M (checked against the reference
     * formula in tests/test_kernels_fast.py). |ab| <= 2^62, so ab + 2^30 cannot overflow. */
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

static inline int32_t ts_rdivpot(int32_t x, int exponent)
{
    const int32_t mask = (int32_t)((1u << exponent) - 1u); /* 2^31 - 1 at most: fits */
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static inline int32_t ts_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    const int left = shift > 0 ? (int)shift : 0;
    const int right = shift > 0 ? 0 : (int)-shift;
    /* x * 2^left, wrapping like the reference's int32 product would in practice. */
    const int32_t shifted = (int32_t)((uint32_t)x << left);
    return ts_rdivpot(ts_srdhm(shifted, multiplier), right);
}

/* ts_requantize for a multiplier other than INT32_MIN (every multiplier QuantizeMultiplier makes is
 * in [2^30, 2^31) or 0): srdhm's one saturating case cannot arise, so its test goes. The fast paths
 * use this after checking their multipliers once per call (ts_multipliers_ok). */
static inline int32_t ts_requantize_nonsat(int32_t x, int32_t multiplier, int32_t shift)
{
    const int left = shift > 0 ? (int)shift : 0;
    const int right = shift > 0 ? 0 : (int)-shift;
    const int32_t shifted = (int32_t)((uint32_t)x << left);
    const int32_t high = (int32_t)(((int64_t)shifted * (int64_t)multiplier + ((int64_t)1 << 30)) >> 31);
    return ts_rdivpot(high, right);
}

/* 1 when no multiplier of n is INT32_MIN and every shift is in [-31, 31]: ts_requantize_nonsat then
 * equals ts_requantize for all of them. */
static inline int ts_multipliers_ok(const int32_t *multiplier, const int32_t *shift, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        if (multiplier[i] == INT32_MIN || shift[i] < -31 || shift[i] > 31) {
            return 0;
        }
    }
    return 1;
}

/* x * m * 2^(shift - 31) with one rounding (half up) of the exact 64-bit product: the form TFLite's
 * FULLY_CONNECTED takes in the reference kernels ai-edge-litert ships ("single rounding"). Valid for
 * -31 <= shift <= 30 and multiplier >= 0, which QuantizeMultiplier guarantees for FULLY_CONNECTED.
 * A result outside int32 (a scale ratio of 2^20 or so with large accumulators) is INT32_MIN, as the
 * reference gives on either side (measured: tests/test_kernel_extremes.py); the caller then adds the
 * output offset wrapping (ts_wrap_add) and clamps, in that order, like the reference. */
static inline int32_t ts_requantize_single(int32_t x, int32_t multiplier, int32_t shift)
{
    const int total = 31 - (int)shift;
    const int64_t r = ((int64_t)x * multiplier + ((int64_t)1 << (total - 1))) >> total;
    return r > INT32_MAX || r < INT32_MIN ? INT32_MIN : (int32_t)r;
}

/* Saturating x * 2^exponent for exponent > 0 (gemmlowp's SaturatingRoundingMultiplyByPOT). */
static inline int32_t ts_sat_shift_left(int32_t x, int exponent)
{
    const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

#endif /* TS_FIXEDPOINT_H */
