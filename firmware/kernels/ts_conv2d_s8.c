/* ts_conv2d_s8.c - CONV_2D, int8 activations, per-channel int8 filter, int32 bias (see ts_kernels.h).
 *
 * Two paths compute the same int32 accumulators (integer additions in another order, nothing else):
 *
 *  - conv_fast, taken for every shape the generator emits: the taps of an output pixel that fall
 *    inside the input form a rectangle [ky0, ky1) x [kx0, kx1), and with dilation_w == 1 each of its
 *    rows is one contiguous run of (kx1 - kx0) * in_c bytes in both the input and the filter (with
 *    dilation_w > 1, one run of in_c bytes per tap). Runs are reduced as dot products two output
 *    pixels x two output channels at a time (each input byte loaded once for two channels, each
 *    filter byte once for two pixels), with SXTAB16/SMLAD where the DSP extension exists.
 *  - conv_generic, the original loop nest, kept as the reference for anything conv_fast refuses.
 */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

static inline int8_t conv_out(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                              int32_t act_min, int32_t act_max)
{
    return (int8_t)ts_clamp_i32(ts_requantize_nonsat(acc, multiplier, shift) + output_offset, act_min, act_max);
}

/* acc[0..3] += dot products of len bytes: (in0, w0), (in0, w1), (in1, w0), (in1, w1), inputs offset. */
static inline void dot_2x2(const int8_t *in0, const int8_t *in1, const int8_t *w0, const int8_t *w1,
                           int32_t len, int32_t input_offset, int32_t *acc)
{
#if TS_MVE
    ts_mve_dot_2x2(in0, in1, w0, w1, len, input_offset, acc);
    return;
#endif
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
    /* Four input bytes of each pixel and four filter bytes of each channel per step, in 13
     * registers: written out because GCC 12 spills six values per step from the same intrinsics
     * (the four accumulators, four pointers, the bound and the offset leave three temporaries, so
     * each word is loaded twice, once per lane pair: still 26 instructions per 16 MACs). */
    if (len >= 4) {
        /* Every operand in a register named here (TS_REG, ts_simd.h: GCC's unoptimised allocator
         * finds no 13 registers for the block by itself); set just before the block, nothing called
         * in between. */
        const uint32_t off2v = ts_pack2x16(input_offset);
        register int32_t r00 TS_REG("r0") = a00, r01 TS_REG("r1") = a01;
        register int32_t r10 TS_REG("r2") = a10, r11 TS_REG("r3") = a11;
        register const int8_t *p0 TS_REG("r4") = in0, *p1 TS_REG("r5") = in1;
        register const int8_t *q0 TS_REG("r6") = w0, *q1 TS_REG("r8") = w1;
        register const int8_t *const end4 TS_REG("r12") = in0 + (len & ~3);
        register const uint32_t off2 TS_REG("lr") = off2v;
        register uint32_t t0 TS_REG("r9"), t1 TS_REG("r10"), t2 TS_REG("r11");
        __asm__ volatile(
            "1:\n\t"
            "ldr     %[t0], [%[in0]]\n\t"
            "ldr     %[t1], [%[in1]]\n\t"
            "ldr     %[t2], [%[w0]]\n\t"
            "sxtab16 %[t0], %[off2], %[t0]\n\t"
            "sxtab16 %[t1], %[off2], %[t1]\n\t"
            "sxtb16  %[t2], %[t2]\n\t"
            "smlad   %[a00], %[t0], %[t2], %[a00]\n\t"
            "smlad   %[a10], %[t1], %[t2], %[a10]\n\t"
            "ldr     %[t2], [%[w1]]\n\t"
            "sxtb16  %[t2], %[t2]\n\t"
            "smlad   %[a01], %[t0], %[t2], %[a01]\n\t"
            "smlad   %[a11], %[t1], %[t2], %[a11]\n\t"
            "ldr     %[t0], [%[in0]], #4\n\t"
            "ldr     %[t1], [%[in1]], #4\n\t"
            "ldr     %[t2], [%[w0]], #4\n\t"
            "sxtab16 %[t0], %[off2], %[t0], ror #8\n\t"
            "sxtab16 %[t1], %[off2], %[t1], ror #8\n\t"
            "sxtb16  %[t2], %[t2], ror #8\n\t"
            "smlad   %[a00], %[t0], %[t2], %[a00]\n\t"
            "smlad   %[a10], %[t1], %[t2], %[a10]\n\t"
            "ldr     %[t2], [%[w1]], #4\n\t"
            "sxtb16  %[t2], %[t2], ror #8\n\t"
            "smlad   %[a01], %[t0], %[t2], %[a01]\n\t"
            "smlad   %[a11], %[t1], %[t2], %[a11]\n\t"
            "cmp     %[in0], %[end]\n\t"
            "bne     1b\n\t"
            : [a00] "+r"(r00), [a01] "+r"(r01), [a10] "+r"(r10), [a11] "+r"(r11), [in0] "+r"(p0),
              [in1] "+r"(p1), [w0] "+r"(q0), [w1] "+r"(q1), [t0] "=&r"(t0), [t1] "=&r"(t1),
              [t2] "=&r"(t2)
            : [end] "r"(end4), [off2] "r"(off2)
            : "cc", "memory");
        a00 = r00;
        a01 = r01;
        a10 = r10;
        a11 = r11;
        in0 = p0;
        in1 = p1;
        w0 = q0;
        w1 = q1;
        len &= 3;
    }
#elif TS_DSP
    const uint32_t off2 = ts_pack2x16(input_offset);
    const int8_t *const end4 = in0 + (len & ~3);
    while (in0 != end4) {
        const uint32_t x0 = ts_load4(in0), x1 = ts_load4(in1);
        const uint32_t wa = ts_load4(w0), wb = ts_load4(w1);
        const uint32_t x0e = ts_even_off(x0, off2), x1e = ts_even_off(x1, off2);
        const uint32_t x0o = ts_odd_off(x0, off2), x1o = ts_odd_off(x1, off2);
        uint32_t we = ts_even(wa), wo = ts_odd(wa);
        a00 = ts_smlad(x0o, wo, ts_smlad(x0e, we, a00));
        a10 = ts_smlad(x1o, wo, ts_smlad(x1e, we, a10));
        we = ts_even(wb);
        wo = ts_odd(wb);
        a01 = ts_smlad(x0o, wo, ts_smlad(x0e, we, a01));
        a11 = ts_smlad(x1o, wo, ts_smlad(x1e, we, a11));
        in0 += 4;
        in1 += 4;
        w0 += 4;
        w1 += 4;
    }
    len &= 3;
#endif
    for (; len > 0; --len) {
        const int32_t x0 = (int32_t)*in0++ + input_offset, x1 = (int32_t)*in1++ + input_offset;
        const int32_t wa = *w0++, wb = *w1++;
        a00 += wa * x0;
        a01 += wb * x0;
        a10 += wa * x1;
        a11 += wb * x1;
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* acc[0..1] += dot products of len bytes: (in, w0), (in, w1). */
static inline void dot_1x2(const int8_t *in, const int8_t *w0, const int8_t *w1, int32_t len,
                           int32_t input_offset, int32_t *acc)
{
#if TS_MVE
    ts_mve_dot_1x2(in, w0, w1, len, input_offset, acc);
    return;
#endif
    int32_t a0 = acc[0], a1 = acc[1];
#if TS_DSP
    const uint32_t off2 = ts_pack2x16(input_offset);
    const int8_t *const end4 = in + (len & ~3);
    while (in != end4) {
        const uint32_t x = ts_load4(in), wa = ts_load4(w0), wb = ts_load4(w1);
        const uint32_t xe = ts_even_off(x, off2), xo = ts_odd_off(x, off2);
        a0 = ts_smlad(xe, ts_even(wa), a0);
        a0 = ts_smlad(xo, ts_odd(wa), a0);
        a1 = ts_smlad(xe, ts_even(wb), a1);
        a1 = ts_smlad(xo, ts_odd(wb), a1);
        in += 4;
        w0 += 4;
        w1 += 4;
    }
    len &= 3;
#endif
    for (; len > 0; --len) {
        const int32_t x = (int32_t)*in++ + input_offset;
        a0 += (int32_t)*w0++ * x;
        a1 += (int32_t)*w1++ * x;
    }
    acc[0] = a0;
    acc[1] = a1;
}

/* The geometry shared by one or two output pixels of the same output row: the runs to reduce. */
typedef struct {
    int32_t ky0, ky1;      /* filter rows inside the input */
    int32_t runs_per_row;  /* 1 when dilation_w == 1, else kx1 - kx0 */
    int32_t run_len;       /* bytes per run */
    int32_t in_run_step;   /* input bytes from one run of a row to the next (dilation_w > 1) */
    int32_t in_row_step;   /* input bytes from one filter row to the next: dilation_h * in_w * in_c */
    int32_t w_first;       /* filter byte of the first run, relative to the channel's filter */
} conv_runs;

/* Accumulate output channels o and o1 (o1 == o when out_c is odd and o is the last one) of one or
 * two pixels whose first runs start at in0 / in1 (in1 NULL: one pixel). */
static void conv_block(const ts_conv2d_s8_params *p, const conv_runs *r, const int8_t *in0,
                       const int8_t *in1, const int8_t *w_o, const int8_t *w_o1, int32_t *acc)
{
    const int32_t w_row_step = p->filter_w * p->in_c, w_run_step = p->in_c;
    const int32_t input_offset = p->input_offset;
    const int8_t *w0 = w_o + r->w_first, *w1 = w_o1 + r->w_first;
    int32_t ky, k;
    for (ky = r->ky0; ky < r->ky1; ++ky) {
        const int8_t *a = in0, *b = in1, *wa = w0, *wb = w1;
        for (k = 0; k < r->runs_per_row; ++k) {
            if (b != NULL) {
                dot_2x2(a, b, wa, wb, r->run_len, input_offset, acc);
                b += r->in_run_step;
            } else {
                dot_1x2(a, wa, wb, r->run_len, input_offset, acc);
            }
            a += r->in_run_step;
            wa += w_run_step;
            wb += w_run_step;
        }
        in0 += r->in_row_step;
        if (in1 != NULL) {
            in1 += r->in_row_step;
        }
        w0 += w_row_step;
        w1 += w_row_step;
    }
}

#if TS_RQ_ASM
static inline int8_t rq_clamp(int32_t acc, const ts_rq *q, int32_t lo, int32_t hi)
{
    const int32_t v = ts_rq_apply(acc, q);
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* store_block through ts_rq (the layer's accumulators checked against its bound by the caller). */
static TS_NOINLINE void store_block_rq(const ts_conv2d_s8_params *p, const int32_t *acc, int32_t o, int32_t o1,
                                       int8_t *out0, int8_t *out1)
{
    const int32_t lo = p->act_min, hi = p->act_max;
    ts_rq q;
    ts_rq_prepare(p->multiplier[o], p->shift[o], p->output_offset, &q);
    out0[o] = rq_clamp(acc[0], &q, lo, hi);
    if (out1 != NULL) {
        out1[o] = rq_clamp(acc[2], &q, lo, hi);
    }
    if (o1 != o) {
        ts_rq_prepare(p->multiplier[o1], p->shift[o1], p->output_offset, &q);
        out0[o1] = rq_clamp(acc[1], &q, lo, hi);
        if (out1 != NULL) {
            out1[o1] = rq_clamp(acc[3], &q, lo, hi);
        }
    }
}
#endif

/* Requantise and store the block dot_2x2 / dot_1x2 left in acc: channels o and o1 (o1 == o: one
 * channel) of out0 and, unless NULL, out1. */
static inline void store_block(const ts_conv2d_s8_params *p, const int32_t *acc, int32_t o, int32_t o1,
                               int8_t *out0, int8_t *out1, int rq)
{
#if TS_RQ_ASM
    if (rq) {
        store_block_rq(p, acc, o, o1, out0, out1);
        return;
    }
#else
    (void)rq;
#endif
    const int32_t output_offset = p->output_offset, act_min = p->act_min, act_max = p->act_max;
    const int32_t m0 = p->multiplier[o], s0 = p->shift[o];
    out0[o] = conv_out(acc[0], m0, s0, output_offset, act_min, act_max);
    if (out1 != NULL) {
        out1[o] = conv_out(acc[2], m0, s0, output_offset, act_min, act_max);
    }
    if (o1 != o) {
        const int32_t m1 = p->multiplier[o1], s1 = p->shift[o1];
        out0[o1] = conv_out(acc[1], m1, s1, output_offset, act_min, act_max);
        if (out1 != NULL) {
            out1[o1] = conv_out(acc[3], m1, s1, output_offset, act_min, act_max);
        }
    }
}

#if TS_RQ_ASM && !TS_MVE
/* A pixel pair whose windows have every filter column inside the input (DSP cores, ts_rq
 * requantisation; ts_kernels.h CONV_2D, "pairs widened once"): both receptive fields, K <=
 * TS_PAIR_K4 bytes in whole words, widened once on the stack (input_offset added), group g of four
 * k-indices as words (x0 even, x0 odd, x1 even, x1 odd) at word 4 g; then each output channel pair
 * one pass over its K filter bytes (19 instructions per 16 products against the run loop's 26). */
#define TS_PAIR_K4 144 /* 2 * 144 * 2 = 576 bytes of stack: 3x3 filters over up to 16 channels */

/* acc[0..3] += (pixel 0, w0), (pixel 0, w1), (pixel 1, w0), (pixel 1, w1) over `groups` groups. */
static inline void pair_dot(const uint32_t *xs, const int8_t *w0, const int8_t *w1, int32_t groups, int32_t *acc)
{
    /* the 12 operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a00 TS_REG("r0") = acc[0], a01 TS_REG("r1") = acc[1];
    register int32_t a10 TS_REG("r2") = acc[2], a11 TS_REG("r3") = acc[3];
    register const int8_t *p0 TS_REG("r4") = w0, *p1 TS_REG("r5") = w1;
    register const uint32_t *xp TS_REG("r6") = xs, *const end TS_REG("r8") = xs + 4 * groups;
    register uint32_t we TS_REG("r9"), wo TS_REG("r10"), xe TS_REG("r11"), xo TS_REG("r12");
    __asm__ volatile("1:\n\t"
                     "ldrd    %[xe], %[xo], [%[xs]], #16\n\t"
                     "ldr     %[we], [%[w0]], #4\n\t"
                     "sxtb16  %[wo], %[we], ror #8\n\t"
                     "sxtb16  %[we], %[we]\n\t"
                     "smlad   %[a00], %[xe], %[we], %[a00]\n\t"
                     "smlad   %[a00], %[xo], %[wo], %[a00]\n\t"
                     "ldrd    %[xe], %[xo], [%[xs], #-8]\n\t"
                     "smlad   %[a10], %[xe], %[we], %[a10]\n\t"
                     "smlad   %[a10], %[xo], %[wo], %[a10]\n\t"
                     "ldr     %[we], [%[w1]], #4\n\t"
                     "sxtb16  %[wo], %[we], ror #8\n\t"
                     "sxtb16  %[we], %[we]\n\t"
                     "smlad   %[a11], %[xe], %[we], %[a11]\n\t"
                     "smlad   %[a11], %[xo], %[wo], %[a11]\n\t"
                     "ldrd    %[xe], %[xo], [%[xs], #-16]\n\t"
                     "smlad   %[a01], %[xe], %[we], %[a01]\n\t"
                     "smlad   %[a01], %[xo], %[wo], %[a01]\n\t"
                     "cmp     %[xs], %[end]\n\t"
                     "bne     1b\n\t"
                     : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w0] "+r"(p0),
                       [w1] "+r"(p1), [xs] "+r"(xp), [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe),
                       [xo] "=&r"(xo)
                     : [end] "r"(end)
                     : "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

static void store_block_rq(const ts_conv2d_s8_params *p, const int32_t *acc, int32_t o, int32_t o1, int8_t *out0,
                           int8_t *out1);

/* The pair (in0, in1: their first runs) with runs of whole filter rows (r->run_len == fw * in_c, a
 * multiple of 4; rows * run_len <= TS_PAIR_K4, or any with `big`): both fields read into the stack
 * block first (or into `big`, planned scratch of rows * run_len words at least: ts_conv2d_s8_strip). */
static TS_NOINLINE void pair_widened(const ts_conv2d_s8_params *p, const conv_runs *r, const int8_t *in0,
                                     const int8_t *in1, const int8_t *filter, const int32_t *bias, int8_t *out0,
                                     int8_t *out1, uint32_t *big)
{
    const int32_t out_c = p->out_c, filter_size = p->filter_h * p->filter_w * p->in_c;
    const int32_t len = r->run_len, rows = r->ky1 - r->ky0, groups = rows * len / 4;
    const uint32_t off2 = ts_pack2x16(p->input_offset), lo4 = ts_bytes4(p->act_min), hi4 = ts_bytes4(p->act_max);
    uint32_t stack[TS_PAIR_K4];
    uint32_t *const xs = big != NULL ? big : stack;
    uint32_t *x = xs;
    int32_t ky, c, o;
    for (ky = 0; ky < rows; ++ky) {
        const int8_t *a = in0 + (size_t)ky * r->in_row_step, *b = in1 + (size_t)ky * r->in_row_step;
        for (c = 0; c < len; c += 4, x += 4) {
            const uint32_t v0 = ts_load4(a + c), v1 = ts_load4(b + c);
            x[0] = ts_even_off(v0, off2);
            x[1] = ts_odd_off(v0, off2);
            x[2] = ts_even_off(v1, off2);
            x[3] = ts_odd_off(v1, off2);
        }
    }
    for (o = 0; o < out_c; o += 2) {
        const int32_t o1 = o + 1 < out_c ? o + 1 : o;
        const int32_t b0 = bias != NULL ? bias[o] : 0, b1 = bias != NULL ? bias[o1] : 0;
        int32_t acc[4];
        acc[0] = b0;
        acc[1] = b1;
        acc[2] = b0;
        acc[3] = b1;
        pair_dot(xs, filter + (size_t)o * filter_size + r->w_first, filter + (size_t)o1 * filter_size + r->w_first,
                 groups, acc);
        if (o1 == o + 1) { /* channels o, o + 1 of both pixels: two adjacent bytes each */
            ts_rq q0, q1;
            uint32_t v;
            ts_rq_prepare(p->multiplier[o], p->shift[o], p->output_offset, &q0);
            ts_rq_prepare(p->multiplier[o1], p->shift[o1], p->output_offset, &q1);
            v = ts_pack4_clamp(ts_rq_apply(acc[0], &q0), ts_rq_apply(acc[1], &q1), ts_rq_apply(acc[2], &q0),
                               ts_rq_apply(acc[3], &q1), lo4, hi4);
            ts_store2(out0 + o, v);
            ts_store2(out1 + o, v >> 16);
        } else {
            store_block_rq(p, acc, o, o1, out0, out1);
        }
    }
}
#endif

/* All output channels of one or two pixels (out1 NULL: one pixel). */
static void conv_pixels(const ts_conv2d_s8_params *p, const conv_runs *r, const int8_t *in0,
                        const int8_t *in1, const int8_t *filter, const int32_t *bias, int8_t *out0,
                        int8_t *out1, int rq, uint32_t *big)
{
    const int32_t out_c = p->out_c, filter_size = p->filter_h * p->filter_w * p->in_c;
    int32_t o;
    (void)big;
#if TS_MVE
    const ts_mve_runs mr = {r->ky1 - r->ky0, r->runs_per_row, r->run_len, r->in_row_step, r->in_run_step,
                            p->filter_w * p->in_c, p->in_c};
    (void)rq;
    ts_mve_conv_group(p, &mr, in0, in1, filter + r->w_first, bias, out0, out1);
    return;
#endif
#if TS_RQ_ASM && !TS_MVE
    if (rq && in1 != NULL && r->runs_per_row == 1 && r->run_len == p->filter_w * p->in_c && (r->run_len & 3) == 0 &&
        ((r->ky1 - r->ky0) * r->run_len <= TS_PAIR_K4 || big != NULL)) {
        pair_widened(p, r, in0, in1, filter, bias, out0, out1, (r->ky1 - r->ky0) * r->run_len <= TS_PAIR_K4 ? NULL : big);
        return;
    }
#endif
    for (o = 0; o < out_c; o += 2) {
        const int32_t o1 = o + 1 < out_c ? o + 1 : o;
        const int32_t b0 = bias != NULL ? bias[o] : 0, b1 = bias != NULL ? bias[o1] : 0;
        int32_t acc[4];
        acc[0] = b0;
        acc[1] = b1;
        acc[2] = b0;
        acc[3] = b1;
        conv_block(p, r, in0, in1, filter + (size_t)o * filter_size, filter + (size_t)o1 * filter_size,
                   acc);
        store_block(p, acc, o, o1, out0, out1, rq);
    }
}

/* Runs of the output pixel whose window starts at input column x0 (rows [ky0, ky1) given). */
static void runs_for(const ts_conv2d_s8_params *p, int32_t x0, int32_t ky0, int32_t ky1, conv_runs *r,
                     int32_t *kx0)
{
    int32_t kx1;
    ts_tap_range(x0, p->dilation_w, p->filter_w, p->in_w, kx0, &kx1);
    r->ky0 = ky0;
    r->ky1 = ky1;
    r->in_row_step = p->dilation_h * p->in_w * p->in_c;
    r->w_first = (ky0 * p->filter_w + *kx0) * p->in_c;
    if (p->dilation_w == 1) {
        r->runs_per_row = kx1 > *kx0 ? 1 : 0;
        r->run_len = (kx1 - *kx0) * p->in_c;
        r->in_run_step = 0;
    } else {
        r->runs_per_row = kx1 - *kx0;
        r->run_len = p->in_c;
        r->in_run_step = p->dilation_w * p->in_c;
    }
}

static void conv_fast(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int rq, uint32_t *big)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, out_c = p->out_c;
    const int32_t out_w = p->out_w, stride_w = p->stride_w;
    int32_t b, y, x;
#if TS_MVE
    /* Helium: quads of whole-width windows, their outputs staged on the stack (all four fields read
     * first) unless the output shares no byte with the input */
    const size_t in_bytes = (size_t)p->batches * in_h * in_w * in_c;
    const size_t out_bytes = (size_t)p->batches * p->out_h * out_w * out_c;
    const int apart = (uintptr_t)output >= (uintptr_t)(input + in_bytes) ||
                      (uintptr_t)input >= (uintptr_t)(output + out_bytes);
    const int quads = p->dilation_w == 1 && p->filter_w * in_c >= 16 && (apart || out_c <= TS_MVE_CQ_STAGE);
#endif
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            ts_tap_range(y0, p->dilation_h, p->filter_h, in_h, &ky0, &ky1);
            for (x = 0; x < out_w;) {
                const int32_t x0 = x * stride_w - p->pad_left;
                conv_runs r0, r1;
                int32_t kx0, kx0_next;
                const int8_t *in0 = in_b; /* not read when the window misses the input */
                runs_for(p, x0, ky0, ky1, &r0, &kx0);
                const int hits = ky1 > ky0 && r0.runs_per_row > 0;
                if (hits) {
                    in0 += ((size_t)(y0 + ky0 * p->dilation_h) * in_w + (size_t)(x0 + kx0 * p->dilation_w)) *
                           in_c;
                }
#if TS_MVE
                if (quads && hits && kx0 == 0 && x + 3 < out_w && x0 + 3 * stride_w + p->filter_w <= in_w) {
                    (apart ? ts_mve_conv_quad : ts_mve_conv_quad_staged)(p, in0, stride_w * in_c, ky1 - ky0,
                                                                         r0.in_row_step, filter + r0.w_first,
                                                                         bias, output);
                    output += 4 * out_c;
                    x += 4;
                    continue;
                }
#endif
                if (hits && x + 1 < out_w) {
                    runs_for(p, x0 + stride_w, ky0, ky1, &r1, &kx0_next);
                    if (kx0_next == kx0 && r1.run_len == r0.run_len && r1.runs_per_row == r0.runs_per_row) {
                        /* Same taps for both pixels: the second window is the first moved by stride_w. */
                        conv_pixels(p, &r0, in0, in0 + (size_t)stride_w * in_c, filter, bias, output,
                                    output + out_c, rq, big);
                        output += 2 * out_c;
                        x += 2;
                        continue;
                    }
                }
                conv_pixels(p, &r0, in0, NULL, filter, bias, output, NULL, rq, big);
                output += out_c;
                x += 1;
            }
        }
    }
}

/* Patches: bytes of one receptive field, at most TS_CONV_PATCH_BYTES (two of them live on the stack). */
#define TS_CONV_PATCH_BYTES 124

/* The receptive field of the output pixel whose window starts at (y0, x0), as the filter lays it
 * out ([fh][fw][in_c]), taps outside the input replaced by pad = the input zero point: such a tap
 * adds w * (pad + input_offset) = 0, exactly what skipping it adds. Then `round_up` more pad bytes. */
static void build_patch(const ts_conv2d_s8_params *p, const int8_t *in_b, int32_t y0, int32_t x0, int8_t pad,
                        int32_t round_up, int8_t *patch)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fw = p->filter_w;
    int32_t ky, kx, c;
    if (p->dilation_w == 1 && x0 >= 0 && x0 + fw <= in_w && y0 >= 0 &&
        y0 + (p->filter_h - 1) * p->dilation_h < in_h) {
        /* the whole window inside the input: each filter row is one run of fw * in_c bytes, copied
         * a word at a time (unaligned loads and stores), its last len % 4 bytes one by one */
        const int32_t len = fw * in_c;
        const size_t row = (size_t)p->dilation_h * in_w * in_c;
        const int8_t *src = in_b + ((size_t)y0 * in_w + x0) * in_c;
        for (ky = 0; ky < p->filter_h; ++ky, src += row) {
            for (c = 0; c + 4 <= len; c += 4) {
                ts_store4(patch + c, ts_load4(src + c));
            }
            for (; c < len; ++c) {
                patch[c] = src[c];
            }
            patch += len;
        }
        for (c = 0; c < round_up && c < 3; ++c) { /* 0..3 (a word's round-up): no memset call */
            patch[c] = pad;
        }
        return;
    }
    for (ky = 0; ky < p->filter_h; ++ky) {
        const int32_t iy = y0 + ky * p->dilation_h;
        if (iy < 0 || iy >= in_h) {
            for (c = 0; c < fw * in_c; ++c) {
                *patch++ = pad;
            }
            continue;
        }
        for (kx = 0; kx < fw; ++kx) {
            const int32_t ix = x0 + kx * p->dilation_w;
            if (ix < 0 || ix >= in_w) {
                for (c = 0; c < in_c; ++c) {
                    *patch++ = pad;
                }
            } else {
                const int8_t *src = in_b + ((size_t)iy * in_w + ix) * in_c;
                for (c = 0; c < in_c; ++c) {
                    *patch++ = src[c];
                }
            }
        }
    }
    for (c = 0; c < round_up; ++c) {
        *patch++ = pad;
    }
}

/* Small receptive fields (few input channels: the first layer of most vision and audio models):
 * copy the receptive fields of two horizontally adjacent output pixels into two patches, then
 * every output channel pair is one dot_2x2 of K = fh * fw * in_c bytes, whatever the padding. On DSP
 * cores K is rounded up to a whole number of words (pad bytes in the patch, so the extra filter
 * bytes multiply 0) wherever those filter bytes are still inside the filter array. */
static TS_NOINLINE void conv_patches(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int rq)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, out_c = p->out_c, out_w = p->out_w;
    const int32_t k = p->filter_h * p->filter_w * in_c;
    const int32_t k_round = TS_DSP ? (k + 3) & ~3 : k;
    const int8_t pad = (int8_t)-p->input_offset;
    int8_t patch0[TS_CONV_PATCH_BYTES + 4], patch1[TS_CONV_PATCH_BYTES + 4];
    int32_t b, y, x, o;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            for (x = 0; x < out_w; x += 2) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int pair = x + 1 < out_w;
                int8_t *out1 = pair ? output + out_c : NULL;
#if TS_MVE
                (void)build_patch; /* the vector copies below, same bytes */
                ts_mve_build_patch(p, in_b, y0, x0, pad, k_round - k, patch0);
                if (pair) {
                    ts_mve_build_patch(p, in_b, y0, x0 + p->stride_w, pad, k_round - k, patch1);
                }
#else
                build_patch(p, in_b, y0, x0, pad, k_round - k, patch0);
                if (pair) {
                    build_patch(p, in_b, y0, x0 + p->stride_w, pad, k_round - k, patch1);
                }
#endif
                for (o = 0; o < out_c; o += 2) {
                    const int32_t o1 = o + 1 < out_c ? o + 1 : o;
                    /* k_round filter bytes from channel o1's start stay inside [out_c][k]? */
                    const int32_t len = (out_c - o1) * k >= k_round ? k_round : k;
                    int32_t acc[4];
                    acc[0] = bias != NULL ? bias[o] : 0;
                    acc[1] = bias != NULL ? bias[o1] : 0;
                    acc[2] = acc[0];
                    acc[3] = acc[1];
                    if (pair) {
                        dot_2x2(patch0, patch1, filter + (size_t)o * k, filter + (size_t)o1 * k, len,
                                p->input_offset, acc);
                    } else {
                        dot_1x2(patch0, filter + (size_t)o * k, filter + (size_t)o1 * k, len, p->input_offset,
                                acc);
                    }
                    store_block(p, acc, o, o1, output, out1, rq);
                }
                output += pair ? 2 * out_c : out_c;
            }
        }
    }
}

