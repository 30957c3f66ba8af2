/* ts_add_s8.c - ADD, int8, with broadcasting and per-input rescaling (see ts_kernels.h).
 *
 * When neither input broadcasts (both are laid out exactly like the output), add_flat walks the
 * three arrays with one index instead of the N-d walk; its arithmetic is add_generic's, with the
 * srdhm saturation test dropped once the three multipliers are checked not to be INT32_MIN.
 */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

/* 1 when both inputs are laid out like the output (strides row-major over dims wherever dims > 1). */
static int add_is_flat(const ts_broadcast_shape *s)
{
    int32_t stride = 1;
    int d;
    for (d = TS_MAX_DIMS - 1; d >= 0; --d) {
        if (s->dims[d] > 1 && (s->in1_strides[d] != stride || s->in2_strides[d] != stride)) {
            return 0;
        }
        stride *= s->dims[d] > 0 ? s->dims[d] : 1;
    }
    return 1;
}

static void add_flat(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                     int8_t *output)
{
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset, out_off = p->output_offset;
    const int32_t m1 = p->input1_multiplier, s1 = p->input1_shift, m2 = p->input2_multiplier;
    const int32_t s2 = p->input2_shift, mo = p->output_multiplier, so = p->output_shift;
    const int32_t act_min = p->act_min, act_max = p->act_max;
    const int left = (int)p->left_shift;
    size_t k;
    for (k = 0; k < n; ++k) {
        const int32_t a = ((int32_t)input1[k] + off1) * (1 << left);
        const int32_t b = ((int32_t)input2[k] + off2) * (1 << left);
        const int32_t sum = ts_requantize_nonsat(a, m1, s1) + ts_requantize_nonsat(b, m2, s2);
        output[k] = (int8_t)ts_clamp_i32(ts_requantize_nonsat(sum, mo, so) + out_off, act_min, act_max);
    }
}

#if TS_RQ_ASM && !TS_MVE
/* The flat ADD of the DSP cores other than Helium's (add_flat's arithmetic in fewer instructions;
 * see ts_kernels.h, ADD) for TFLite's int8 parameters: left_shift 20, input shifts in [-31, 0]
 * (input multipliers are at most 1/2: shift 0 for the input of the larger scale, multiplier 2^30
 * when the scales are equal), the output's shift in [-22, -1]. Each of the three rescales is then
 *   rdivpot(srdhm(v << left, m), r) (+ out_off) = SMMLAR(v << (left + 1), m, t) >> r,
 *   t = 2^(r-1) - [v < 0] (+ out_off * 2^r) for r >= 1; SMMULR(v << (left + 1), m) for r == 0,
 * ts_simd.h's ts_rq derivation: SMMLAR's rounding is srdhm's once v << (left + 1) is exact, and
 * [v < 0] stands for [srdhm(..) < 0] (they differ only where srdhm gives 0, and then both give 0).
 * Inputs: v = x + offset, |v| <= 383, v << 21 < 2^30; |srdhm| < 2^29. Output: v = the sum of the
 * two rescaled inputs, |v| < 2^30, so v << 1 is exact; |out_off| <= 255 and r <= 22 (checked) keep
 * |t| < 2^30 + 2^21, and the SMMLAR result |h + t| < 2^29 + |t| < 2^31. */
typedef struct {
    int32_t m, base, r; /* multiplier, 2^(r-1) (+ out_off * 2^r for the output), r = -shift */
} add_rq;

#if defined(__GNUC__) || defined(__clang__)
#define ADD_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ADD_ALWAYS_INLINE inline
#endif

/* SMMLAR(v << left1, m, base + (v >> 31)) >> r (r >= 1), left1 an immediate (21: inputs, 1: output). */
#define ADD_RESCALE(v, left1, q, res)                                                                  \
    __asm__("lsl    %[s2], %[x], #" #left1 "\n\t"                                                       \
            "add    %[t], %[base], %[x], asr #31\n\t"                                                    \
            "smmlar %[h], %[s2], %[m], %[t]\n\t"                                                         \
            "asr    %[h], %[h], %[r]"                                                                   \
            : [s2] "=&r"(s2), [t] "=&r"(t), [h] "=&r"(res)                                              \
            : [x] "r"(v), [base] "r"((q).base), [m] "r"((q).m), [r] "r"((q).r))

