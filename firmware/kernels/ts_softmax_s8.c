/*
 * ts_softmax_s8.c - SOFTMAX, int8 in, int8 out (scale 1/256, zero point -128) or int16 out
 * (scale 1/65536, zero point -32768), TFLite's
 * fixed-point algorithm (see ts_kernels.h). Fixed-point formats are written Qi.f: i integer bits,
 * f fractional bits, in an int32.
 */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

/* Count of leading zero bits of a non-zero 32-bit value. */
static int ts_clz32(uint32_t v)
{
    int n = 0;
    while ((v & 0x80000000u) == 0u) {
        v <<= 1;
        ++n;
    }
    return n;
}

/* exp(a) for a in [-1/4, 0), a and the result in Q0.31: a 4th-order Taylor expansion around -1/8. */
static int32_t exp_quarter_interval(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668; /* exp(-1/8) in Q0.31 */
    const int32_t one_third = 715827883;             /* 1/3 in Q0.31 */
    const int32_t x = ts_wrap_add(a, 1 << 28);       /* x = a + 1/8 */
    const int32_t x2 = ts_srdhm(x, x);
    const int32_t x3 = ts_srdhm(x2, x);
    const int32_t x4 = ts_srdhm(x2, x2);
    const int32_t x4_over_4 = ts_rdivpot(x4, 2);
    /* x^4/24 + x^3/6 + x^2/2 = ((x^4/4 + x^3) / 3 + x^2) / 2 */
    const int32_t poly =
        ts_rdivpot(ts_wrap_add(ts_srdhm(ts_wrap_add(x4_over_4, x3), one_third), x2), 1);
    return ts_wrap_add(exp_minus_one_eighth, ts_srdhm(exp_minus_one_eighth, ts_wrap_add(x, poly)));
}

/* exp(a) for a <= 0 given in Q5.26; result in Q0.31. Splits a into a multiple of 1/4 plus a part in
 * [-1/4, 0) and multiplies in exp(-2^k) for each set bit of the former. */
static int32_t exp_on_negative_values(int32_t a)
{
    static const int32_t exp_minus_pow2[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242,        /* exp(-16) */
    };
    const int32_t one_quarter = 1 << 24; /* 1/4 in Q5.26 */
    const int32_t mod_minus_quarter = (a & (one_quarter - 1)) - one_quarter;
    const int32_t remainder = mod_minus_quarter - a; /* the multiple of 1/4 (non-negative) */
    int32_t result = exp_quarter_interval(ts_sat_shift_left(mod_minus_quarter, 5));
    int k;
    for (k = 0; k < 7; ++k) {
        if (remainder & (1 << (24 + k))) {
            result = ts_srdhm(result, exp_minus_pow2[k]);
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + a) for a in [0, 1), a and the result in Q0.31: Newton-Raphson on the half denominator. */
static int32_t one_over_one_plus_x(int32_t a)
{
    const int32_t one_q2 = 1 << 29;                /* 1 in Q2.29 */
    const int32_t forty_eight_17ths = 1515870810;  /* 48/17 in Q2.29 */
    const int32_t minus_32_17ths = -1010580540;    /* -32/17 in Q2.29 */
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* Q0.31 */
    int32_t x = ts_wrap_add(forty_eight_17ths, ts_srdhm(half_denominator, minus_32_17ths));
    int i;
    for (i = 0; i < 3; ++i) {
        const int32_t one_minus_dx = one_q2 - ts_srdhm(half_denominator, x);
        x = ts_wrap_add(x, ts_sat_shift_left(ts_srdhm(x, one_minus_dx), 2));
    }
    return ts_sat_shift_left(x, 1);
}

/* One row-by-row implementation for both output widths: `out_bits` is 8 (int8, zero point -128)
 * or 16 (int16, zero point -32768); only the final rescale differs between them. */
static int softmax_rows(const ts_softmax_s8_params *p, const int8_t *input, void *output, int out_bits)
{
    const int32_t out_min = out_bits == 8 ? -128 : -32768;
    const int32_t out_max = out_bits == 8 ? 127 : 32767;
    int32_t row, c;
    if (p->input_left_shift < 0 || p->input_left_shift > 31 || p->depth < 1) {
        return TS_ERR_PARAMS;
    }
    for (row = 0; row < p->outer; ++row) {
        const int8_t *in = input + (size_t)row * p->depth;
        const size_t first = (size_t)row * p->depth;
        int32_t max_in_row = -128;
        int32_t sum_of_exps = 0; /* Q12.19 */
        int32_t headroom_plus_one, bits_over_unit, scale, exponent;
        for (c = 0; c < p->depth; ++c) {
            max_in_row = in[c] > max_in_row ? in[c] : max_in_row;
        }
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = (int32_t)in[c] - max_in_row;
            if (diff >= p->diff_min) {
                const int32_t scaled = ts_srdhm((int32_t)((uint32_t)diff << p->input_left_shift),
                                                p->input_multiplier);
                sum_of_exps = ts_wrap_add(sum_of_exps, ts_rdivpot(exp_on_negative_values(scaled), 12));
            }
        }
        /* sum = 2^bits_over_unit * (1 + f), f in [0, 1); scale = 1 / (1 + f) in Q0.31. */
        headroom_plus_one = ts_clz32((uint32_t)sum_of_exps);
        bits_over_unit = 12 - headroom_plus_one;
        scale = one_over_one_plus_x(
            (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - 0x80000000u));
        exponent = bits_over_unit + 31 - out_bits;
        if (exponent < 0 || exponent > 31) {
            return TS_ERR_PARAMS;
        }
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = (int32_t)in[c] - max_in_row;
            int32_t q = out_min;
            if (diff >= p->diff_min) {
                const int32_t scaled = ts_srdhm((int32_t)((uint32_t)diff << p->input_left_shift),
                                                p->input_multiplier);
                const int32_t e = exp_on_negative_values(scaled);
                q = ts_clamp_i32(ts_rdivpot(ts_srdhm(scale, e), (int)exponent) + out_min, out_min,
                                 out_max);
            }
            if (out_bits == 8) {
                ((int8_t *)output)[first + (size_t)c] = (int8_t)q;
            } else {
                ((int16_t *)output)[first + (size_t)c] = (int16_t)q;
            }
        }
    }
    return TS_OK;
}

int ts_softmax_s8(const ts_softmax_s8_params *p, const int8_t *input, int8_t *output)
{
    return softmax_rows(p, input, output, 8);
}

/* int8 in, int16 out (scale 1/65536, zero point -32768), as TFLite's int8->int16 softmax. */
int ts_softmax_s8_s16(const ts_softmax_s8_params *p, const int8_t *input, int16_t *output)
{
    return softmax_rows(p, input, output, 16);
}