/* Pointwise (1x1, stride 1, no padding): the input is a [pixels][in_c] matrix, paired across rows. */
static void conv_pointwise(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                           const int32_t *bias, int8_t *output, int rq)
{
    const int32_t in_c = p->in_c, out_c = p->out_c, input_offset = p->input_offset;
    const int32_t pixels = p->batches * p->out_h * p->out_w;
    int32_t i, o;
    for (i = 0; i < pixels; i += 2) {
        const int8_t *in0 = input + (size_t)i * in_c;
        int8_t *out1 = i + 1 < pixels ? output + out_c : NULL;
        for (o = 0; o < out_c; o += 2) {
            const int32_t o1 = o + 1 < out_c ? o + 1 : o;
            const int8_t *w0 = filter + (size_t)o * in_c, *w1 = filter + (size_t)o1 * in_c;
            int32_t acc[4];
            acc[0] = bias != NULL ? bias[o] : 0;
            acc[1] = bias != NULL ? bias[o1] : 0;
            acc[2] = acc[0];
            acc[3] = acc[1];
            if (out1 != NULL) {
                dot_2x2(in0, in0 + in_c, w0, w1, in_c, input_offset, acc);
            } else {
                dot_1x2(in0, w0, w1, in_c, input_offset, acc);
            }
            store_block(p, acc, o, o1, output, out1, rq);
        }
        output += out1 != NULL ? 2 * out_c : out_c;
    }
}

