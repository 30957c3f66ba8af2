/*
 * ts_lstm_s8.c - UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's fully integer "8x8_16" arithmetic
 * (int8 input/output and weights, int16 gates and cell state, int32 biases; see ts_kernels.h).
 *
 * Fixed-point formats are written Qi.f: i integer bits, f fractional bits, in an int16. The gate
 * pre-activations are Q3.12, the activations' results Q0.15, the cell state Q(15+s).(-s) for a cell
 * scale 2^s. The sigmoid and tanh are gemmlowp's int16 fixed-point functions (exp on a quarter
 * interval by a Taylor expansion, a barrel shifter for the rest, Newton-Raphson for the division),
 * written out here in plain C.
 *
 * The kernel works one cell at a time: the four gates of cell r read the step's input and the
 * previous output state, which do not change during the step, and the cell state of cell r alone
 * (no peephole). The new hidden value goes straight into the output row of the step, which is then
 * copied into the output state, so no gate buffers (and no scratch in the arena) are needed.
 */
#include <string.h>

#include "ts_fixedpoint.h"
#include "ts_kernels.h"

/* ---- int16 fixed point, as gemmlowp computes it for std::int16_t ---------------------------- */

/* The int16 result of an int32 value, wrapping as the reference's conversions do. */
static int16_t wrap16(int32_t x) { return (int16_t)(uint16_t)(uint32_t)x; }

static int16_t sat16(int32_t x) { return (int16_t)ts_clamp_i32(x, -32768, 32767); }

/* SaturatingRoundingDoublingHighMul: round(a * b / 2^15), ties away from zero. */
static int16_t srdhm16(int16_t a, int16_t b)
{
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)((ab + nudge) / (1 << 15)); /* C division truncates, as the reference's */
}

/* RoundingDivideByPOT on an int16 value. */
static int16_t rdivpot16(int16_t x, int exponent) { return (int16_t)ts_rdivpot(x, exponent); }

/* SaturatingRoundingMultiplyByPOT with a positive exponent, saturating to int16. */
static int16_t sat_shl16(int16_t x, int exponent)
{
    const int32_t threshold = (1 << (15 - exponent)) - 1;
    if (x > threshold) {
        return INT16_MAX;
    }
    if (x < -threshold) {
        return INT16_MIN;
    }
    return wrap16((int32_t)x * (1 << exponent));
}

/* A 32-bit gemmlowp constant rounded to 16 bits (RescaleConstantInitializer). */
static int16_t const16(int32_t raw32) { return (int16_t)ts_rdivpot(raw32, 16); }

/* exp(a) for a in [-1/4, 0), a and the result Q0.15: Taylor expansion around -1/8. */
static int16_t exp_quarter16(int16_t a)
{
    const int16_t constant_term = const16(1895147668); /* exp(-1/8) */
    const int16_t one_third = const16(715827883);
    const int16_t x = wrap16((int32_t)a + (1 << 12)); /* a + 1/8 */
    const int16_t x2 = srdhm16(x, x);
    const int16_t x3 = srdhm16(x2, x);
    const int16_t x4 = srdhm16(x2, x2);
    const int16_t x4_over_4 = rdivpot16(x4, 2);
    const int16_t poly = rdivpot16(
        wrap16((int32_t)srdhm16(wrap16((int32_t)x4_over_4 + x3), one_third) + x2), 1);
    return sat16((int32_t)constant_term + srdhm16(constant_term, wrap16((int32_t)x + poly)));
}

/* exp(a) for a <= 0 in Q(integer_bits).(15 - integer_bits); the result is Q0.15. */
static int16_t exp_negative16(int16_t a, int integer_bits)
{
    static const int32_t multipliers[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242,        /* exp(-16) */
    };
    const int fractional_bits = 15 - integer_bits;
    const int16_t one_quarter = (int16_t)(1 << (fractional_bits - 2));
    const int16_t mod_minus_quarter = wrap16((int32_t)(a & (one_quarter - 1)) - one_quarter);
    const int16_t remainder = wrap16((int32_t)mod_minus_quarter - a);
    int16_t result = exp_quarter16(integer_bits > 0 ? sat_shl16(mod_minus_quarter, integer_bits)
                                                    : mod_minus_quarter);
    int k;
    for (k = 0; k < 7; ++k) {
        const int exponent = k - 2; /* multiplier k is exp(-2^exponent) */
        if (integer_bits > exponent && (remainder & (1 << (fractional_bits + exponent))) != 0) {
            result = srdhm16(result, const16(multipliers[k]));
        }
    }
    if (integer_bits > 5) {
        const int16_t clamp = const16(-(1 << (36 - integer_bits))); /* -32 */
        if (a < clamp) {
            result = 0;
        }
    }
    return a == 0 ? INT16_MAX : result;
}

/* The Newton-Raphson reciprocal shared by logistic and tanh: 1 / (1 + a) for a in [0, 1) (a in
 * Q0.15), returned in Q2.13. */
