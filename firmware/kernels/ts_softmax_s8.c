/*
 * ts_softmax_s8.c - SOFTMAX, int8 in, int8 out (scale 1/256, zero point -128) or int16 out
 * (scale 1/65536, zero point -32768). Fixed-point formats are written Qi.f: i integer bits, f
 * fractional bits, in an int32.
 *
 * Each row is computed in one of two arithmetics:
 *
 * 1. TFLite's reference kernel (reference_ops::Softmax, what OpResolverType.BUILTIN_REF runs):
 *    gemmlowp fixed point, exp_on_negative_values on Q5.26, the sum in Q12.19, the reciprocal by
 *    one_over_one_plus_x_for_x_in_0_1, the final RoundingDivideByPOT by
 *    num_bits_over_unit + 31 - output bits. Used wherever that arithmetic is defined.
 *
 * 2. Where it is not defined - the final shift exceeds 31 (a sum of 512 or more for int8 output: a
 *    thousand nearly equal logits; the reference interpreter aborts), the Q12.19 sum no longer fits
 *    32 bits (a sum of 8192 or more), or no Q5.26 input multiplier exists because input scale * beta
 *    <= 2^-26 (PreprocessSoftmaxScaling's check fails and the reference interpreter aborts) - what
 *    LiteRT's builtin int8 softmax computes
 *    (optimized_ops::Softmax after PopulateSoftmaxLookupTable, OpResolverType.BUILTIN and
 *    BUILTIN_WITHOUT_DEFAULT_DELEGATES on x86-64; the uint16-table variant is only built for
 *    aarch64 with clang): e[k] = expf(-input_scale * beta * k) tabulated in float32 by the
 *    generator (with the host C library's expf, as LiteRT does), k = max(row) - x; the row sum
 *    accumulated in float32 in element order; inv = 1 / (sum * output_scale); output =
 *    round(e * inv) (halves away from zero) + zero point, clamped. Every operation is a single
 *    IEEE-754 float32 operation (no fused multiply-add can form: no product feeds an addition), so
 *    the host and the Cortex-M FPU give the same bits.
 *
 * A sum from 4096 to 8191 overflows the reference's int32 (formally undefined; compilers wrap), and
 * its reciprocal reads the sum as uint32, which is still exact: the kernel reproduces that (int16
 * output only; int8 output has switched to 2. from 512 on).
 *
 * Where both are defined they agree on every row the tests draw (tests/test_softmax.py); only a
 * probability within float32 rounding of a half step could round differently. So no legal input
 * makes the kernel fail: it returns TS_ERR_PARAMS only for parameters the generator never emits
 * (a row needing the table without one, an input shift outside [0, 31], an empty row).
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

/* Writes output element `i` of a row: int8 or int16, by `out_bits`. */
static void store(void *output, size_t i, int32_t q, int out_bits)
{
    if (out_bits == 8) {
        ((int8_t *)output)[i] = (int8_t)q;
    } else {
        ((int16_t *)output)[i] = (int16_t)q;
    }
}

/* One row in LiteRT's builtin arithmetic (see the top of this file). */
static void row_from_table(const ts_softmax_s8_params *p, const int8_t *in, int32_t max_in_row, void *output,
                           size_t first, int out_bits)
{
    const int32_t out_min = out_bits == 8 ? -128 : -32768;
    const int32_t out_max = out_bits == 8 ? 127 : 32767;
    const float *e = p->exp_table;
    float sum = 0.0f;
    float inv;
    int32_t c;
    for (c = 0; c < p->depth; ++c) {
        sum += e[max_in_row - in[c]];
    }
    inv = 1.0f / (sum * p->output_scale); /* sum >= 1 (e[0] = 1), so finite */
    for (c = 0; c < p->depth; ++c) {
        const float prob = e[max_in_row - in[c]] * inv; /* in [0, 1 / output_scale] */
        /* roundf for prob >= 0, without libm: (float)q + 0.5f is exact, so the comparison is. */
        int32_t q = (int32_t)prob;
        if (prob >= (float)q + 0.5f) {
            ++q;
        }
        store(output, first + (size_t)c, ts_clamp_i32(q + out_min, out_min, out_max), out_bits);
    }
}

/* One row-by-row implementation for both output widths: `out_bits` is 8 (int8, zero point -128)
 * or 16 (int16, zero point -32768); only the final rescale differs between them. */
static int softmax_rows(const ts_softmax_s8_params *p, const int8_t *input, void *output, int out_bits)
{
    const int32_t out_min = out_bits == 8 ? -128 : -32768;
    const int32_t out_max = out_bits == 8 ? 127 : 32767;
    int32_t row, c;
    if (p->depth < 1 || (p->table_only && p->exp_table == NULL) ||
        (!p->table_only && (p->input_left_shift < 0 || p->input_left_shift > 31 || p->diff_min > 0))) {
        return TS_ERR_PARAMS;
    }
    for (row = 0; row < p->outer; ++row) {
        const int8_t *in = input + (size_t)row * p->depth;
        const size_t first = (size_t)row * p->depth;
        int32_t max_in_row = -128;
        int64_t sum_of_exps = 0; /* Q12.19, in 64 bits to see it leave 32 bits */
        int32_t headroom_plus_one, bits_over_unit, scale, exponent;
        for (c = 0; c < p->depth; ++c) {
            max_in_row = in[c] > max_in_row ? in[c] : max_in_row;
        }
        if (p->table_only) {
            row_from_table(p, in, max_in_row, output, first, out_bits);
            continue;
        }
        for (c = 0; c < p->depth; ++c) {
            const int32_t diff = (int32_t)in[c] - max_in_row;
            if (diff >= p->diff_min) {
                const int32_t scaled = ts_srdhm((int32_t)((uint32_t)diff << p->input_left_shift),
                                                p->input_multiplier);
                sum_of_exps += ts_rdivpot(exp_on_negative_values(scaled), 12);
            }
        }
        /* sum = 2^bits_over_unit * (1 + f), f in [0, 1); scale = 1 / (1 + f) in Q0.31. The sum is at
         * least 1 (the maximum's exp(0)), so bits_over_unit >= 0. */
        headroom_plus_one = sum_of_exps > (int64_t)UINT32_MAX ? 0 : ts_clz32((uint32_t)sum_of_exps);
        bits_over_unit = 12 - headroom_plus_one;
        exponent = bits_over_unit + 31 - out_bits;
        if (sum_of_exps > (int64_t)UINT32_MAX || exponent > 31) {
            if (p->exp_table == NULL) {
                return TS_ERR_PARAMS;
            }
            row_from_table(p, in, max_in_row, output, first, out_bits);
            continue;
        }
        scale = one_over_one_plus_x(
            (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - 0x80000000u));
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
            store(output, first + (size_t)c, q, out_bits);
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