#if TS_RQ_ASM
#define PW_CHUNK 16

/* 1x1 CONV_2D without padding (any strides) with ts_rq requantisation (accumulators within its
 * bound): output pixels of a row (with stride 1 over the whole input: all pixels as one row) in chunks of up to PW_CHUNK; per chunk, output channel pairs
 * (o, o+1) in turn, the pair's requantisation constants prepared once, then the chunk's pixel pairs
 * (dot_2x2; a last odd pixel dot_1x2). Pixel (y, x) reads input pixel (y * stride_h, x * stride_w). */
#if defined(__GNUC__) || defined(__clang__)
#define TS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TS_ALWAYS_INLINE inline
#endif

/* rq_table NULL (a constant in each caller below, so each gets its own code): ts_rq_prepare per
 * chunk and channel pair; else the compile-time constants of the staged variant. */
static TS_ALWAYS_INLINE void pointwise_rq_body(const ts_conv2d_s8_params *p, const int8_t *input,
                                               const int8_t *filter, const int32_t *bias, int8_t *output,
                                               const int32_t *rq_table)
{
    const int32_t in_c = p->in_c, out_c = p->out_c, input_offset = p->input_offset;
    const int32_t lo = p->act_min, hi = p->act_max;
    const int32_t px_step = p->stride_w * in_c;
    /* Stride 1 over the whole input: one flat row of batches * h * w pixels, as conv_pointwise. */
    const int flat = p->stride_h == 1 && p->stride_w == 1 && p->out_h == p->in_h && p->out_w == p->in_w;
    const int32_t rows = flat ? 1 : p->batches * p->out_h;
    const int32_t out_w = flat ? p->batches * p->out_h * p->out_w : p->out_w;
    int32_t y, x, j, n, o;
    for (y = 0; y < rows; ++y) {
        {
            const int32_t b = y / p->out_h, yy = y % p->out_h;
            const int8_t *in_row = input + ((size_t)b * p->in_h + (size_t)yy * p->stride_h) * p->in_w * in_c;
            for (x = 0; x < out_w; x += n) {
                const int8_t *in_x = in_row + (size_t)x * px_step;
                n = out_w - x < PW_CHUNK ? out_w - x : PW_CHUNK;
                for (o = 0; o < out_c; o += 2) {
                    const int32_t o1 = o + 1 < out_c ? o + 1 : o;
                    const int8_t *w0 = filter + (size_t)o * in_c, *w1 = filter + (size_t)o1 * in_c;
                    const int32_t b0 = bias != NULL ? bias[o] : 0, b1 = bias != NULL ? bias[o1] : 0;
                    ts_rq q0s, q1s;
                    const ts_rq *q0 = &q0s, *q1 = &q1s;
                    int8_t *out = output + o;
                    if (rq_table != NULL) { /* prepared at compile time: ts_rq_prepare's fields */
                        q0 = (const ts_rq *)(const void *)(rq_table + 4 * o);
                        q1 = (const ts_rq *)(const void *)(rq_table + 4 * o1);
                    } else {
                        ts_rq_prepare(p->multiplier[o], p->shift[o], p->output_offset, &q0s);
                        ts_rq_prepare(p->multiplier[o1], p->shift[o1], p->output_offset, &q1s);
                    }
                    for (j = 0; j < n; j += 2) {
                        const int8_t *in0 = in_x + (size_t)j * px_step;
                        int32_t acc[4];
                        acc[0] = b0;
                        acc[1] = b1;
                        acc[2] = b0;
                        acc[3] = b1;
                        if (j + 1 < n) {
                            dot_2x2(in0, in0 + px_step, w0, w1, in_c, input_offset, acc);
                            out[out_c] = rq_clamp(acc[2], q0, lo, hi);
                            if (o1 != o) {
                                out[out_c + 1] = rq_clamp(acc[3], q1, lo, hi);
                            }
                        } else {
                            dot_1x2(in0, w0, w1, in_c, input_offset, acc);
                        }
                        out[0] = rq_clamp(acc[0], q0, lo, hi);
                        if (o1 != o) {
                            out[1] = rq_clamp(acc[1], q1, lo, hi);
                        }
                        out += 2 * out_c;
                    }
                }
                output += (size_t)n * out_c;
            }
        }
    }
}
static void conv_pointwise_rq(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output)
{
    pointwise_rq_body(p, input, filter, bias, output, NULL);
}

static void conv_pointwise_rq_table(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *rq_table)
{
    pointwise_rq_body(p, input, filter, bias, output, rq_table);
}
#endif

#if TS_DSP && !TS_MVE && (defined(__GNUC__) || defined(__clang__))
#define TS_CONV_WIDE 1
/* The widened path (DSP cores; ts_kernels.h "CONV_2D wide"): output pixels in blocks of TS_WIDE_PX
 * consecutive pixels of the flat order, strips of blocks; each strip's receptive fields first
 * widened to int16 with input_offset added (taps outside the input: 0, exactly what skipping them
 * adds) into a scratch laid out group by group: for k-indices 4g..4g+3, pixel q's two words at word
 * 2 * (TS_WIDE_PX * g + q) of its block: (x[4g], x[4g+2]) then (x[4g+1], x[4g+3]), the lane pairs
 * SXTB16 makes of four filter bytes. Each output channel is then one pass over the filter per block,
 * four filter bytes widened once for the block's six pixels (23 instructions per 24 products
 * against 26 per 16 for the pair path). The scratch is the planned one (ts_conv2d_s8_wide) or, in
 * ts_conv2d_s8, a part of the operator's own output that holds no input bytes, for the leading
 * output rows whose outputs end before it; the remaining rows are a call of the other paths on
 * those rows (params adjusted: in_h, pad_top, out_h). */