/* The same for r == 0: SMMULR(v << 21, m). */
#define ADD_RESCALE0(v, q, res)                                                                        \
    __asm__("lsl    %[s2], %[x], #21\n\t"                                                               \
            "smmulr %[h], %[s2], %[m]"                                                                  \
            : [s2] "=&r"(s2), [h] "=&r"(res)                                                            \
            : [x] "r"(v), [m] "r"((q).m))

/* One input's rescale of v = x + offset; r_pos: its shift is < 0 (a constant in each caller). */
static ADD_ALWAYS_INLINE int32_t add_side(int32_t v, const add_rq *q, int r_pos)
{
    int32_t s2, t, h;
    if (r_pos) {
        ADD_RESCALE(v, 21, *q, h);
    } else {
        ADD_RESCALE0(v, *q, h);
        (void)t;
    }
    return h;
}

/* One output element from the two inputs plus their offsets, saturated to int8 (SSAT); the caller
 * clamps to [act_min, act_max]. */
static ADD_ALWAYS_INLINE int32_t add_one(int32_t v1, int32_t v2, const add_rq *a, const add_rq *b,
                                         const add_rq *o, int r1_pos, int r2_pos)
{
    int32_t s2, t, v;
    ADD_RESCALE(add_side(v1, a, r1_pos) + add_side(v2, b, r2_pos), 1, *o, v);
    __asm__("ssat   %[v], #8, %[v]" : [v] "+r"(v));
    return v;
}

/* n elements, four at a time (one word of each input read, then one word of output written), the
 * last n % 4 one by one. r1_pos, r2_pos, clamp (0: the activation range is all of int8, which SSAT
 * already gives): constants in each caller, so each gets its own loop. */
static ADD_ALWAYS_INLINE void add_dsp_loop(const ts_add_s8_params *p, size_t n, const int8_t *input1,
                                           const int8_t *input2, int8_t *output, const add_rq *a,
                                           const add_rq *b, const add_rq *o, int r1_pos, int r2_pos,
                                           int clamp)
{
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset, lo = p->act_min, hi = p->act_max;
    const uint32_t lo4 = ts_bytes4(lo), hi4 = ts_bytes4(hi);
    size_t k;
    for (k = 0; k + 4 <= n; k += 4) {
        const uint32_t w1 = ts_load4(input1 + k), w2 = ts_load4(input2 + k);
        const int32_t v0 = add_one((int8_t)w1 + off1, (int8_t)w2 + off2, a, b, o, r1_pos, r2_pos);
        const int32_t v1 = add_one((int8_t)(w1 >> 8) + off1, (int8_t)(w2 >> 8) + off2, a, b, o, r1_pos, r2_pos);
        const int32_t v2 = add_one((int8_t)(w1 >> 16) + off1, (int8_t)(w2 >> 16) + off2, a, b, o, r1_pos, r2_pos);
        const int32_t v3 = add_one((int8_t)(w1 >> 24) + off1, (int8_t)(w2 >> 24) + off2, a, b, o, r1_pos, r2_pos);
        if (clamp) {
            ts_store4(output + k, ts_pack4_clamp(v0, v1, v2, v3, lo4, hi4));
        } else {
            uint32_t w = (uint32_t)v0;
            __asm__("bfi    %[w], %[v1], #8, #8\n\t"
                    "bfi    %[w], %[v2], #16, #8\n\t"
                    "bfi    %[w], %[v3], #24, #8"
                    : [w] "+&r"(w)
                    : [v1] "r"(v1), [v2] "r"(v2), [v3] "r"(v3));
            ts_store4(output + k, w);
        }
    }
    for (; k < n; ++k) {
        const int32_t v = add_one(input1[k] + off1, input2[k] + off2, a, b, o, r1_pos, r2_pos);
        output[k] = (int8_t)ts_clamp_i32(v, lo, hi);
    }
}