static int16_t reciprocal_one_plus16(int16_t a)
{
    const int16_t one_q2 = 1 << 13;
    const int32_t sum = (int32_t)a + INT16_MAX;
    const int16_t half_denominator = (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* Q0.15 */
    int16_t x = wrap16((int32_t)const16(1515870810) + srdhm16(half_denominator, const16(-1010580540)));
    int i;
    for (i = 0; i < 3; ++i) {
        const int16_t one_minus = wrap16((int32_t)one_q2 - srdhm16(half_denominator, x));
        x = wrap16((int32_t)x + sat_shl16(srdhm16(x, one_minus), 2));
    }
    return x; /* 1 / (2 * half_denominator) = 1 / (1 + a), in Q2.13 with the factor 2 folded in */
}

/* logistic(a) for a in Q(integer_bits).(15 - integer_bits); the result is Q0.15. */
static int16_t logistic16(int16_t a, int integer_bits)
{
    const int16_t abs_a = a > 0 ? a : wrap16(-(int32_t)a);
    /* 1 / (1 + exp(-|a|)): the Q2.13 value halved exactly (Q1.14), then rescaled to Q0.15. */
    const int16_t positive =
        sat_shl16(reciprocal_one_plus16(exp_negative16(wrap16(-(int32_t)abs_a), integer_bits)), 1);
    if (a == 0) {
        return const16(1 << 30); /* 1/2 */
    }
    return a > 0 ? positive : wrap16((int32_t)INT16_MAX - positive);
}

/* tanh(a) for a in Q(integer_bits).(15 - integer_bits); the result is Q0.15. */
static int16_t tanh16(int16_t a, int integer_bits)
{
    const int16_t negative = a < 0 ? a : wrap16(-(int32_t)a);
    /* -tanh(n) for n < 0: (1 - exp(2n)) / (1 + exp(2n)); 2n is n read with one more integer bit. */
    const int16_t x = reciprocal_one_plus16(exp_negative16(negative, integer_bits + 1));
    const int16_t t = sat_shl16(wrap16((int32_t)x - (1 << 13)), 2);
    if (a == 0) {
        return 0;
    }
    return a < 0 ? wrap16(-(int32_t)t) : t;
}

/* ---- the LSTM ------------------------------------------------------------------------------ */

/* One gate's pre-activation for cell r (Q3.12): the input and recurrent products, each requantised
 * and accumulated with int16 saturation, as the reference's two MatrixBatchVectorMultiplyAccumulate. */
static int16_t gate_sum(const ts_lstm_s8_params *p, int gate, int32_t r, const int8_t *x, const int8_t *h)
{
    const int8_t *w = p->input_weights[gate] + (size_t)r * p->input_size;
    const int8_t *u = p->recurrent_weights[gate] + (size_t)r * p->cell_size;
    int32_t acc = p->input_bias[gate][r];
    int32_t c, g;
    for (c = 0; c < p->input_size; ++c) {
        acc = ts_wrap_add(acc, (int32_t)x[c] * w[c]);
    }
    g = ts_clamp_i32(ts_requantize(acc, p->input_multiplier[gate], p->input_shift[gate]), -32768, 32767);
    acc = p->recurrent_bias[gate][r];
    for (c = 0; c < p->cell_size; ++c) {
        acc = ts_wrap_add(acc, (int32_t)h[c] * u[c]);
    }
    g = ts_requantize(acc, p->recurrent_multiplier[gate], p->recurrent_shift[gate]) + g;
    return sat16(g);
}

int ts_lstm_s8(const ts_lstm_s8_params *p, const int8_t *input, int8_t *output_state, int16_t *cell_state,
               int8_t *output)
{
    const int cell_bits = 15 + (int)p->cell_scale_log2; /* integer bits of the cell state */
    const int cell_product_shift = 30 + (int)p->cell_scale_log2;
    int32_t b, t, r;
    if (cell_bits < 0 || cell_bits > 6 || p->cell_size < 1 || p->input_size < 1) {
        return TS_ERR_PARAMS;
    }
    for (b = 0; b < p->batches; ++b) {
        int8_t *h = output_state + (size_t)b * p->cell_size;
        int16_t *cell = cell_state + (size_t)b * p->cell_size;
        for (t = 0; t < p->time_steps; ++t) {
            const size_t row = p->time_major ? (size_t)t * p->batches + b : (size_t)b * p->time_steps + t;
            const int8_t *x = input + row * p->input_size;
            int8_t *y = output + row * p->cell_size;
            for (r = 0; r < p->cell_size; ++r) {
                const int16_t i_gate = logistic16(gate_sum(p, 0, r, x, h), 3);
                const int16_t f_gate = logistic16(gate_sum(p, 1, r, x, h), 3);
                const int16_t g_gate = tanh16(gate_sum(p, 2, r, x, h), 3);
                int16_t o_gate, c, hidden_tanh;
                int32_t kept, added, v;
                /* c = f * c (Q0.15 times the cell format), + i * g (Q0.15 times Q0.15) in the
                 * cell format, saturated, then clipped. */
                kept = wrap16(ts_rdivpot((int32_t)f_gate * cell[r], 15));
                added = wrap16(ts_rdivpot((int32_t)i_gate * g_gate, cell_product_shift));
                c = sat16(kept + added);
                if (p->cell_clip > 0) {
                    c = (int16_t)ts_clamp_i32(c, -p->cell_clip, p->cell_clip);
                }
                cell[r] = c;
                o_gate = logistic16(gate_sum(p, 3, r, x, h), 3);
                hidden_tanh = tanh16(c, cell_bits);
                v = ts_requantize((int32_t)o_gate * hidden_tanh, p->hidden_multiplier, p->hidden_shift);
                y[r] = (int8_t)ts_clamp_i32(v + p->hidden_offset, -128, 127);
            }
            memcpy(h, y, (size_t)p->cell_size);
        }
    }
    return TS_OK;
}