#define TS_WIDE_PX 6 /* the asm below assumes it: 2 * 6 words = 48 bytes per group */
/* n output pixels are worth the widened path when its blocks (a short last block computes all six
 * pixels) hold at most 1.6 n pixel slots: not for 1, 2, 3 or 7 pixels. */
static inline int wide_worth(int32_t n)
{
    return n > 0 && 10 * ((n + TS_WIDE_PX - 1) / TS_WIDE_PX * TS_WIDE_PX) <= 16 * n;
}

static inline void wide_put(uint32_t *slot, int32_t j, int32_t v)
{
    int16_t *h = (int16_t *)(void *)(slot + (size_t)(j >> 2) * 2 * TS_WIDE_PX);
    h[((j & 1) << 1) | ((j >> 1) & 1)] = (int16_t)v;
}

static inline int32_t wide_get(const uint32_t *slot, int32_t j)
{
    const int16_t *h = (const int16_t *)(const void *)(slot + (size_t)(j >> 2) * 2 * TS_WIDE_PX);
    return h[((j & 1) << 1) | ((j >> 1) & 1)];
}

/* Pixel slot `slot` of the block scratch: the receptive field of the window at (y0, x0), widened,
 * then zeros up to k4 (present: 0 fills the whole slot, for the unused pixels of a last block). */
static void wide_fill(const ts_conv2d_s8_params *p, const int8_t *input, int32_t y0, int32_t x0, int present,
                      int32_t k4, uint32_t *slot)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fw = p->filter_w, off = p->input_offset;
    const uint32_t off2 = ts_pack2x16(off);
    int32_t ky, kx, c, j = 0;
    if (present && (in_c & 3) != 0 && k4 <= TS_CONV_PATCH_BYTES + 4 && off >= -127 && off <= 128) {
        /* small fields: the int8 patch first (outside taps = the zero point, widened to 0), then
         * whole words of it */
        int8_t patch[TS_CONV_PATCH_BYTES + 4];
        uint32_t *w = slot;
        const int32_t k = p->filter_h * fw * in_c;
        build_patch(p, input, y0, x0, (int8_t)-off, k4 - k, patch);
        for (j = 0; j < k4; j += 4) {
            const uint32_t x = ts_load4(patch + j);
            w[0] = ts_even_off(x, off2);
            w[1] = ts_odd_off(x, off2);
            w += 2 * TS_WIDE_PX;
        }
        return;
    }
    if (!present) {
        for (j = 0; j < k4; j += 4) {
            uint32_t *w = slot + (size_t)(j >> 2) * 2 * TS_WIDE_PX;
            w[0] = 0;
            w[1] = 0;
        }
        return;
    }
    for (ky = 0; ky < p->filter_h; ++ky) {
        const int32_t iy = y0 + ky * p->dilation_h;
        for (kx = 0; kx < fw; ++kx) {
            const int32_t ix = x0 + kx * p->dilation_w;
            const int inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
            const int8_t *src = input + ((size_t)iy * in_w + ix) * in_c; /* read only when inside */
            if ((in_c & 3) == 0) { /* whole groups: one word of input per group */
                uint32_t *w = slot + (size_t)(j >> 2) * 2 * TS_WIDE_PX;
                const int8_t *const end = src + in_c;
                if (inside) {
                    uint32_t e, o;
                    __asm__ volatile("1:\n\t"
                                     "ldr     %[o], [%[src]], #4\n\t"
                                     "sxtab16 %[e], %[off2], %[o]\n\t"
                                     "sxtab16 %[o], %[off2], %[o], ror #8\n\t"
                                     "strd    %[e], %[o], [%[w]], #48\n\t"
                                     "cmp     %[src], %[end]\n\t"
                                     "bne     1b\n\t"
                                     : [src] "+r"(src), [w] "+r"(w), [e] "=&r"(e), [o] "=&r"(o)
                                     : [end] "r"(end), [off2] "r"(off2)
                                     : "cc", "memory");
                } else {
                    for (c = 0; c < in_c; c += 4) {
                        w[0] = 0;
                        w[1] = 0;
                        w += 2 * TS_WIDE_PX;
                    }
                }
                j += in_c;
            } else {
                for (c = 0; c < in_c; ++c) {
                    wide_put(slot, j++, inside ? (int32_t)src[c] + off : 0);
                }
            }
        }
    }
    for (; j < k4; ++j) {
        wide_put(slot, j, 0);
    }
}