/* 1 and the constants when the rescale by (m, shift) takes ADD_RESCALE's form (shift in
 * [-limit, -1]) or ADD_RESCALE0's (shift 0, when zero_ok), m >= 0; base gets out_off * 2^r added
 * (0 for the inputs). */
static int add_rq_prepare(int32_t m, int32_t shift, int32_t limit, int zero_ok, int32_t out_off, add_rq *q)
{
    if (m < 0 || shift > (zero_ok ? 0 : -1) || shift < -limit) {
        return 0;
    }
    q->m = m;
    q->r = -shift;
    q->base = shift < 0 ? (int32_t)((1u << (-shift - 1)) + (uint32_t)out_off * (1u << -shift)) : 0;
    return 1;
}

/* add_flat on DSP cores (add_dsp_loop); 1 when taken, 0 when the parameters need add_flat. */
static int add_flat_dsp(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                        int8_t *output)
{
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset;
    const int clamp = p->act_min > -128 || p->act_max < 127;
    add_rq a, b, o;
    if (p->left_shift != 20 || off1 < -255 || off1 > 255 || off2 < -255 || off2 > 255 ||
        !add_rq_prepare(p->input1_multiplier, p->input1_shift, 31, 1, 0, &a) ||
        !add_rq_prepare(p->input2_multiplier, p->input2_shift, 31, 1, 0, &b) ||
        !add_rq_prepare(p->output_multiplier, p->output_shift, 22, 0, p->output_offset, &o) ||
        p->output_offset < -255 || p->output_offset > 255 || p->act_min < -128 || p->act_max > 127) {
        return 0;
    }
#define ADD_LOOP(r1_pos, r2_pos)                                                                       \
    (clamp ? add_dsp_loop(p, n, input1, input2, output, &a, &b, &o, r1_pos, r2_pos, 1)                   \
           : add_dsp_loop(p, n, input1, input2, output, &a, &b, &o, r1_pos, r2_pos, 0))
    if (a.r > 0 && b.r > 0) {
        ADD_LOOP(1, 1);
    } else if (a.r > 0) {
        ADD_LOOP(1, 0);
    } else if (b.r > 0) {
        ADD_LOOP(0, 1);
    } else {
        ADD_LOOP(0, 0);
    }
#undef ADD_LOOP
    return 1;
}
#endif

#if TS_MVE
#define ts_mve_add_flat ts_mve_add
#else
#define ts_mve_add_flat add_flat
#endif

static void add_generic(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                        int8_t *output)
{
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int32_t a = ((int32_t)input1[w.off_a] + p->input1_offset) * (1 << p->left_shift);
        const int32_t b = ((int32_t)input2[w.off_b] + p->input2_offset) * (1 << p->left_shift);
        const int32_t sa = ts_requantize(a, p->input1_multiplier, p->input1_shift);
        const int32_t sb = ts_requantize(b, p->input2_multiplier, p->input2_shift);
        const int32_t sum = ts_requantize(sa + sb, p->output_multiplier, p->output_shift);
        output[k] = (int8_t)ts_clamp_i32(sum + p->output_offset, p->act_min, p->act_max);
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
}

int ts_add_s8(const ts_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    const int32_t multipliers[3] = {p->input1_multiplier, p->input2_multiplier, p->output_multiplier};
    const int32_t shifts[3] = {p->input1_shift, p->input2_shift, p->output_shift};
    if (p->left_shift < 0 || p->left_shift > 20) {
        return TS_ERR_PARAMS;
    }
    if (add_is_flat(&p->shape) && ts_multipliers_ok(multipliers, shifts, 3)) {
#if TS_RQ_ASM && !TS_MVE
        if (add_flat_dsp(p, n, input1, input2, output)) {
            return TS_OK;
        }
#endif
        (TS_MVE ? ts_mve_add_flat : add_flat)(p, n, input1, input2, output);
    } else {
        add_generic(p, n, input1, input2, output);
    }
    return TS_OK;
}
