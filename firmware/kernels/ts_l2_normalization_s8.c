/* ts_l2_normalization_s8.c - L2_NORMALIZATION along the last axis, int8 (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

/* 1 / sqrt(x) as a multiplier and left shift, by gemmlowp fixed-point Newton-Raphson: TFLite's
 * GetInvSqrtQuantizedMultiplierExp with reverse_shift -1. */
static void ts_inv_sqrt(int32_t x, int32_t *multiplier, int32_t *shift)
{
    int32_t s = 11;
    int32_t clz = 0;
    int32_t pairs, half_input, r, i;
    uint32_t u;
    if (x <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    while (x >= (1 << 29)) {
        x /= 4;
        ++s;
    }
    for (u = (uint32_t)x; (u & 0x80000000u) == 0; u <<= 1) {
        ++clz;
    }
    pairs = (clz - 1) / 2 - 1;
    s -= pairs;
    x = (int32_t)((uint32_t)x << (2 * pairs));
    half_input = ts_rdivpot(x >> 1, 1);
    r = (int32_t)1 << 28; /* 1.0 with 3 integer bits */
    for (i = 0; i < 5; ++i) {
        const int32_t r3 = ts_sat_shift_left(ts_srdhm(ts_srdhm(r, r), r), 6);
        const int32_t a = ts_srdhm((1 << 28) + (1 << 27), r); /* 1.5 * r */
        const int32_t b = ts_srdhm(half_input, r3);
        r = ts_sat_shift_left(ts_wrap_add(a, -b), 3);
    }
    r = ts_srdhm(r, 1518500250); /* sqrt(2) / 2 in Q0.31 */
    if (s < 0) {
        r = (int32_t)((uint32_t)r << -s);
        s = 0;
    }
    *multiplier = r;
    *shift = -s;
}

int ts_l2_normalization_s8(const ts_l2_normalization_s8_params *p, const int8_t *input,
                           int8_t *output)
{
    int32_t o, i;
    for (o = 0; o < p->outer; ++o) {
        const int8_t *in = input + (size_t)o * p->depth;
        int32_t acc = 0, multiplier, shift;
        for (i = 0; i < p->depth; ++i) {
            const int32_t v = (int32_t)in[i] - p->input_zero_point;
            acc += v * v;
        }
        ts_inv_sqrt(acc, &multiplier, &shift);
        for (i = 0; i < p->depth; ++i) {
            const int32_t v = (int32_t)in[i] - p->input_zero_point;
            const int32_t q = ts_requantize(v, multiplier, shift + 7);
            output[(size_t)o * p->depth + i] = (int8_t)ts_clamp_i32(q, -128, 127);
        }
    }
    return TS_OK;
}