/* acc[q] += the dot product of `groups` groups of the block scratch xs (pixel q) and filter w. */
static inline void wide_dot(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t *acc)
{
    if (groups <= 0) {
        return;
    }
    /* the 13 operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0") = acc[0], a1 TS_REG("r1") = acc[1], a2 TS_REG("r2") = acc[2];
    register int32_t a3 TS_REG("r3") = acc[3], a4 TS_REG("r4") = acc[4], a5 TS_REG("r5") = acc[5];
    register const int8_t *wp TS_REG("r6") = w, *const end TS_REG("r8") = w + 4 * groups;
    register const uint32_t *xp TS_REG("r9") = xs;
    register uint32_t we TS_REG("r10"), wo TS_REG("r11"), xe TS_REG("r12"), xo TS_REG("lr");
#define TS_WIDE_PIXEL(a, off)                                                                          \
    "ldrd    %[xe], %[xo], [%[xs], #" off "]\n\t"                                                       \
    "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                       \
    "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
    __asm__ volatile(
        "1:\n\t"
        "ldr     %[wo], [%[w]], #4\n\t"
        "ldrd    %[xe], %[xo], [%[xs]], #48\n\t"
        "sxtb16  %[we], %[wo]\n\t"
        "sxtb16  %[wo], %[wo], ror #8\n\t"
        "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
        "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
        TS_WIDE_PIXEL("a1", "-40") TS_WIDE_PIXEL("a2", "-32") TS_WIDE_PIXEL("a3", "-24")
        TS_WIDE_PIXEL("a4", "-16") TS_WIDE_PIXEL("a5", "-8")
        "cmp     %[w], %[end]\n\t"
        "bne     1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [a4] "+r"(a4), [a5] "+r"(a5),
          [w] "+r"(wp), [xs] "+r"(xp), [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo)
        : [end] "r"(end)
        : "cc", "memory");
#undef TS_WIDE_PIXEL
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    acc[4] = a4;
    acc[5] = a5;
}

/* acc[q] += filter bytes [whole, k) times pixel q's values there (the last channel's tail, where
 * reading whole words would pass the filter's end). */
static TS_NOINLINE void wide_tail(const uint32_t *xb, const int8_t *w, int32_t whole, int32_t k, int32_t *acc)
{
    int32_t j, q;
    for (j = whole; j < k; ++j) {
        for (q = 0; q < TS_WIDE_PX; ++q) {
            acc[q] += (int32_t)w[j] * wide_get(xb + 2 * q, j);
        }
    }
}

/* Four int8 results of one channel (saturated by ts_rq_apply) for four consecutive pixels: packed
 * into one word (BFI), clamped bytewise to [lo, hi] (SSUB8/SEL), stored `stride` bytes apart. */
static inline void wide_store4(int8_t *out, int32_t stride, int32_t v0, int32_t v1, int32_t v2, int32_t v3,
                               uint32_t lo4, uint32_t hi4)
{
    /* the operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t r0 TS_REG("r0") = v0, r1 TS_REG("r1") = v1, r2 TS_REG("r2") = v2, r3 TS_REG("r3") = v3;
    register uint32_t lo TS_REG("r4") = lo4, hi TS_REG("r5") = hi4, t TS_REG("r12");
    register int8_t *o TS_REG("r6") = out;
    register int32_t s TS_REG("r8") = stride;
    __asm__ volatile("bfi     %[v0], %[v1], #8, #8\n\t"
                     "bfi     %[v0], %[v2], #16, #8\n\t"
                     "bfi     %[v0], %[v3], #24, #8\n\t"
                     TS_CLAMP4_ASM("v0", "lo", "hi", "t")
                     "strb    %[v0], [%[out]]\n\t"
                     "lsr     %[v0], %[v0], #8\n\t"
                     "strb    %[v0], [%[out], %[s]]\n\t"
                     "lsr     %[v0], %[v0], #8\n\t"
                     "add     %[t], %[out], %[s], lsl #1\n\t"
                     "strb    %[v0], [%[t]]\n\t"
                     "lsr     %[v0], %[v0], #8\n\t"
                     "strb    %[v0], [%[t], %[s]]"
                     : [v0] "+&r"(r0), [t] "=&r"(t)
                     : [v1] "r"(r1), [v2] "r"(r2), [v3] "r"(r3), [lo] "r"(lo), [hi] "r"(hi), [out] "r"(o),
                       [s] "r"(s)
                     : "cc", "memory");
}

/* ts_rq_apply's six steps on a (wide_block_rq, wide_block3_rq): m in we, l1 in wo, base in xe, rr in xo; end and xs are free */
#define TS_WIDE_RQ(a) TS_RQ_STEPS_ASM(a, "end", a, "we", "wo", "xe", "xo", "xs")

/* What wide_block_rq needs once its loop is done (by then its 13 registers are all taken). */
typedef struct {
    const ts_rq *q;    /* the channel's requantisation */
    uint32_t lo4, hi4; /* act_min, act_max in every byte */
    int8_t *out;       /* the block's first output byte of the channel */
    int32_t stride;    /* bytes from one pixel's output to the next (out_c) */
} wide_out;

/* One whole block of one channel in one asm block: acc[q] = b0 + the dot product of `groups`
 * groups (wide_dot's loop), then each ts_rq_apply's six steps, the six int8 results packed (BFI),
 * clamped bytewise (SSUB8/SEL) and stored stride bytes apart: no accumulator leaves a register. */
static inline void wide_block_rq(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t b0, const wide_out *o)
{
    /* the 13 operands in registers named here (TS_REG, ts_simd.h); `we` brings o in, kept on the
     * stack during the loop */
    register int32_t a0 TS_REG("r0") = b0, a1 TS_REG("r1"), a2 TS_REG("r2"), a3 TS_REG("r3");
    register int32_t a4 TS_REG("r4"), a5 TS_REG("r5");
    register const int8_t *wp TS_REG("r6") = w, *end TS_REG("r8") = w + 4 * groups;
    register const uint32_t *xp TS_REG("r9") = xs;
    register uint32_t we TS_REG("r10") = (uint32_t)(uintptr_t)o, wo TS_REG("r11"), xe TS_REG("r12"),
        xo TS_REG("lr");
#define TS_WIDE_PIXEL(a, off)                                                                          \
    "ldrd    %[xe], %[xo], [%[xs], #" off "]\n\t"                                                       \
    "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                       \
    "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
    __asm__ volatile(
        "str     %[we], [sp, #-8]!\n\t"
        "mov     %[a1], %[a0]\n\t"
        "mov     %[a2], %[a0]\n\t"
        "mov     %[a3], %[a0]\n\t"
        "mov     %[a4], %[a0]\n\t"
        "mov     %[a5], %[a0]\n\t"
        "1:\n\t"
        "ldr     %[wo], [%[w]], #4\n\t"
        "ldrd    %[xe], %[xo], [%[xs]], #48\n\t"
        "sxtb16  %[we], %[wo]\n\t"
        "sxtb16  %[wo], %[wo], ror #8\n\t"
        "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
        "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
        TS_WIDE_PIXEL("a1", "-40") TS_WIDE_PIXEL("a2", "-32") TS_WIDE_PIXEL("a3", "-24")
        TS_WIDE_PIXEL("a4", "-16") TS_WIDE_PIXEL("a5", "-8")
        "cmp     %[w], %[end]\n\t"
        "bne     1b\n\t"
        "ldr     %[w], [sp], #8\n\t" /* o */
        "ldr     %[xs], [%[w]]\n\t"  /* o->q */
        "ldrd    %[we], %[wo], [%[xs]]\n\t"
        "ldrd    %[xe], %[xo], [%[xs], #8]\n\t"
        TS_WIDE_RQ("a0") TS_WIDE_RQ("a1") TS_WIDE_RQ("a2") TS_WIDE_RQ("a3") TS_WIDE_RQ("a4") TS_WIDE_RQ("a5")
        "bfi     %[a0], %[a1], #8, #8\n\t"
        "bfi     %[a0], %[a2], #16, #8\n\t"
        "bfi     %[a0], %[a3], #24, #8\n\t"
        "bfi     %[a4], %[a5], #8, #8\n\t"
        "ldrd    %[we], %[wo], [%[w], #4]\n\t" /* lo4, hi4 */
        TS_CLAMP4_ASM("a0", "we", "wo", "xs")
        TS_CLAMP4_ASM("a4", "we", "wo", "xs")
        "ldrd    %[xe], %[xo], [%[w], #12]\n\t" /* out, stride */
        "strb    %[a0], [%[xe]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xe], %[xo]]\n\t"
        "add     %[xe], %[xe], %[xo], lsl #1\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xe]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xe], %[xo]]\n\t"
        "add     %[xe], %[xe], %[xo], lsl #1\n\t"
        "strb    %[a4], [%[xe]]\n\t"
        "lsr     %[a4], %[a4], #8\n\t"
        "strb    %[a4], [%[xe], %[xo]]"
        : [a0] "+&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [a4] "=&r"(a4), [a5] "=&r"(a5),
          [w] "+&r"(wp), [xs] "+&r"(xp), [end] "+&r"(end), [we] "+&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe),
          [xo] "=&r"(xo)
        :
        : "cc", "memory");
#undef TS_WIDE_PIXEL
}

/* Bytes of block scratch one block of the widened path needs for filters of k bytes. */
static inline size_t wide_block_bytes(int32_t k) { return (size_t)TS_WIDE_PX * (size_t)((k + 3) & ~3) * 2u; }

/* The most blocks a strip holds: more amortise each channel's requantisation set-up over more
 * pixels; fewer leave more of the output for rows the widened path can do. */
#define TS_WIDE_STRIP 8
#define TS_WIDE_STRIP_BYTES 1024 /* and no more strip scratch than this, unless one block is more */

/* The first `pixels` output pixels of the flat order (batches == 1) in strips of up to `strip`
 * blocks: a strip's blocks widened into xs (word-aligned, strip * wide_block_bytes(k), disjoint
 * from the input and from those pixels' output bytes), then each output channel over the strip's
 * blocks. Every input byte a strip reads is read before any of its outputs is written. */
/* acc[0..2] += the dot products of `groups` groups of three pixels with filter w, pixel q's two words
 * of group g at byte group_bytes * g + 8 q of xs (back1, back2: pixels 1 and 2 from past the group):
 * 14 instructions per 12 products. */
#define TS_WIDE_DOT3(name, group_bytes, back1, back2)                                                   \
    static inline void name(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t *acc)          \
    {                                                                                                   \
        int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2];                                                  \
        const int8_t *const end = w + 4 * groups;                                                       \
        uint32_t we, wo, xe, xo;                                                                        \
        if (groups < 1) {                                                                               \
            return;                                                                                     \
        }                                                                                               \
        __asm__ volatile("1:\n\t"                                                                       \
                         "ldr     %[wo], [%[w]], #4\n\t"                                                \
                         "ldrd    %[xe], %[xo], [%[xs]], #" group_bytes "\n\t"                          \
                         "sxtb16  %[we], %[wo]\n\t"                                                     \
                         "sxtb16  %[wo], %[wo], ror #8\n\t"                                             \
                         "smlad   %[a0], %[xe], %[we], %[a0]\n\t"                                       \
                         "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"                                       \
                         "ldrd    %[xe], %[xo], [%[xs], #" back1 "]\n\t"                                \
                         "smlad   %[a1], %[xe], %[we], %[a1]\n\t"                                       \
                         "smlad   %[a1], %[xo], %[wo], %[a1]\n\t"                                       \
                         "ldrd    %[xe], %[xo], [%[xs], #" back2 "]\n\t"                                \
                         "smlad   %[a2], %[xe], %[we], %[a2]\n\t"                                       \
                         "smlad   %[a2], %[xo], %[wo], %[a2]\n\t"                                       \
                         "cmp     %[w], %[end]\n\t"                                                     \
                         "bne     1b\n\t"                                                               \
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [w] "+r"(w), [xs] "+r"(xs),       \
                           [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo)                 \
                         : [end] "r"(end)                                                               \
                         : "cc", "memory");                                                             \
        acc[0] = a0;                                                                                    \
        acc[1] = a1;                                                                                    \
        acc[2] = a2;                                                                                    \
    }
/* the first three pixels of a six-pixel block (pixel q of group g at word 2 * (6 g + q)): a last
 * block of one to three pixels, where the whole block would take 23 instructions per 24 products */
TS_WIDE_DOT3(wide_dot3_of6, "48", "-40", "-32")
/* staged_wide3's blocks of three (pixel q of group g at word 2 * (3 g + q)) */
TS_WIDE_DOT3(wide_dot3, "24", "-16", "-8")

static void wide_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int rq, uint32_t *xs, int32_t pixels, int32_t strip,
                        const int32_t *rq_table)
{
    const int32_t out_w = p->out_w, out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c;
    const int32_t k4 = (k + 3) & ~3, block_words = TS_WIDE_PX * k4 / 2, lo = p->act_min, hi = p->act_max;
    const uint32_t lo4 = ts_bytes4(lo), hi4 = ts_bytes4(hi);
    const int32_t strip_px = strip * TS_WIDE_PX;
    int32_t i, q, o, b;
    wide_out wo;
    wo.lo4 = lo4;
    wo.hi4 = hi4;
    wo.stride = out_c;
    for (i = 0; i < pixels; i += strip_px) {
        const int32_t np = pixels - i < strip_px ? pixels - i : strip_px, nb = (np + TS_WIDE_PX - 1) / TS_WIDE_PX;
        for (q = 0; q < nb * TS_WIDE_PX; ++q) {
            const int32_t y = (i + q) / out_w, x = (i + q) % out_w;
            uint32_t *slot = xs + (size_t)(q / TS_WIDE_PX) * block_words + 2 * (q % TS_WIDE_PX);
            wide_fill(p, input, y * p->stride_h - p->pad_top, x * p->stride_w - p->pad_left, q < np, k4, slot);
        }
        for (o = 0; o < out_c; ++o) {
            const int8_t *w = filter + (size_t)o * k;
            /* k4 filter bytes from channel o's start still inside [out_c][k]? else k / 4 groups + tail */
            const int32_t whole = (int32_t)((size_t)(out_c - o) * k >= (size_t)k4 ? k4 : (k & ~3));
            const int32_t b0 = bias != NULL ? bias[o] : 0;
            const int32_t m = p->multiplier[o], sh = p->shift[o];
            ts_rq r;
            int8_t *out = output + (size_t)i * out_c + o;
            int rq_o = rq;
            if (rq_table != NULL) { /* prepared at compile time (l1 0: this channel by the formula) */
                r = *(const ts_rq *)(const void *)(rq_table + 4 * o);
                rq_o = rq && r.l1 != 0;
            } else {
                ts_rq_prepare(m, sh, p->output_offset, &r);
            }
            wo.q = &r;
            for (b = 0; b < nb; ++b) {
                const uint32_t *xb = xs + (size_t)b * block_words;
                const int32_t n = np - b * TS_WIDE_PX < TS_WIDE_PX ? np - b * TS_WIDE_PX : TS_WIDE_PX;
                int32_t acc[TS_WIDE_PX] = {b0, b0, b0, b0, b0, b0};
                if (rq_o && n == TS_WIDE_PX && whole >= k) { /* the whole block in registers */
                    wo.out = out;
                    wide_block_rq(xb, w, whole >> 2, b0, &wo);
                    out += (size_t)TS_WIDE_PX * out_c;
                    continue;
                }
                if (n <= 3) { /* a last block of one to three pixels: those three only */
                    wide_dot3_of6(xb, w, whole >> 2, acc);
                } else {
                    wide_dot(xb, w, whole >> 2, acc);
                }
                if (whole < k) {
                    wide_tail(xb, w, whole, k, acc);
                }
                if (rq_o && n == TS_WIDE_PX) {
                    wide_store4(out, out_c, ts_rq_apply(acc[0], &r), ts_rq_apply(acc[1], &r), ts_rq_apply(acc[2], &r),
                                ts_rq_apply(acc[3], &r), lo4, hi4);
                    out[4 * (size_t)out_c] = rq_clamp(acc[4], &r, lo, hi);
                    out[5 * (size_t)out_c] = rq_clamp(acc[5], &r, lo, hi);
                } else if (rq_o) {
                    for (q = 0; q < n; ++q) {
                        out[(size_t)q * out_c] = rq_clamp(acc[q], &r, lo, hi);
                    }
                } else {
                    for (q = 0; q < n; ++q) {
                        out[(size_t)q * out_c] = conv_out(acc[q], m, sh, p->output_offset, lo, hi);
                    }
                }
                out += (size_t)TS_WIDE_PX * out_c;
            }
        }
    }
}

/* Where a strip scratch can go in [lo, hi) (the top word-aligned place; up to TS_WIDE_STRIP blocks,
 * at most a quarter of the room) and how many leading output rows then end before it (-1: not even
 * one block fits). */
static int32_t wide_room(uintptr_t o0, uintptr_t lo, uintptr_t hi, size_t block, size_t row, uintptr_t *s,
                         int32_t *strip)
{
    size_t n;
    if (hi < lo || hi - lo < block + 4u) {
        return -1;
    }
    n = (hi - lo) / 4u / block;
    n = n < TS_WIDE_STRIP_BYTES / block ? n : TS_WIDE_STRIP_BYTES / block;
    n = n < 1u ? 1u : (n > TS_WIDE_STRIP ? TS_WIDE_STRIP : n);
    *strip = (int32_t)n;
    *s = (hi - n * block) & ~(uintptr_t)3;
    return (int32_t)((*s - o0) / row);
}

/* The leading output rows the widened path does with its strip scratch inside the output (0: none;
 * batches == 1 only). The scratch must not hold input bytes: it goes at the top of the output's
 * part past the input's end or of its part before the input's start (the whole output when they
 * do not overlap), whichever leaves more rows whose outputs end before it. Overlapping input and
 * output (an in-place plan) are safe: each strip reads all of its receptive fields before writing
 * any output, so wherever the pair path's order allows the overlap, this one does too (ts_kernels.h,
 * CONV_2D "Read/write order"). */
static int32_t conv_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int rq)
{
    const size_t out_bytes = (size_t)p->out_h * p->out_w * p->out_c, in_bytes = (size_t)p->in_h * p->in_w * p->in_c;
    const size_t block = wide_block_bytes(p->filter_h * p->filter_w * p->in_c), row = (size_t)p->out_w * p->out_c;
    const uintptr_t o0 = (uintptr_t)output, o1 = o0 + out_bytes, i0 = (uintptr_t)input, i1 = i0 + in_bytes;
    uintptr_t s = 0, s_low = 0;
    int32_t rows, low, strip = 1, strip_low = 1;
    if (p->batches != 1 || row == 0) {
        return 0;
    }
    if (o0 < i1 && i0 < o1) { /* overlapping: past the input's end, or before its start */
        rows = wide_room(o0, i1 > o0 ? i1 : o0, o1, block, row, &s, &strip);
        low = wide_room(o0, o0, i0 < o1 ? i0 : o1, block, row, &s_low, &strip_low);
        if (low > rows) {
            rows = low;
            s = s_low;
            strip = strip_low;
        }
    } else {
        rows = wide_room(o0, o0, o1, block, row, &s, &strip);
    }
    rows = rows < p->out_h ? rows : p->out_h;
    if (rows <= 0 || !wide_worth(rows * p->out_w)) {
        return 0;
    }
    wide_pixels(p, input, filter, bias, output, rq, (uint32_t *)(void *)s, rows * p->out_w, strip, NULL);
    return rows;
}

/* Small receptive fields on DSP cores (ts_kernels.h, CONV_2D "small receptive fields", DSP):
 * output pixels of the flat order in quads; a quad's patches (build_patch) widened to int16 on the
 * stack as a block of the widened path lays one out, four pixels a group (pixel q's words of group
 * g at word 2 * (4 g + q)), then each output channel one pass over its filter for the four pixels:
 * 17 instructions per 16 products. */
#define TS_QUAD_PX 4
#define TS_QUAD_K4 40 /* the largest rounded K: 4 * 40 * 2 = 320 bytes of stack */

/* acc[0..3] += the dot products of `groups` groups of the quad block xs and filter w. */
static inline void quad_dot(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t *acc)
{
    if (groups <= 0) {
        return;
    }
    /* the 11 operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0") = acc[0], a1 TS_REG("r1") = acc[1], a2 TS_REG("r2") = acc[2];
    register int32_t a3 TS_REG("r3") = acc[3];
    register const int8_t *wp TS_REG("r4") = w, *const end TS_REG("r5") = w + 4 * groups;
    register const uint32_t *xp TS_REG("r6") = xs;
    register uint32_t we TS_REG("r8"), wo TS_REG("r9"), xe TS_REG("r10"), xo TS_REG("r11");
    __asm__ volatile("1:\n\t"
                     "ldr     %[wo], [%[w]], #4\n\t"
                     "ldrd    %[xe], %[xo], [%[xs]], #32\n\t"
                     "sxtb16  %[we], %[wo]\n\t"
                     "sxtb16  %[wo], %[wo], ror #8\n\t"
                     "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
                     "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
                     "ldrd    %[xe], %[xo], [%[xs], #-24]\n\t"
                     "smlad   %[a1], %[xe], %[we], %[a1]\n\t"
                     "smlad   %[a1], %[xo], %[wo], %[a1]\n\t"
                     "ldrd    %[xe], %[xo], [%[xs], #-16]\n\t"
                     "smlad   %[a2], %[xe], %[we], %[a2]\n\t"
                     "smlad   %[a2], %[xo], %[wo], %[a2]\n\t"
                     "ldrd    %[xe], %[xo], [%[xs], #-8]\n\t"
                     "smlad   %[a3], %[xe], %[we], %[a3]\n\t"
                     "smlad   %[a3], %[xo], %[wo], %[a3]\n\t"
                     "cmp     %[w], %[end]\n\t"
                     "bne     1b\n\t"
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [w] "+r"(wp), [xs] "+r"(xp),
                       [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo)
                     : [end] "r"(end)
                     : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Every output channel of one whole quad from the generator's table (p->quads, ts_kernels.h): per
 * channel in one asm loop its bias, `groups` groups of the quad block xs against its widened
 * filter (LDRD of two filter words, then per pixel LDRD + two SMLAD: 13 instructions per 16
 * products), ts_rq, pack, the bytewise clamp and the four bytes stored out_c apart. */
static TS_NOINLINE void quad_channels(const uint32_t *xs, const int32_t *table, int32_t groups, int8_t *out,
                                      int32_t out_c, uint32_t lo4, uint32_t hi4)
{
    const uint32_t *const xbase = xs;
    int32_t channels = out_c;
    /* the block's 13 register operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0"), a1 TS_REG("r1"), a2 TS_REG("r2"), a3 TS_REG("r3");
    register const int32_t *t TS_REG("r4") = table;
    register const uint32_t *xp TS_REG("r5");
    register const uint32_t *const xend TS_REG("r6") = xs + 8 * groups;
    register uint32_t we TS_REG("r8"), wo TS_REG("r9"), xe TS_REG("r10"), xo TS_REG("r11");
    register int8_t *o TS_REG("r12") = out;
    register const int32_t oc TS_REG("lr") = out_c;
#define QUAD_PIXEL(a)                                                                                   \
    "ldrd    %[xe], %[xo], [%[xp]], #8\n\t"                                                              \
    "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                       \
    "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
/* ts_rq_apply's six steps on a, in place: m we, left + 1 wo, base xe, rr xo, xp scratch */
#define QUAD_RQ(a) TS_RQ_STEPS_ASM(a, a, a, "we", "wo", "xe", "xo", "xp")
    if (groups < 1 || out_c < 1) {
        return;
    }
    __asm__ volatile(
        "1:\n\t"
        "ldr     %[a0], [%[t]], #4\n\t"
        "mov     %[a1], %[a0]\n\t"
        "mov     %[a2], %[a0]\n\t"
        "mov     %[a3], %[a0]\n\t"
        "ldr     %[xp], %[xbase]\n\t"
        "2:\n\t"
        "ldrd    %[we], %[wo], [%[t]], #8\n\t"
        QUAD_PIXEL("a0") QUAD_PIXEL("a1") QUAD_PIXEL("a2") QUAD_PIXEL("a3")
        "cmp     %[xp], %[xend]\n\t"
        "bne     2b\n\t"
        "ldrd    %[we], %[wo], [%[t]], #8\n\t"
        "ldrd    %[xe], %[xo], [%[t]], #8\n\t"
        QUAD_RQ("a0") QUAD_RQ("a1") QUAD_RQ("a2") QUAD_RQ("a3")
        "bfi     %[a0], %[a1], #8, #8\n\t"
        "bfi     %[a0], %[a2], #16, #8\n\t"
        "bfi     %[a0], %[a3], #24, #8\n\t"
        "ldr     %[we], %[lo4]\n\t"
        "ldr     %[wo], %[hi4]\n\t"
        TS_CLAMP4_ASM("a0", "we", "wo", "xe")
        "strb    %[a0], [%[o]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[o], %[oc]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[o], %[oc], lsl #1]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "add     %[xp], %[o], %[oc], lsl #1\n\t"
        "strb    %[a0], [%[xp], %[oc]]\n\t"
        "add     %[o], %[o], #1\n\t"
        "ldr     %[xp], %[channels]\n\t"
        "subs    %[xp], %[xp], #1\n\t"
        "str     %[xp], %[channels]\n\t"
        "bne     1b"
        : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [we] "=&r"(we), [wo] "=&r"(wo),
          [xe] "=&r"(xe), [xo] "=&r"(xo), [xp] "=&r"(xp), [t] "+r"(t), [o] "+r"(o), [channels] "+m"(channels)
        : [xend] "r"(xend), [oc] "r"(oc), [xbase] "m"(xbase), [lo4] "m"(lo4), [hi4] "m"(hi4)
        : "cc", "memory");
#undef QUAD_PIXEL
#undef QUAD_RQ
}

/* Value j of pixel q in the quad block xs. */
static inline int32_t quad_get(const uint32_t *xs, int32_t q, int32_t j)
{
    const int16_t *h = (const int16_t *)(const void *)(xs + 8 * (j >> 2) + 2 * q + (j & 1));
    return h[(j >> 1) & 1];
}

/* The small-field layers on DSP cores with ts_rq requantisation, K rounded up to k4 <= TS_QUAD_K4
 * (the caller checks): every quad's receptive fields are read (into the stack block) before any of
 * its outputs is written. */
static TS_NOINLINE void conv_quads(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output)
{
    const int32_t out_w = p->out_w, out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c;
    const int32_t k4 = (k + 3) & ~3, pixels = p->out_h * out_w, lo = p->act_min, hi = p->act_max;
    const uint32_t lo4 = ts_bytes4(lo), hi4 = ts_bytes4(hi), off2 = ts_pack2x16(p->input_offset);
    const int8_t pad = (int8_t)-p->input_offset;
    uint32_t xs[TS_QUAD_K4 / 4 * 2 * TS_QUAD_PX];
    int8_t patch[TS_QUAD_K4 + 4];
    int32_t b, i, q, j, o;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (i = 0; i < pixels; i += TS_QUAD_PX) {
            const int32_t n = pixels - i < TS_QUAD_PX ? pixels - i : TS_QUAD_PX;
            for (q = 0; q < TS_QUAD_PX; ++q) {
                uint32_t *slot = xs + 2 * q;
                if (q < n) {
                    const int32_t y = (i + q) / out_w, x = (i + q) % out_w;
                    build_patch(p, in_b, y * p->stride_h - p->pad_top, x * p->stride_w - p->pad_left, pad, k4 - k,
                                patch);
                    for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
                        const uint32_t v = ts_load4(patch + j);
                        slot[0] = ts_even_off(v, off2);
                        slot[1] = ts_odd_off(v, off2);
                    }
                } else { /* a last quad's missing pixels: computed from zeros, not stored */
                    for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
                        slot[0] = 0;
                        slot[1] = 0;
                    }
                }
            }
            if (p->quads != NULL && n == TS_QUAD_PX) {
                quad_channels(xs, p->quads, k4 / 4, output, out_c, lo4, hi4);
                output += (size_t)n * out_c;
                continue;
            }
            for (o = 0; o < out_c; ++o) {
                const int8_t *w = filter + (size_t)o * k;
                /* k4 filter bytes from channel o's start still inside [out_c][k]? else the tail */
                const int32_t whole = (int32_t)((size_t)(out_c - o) * k >= (size_t)k4 ? k4 : (k & ~3));
                const int32_t b0 = bias != NULL ? bias[o] : 0;
                int32_t acc[TS_QUAD_PX] = {b0, b0, b0, b0};
                ts_rq r;
                quad_dot(xs, w, whole >> 2, acc);
                for (j = whole; j < k; ++j) {
                    for (q = 0; q < TS_QUAD_PX; ++q) {
                        acc[q] += (int32_t)w[j] * quad_get(xs, q, j);
                    }
                }
                ts_rq_prepare(p->multiplier[o], p->shift[o], p->output_offset, &r);
                if (n == TS_QUAD_PX) {
                    wide_store4(output + o, out_c, ts_rq_apply(acc[0], &r), ts_rq_apply(acc[1], &r),
                                ts_rq_apply(acc[2], &r), ts_rq_apply(acc[3], &r), lo4, hi4);
                } else {
                    for (q = 0; q < n; ++q) {
                        output[(size_t)q * out_c + o] = rq_clamp(acc[q], &r, lo, hi);
                    }
                }
            }
            output += (size_t)n * out_c;
        }
    }
}
#else
#define TS_CONV_WIDE 0
#endif

static void conv_generic(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output)
{
    /* Local copies: stores through the int8 output may alias *p, which would force reloads. */
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c;
    const int32_t filter_h = p->filter_h, filter_w = p->filter_w;
    const int32_t dilation_h = p->dilation_h, dilation_w = p->dilation_w;
    const int32_t input_offset = p->input_offset;
    int32_t b, y, x, o, ky, kx, c;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                for (o = 0; o < p->out_c; ++o) {
                    const int8_t *w_o = filter + (size_t)o * filter_h * filter_w * in_c;
                    int32_t acc = 0;
                    for (ky = 0; ky < filter_h; ++ky) {
                        const int32_t iy = y0 + ky * dilation_h;
                        if (iy < 0 || iy >= in_h) {
                            continue; /* zero padding: the tap contributes nothing */
                        }
                        for (kx = 0; kx < filter_w; ++kx) {
                            const int32_t ix = x0 + kx * dilation_w;
                            const int8_t *in_px;
                            const int8_t *w_px;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            in_px = in_b + ((size_t)iy * in_w + ix) * in_c;
                            w_px = w_o + ((size_t)ky * filter_w + kx) * in_c;
                            for (c = 0; c < in_c; ++c) {
                                acc += (int32_t)w_px[c] * ((int32_t)in_px[c] + input_offset);
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[o];
                    }
                    acc = ts_requantize(acc, p->multiplier[o], p->shift[o]) + p->output_offset;
                    *output++ = (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* Set (e.g. -DTS_CONV_GENERIC_ONLY) to run the reference loop for every shape, for comparisons. */
#ifndef TS_CONV_GENERIC_ONLY
#define TS_CONV_GENERIC_ONLY 0
#endif

static int conv_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int wide, int32_t checks, uint32_t *big);

int ts_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                 const int32_t *bias, int8_t *output)
{
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, ts_conv2d_s8_checks(p, bias), NULL);
}

/* What ts_conv2d_s8 checks on every call that no row range changes (ts_kernels.h): bit 0, the fast
 * paths may run (shapes, input offset, multipliers); bit 1, every channel takes ts_rq's steps;
 * bit 2, every channel takes them or is a constant (for the paths that read a compile-time table). */
int32_t ts_conv2d_s8_checks(const ts_conv2d_s8_params *p, const int32_t *bias)
{
    int32_t checks = 0;
    if (!TS_CONV_GENERIC_ONLY && p->in_c >= 1 && p->out_c >= 1 && p->filter_h >= 1 && p->filter_w >= 1 &&
        p->input_offset >= -255 && p->input_offset <= 255 && /* 16-bit lanes: int8 zero points give [-127, 128] */
        ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        checks = 1;
#if TS_RQ_ASM
        const int64_t reach = ts_acc_reach(p->filter_h * p->filter_w * p->in_c, p->input_offset);
        if (ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, reach, TS_RQ_STEPS)) {
            checks |= 2 | 4;
        } else if (ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, reach, TS_RQ_STEPS | TS_RQ_CONST)) {
            checks |= 4;
        }
#endif
    }
    (void)bias; /* read only for the ts_rq bound */
    return checks;
}

int ts_conv2d_s8_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int32_t checks)
{
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, checks, NULL);
}

/* ts_conv2d_s8, the widened path allowed or not (not: for the rows the widened path leaves), with
 * its checks (ts_conv2d_s8_checks) made (big: scratch for the pair path's fields, or NULL). */
static int conv_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int wide, int32_t checks, uint32_t *big)
{
    int rq = 0;
    (void)wide;
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1) {
        return TS_ERR_PARAMS;
    }
    if ((checks & 1) == 0) {
        conv_generic(p, input, filter, bias, output);
        return TS_OK;
    }
#if TS_MVE
    if (p->filter_h == 1 && p->filter_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
        (p->out_h - 1) * p->stride_h < p->in_h && (p->out_w - 1) * p->stride_w < p->in_w) {
        ts_mve_pointwise(p, input, filter, bias, output);
        return TS_OK;
    }
#endif
#if TS_RQ_ASM
    rq = (checks & 2) != 0;
#if TS_CONV_WIDE
    if (wide) {
        const int32_t rows = conv_wide(p, input, filter, bias, output, rq);
        if (rows > 0) {
            /* the other rows: the same layer from output row `rows` on */
            ts_conv2d_s8_params rest = *p;
            const int32_t y0 = rows * p->stride_h - p->pad_top;
            if (rows == p->out_h) {
                return TS_OK;
            }
            rest.out_h = p->out_h - rows;
            if (y0 >= 0) {
                rest.in_h = p->in_h - y0;
                rest.pad_top = 0;
                input += (size_t)y0 * p->in_w * p->in_c;
            } else {
                rest.pad_top = -y0;
            }
            return conv_paths(&rest, input, filter, bias, output + (size_t)rows * p->out_w * p->out_c, 0, checks, big);
        }
    }
#endif
    if (rq && p->filter_h == 1 && p->filter_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
        (p->out_h - 1) * p->stride_h < p->in_h && (p->out_w - 1) * p->stride_w < p->in_w) {
        conv_pointwise_rq(p, input, filter, bias, output);
        return TS_OK;
    }
#endif
    if (p->filter_h == 1 && p->filter_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
        conv_pointwise(p, input, filter, bias, output, rq);
    } else if (p->filter_h * p->filter_w * p->in_c <= TS_CONV_PATCH_BYTES && p->in_c < 8 &&
               p->input_offset >= -127 && p->input_offset <= 128) { /* the pad byte is an int8 */
#if TS_MVE
        if (p->filter_h * p->filter_w * p->in_c <= TS_MVE_PATCH_QUAD) {
            ts_mve_patch_quads(p, input, filter, bias, output);
            return TS_OK;
        }
#endif
#if TS_CONV_WIDE
        if (rq && ((p->filter_h * p->filter_w * p->in_c + 3) & ~3) <= TS_QUAD_K4) {
            conv_quads(p, input, filter, bias, output);
            return TS_OK;
        }
#endif
        conv_patches(p, input, filter, bias, output, rq);
    } else {
        conv_fast(p, input, filter, bias, output, rq, big);
    }
    return TS_OK;
}

#if TS_CONV_WIDE
/* wide_block_rq for a three-pixel block (staged_wide3's layout: pixel q's words of group g at word
 * 2 * (3 g + q)): the dot products, each ts_rq_apply, the three results packed, clamped bytewise
 * and stored stride bytes apart, in one asm block. */
static inline void wide_block3_rq(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t b0, const wide_out *o)
{
    /* the 11 operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0") = b0, a1 TS_REG("r1"), a2 TS_REG("r2");
    register const int8_t *wp TS_REG("r3") = w, *end TS_REG("r4") = w + 4 * groups;
    register const uint32_t *xp TS_REG("r5") = xs;
    register const wide_out *op TS_REG("r6") = o;
    register uint32_t we TS_REG("r8"), wo TS_REG("r9"), xe TS_REG("r10"), xo TS_REG("r11");
    __asm__ volatile(
        "mov     %[a1], %[a0]\n\t"
        "mov     %[a2], %[a0]\n\t"
        "1:\n\t"
        "ldr     %[wo], [%[w]], #4\n\t"
        "ldrd    %[xe], %[xo], [%[xs]], #24\n\t"
        "sxtb16  %[we], %[wo]\n\t"
        "sxtb16  %[wo], %[wo], ror #8\n\t"
        "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
        "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
        "ldrd    %[xe], %[xo], [%[xs], #-16]\n\t"
        "smlad   %[a1], %[xe], %[we], %[a1]\n\t"
        "smlad   %[a1], %[xo], %[wo], %[a1]\n\t"
        "ldrd    %[xe], %[xo], [%[xs], #-8]\n\t"
        "smlad   %[a2], %[xe], %[we], %[a2]\n\t"
        "smlad   %[a2], %[xo], %[wo], %[a2]\n\t"
        "cmp     %[w], %[end]\n\t"
        "bne     1b\n\t"
        "ldr     %[xs], [%[o]]\n\t" /* o->q */
        "ldrd    %[we], %[wo], [%[xs]]\n\t"
        "ldrd    %[xe], %[xo], [%[xs], #8]\n\t"
        TS_WIDE_RQ("a0") TS_WIDE_RQ("a1") TS_WIDE_RQ("a2")
        "bfi     %[a0], %[a1], #8, #8\n\t"
        "bfi     %[a0], %[a2], #16, #8\n\t"
        "ldrd    %[we], %[wo], [%[o], #4]\n\t" /* lo4, hi4 */
        TS_CLAMP4_ASM("a0", "we", "wo", "xs")
        "ldrd    %[xe], %[xo], [%[o], #12]\n\t" /* out, stride */
        "strb    %[a0], [%[xe]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xe], %[xo]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xe], %[xo], lsl #1]"
        : [a0] "+&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [w] "+&r"(wp), [xs] "+&r"(xp), [end] "+&r"(end),
          [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo)
        : [o] "r"(op)
        : "cc", "memory");
}

/* The staged variant widened in place (1x1, stride 1, in_c a multiple of 4, in_c <= out_c, ts_rq):
 * pixels of the flat order in threes; each three's input bytes are widened into scratch (as the
 * widened path lays a block out, three pixels per group: 6 * in_c bytes), and only then are its
 * outputs computed from there and written straight to their bytes: the order of chunks of three. */
static void staged_wide3(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, uint32_t *xs, int32_t pixels, const int32_t *rq_table)
{
    const int32_t in_c = p->in_c, out_c = p->out_c, groups = in_c / 4, lo = p->act_min, hi = p->act_max;
    const uint32_t off2 = ts_pack2x16(p->input_offset), lo4 = ts_bytes4(lo), hi4 = ts_bytes4(hi);
    int32_t i, q, o, c;
    wide_out wo;
    wo.lo4 = lo4;
    wo.hi4 = hi4;
    wo.stride = out_c;
    for (i = 0; i < pixels; i += 3) {
        const int32_t n = pixels - i < 3 ? pixels - i : 3;
        for (q = 0; q < 3; ++q) {
            const int8_t *src = input + (size_t)(i + q) * in_c;
            uint32_t *w = xs + 2 * q;
            if (q < n) {
                for (c = 0; c < in_c; c += 4, w += 6) {
                    const uint32_t x = ts_load4(src + c);
                    w[0] = ts_even_off(x, off2);
                    w[1] = ts_odd_off(x, off2);
                }
            } else {
                for (c = 0; c < in_c; c += 4, w += 6) {
                    w[0] = 0u;
                    w[1] = 0u;
                }
            }
        }
        for (o = 0; o < out_c; ++o) {
            const int32_t b0 = bias != NULL ? bias[o] : 0;
            int32_t acc[3] = {b0, b0, b0};
            ts_rq r;
            int8_t *out = output + (size_t)i * out_c + o;
            if (rq_table != NULL) {
                r = *(const ts_rq *)(const void *)(rq_table + 4 * o);
            } else {
                ts_rq_prepare(p->multiplier[o], p->shift[o], p->output_offset, &r);
            }
            if (n == 3) { /* the whole block in registers */
                wo.q = &r;
                wo.out = out;
                wide_block3_rq(xs, filter + (size_t)o * in_c, groups, b0, &wo);
                continue;
            }
            wide_dot3(xs, filter + (size_t)o * in_c, groups, acc); /* the last one or two pixels */
            for (q = 0; q < n; ++q) {
                out[(size_t)q * out_c] = rq_clamp(acc[q], &r, lo, hi);
            }
        }
    }
}
#endif

#if TS_CONV_WIDE
/* Whether output pixel k may be written right after input pixel k is read, for every k: the output
 * lies apart from the input, or each output pixel ends at or before the next input pixel starts
 * (linear in k, so the first and the last pixel decide). */
static int staged_one_by_one(const int8_t *input, const int8_t *output, int32_t pixels, int32_t in_c, int32_t out_c)
{
    const uintptr_t i0 = (uintptr_t)input, o0 = (uintptr_t)output;
    const uintptr_t i1 = i0 + (size_t)pixels * in_c, o1 = o0 + (size_t)pixels * out_c;
    if (o1 <= i0 || i1 <= o0 || pixels < 2) {
        return 1;
    }
    /* output pixel m - 1 ends at o0 + m * out_c, input pixel m starts at i0 + m * in_c, m = 1 .. pixels - 1 */
    return o0 + (size_t)out_c <= i0 + (size_t)in_c &&
           o0 + (size_t)(pixels - 1) * out_c <= i0 + (size_t)(pixels - 1) * in_c;
}

/* acc[0..3] += the dot products of channels o..o+3 (w at channel o's filter, rows k bytes apart) with
 * the one widened pixel xs (`groups` groups of four: [x_4g | x_4g+2], [x_4g+1 | x_4g+3]): per group
 * one LDRD of the pixel, then per channel LDR + two SXTB16 + two SMLAD; two groups a loop turn,
 * 22 instructions per 16 products. */
static TS_NOINLINE void wide_dot1x4(const uint32_t *xs, const int8_t *w, int32_t k, int32_t groups, int32_t *acc)
{
    /* the block's 13 register operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0") = acc[0], a1 TS_REG("r1") = acc[1], a2 TS_REG("r2") = acc[2];
    register int32_t a3 TS_REG("r3") = acc[3];
    register const uint32_t *xp TS_REG("r4") = xs;
    register const uint32_t *end TS_REG("r5") = xs + 2 * (groups & ~1);
    register const int8_t *w0 TS_REG("r6") = w, *w2 TS_REG("r8") = w + 2 * k;
    register const int32_t kk TS_REG("r9") = k;
    register uint32_t xe TS_REG("r10"), xo TS_REG("r11"), t TS_REG("r12"), u TS_REG("lr");
#define DOT1_CHANNEL(a, load)                                                                          \
    load "sxtb16  %[t], %[u]\n\t"                                                                        \
         "smlad   %[" a "], %[xe], %[t], %[" a "]\n\t"                                                   \
         "sxtb16  %[u], %[u], ror #8\n\t"                                                                \
         "smlad   %[" a "], %[xo], %[u], %[" a "]\n\t"
#define DOT1_GROUP                                                                                      \
    "ldrd    %[xe], %[xo], [%[xp]], #8\n\t" DOT1_CHANNEL("a1", "ldr     %[u], [%[w0], %[kk]]\n\t")           \
        DOT1_CHANNEL("a0", "ldr     %[u], [%[w0]], #4\n\t") DOT1_CHANNEL("a3", "ldr     %[u], [%[w2], %[kk]]\n\t") \
            DOT1_CHANNEL("a2", "ldr     %[u], [%[w2]], #4\n\t")
#define DOT1_OPERANDS                                                                                   \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xp] "+r"(xp), [w0] "+r"(w0), [w2] "+r"(w2), \
      [xe] "=&r"(xe), [xo] "=&r"(xo), [t] "=&r"(t), [u] "=&r"(u)                                          \
    : [end] "r"(end), [kk] "r"(kk)                                                                       \
    : "cc", "memory"
    if (groups >= 2) {
        __asm__ volatile("1:\n\t" DOT1_GROUP DOT1_GROUP "cmp     %[xp], %[end]\n\t"
                                                        "bne     1b" DOT1_OPERANDS);
    }
    if ((groups & 1) != 0) {
        __asm__ volatile(DOT1_GROUP DOT1_OPERANDS);
    }
#undef DOT1_CHANNEL
#undef DOT1_GROUP
#undef DOT1_OPERANDS
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* The staged pointwise variant one pixel at a time where the scratch holds one widened pixel and
 * no more (in_c a multiple of 4, the ts_rq table given): pixel k widened into xs, then its output
 * written straight to its bytes, channels four at a time (wide_dot1x4, ts_rq4_store), the last
 * out_c % 4 one at a time. The caller checks that output pixel k ends at or before input pixel
 * k + 1 starts (or the two tensors are apart), so writing it before reading that pixel is safe. */
static void staged_wide1(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, uint32_t *xs, int32_t pixels, const int32_t *rq_table)
{
    const int32_t in_c = p->in_c, out_c = p->out_c, groups = in_c / 4, o4 = out_c & ~3;
    const uint32_t off2 = ts_pack2x16(p->input_offset);
    const ts_rq *q = (const ts_rq *)(const void *)rq_table;
    uint32_t lim[2];
    int32_t i, o, c;
    lim[0] = ts_bytes4(p->act_min);
    lim[1] = ts_bytes4(p->act_max);
    for (i = 0; i < pixels; ++i) {
        const int8_t *src = input + (size_t)i * in_c;
        int8_t *out = output + (size_t)i * out_c;
        for (c = 0; c < in_c; c += 4) {
            const uint32_t x = ts_load4(src + c);
            xs[c / 2] = ts_even_off(x, off2);
            xs[c / 2 + 1] = ts_odd_off(x, off2);
        }
        for (o = 0; o < o4; o += 4) {
            int32_t acc[4] = {0, 0, 0, 0};
            if (bias != NULL) {
                acc[0] = bias[o];
                acc[1] = bias[o + 1];
                acc[2] = bias[o + 2];
                acc[3] = bias[o + 3];
            }
            wide_dot1x4(xs, filter + (size_t)o * in_c, in_c, groups, acc);
            ts_rq4_store(out + o, acc[0], acc[1], acc[2], acc[3], q + o, lim);
        }
        for (; o < out_c; ++o) {
            const int8_t *w = filter + (size_t)o * in_c;
            int32_t acc = bias != NULL ? bias[o] : 0;
            for (c = 0; c < in_c; c += 4) {
                const uint32_t v = ts_load4(w + c);
                acc = ts_smlad(xs[c / 2], ts_even(v), acc);
                acc = ts_smlad(xs[c / 2 + 1], ts_odd(v), acc);
            }
            out[o] = rq_clamp(acc, &q[o], p->act_min, p->act_max);
        }
    }
}

#endif

/* The staged in-place pointwise variant (see ts_kernels.h, "CONV_2D staged"): chunks of `chunk`
 * pixels of the flat order, each computed into `scratch` by the path ts_conv2d_s8 takes for the
 * whole layer, then copied to the output. */
int ts_conv2d_s8_staged(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                        const int32_t *rq_table)
{
    const int32_t pixels = p->batches * p->out_h * p->out_w, in_c = p->in_c, out_c = p->out_c;
    ts_conv2d_s8_params sub = *p;
    int32_t k, n;
    int mode = 0; /* 0 reference loop, 1 pointwise, 2 pointwise with ts_rq */
    if (p->filter_h != 1 || p->filter_w != 1 || p->stride_h != 1 || p->stride_w != 1 || p->pad_top != 0 ||
        p->pad_left != 0 || p->out_h != p->in_h || p->out_w != p->in_w || chunk < 1 || p->in_c < 1 ||
        p->out_c < 1 || p->dilation_h < 1 || p->dilation_w < 1) {
        return TS_ERR_PARAMS;
    }
    if (!TS_CONV_GENERIC_ONLY && p->input_offset >= -255 && p->input_offset <= 255 &&
        ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        mode = 1;
#if TS_RQ_ASM
        if (ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, ts_acc_reach(p->in_c, p->input_offset),
                     rq_table != NULL ? TS_RQ_STEPS | TS_RQ_CONST : TS_RQ_STEPS)) {
            mode = 2;
        }
#endif
    }
    (void)rq_table;
    sub.batches = 1;
    sub.in_h = sub.out_h = 1;
#if TS_CONV_WIDE
    if (mode == 2 && (in_c & 3) == 0 && in_c <= out_c && (size_t)chunk * out_c >= (size_t)6 * in_c &&
        ((uintptr_t)scratch & 3u) == 0) {
        staged_wide3(p, input, filter, bias, output, (uint32_t *)(void *)scratch, pixels, rq_table);
        return TS_OK;
    }
    if (mode == 2 && rq_table != NULL && (in_c & 3) == 0 && (size_t)chunk * out_c >= (size_t)2 * in_c &&
        ((uintptr_t)scratch & 3u) == 0 && staged_one_by_one(input, output, pixels, in_c, out_c)) {
        staged_wide1(p, input, filter, bias, output, (uint32_t *)(void *)scratch, pixels, rq_table);
        return TS_OK;
    }
#endif
#if TS_MVE
    if (mode != 0 && in_c <= out_c) {
        /* Helium, in_c <= out_c: groups of up to 16 pixels (whole quads where the scratch holds four
         * pixels' input), each group's input bytes copied into scratch before any of its outputs is
         * written, then the 1x1 Helium path from the copy straight to the output */
        const size_t fit = (size_t)chunk * out_c / (size_t)in_c; /* >= chunk >= 1 */
        const int32_t g = fit >= 16 ? 16 : (fit >= 4 ? (int32_t)fit & ~3 : (int32_t)fit);
        for (k = 0; k < pixels; k += n) {
            n = pixels - k < g ? pixels - k : g;
            sub.in_w = sub.out_w = n;
            ts_mve_copy(scratch, input + (size_t)k * in_c, n * in_c);
            ts_mve_pointwise(&sub, scratch, filter, bias, output + (size_t)k * out_c);
        }
        return TS_OK;
    }
    if (mode != 0) { /* Helium: each chunk through the 1x1 Helium path (the same arithmetic) */
        for (k = 0; k < pixels; k += n) {
            n = pixels - k < chunk ? pixels - k : chunk;
            sub.in_w = sub.out_w = n;
            ts_mve_pointwise(&sub, input + (size_t)k * in_c, filter, bias, scratch);
            ts_copy_bytes(output + (size_t)k * out_c, scratch, (size_t)n * out_c);
        }
        return TS_OK;
    }
#endif
    for (k = 0; k < pixels; k += n) {
        n = pixels - k < chunk ? pixels - k : chunk;
        sub.in_w = sub.out_w = n;
        if (mode == 0) {
            conv_generic(&sub, input + (size_t)k * in_c, filter, bias, scratch);
#if TS_RQ_ASM
        } else if (mode == 2) {
            if (rq_table != NULL) {
                conv_pointwise_rq_table(&sub, input + (size_t)k * in_c, filter, bias, scratch, rq_table);
            } else {
                conv_pointwise_rq(&sub, input + (size_t)k * in_c, filter, bias, scratch);
            }
#endif
        } else {
            conv_pointwise(&sub, input + (size_t)k * in_c, filter, bias, scratch, 0);
        }
        ts_copy_bytes(output + (size_t)k * out_c, scratch, (size_t)n * out_c);
    }
    return TS_OK;
}

/* The widened variant (see ts_kernels.h, "CONV_2D wide"): every output pixel through the widened
 * path with the planned strip scratch; anything it does not take (no DSP, shapes or quantisation
 * the fast paths refuse, a misaligned scratch) runs ts_conv2d_s8 and leaves the scratch alone. */
int ts_conv2d_s8_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int8_t *scratch, int32_t blocks,
                      const int32_t *rq_table)
{
    return ts_conv2d_s8_wide_checked(p, input, filter, bias, output, scratch, blocks, rq_table,
                                     ts_conv2d_s8_checks(p, bias));
}

/* ts_conv2d_s8_wide with ts_conv2d_s8's checks made once (ts_kernels.h). */
int ts_conv2d_s8_wide_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *scratch, int32_t blocks,
                              const int32_t *rq_table, int32_t checks)
{
#if TS_CONV_WIDE
    if ((checks & 1) != 0 && blocks >= 1 && ((uintptr_t)scratch & 3u) == 0 && wide_worth(p->out_h * p->out_w) &&
        p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1 && p->dilation_w >= 1) {
        /* with a table, each channel as the table says (ts_rq's steps, a constant, or l1 0: the
         * formula); without one, ts_rq_prepare's steps where every channel takes them */
        const int rq = rq_table != NULL || (checks & 2) != 0;
        const size_t in_b = (size_t)p->in_h * p->in_w * p->in_c, out_b = (size_t)p->out_h * p->out_w * p->out_c;
        int32_t b;
        for (b = 0; b < p->batches; ++b) {
            wide_pixels(p, input + b * in_b, filter, bias, output + b * out_b, rq, (uint32_t *)(void *)scratch,
                        p->out_h * p->out_w, blocks, rq_table);
        }
        return TS_OK;
    }
#endif
    (void)scratch;
    (void)blocks;
    (void)rq_table;
    return ts_conv2d_s8_checked(p, input, filter, bias, output, checks);
}

/* A streamed stage's CONV_2D member on its rows with `room` bytes of strip scratch (ts_kernels.h,
 * "Streamed pairs"): the widened path with as many blocks as fit (at most TS_WIDE_STRIP, and
 * TS_WIDE_STRIP_BYTES unless one block is more), else the pair path with its two fields in the
 * scratch where they exceed the stack block, else ts_conv2d_s8_checked. */
int ts_conv2d_s8_strip(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int8_t *scratch, int32_t room,
                       const int32_t *rq_table, int32_t checks)
{
    const int32_t k4 = (p->filter_h * p->filter_w * p->in_c + 3) & ~3;
    uint32_t *big = NULL;
#if TS_CONV_WIDE
    const int32_t block = (int32_t)wide_block_bytes(k4);
    if (room >= block) {
        int32_t blocks = TS_WIDE_STRIP_BYTES / block;
        blocks = blocks < 1 ? 1 : (blocks > TS_WIDE_STRIP ? TS_WIDE_STRIP : blocks);
        blocks = room / block < blocks ? room / block : blocks;
        return ts_conv2d_s8_wide_checked(p, input, filter, bias, output, scratch, blocks, rq_table, checks);
    }
#endif
#if TS_RQ_ASM && !TS_MVE
    if (k4 > TS_PAIR_K4 && room >= 4 * k4 && ((uintptr_t)scratch & 3u) == 0) {
        big = (uint32_t *)(void *)scratch;
    }
#endif
    (void)k4;
    (void)scratch;
    (void)room;
    (void)rq_table;
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, checks, big);
}
