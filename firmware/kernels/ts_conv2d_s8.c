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
    /* the quads' table with the filter sums folded in, made once for the call (ts_mve_layer_table)
     * where it pays: three or more quads whose windows use every filter row (a streamed chain's
     * call of one short row makes none) */
    int32_t layer_tab[3 * TS_MVE_LAYER_CH];
    const int32_t *tab = NULL;
    if (quads && out_c <= TS_MVE_LAYER_CH && ts_mve_full_quads(p) >= 3) {
        ts_mve_layer_table(layer_tab, p, filter, bias);
        tab = layer_tab;
    }
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
                                                                         bias, output, tab);
                    output += 4 * out_c;
                    x += 4;
                    continue;
                }
                if (quads && apart && hits && kx0 == 0 && x >= 1 && x0 >= stride_w && x + 2 < out_w &&
                    x0 + 2 * stride_w + p->filter_w <= in_w) {
                    /* three whole windows left in the row (the quad test above failed: the fourth
                     * leaves the input or the row): the quad one pixel back, pixel x - 1 computed
                     * again and its bytes written again with the same values (the output apart from
                     * the input); two left stay a pair (measured no slower than a quad) */
                    ts_mve_conv_quad(p, in0 - (size_t)stride_w * in_c, stride_w * in_c, ky1 - ky0, r0.in_row_step,
                                     filter + r0.w_first, bias, output - out_c, tab);
                    output += 3 * out_c;
                    x += 3;
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
#define TS_QUAD_PX 4 /* quad blocks: 2 * 4 words = 32 bytes per group (quad_widen) */
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

/* `groups` groups of a pixel slot from w on, in blocks of px pixels (a group's two words 2 * px
 * words after the last's): zeros. */
static inline uint32_t *slot_zero(uint32_t *w, int32_t groups, int32_t px)
{
    for (; groups > 0; --groups) {
        w[0] = 0;
        w[1] = 0;
        w += 2 * px;
    }
    return w;
}

/* `groups` groups of a pixel's slot from w on: zeros (taps outside the input). */
static inline uint32_t *wide_zero(uint32_t *w, int32_t groups) { return slot_zero(w, groups, TS_WIDE_PX); }

/* The bytes [src, end) (whole words) widened into a pixel's slot from w on, a word a group (two
 * a pass after an odd first one). */
static inline uint32_t *wide_run(uint32_t *w, const int8_t *src, const int8_t *end, uint32_t off2)
{
    uint32_t e, o, e1, o1;
    if (((end - src) & 4) != 0) {
        const uint32_t v = ts_load4(src);
        w[0] = ts_even_off(v, off2);
        w[1] = ts_odd_off(v, off2);
        w += 2 * TS_WIDE_PX;
        src += 4;
        if (src == end) {
            return w;
        }
    }
    __asm__ volatile("1:\n\t"
                     "ldr     %[o], [%[src]], #4\n\t"
                     "ldr     %[o1], [%[src]], #4\n\t"
                     "sxtab16 %[e], %[off2], %[o]\n\t"
                     "sxtab16 %[o], %[off2], %[o], ror #8\n\t"
                     "sxtab16 %[e1], %[off2], %[o1]\n\t"
                     "sxtab16 %[o1], %[off2], %[o1], ror #8\n\t"
                     "strd    %[e], %[o], [%[w]], #48\n\t"
                     "strd    %[e1], %[o1], [%[w]], #48\n\t"
                     "cmp     %[src], %[end]\n\t"
                     "bne     1b\n\t"
                     : [src] "+r"(src), [w] "+r"(w), [e] "=&r"(e), [o] "=&r"(o), [e1] "=&r"(e1), [o1] "=&r"(o1)
                     : [end] "r"(end), [off2] "r"(off2)
                     : "cc", "memory");
    return w;
}

/* The bytes [src, end) (whole words) widened into a quad slot from w on, a word a group. */
static inline uint32_t *quad_widen(uint32_t *w, const int8_t *src, const int8_t *end, uint32_t off2)
{
    uint32_t e, o;
    __asm__ volatile("1:\n\t"
                     "ldr     %[o], [%[src]], #4\n\t"
                     "sxtab16 %[e], %[off2], %[o]\n\t"
                     "sxtab16 %[o], %[off2], %[o], ror #8\n\t"
                     "strd    %[e], %[o], [%[w]], #32\n\t"
                     "cmp     %[src], %[end]\n\t"
                     "bne     1b\n\t"
                     : [src] "+r"(src), [w] "+r"(w), [e] "=&r"(e), [o] "=&r"(o)
                     : [end] "r"(end), [off2] "r"(off2)
                     : "cc", "memory");
    return w;
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
        wide_zero(slot, k4 >> 2);
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
                if (inside) {
                    wide_run(w, src, src + in_c, off2);
                } else {
                    wide_zero(w, in_c >> 2);
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

/* ts_rq_apply's six steps on a (wide_block3_rq): m in we, l1 in wo, base in xe, rr in xo; end and xs are free */
#define TS_WIDE_RQ(a) TS_RQ_STEPS_ASM(a, "end", a, "we", "wo", "xe", "xo", "xs")

/* What wide_block3_rq needs once its loop is done (by then its registers are all taken). */
typedef struct {
    const ts_rq *q;    /* the channel's requantisation */
    uint32_t lo4, hi4; /* act_min, act_max in every byte */
    int8_t *out;       /* the block's first output byte of the channel */
    int32_t stride;    /* bytes from one pixel's output to the next (out_c) */
} wide_out;

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

/* What wide_channels reads (and advances): one strip's full blocks, output channels from `w`/`rq`
 * on, each channel's fields read through pointers that move on by one channel at its end. */
typedef struct {
    int32_t b0;             /*  0: the channel's bias (set per channel) */
    const int8_t *wc;       /*  4: the channel's filter (set per channel) */
    int8_t *ob;             /*  8: the block's first output byte (advances per block) */
    int32_t stride;         /* 12: out_c */
    uint32_t lo4, hi4;      /* 16, 20: act_min, act_max in every byte */
    const uint32_t *xs_end; /* 24: past the strip's last full block */
    const int32_t *rqc;     /* 28: the channel's ts_rq fields (set per channel) */
    const int8_t *w;        /* 32: the next channel's filter, */
    const int32_t *rq;      /* 36: its ts_rq fields (m, l1, base, rr), */
    const int32_t *bias;    /* 40: its bias, */
    int8_t *out;            /* 44: its output byte at the strip's first pixel */
    int32_t k;              /* 48: bytes from one channel's filter to the next */
    int32_t bias_step;      /* 52: 4, or 0 (no bias: `bias` points at a zero) */
    const uint32_t *xs;     /* 56: the strip's first block */
    int32_t k4;             /* 60: filter bytes a block reads (whole groups, k4 >= 4) */
    const int32_t *rq_end;  /* 64: the rq past the last channel to do */
    /* set by wide_channels on its first call with this job (entry 0 until then): where its loop
     * starts (68), its requantisation for channels with a right shift (72) and without (76), with
     * or without the clamp, and the channel's (80) */
    uint32_t entry, rq_right, rq_none, rq_this;
    /* a last block of part_n (1 to 5; 0: none) pixels after the full ones: computed like a full
     * block (six pixels from 4 up, else three by their own loop), its six results stored with
     * stride 1 into buf, then part_n of them copied to part_out, stride_c bytes apart */
    int32_t part_n;         /* 84 (negative while the channel's last block is under way) */
    int32_t block;          /* 88: bytes of block scratch a block takes (12 * k4) */
    int32_t stride_c;       /* 92: out_c */
    int8_t *part_out;       /* 96 */
    int8_t buf[8];          /* 100 */
    const uint32_t *xs_full; /* 108: past the strip's last full block (xs_end's value between) */
} wide_job;

/* wide_channels' asm reads the job at these byte offsets (32-bit pointers: Cortex-M); an array of
 * size -1 where one is off stops the compile (C99 has no _Static_assert) */
#define TS_WIDE_JOB_AT(field, at) typedef char wide_job_##field##_at[offsetof(wide_job, field) == (at) ? 1 : -1]
TS_WIDE_JOB_AT(b0, 0);
TS_WIDE_JOB_AT(wc, 4);
TS_WIDE_JOB_AT(ob, 8);
TS_WIDE_JOB_AT(stride, 12);
TS_WIDE_JOB_AT(lo4, 16);
TS_WIDE_JOB_AT(hi4, 20);
TS_WIDE_JOB_AT(xs_end, 24);
TS_WIDE_JOB_AT(rqc, 28);
TS_WIDE_JOB_AT(w, 32);
TS_WIDE_JOB_AT(rq, 36);
TS_WIDE_JOB_AT(bias, 40);
TS_WIDE_JOB_AT(out, 44);
TS_WIDE_JOB_AT(k, 48);
TS_WIDE_JOB_AT(bias_step, 52);
TS_WIDE_JOB_AT(xs, 56);
TS_WIDE_JOB_AT(k4, 60);
TS_WIDE_JOB_AT(rq_end, 64);
TS_WIDE_JOB_AT(entry, 68);
TS_WIDE_JOB_AT(rq_right, 72);
TS_WIDE_JOB_AT(rq_none, 76);
TS_WIDE_JOB_AT(rq_this, 80);
TS_WIDE_JOB_AT(part_n, 84);
TS_WIDE_JOB_AT(block, 88);
TS_WIDE_JOB_AT(stride_c, 92);
TS_WIDE_JOB_AT(part_out, 96);
TS_WIDE_JOB_AT(buf, 100);
TS_WIDE_JOB_AT(xs_full, 108);
#undef TS_WIDE_JOB_AT

/* One strip of full blocks, output channel by channel from job->rq up to job->rq_end, stopping early
 * at a channel whose l1 is 0 (the formula's steps: the caller's; job->rq then points at it). Per
 * channel (bias and ts_rq fields from the job's pointers), per block: six accumulators start at the
 * bias with the first group's products (no copies), then one SMLAD pair per pixel per four filter
 * bytes, the loop unrolled four groups a pass (entered at the group that leaves a multiple of four:
 * 21 instructions per 24 products plus 2 per pass), then ts_rq's six steps on each (the channel's
 * fields reloaded per block: the loop needs every register), the six int8 results packed (BFI),
 * clamped bytewise (SSUB8/SEL; skipped when the bounds are -128 and 127, which SSAT already keeps)
 * and stored `stride` bytes apart. The accumulators never leave registers, and no C runs between a
 * strip's first channel and its last. Registers: r0-r5 the accumulators, r6 the filter, r7 the block
 * scratch, r8 the filter's end, r9-r12 the lanes, lr the job. */
/* aligned(4): the ADRs below are resolved by the assembler against the section's start, which must
 * then be word-aligned as ADR's Align(PC, 4) assumes (at -Os functions are only halfword-aligned,
 * and a link that put this one at 2 mod 4 sent its computed branches 2 bytes off: a fault). */
__attribute__((naked, noinline, aligned(4)))
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noipa))
#endif
static void wide_channels(__attribute__((unused)) wide_job *job)
{
#define TS_WC_PIXEL(a, off)                                                                            \
    "ldrd    r11, r12, [r7, #" off "]\n\t"                                                             \
    "smlad   " a ", r11, r9, " a "\n\t"                                                                \
    "smlad   " a ", r12, r10, " a "\n\t"
#define TS_WC_PEEL(a, off)                                                                             \
    "ldrd    r11, r12, [r7, #" off "]\n\t"                                                             \
    "smlad   " a ", r11, r9, r0\n\t"                                                                   \
    "smlad   " a ", r12, r10, " a "\n\t"
#define TS_WC_GROUP                                                                                    \
    "ldr     r10, [r6], #4\n\t"                                                                        \
    "ldrd    r11, r12, [r7], #48\n\t"                                                                  \
    "sxtb16  r9, r10\n\t"                                                                              \
    "sxtb16  r10, r10, ror #8\n\t"                                                                     \
    "smlad   r0, r11, r9, r0\n\t"                                                                      \
    "smlad   r0, r12, r10, r0\n\t"                                                                     \
    TS_WC_PIXEL("r1", "-40") TS_WC_PIXEL("r2", "-32") TS_WC_PIXEL("r3", "-24") TS_WC_PIXEL("r4", "-16") \
    TS_WC_PIXEL("r5", "-8")
/* ts_rq's steps with r >= 1 (rr = r | 256): base - [s2 < 0] is base + (s2 ASR 31) */
#define TS_WC_RQ(a)                                                                                    \
    "lsl     " a ", " a ", r10\n\t"                                                                    \
    "add     r6, r11, " a ", asr #31\n\t"                                                              \
    "smmlar  " a ", " a ", r9, r6\n\t"                                                                 \
    "asr     " a ", " a ", r12\n\t"                                                                    \
    "ssat    " a ", #8, " a "\n\t"
/* and with r == 0 (rr = 0): no correction, no shift */
#define TS_WC_RQ0(a)                                                                                   \
    "lsl     " a ", " a ", r10\n\t"                                                                    \
    "smmlar  " a ", " a ", r9, r11\n\t"                                                                \
    "ssat    " a ", #8, " a "\n\t"
/* the six results packed, clamped bytewise to [lo4, hi4] and stored stride bytes apart */
#define TS_WC_CLAMP_STORE                                                                              \
    "bfi     r0, r1, #8, #8\n\t"                                                                       \
    "bfi     r0, r2, #16, #8\n\t"                                                                      \
    "bfi     r0, r3, #24, #8\n\t"                                                                      \
    "bfi     r4, r5, #8, #8\n\t"                                                                       \
    "ldrd    r9, r10, [lr, #16]\n\t"                                                                   \
    "ssub8   r6, r0, r9\n\t"                                                                           \
    "sel     r0, r0, r9\n\t"                                                                           \
    "ssub8   r6, r10, r0\n\t"                                                                          \
    "sel     r0, r0, r10\n\t"                                                                          \
    "ssub8   r6, r4, r9\n\t"                                                                           \
    "sel     r4, r4, r9\n\t"                                                                           \
    "ssub8   r6, r10, r4\n\t"                                                                          \
    "sel     r4, r4, r10\n\t"                                                                          \
    "ldrd    r11, r12, [lr, #8]\n\t"                                                                   \
    "strb    r0, [r11]\n\t"                                                                            \
    "lsr     r0, r0, #8\n\t"                                                                           \
    "strb    r0, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "lsr     r0, r0, #8\n\t"                                                                           \
    "strb    r0, [r11]\n\t"                                                                            \
    "lsr     r0, r0, #8\n\t"                                                                           \
    "strb    r0, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "strb    r4, [r11]\n\t"                                                                            \
    "lsr     r4, r4, #8\n\t"                                                                           \
    "strb    r4, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "str     r11, [lr, #8]\n\t"
/* the six results (SSAT keeps them in [-128, 127]: the bounds) stored stride bytes apart */
#define TS_WC_STORE                                                                                    \
    "ldrd    r11, r12, [lr, #8]\n\t"                                                                   \
    "strb    r0, [r11]\n\t"                                                                            \
    "strb    r1, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "strb    r2, [r11]\n\t"                                                                            \
    "strb    r3, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "strb    r4, [r11]\n\t"                                                                            \
    "strb    r5, [r11, r12]\n\t"                                                                       \
    "add     r11, r11, r12, lsl #1\n\t"                                                                \
    "str     r11, [lr, #8]\n\t"
/* the next block of the channel, or the channel's end */
#define TS_WC_NEXT                                                                                     \
    "ldr     r9, [lr, #24]\n\t"                                                                        \
    "cmp     r7, r9\n\t"                                                                               \
    "bne     3b\n\t"                                                                                   \
    "b       8f\n\t"
    __asm__ volatile(
        "push    {r3-r11, lr}\n\t"
        "mov     lr, r0\n\t"
        "ldr     r1, [lr, #68]\n\t"
        "cmp     r1, #0\n\t"
        "bne     20f\n\t" /* the addresses below already set by an earlier call with this job */
        /* the loop's entry: after the peeled group R = k4 / 4 - 1 groups remain; none: 5, else
         * group (4 - R % 4) % 4 of the pass */
        "ldr     r1, [lr, #60]\n\t"
        "subs    r1, r1, #4\n\t"
        "beq     10f\n\t"
        "and     r1, r1, #12\n\t"
        "cmp     r1, #4\n\t"
        "beq     13f\n\t"
        "cmp     r1, #8\n\t"
        "beq     12f\n\t"
        "cmp     r1, #12\n\t"
        "beq     11f\n\t"
        "adr.w   r2, 40f\n\t"
        "b       19f\n\t"
        "10:\n\t"
        "adr.w   r2, 5f\n\t"
        "b       19f\n\t"
        "11:\n\t"
        "adr.w   r2, 41f\n\t"
        "b       19f\n\t"
        "12:\n\t"
        "adr.w   r2, 42f\n\t"
        "b       19f\n\t"
        "13:\n\t"
        "adr.w   r2, 43f\n\t"
        "19:\n\t"
        "orr     r2, r2, #1\n\t" /* Thumb */
        "str     r2, [lr, #68]\n\t"
        /* the requantisations: with the clamp, unless the bounds are -128 and 127 */
        "ldrd    r1, r2, [lr, #16]\n\t"
        "adr.w   r3, 51f\n\t"
        "adr.w   r4, 53f\n\t"
        "cmp     r1, #0x80808080\n\t"
        "bne     18f\n\t"
        "cmp     r2, #0x7f7f7f7f\n\t"
        "bne     18f\n\t"
        "adr.w   r3, 50f\n\t"
        "adr.w   r4, 52f\n\t"
        "18:\n\t"
        "orr     r3, r3, #1\n\t"
        "orr     r4, r4, #1\n\t"
        "strd    r3, r4, [lr, #72]\n\t"
        "20:\n\t"
        "add     r12, lr, #32\n\t"
        "ldm     r12, {r6, r9, r10, r11}\n\t" /* w, rq, bias, out */
        "2:\n\t"                              /* channel: r6 w, r9 rq, r10 bias, r11 out */
        "ldr     r0, [r9, #4]\n\t"
        "cmp     r0, #0\n\t"
        "beq     9f\n\t"                      /* l1 0: the formula's steps, the caller's */
        "ldr     r0, [r9, #12]\n\t"           /* rr: a right shift or none */
        "cmp     r0, #0\n\t"
        "ite     ne\n\t"
        "ldrne   r0, [lr, #72]\n\t"
        "ldreq   r0, [lr, #76]\n\t"
        "str     r0, [lr, #80]\n\t"
        "ldr     r0, [r10]\n\t"
        "strd    r0, r6, [lr]\n\t"            /* b0, wc */
        "str     r11, [lr, #8]\n\t"           /* ob */
        "str     r9, [lr, #28]\n\t"           /* rqc */
        "ldrd    r7, r1, [lr, #56]\n\t"       /* xs, k4 */
        "add     r8, r6, r1\n\t"              /* the filter's end */
        "3:\n\t"                              /* block: r7 its scratch */
        "ldrd    r0, r6, [lr]\n\t"            /* a0 = b0, w = wc */
        "ldr     r10, [r6], #4\n\t"
        "sxtb16  r9, r10\n\t"
        "sxtb16  r10, r10, ror #8\n\t"
        TS_WC_PEEL("r1", "8") TS_WC_PEEL("r2", "16") TS_WC_PEEL("r3", "24") TS_WC_PEEL("r4", "32")
        TS_WC_PEEL("r5", "40")
        "ldrd    r11, r12, [r7], #48\n\t"
        "smlad   r0, r11, r9, r0\n\t"
        "smlad   r0, r12, r10, r0\n\t"
        "ldr     pc, [lr, #68]\n\t"
        "40:\n\t" TS_WC_GROUP
        "41:\n\t" TS_WC_GROUP
        "42:\n\t" TS_WC_GROUP
        "43:\n\t" TS_WC_GROUP
        "cmp     r6, r8\n\t"
        "bne     40b\n\t"
        "5:\n\t" /* r7: the next block; requantise: m r9, l1 r10, base r11, rr r12, r6 scratch */
        "ldr     r6, [lr, #28]\n\t"
        "ldm     r6, {r9, r10, r11, r12}\n\t"
        "ldr     pc, [lr, #80]\n\t"
        "50:\n\t" TS_WC_RQ("r0") TS_WC_RQ("r1") TS_WC_RQ("r2") TS_WC_RQ("r3") TS_WC_RQ("r4") TS_WC_RQ("r5")
        TS_WC_STORE TS_WC_NEXT
        "51:\n\t" TS_WC_RQ("r0") TS_WC_RQ("r1") TS_WC_RQ("r2") TS_WC_RQ("r3") TS_WC_RQ("r4") TS_WC_RQ("r5")
        TS_WC_CLAMP_STORE TS_WC_NEXT
        "52:\n\t" TS_WC_RQ0("r0") TS_WC_RQ0("r1") TS_WC_RQ0("r2") TS_WC_RQ0("r3") TS_WC_RQ0("r4") TS_WC_RQ0("r5")
        TS_WC_STORE TS_WC_NEXT
        "53:\n\t" TS_WC_RQ0("r0") TS_WC_RQ0("r1") TS_WC_RQ0("r2") TS_WC_RQ0("r3") TS_WC_RQ0("r4") TS_WC_RQ0("r5")
        TS_WC_CLAMP_STORE TS_WC_NEXT
        "8:\n\t" /* the full blocks done: a last block of fewer pixels? */
        "ldr     r0, [lr, #84]\n\t"
        "cmp     r0, #0\n\t"
        "beq     88f\n\t"
        "blt     87f\n\t"
        "ldr     r1, [lr, #8]\n\t"       /* its first output byte */
        "str     r1, [lr, #96]\n\t"
        "add     r1, lr, #100\n\t"       /* its six results into buf, stride 1 */
        "movs    r2, #1\n\t"
        "strd    r1, r2, [lr, #8]\n\t"
        "ldr     r3, [lr, #88]\n\t"
        "add     r3, r3, r7\n\t"          /* xs_end: past this block */
        "str     r3, [lr, #24]\n\t"
        "rsb     r1, r0, #0\n\t"
        "str     r1, [lr, #84]\n\t"       /* under way */
        "cmp     r0, #4\n\t"
        "bge     3b\n\t"                  /* four or five pixels: as a full block */
        /* one to three pixels: the first three of the block only (14 instructions per 12 products) */
        "ldrd    r0, r6, [lr]\n\t"
        "mov     r1, r0\n\t"
        "mov     r2, r0\n\t"
        "31:\n\t"
        "ldr     r10, [r6], #4\n\t"
        "ldrd    r11, r12, [r7], #48\n\t"
        "sxtb16  r9, r10\n\t"
        "sxtb16  r10, r10, ror #8\n\t"
        "smlad   r0, r11, r9, r0\n\t"
        "smlad   r0, r12, r10, r0\n\t"
        TS_WC_PIXEL("r1", "-40") TS_WC_PIXEL("r2", "-32")
        "cmp     r6, r8\n\t"
        "bne     31b\n\t"
        "b       5b\n\t"                  /* r3-r5: stale values, their bytes never copied */
        "87:\n\t"                         /* the last block's results in buf: copy part_n of them */
        "rsb     r0, r0, #0\n\t"
        "str     r0, [lr, #84]\n\t"
        "ldr     r1, [lr, #96]\n\t"
        "ldr     r2, [lr, #92]\n\t"
        "str     r2, [lr, #12]\n\t"       /* stride and xs_end back */
        "ldr     r3, [lr, #108]\n\t"
        "str     r3, [lr, #24]\n\t"
        "add     r3, lr, #100\n\t"
        "86:\n\t"
        "ldrb    r4, [r3], #1\n\t"
        "strb    r4, [r1]\n\t"
        "add     r1, r1, r2\n\t"
        "subs    r0, r0, #1\n\t"
        "bne     86b\n\t"
        "88:\n\t"
        /* the channel done: the next one's pointers */
        "add     r12, lr, #32\n\t"
        "ldm     r12, {r6, r9, r10, r11}\n\t"
        "ldrd    r0, r1, [lr, #48]\n\t" /* k, bias_step */
        "add     r6, r6, r0\n\t"
        "add     r9, r9, #16\n\t"
        "add     r10, r10, r1\n\t"
        "add     r11, r11, #1\n\t"
        "stm     r12, {r6, r9, r10, r11}\n\t"
        "ldr     r0, [lr, #64]\n\t"
        "cmp     r9, r0\n\t"
        "bne     2b\n\t"
        "9:\n\t"
        "pop     {r3-r11, pc}\n\t");
#undef TS_WC_PIXEL
#undef TS_WC_PEEL
#undef TS_WC_GROUP
#undef TS_WC_RQ
#undef TS_WC_RQ0
#undef TS_WC_CLAMP_STORE
#undef TS_WC_STORE
#undef TS_WC_NEXT
}

/* The slots of a strip of nb blocks of px pixels (TS_WIDE_PX, or TS_QUAD_PX for quad blocks): np
 * pixels from flat pixel i of one batch, where in_c is a multiple of 4 and dilation_w is 1; per
 * filter row, the taps inside the input one run of whole words of the input (wide_run, quad_widen),
 * the taps outside zeros; the slots past np zeros. Inlined where it is called, px a constant there. */
static TS_ALWAYS_INLINE void fill_rows(const ts_conv2d_s8_params *p, const int8_t *input, int32_t i, int32_t np,
                                       int32_t nb, int32_t px, uint32_t *xs)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fh = p->filter_h, fw = p->filter_w;
    const int32_t g = in_c >> 2, block_words = px * fh * fw * in_c / 2; /* groups a tap; k is k4 */
    const uint32_t off2 = ts_pack2x16(p->input_offset);
    int32_t y = i / p->out_w, x = i % p->out_w, q, ky;
    for (q = 0; q < nb * px; ++q) {
        uint32_t *w = xs + (size_t)(q / px) * block_words + 2 * (q % px);
        const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
        const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + fw > in_w ? in_w - x0 : fw; /* taps inside */
        if (q >= np) {
            slot_zero(w, fh * fw * g, px);
            continue;
        }
        for (ky = 0; ky < fh; ++ky) {
            const int32_t iy = y0 + ky * p->dilation_h;
            if (iy < 0 || iy >= in_h || kx1 <= kx0) {
                w = slot_zero(w, fw * g, px);
                continue;
            }
            {
                const int8_t *src = input + ((size_t)iy * in_w + (size_t)(x0 + kx0)) * in_c;
                const int8_t *end = src + (size_t)(kx1 - kx0) * in_c;
                w = slot_zero(w, kx0 * g, px);
                w = px == TS_WIDE_PX ? wide_run(w, src, end, off2) : quad_widen(w, src, end, off2);
                w = slot_zero(w, (fw - kx1) * g, px);
            }
        }
        if (++x == p->out_w) {
            x = 0;
            ++y;
        }
    }
}

/* wide_fill for the slots of a strip whose np pixels are consecutive input pixels from `src` (a
 * 1x1 filter, stride 1, no padding, out_w == in_w; in_c a multiple of 4): each pixel's in_c bytes
 * widened into its slot (wide_run), the strip's other slots up to nb blocks zero. */
static void wide_fill_flat(const int8_t *src, int32_t in_c, uint32_t off2, int32_t np, int32_t nb,
                           int32_t block_words, uint32_t *xs)
{
    int32_t q;
    for (q = 0; q < nb * TS_WIDE_PX; ++q) {
        uint32_t *w = xs + (size_t)(q / TS_WIDE_PX) * block_words + 2 * (q % TS_WIDE_PX);
        if (q < np) {
            wide_run(w, src, src + in_c, off2);
            src += in_c;
        } else {
            wide_zero(w, in_c >> 2);
        }
    }
}

/* Whether output pixel i of p reads input pixel i only (a 1x1 filter at stride 1 without padding,
 * rows as wide as the input's) and its in_c is whole groups: the widened path's flat layers. */
static inline int wide_flat(const ts_conv2d_s8_params *p)
{
    return p->filter_h == 1 && p->filter_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->out_w == p->in_w && (p->in_c & 3) == 0;
}

/* Blocks [b_first, b_last) of one strip (np pixels, the strip's first output byte at `out`) for
 * output channels [o_first, o_last) in C: a last block of fewer than six pixels, the last channel's
 * tail, channels the formula's steps requantise (rq 0, or a table's l1 0). */
static void wide_channels_c(const ts_conv2d_s8_params *p, const uint32_t *xs, const int8_t *filter,
                            const int32_t *bias, int8_t *out, int32_t o_first, int32_t o_last, int32_t b_first,
                            int32_t b_last, int32_t np, int rq, const int32_t *rq_table)
{
    const int32_t out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c;
    const int32_t k4 = (k + 3) & ~3, block_words = TS_WIDE_PX * k4 / 2, lo = p->act_min, hi = p->act_max;
    int32_t o, b, q;
    if (b_first >= b_last) {
        return;
    }
    for (o = o_first; o < o_last; ++o) {
        const int8_t *w = filter + (size_t)o * k;
        /* k4 filter bytes from channel o's start still inside [out_c][k]? else k / 4 groups + tail */
        const int32_t whole = (int32_t)((size_t)(out_c - o) * k >= (size_t)k4 ? k4 : (k & ~3));
        const int32_t b0 = bias != NULL ? bias[o] : 0;
        const int32_t m = p->multiplier[o], sh = p->shift[o];
        int8_t *ob = out + o + (size_t)b_first * TS_WIDE_PX * out_c;
        ts_rq r;
        int rq_o = rq;
        if (rq_table != NULL) { /* prepared at compile time (l1 0: this channel by the formula) */
            r = *(const ts_rq *)(const void *)(rq_table + 4 * o);
            rq_o = rq && r.l1 != 0;
        } else {
            ts_rq_prepare(m, sh, p->output_offset, &r);
        }
        for (b = b_first; b < b_last; ++b) {
            const uint32_t *xb = xs + (size_t)b * block_words;
            const int32_t n = np - b * TS_WIDE_PX < TS_WIDE_PX ? np - b * TS_WIDE_PX : TS_WIDE_PX;
            int32_t acc[TS_WIDE_PX] = {b0, b0, b0, b0, b0, b0};
            if (n <= 3) { /* a last block of one to three pixels: those three only */
                wide_dot3_of6(xb, w, whole >> 2, acc);
            } else {
                wide_dot(xb, w, whole >> 2, acc);
            }
            if (whole < k) {
                wide_tail(xb, w, whole, k, acc);
            }
            for (q = 0; q < n; ++q) {
                ob[(size_t)q * out_c] = rq_o ? rq_clamp(acc[q], &r, lo, hi)
                                             : conv_out(acc[q], m, sh, p->output_offset, lo, hi);
            }
            ob += (size_t)TS_WIDE_PX * out_c;
        }
    }
}

#define TS_WIDE_RQ_CHUNK 4 /* channels whose ts_rq fields wide_pixels prepares at a time, without a table */

static void wide_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int rq, uint32_t *xs, int32_t pixels, int32_t strip,
                        const int32_t *rq_table)
{
    static const int32_t zero = 0;
    const int32_t out_w = p->out_w, out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c;
    const int32_t k4 = (k + 3) & ~3, block_words = TS_WIDE_PX * k4 / 2;
    const int32_t strip_px = strip * TS_WIDE_PX;
    /* the channels wide_channels may take: all but a last one whose k4 bytes would pass the
     * filter's end (its tail in C) */
    const int32_t asm_c = (k & 3) != 0 ? out_c - 1 : out_c;
    const int flat = wide_flat(p);
    int32_t i, q, o;
    ts_rq rqs[TS_WIDE_RQ_CHUNK];
    wide_job job;
    job.stride = out_c;
    job.lo4 = ts_bytes4(p->act_min);
    job.hi4 = ts_bytes4(p->act_max);
    job.k = k;
    job.k4 = k4;
    job.bias_step = bias != NULL ? 4 : 0;
    job.xs = xs;
    job.block = block_words * 4;
    job.stride_c = out_c;
    job.entry = 0; /* wide_channels sets its addresses on its first call */
    for (i = 0; i < pixels; i += strip_px) {
        const int32_t np = pixels - i < strip_px ? pixels - i : strip_px, nb = (np + TS_WIDE_PX - 1) / TS_WIDE_PX;
        const int32_t full = np / TS_WIDE_PX;
        int8_t *const out = output + (size_t)i * out_c;
        if (flat) {
            wide_fill_flat(input + (size_t)i * k, k, ts_pack2x16(p->input_offset), np, nb, block_words, xs);
        } else if ((p->in_c & 3) == 0 && p->dilation_w == 1) {
            fill_rows(p, input, i, np, nb, TS_WIDE_PX, xs);
        } else {
            for (q = 0; q < nb * TS_WIDE_PX; ++q) {
                const int32_t y = (i + q) / out_w, x = (i + q) % out_w;
                uint32_t *slot = xs + (size_t)(q / TS_WIDE_PX) * block_words + 2 * (q % TS_WIDE_PX);
                wide_fill(p, input, y * p->stride_h - p->pad_top, x * p->stride_w - p->pad_left, q < np, k4,
                          slot);
            }
        }
        o = 0;
        if (rq && full > 0) {
            job.xs_end = job.xs_full = xs + (size_t)full * block_words;
            job.part_n = np - full * TS_WIDE_PX;
            while (o < asm_c) {
                int32_t n = asm_c - o, c;
                if (rq_table != NULL) {
                    job.rq = rq_table + 4 * o;
                } else {
                    n = n < TS_WIDE_RQ_CHUNK ? n : TS_WIDE_RQ_CHUNK;
                    for (c = 0; c < n; ++c) {
                        ts_rq_prepare(p->multiplier[o + c], p->shift[o + c], p->output_offset, &rqs[c]);
                    }
                    job.rq = &rqs[0].m;
                }
                job.rq_end = job.rq + 4 * n;
                job.w = filter + (size_t)o * k;
                job.bias = bias != NULL ? bias + o : &zero;
                job.out = out + o;
                {
                    const int32_t *const start = job.rq;
                    wide_channels(&job);
                    c = (int32_t)(job.rq - start) / 4;
                }
                o += c;
                if (c < n) { /* channel o: l1 0, the formula's steps */
                    wide_channels_c(p, xs, filter, bias, out, o, o + 1, 0, nb, np, rq, rq_table);
                    ++o;
                }
            }
        }
        /* the last channel's tail, or no ts_rq, or no full block */
        wide_channels_c(p, xs, filter, bias, out, o, out_c, 0, nb, np, rq, rq_table);
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

/* The leading output pixels the widened path does with its strip scratch inside the output (0:
 * none; batches == 1 only): whole rows, or for a 1x1 filter at stride 1 without padding over the
 * whole input (flat: output pixel i reads input pixel i) any number of pixels. The scratch must not
 * hold input bytes: it goes at the top of the output's part past the input's end or of its part
 * before the input's start (the whole output when they do not overlap), whichever leaves more
 * pixels whose outputs end before it. Flat layers then take a second pass with a one-block strip
 * at the top of the same part, for the pixels between the two strips' starts. Overlapping input
 * and output (an in-place plan) are safe: each strip reads all of its receptive fields before
 * writing any output, so wherever the pair path's order allows the overlap, this one does too
 * (ts_kernels.h, CONV_2D "Read/write order"). */
static int32_t conv_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int rq)
{
    const size_t out_bytes = (size_t)p->out_h * p->out_w * p->out_c, in_bytes = (size_t)p->in_h * p->in_w * p->in_c;
    const size_t block = wide_block_bytes(p->filter_h * p->filter_w * p->in_c), row = (size_t)p->out_w * p->out_c;
    const uintptr_t o0 = (uintptr_t)output, o1 = o0 + out_bytes, i0 = (uintptr_t)input, i1 = i0 + in_bytes;
    const int flat = wide_flat(p) && p->out_h == p->in_h;
    const size_t unit = flat ? (size_t)p->out_c : row; /* output bytes of what is counted */
    const int32_t units = flat ? p->out_h * p->out_w : p->out_h;
    uintptr_t s = 0, s_low = 0;
    int32_t done, low, pixels, strip = 1, strip_low = 1;
    if (p->batches != 1 || row == 0) {
        return 0;
    }
    if (o0 < i1 && i0 < o1) { /* overlapping: past the input's end, or before its start */
        done = wide_room(o0, i1 > o0 ? i1 : o0, o1, block, unit, &s, &strip);
        low = wide_room(o0, o0, i0 < o1 ? i0 : o1, block, unit, &s_low, &strip_low);
        if (low > done) {
            done = low;
            s = s_low;
            strip = strip_low;
        }
    } else {
        done = wide_room(o0, o0, o1, block, unit, &s, &strip);
    }
    done = done < units ? done : units;
    pixels = flat ? done : done * p->out_w;
    if (done <= 0 || !wide_worth(pixels)) {
        return 0;
    }
    wide_pixels(p, input, filter, bias, output, rq, (uint32_t *)(void *)s, pixels, strip, NULL);
    if (flat && strip > 1 && pixels < units) {
        /* the strip's last block: its start is the end of the pixels a one-block strip allows */
        const uintptr_t s1 = s + (size_t)(strip - 1) * block;
        int32_t more = (int32_t)((s1 - o0) / unit);
        more = (more < units ? more : units) - pixels;
        if (wide_worth(more)) {
            wide_pixels(p, input + (size_t)pixels * p->in_c, filter, bias, output + (size_t)pixels * p->out_c, rq,
                        (uint32_t *)(void *)s1, more, 1, NULL);
            pixels += more;
        }
    }
    return pixels;
}

/* Small receptive fields on DSP cores (ts_kernels.h, CONV_2D "small receptive fields", DSP):
 * output pixels of the flat order in quads; a quad's patches (build_patch) widened to int16 on the
 * stack as a block of the widened path lays one out, four pixels a group (pixel q's words of group
 * g at word 2 * (4 g + q)), then each output channel one pass over its filter for the four pixels:
 * 17 instructions per 16 products. */
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
 * products), ts_rq, then the four bytes stored out_c apart, pixel 0 first: packed (BFI) and clamped
 * bytewise where the activation range is narrower than int8, else each SSAT result's low byte
 * stored as it is (SSAT has made sure of the range; no packing). */
static TS_NOINLINE void quad_channels(const uint32_t *xs, const int32_t *table, int32_t groups, int8_t *out,
                                      int32_t out_c, uint32_t lo4, uint32_t hi4)
{
    const uint32_t *const xbase = xs;
    const int8_t *const oend = out + out_c; /* past the first pixel's last channel */
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
/* the four results packed, clamped bytewise (`clamp`'s asm text) and stored byte by byte */
#define QUAD_PACKED(clamp)                                                                              \
    "bfi     %[a0], %[a1], #8, #8\n\t"                                                                  \
    "bfi     %[a0], %[a2], #16, #8\n\t"                                                                 \
    "bfi     %[a0], %[a3], #24, #8\n\t" clamp                                                           \
    "strb    %[a0], [%[o]]\n\t"                                                                         \
    "lsr     %[a0], %[a0], #8\n\t"                                                                      \
    "strb    %[a0], [%[o], %[oc]]\n\t"                                                                  \
    "lsr     %[a0], %[a0], #8\n\t"                                                                      \
    "strb    %[a0], [%[o], %[oc], lsl #1]\n\t"                                                          \
    "lsr     %[a0], %[a0], #8\n\t"                                                                      \
    "add     %[xp], %[o], %[oc], lsl #1\n\t"                                                            \
    "strb    %[a0], [%[xp], %[oc]]\n\t"
/* the four SSAT results stored as they are (the activation range is all of int8) */
#define QUAD_BYTES                                                                                      \
    "strb    %[a0], [%[o]]\n\t"                                                                         \
    "strb    %[a1], [%[o], %[oc]]\n\t"                                                                  \
    "strb    %[a2], [%[o], %[oc], lsl #1]\n\t"                                                          \
    "add     %[xp], %[o], %[oc], lsl #1\n\t"                                                            \
    "strb    %[a3], [%[xp], %[oc]]\n\t"
/* the group loop's end: back for the next group, or nothing where there is one group */
#define QUAD_GROUPS "cmp     %[xp], %[xend]\n\tbne     2b\n\t"
/* the channel loop: `groups_end` QUAD_GROUPS or nothing, `store` QUAD_PACKED(clamp) or QUAD_BYTES */
#define QUAD_CHANNELS(groups_end, store)                                                                \
    __asm__ volatile("1:\n\t"                                                                           \
                     "ldr     %[a0], [%[t]], #4\n\t"                                                     \
                     "mov     %[a1], %[a0]\n\t"                                                          \
                     "mov     %[a2], %[a0]\n\t"                                                          \
                     "mov     %[a3], %[a0]\n\t"                                                          \
                     "ldr     %[xp], %[xbase]\n\t"                                                       \
                     "2:\n\t"                                                                            \
                     "ldrd    %[we], %[wo], [%[t]], #8\n\t" QUAD_PIXEL("a0") QUAD_PIXEL("a1")             \
                         QUAD_PIXEL("a2") QUAD_PIXEL("a3") groups_end                                   \
                     "ldrd    %[we], %[wo], [%[t]], #8\n\t"                                              \
                     "ldrd    %[xe], %[xo], [%[t]], #8\n\t" QUAD_RQ("a0") QUAD_RQ("a1") QUAD_RQ("a2")     \
                         QUAD_RQ("a3") store                                                            \
                     "add     %[o], %[o], #1\n\t"                                                        \
                     "ldr     %[xp], %[oend]\n\t"                                                        \
                     "cmp     %[o], %[xp]\n\t"                                                           \
                     "bne     1b"                                                                        \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [we] "=&r"(we),   \
                       [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo), [xp] "=&r"(xp), [t] "+r"(t),     \
                       [o] "+r"(o)                                                                       \
                     : [xend] "r"(xend), [oc] "r"(oc), [xbase] "m"(xbase), [oend] "m"(oend), [lo4] "m"(lo4), \
                       [hi4] "m"(hi4)                                                                    \
                     : "cc", "memory")
    if (groups < 1 || out_c < 1) {
        return;
    }
#define QUAD_CLAMPED                                                                                    \
    QUAD_PACKED("ldr     %[we], %[lo4]\n\t"                                                                \
                "ldr     %[wo], %[hi4]\n\t" TS_CLAMP4_ASM("a0", "we", "wo", "xe"))
    if (lo4 == 0x80808080u && hi4 == 0x7F7F7F7Fu) {
        if (groups == 1) {
            QUAD_CHANNELS("", QUAD_BYTES);
        } else {
            QUAD_CHANNELS(QUAD_GROUPS, QUAD_BYTES);
        }
    } else if (groups == 1) {
        QUAD_CHANNELS("", QUAD_CLAMPED);
    } else {
        QUAD_CHANNELS(QUAD_GROUPS, QUAD_CLAMPED);
    }
#undef QUAD_CHANNELS
#undef QUAD_CLAMPED
#undef QUAD_GROUPS
#undef QUAD_BYTES
#undef QUAD_PACKED
#undef QUAD_PIXEL
#undef QUAD_RQ
}

/* A last quad's n < 4 pixels (slots 0 .. n - 1 of xs) from the generator's table (p->quads), the
 * same arithmetic as quad_channels: pixel by pixel, every output channel in one asm loop: its bias,
 * per group the filter's two widened words against the pixel's two (LDRD, LDRD, two SMLAD; two
 * groups a pass where `groups` is even: 5 instructions a group), ts_rq with the table's fields,
 * the clamp to [lo, hi] (left out where that is all of int8: SSAT has made sure of it) and the
 * byte stored. Why: the C loop of conv_quads prepares ts_rq and runs quad_dot's four pixels per
 * channel, about three times the work for the lone pixel that ends a row of 4 k + 1 pixels (a
 * streamed stage's rows: one call a row). */
static TS_NOINLINE void quad_channels_few(const uint32_t *xs, const int32_t *table, int32_t groups, int8_t *out,
                                          int32_t out_c, int32_t n, int32_t lo, int32_t hi)
{
    const int32_t filter_bytes = 8 * groups; /* a channel's widened filter words */
    const int even = (groups & 1) == 0;
    int32_t q;
    if (groups < 1 || out_c < 1) {
        return;
    }
    for (q = 0; q < n; ++q) {
        const uint32_t *const xbase = xs + 2 * q;
        /* the block's 12 register operands in registers named here (TS_REG, ts_simd.h) */
        register int32_t acc TS_REG("r0"), lim_lo TS_REG("r1") = lo, lim_hi TS_REG("r2") = hi;
        register const int32_t *t TS_REG("r3") = table;
        register const uint32_t *xp TS_REG("r4");
        register const int32_t *wend TS_REG("r5");
        register uint32_t we TS_REG("r6"), wo TS_REG("r8"), xe TS_REG("r9"), xo TS_REG("r10");
        register int8_t *o TS_REG("r11") = out + (size_t)q * out_c;
        register int8_t *const oend TS_REG("r12") = out + (size_t)q * out_c + out_c;
#define FEW_GROUP                                                                                       \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t"                                                               \
    "ldrd    %[xe], %[xo], [%[xp]], #32\n\t"                                                             \
    "smlad   %[acc], %[xe], %[we], %[acc]\n\t"                                                           \
    "smlad   %[acc], %[xo], %[wo], %[acc]\n\t"
#define FEW_CLAMP                                                                                       \
    "cmp     %[acc], %[lo]\n\t"                                                                          \
    "it      lt\n\t"                                                                                     \
    "movlt   %[acc], %[lo]\n\t"                                                                          \
    "cmp     %[acc], %[hi]\n\t"                                                                          \
    "it      gt\n\t"                                                                                     \
    "movgt   %[acc], %[hi]\n\t"
/* the channel loop: `groups_pass` one or two FEW_GROUPs a pass, `clamp` FEW_CLAMP or nothing */
#define FEW_CHANNELS(groups_pass, clamp)                                                                \
    __asm__ volatile("1:\n\t"                                                                           \
                     "ldr     %[acc], [%[t]], #4\n\t"                                                    \
                     "ldr     %[wend], %[fb]\n\t"                                                        \
                     "add     %[wend], %[wend], %[t]\n\t"                                                \
                     "ldr     %[xp], %[xbase]\n\t"                                                       \
                     "2:\n\t" groups_pass                                                                \
                     "cmp     %[t], %[wend]\n\t"                                                         \
                     "bne     2b\n\t"                                                                    \
                     "ldrd    %[we], %[wo], [%[t]], #8\n\t"                                              \
                     "ldrd    %[xe], %[xo], [%[t]], #8\n\t" TS_RQ_STEPS_ASM("acc", "acc", "acc", "we", "wo", \
                                                                          "xe", "xo", "wend") clamp      \
                     "strb    %[acc], [%[o]], #1\n\t"                                                    \
                     "cmp     %[o], %[oend]\n\t"                                                         \
                     "bne     1b"                                                                          \
                     : [acc] "=&r"(acc), [t] "+r"(t), [xp] "=&r"(xp), [wend] "=&r"(wend), [we] "=&r"(we),  \
                       [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo), [o] "+r"(o)                         \
                     : [oend] "r"(oend), [lo] "r"(lim_lo), [hi] "r"(lim_hi), [xbase] "m"(xbase),           \
                       [fb] "m"(filter_bytes)                                                              \
                     : "cc", "memory")
        if (lo == -128 && hi == 127) {
            if (even) {
                FEW_CHANNELS(FEW_GROUP FEW_GROUP, "");
            } else {
                FEW_CHANNELS(FEW_GROUP, "");
            }
        } else if (even) {
            FEW_CHANNELS(FEW_GROUP FEW_GROUP, FEW_CLAMP);
        } else {
            FEW_CHANNELS(FEW_GROUP, FEW_CLAMP);
        }
#undef FEW_CHANNELS
#undef FEW_CLAMP
#undef FEW_GROUP
    }
}

/* Value j of pixel q in the quad block xs. */
static inline int32_t quad_get(const uint32_t *xs, int32_t q, int32_t j)
{
    const int16_t *h = (const int16_t *)(const void *)(xs + 8 * (j >> 2) + 2 * q + (j & 1));
    return h[(j >> 1) & 1];
}

/* 1 to 3 bytes from src to dst, spelled out (a loop is a memcpy call); out of line, so that its
 * callers' code is what a memcpy call made it (KWS's 10x4x1 windows clipped to 2 or 3 columns). */
static TS_NOINLINE void quad_bytes(int8_t *dst, const int8_t *src, int32_t n)
{
    dst[0] = src[0];
    if (n > 1) {
        dst[1] = src[1];
    }
    if (n > 2) {
        dst[2] = src[2];
    }
}

/* n >= 1 bytes from src to dst as whole words where n >= 4, the last word overlapping the one
 * before it (no byte loop), spelled out up to 12 bytes: GCC turns a plain loop into a memcpy call
 * (under 4: quad_bytes). */
static inline void quad_run(int8_t *dst, const int8_t *src, int32_t n)
{
    int32_t c;
    if (n < 4) {
        quad_bytes(dst, src, n);
        return;
    }
    ts_store4(dst, ts_load4(src));
    if (n > 8) {
        ts_store4(dst + 4, ts_load4(src + 4));
    }
    for (c = 8; c + 4 < n; c += 4) {
        ts_store4(dst + c, ts_load4(src + c));
    }
    ts_store4(dst + n - 4, ts_load4(src + n - 4));
}

/* Pixel slot `slot` of a quad block (pixel q's words of group g at word 2 * (4 g + q)): the
 * receptive field of a window at (y0, x0) ([fh][fw][in_c] as the filter) that the input clips or
 * whose columns are dilated (whole windows: quad_fill_inside), widened with input_offset added, pad
 * bytes (the zero point, widened to 0) for taps outside the input and up to k4. With dilation_w 1
 * the patch is first filled with pad words, then each filter row's taps inside the input copied as
 * one run of bytes (quad_run); dilated columns take build_patch. */
static inline void quad_fill(const ts_conv2d_s8_params *p, const int8_t *in_b, int32_t y0, int32_t x0, int8_t pad,
                             int32_t k, int32_t k4, uint32_t off2, uint32_t *slot)
{
    int8_t patch[TS_QUAD_K4 + 4];
    const int32_t in_w = p->in_w, in_c = p->in_c, len = p->filter_w * in_c;
    const size_t row = (size_t)p->dilation_h * in_w * in_c;
    int32_t j;
    if (p->dilation_w == 1) {
        const uint32_t pad4 = ts_bytes4(pad);
        int32_t ky, ky0, ky1, kx0, kx1;
        ts_tap_range(y0, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
        ts_tap_range(x0, 1, p->filter_w, in_w, &kx0, &kx1);
        for (j = 0; j < k4; j += 4) { /* a store per word (a plain loop becomes a memset call) */
            __asm__ volatile("str     %[v], [%[p], %[j]]" : : [v] "r"(pad4), [p] "r"(patch), [j] "r"(j) : "memory");
        }
        if (kx1 > kx0) {
            const int8_t *src = in_b + ((size_t)(y0 + ky0 * p->dilation_h) * in_w + (size_t)(x0 + kx0)) * in_c;
            for (ky = ky0; ky < ky1; ++ky, src += row) {
                quad_run(patch + ky * len + kx0 * in_c, src, (kx1 - kx0) * in_c);
            }
        }
    } else {
        build_patch(p, in_b, y0, x0, pad, k4 - k, patch);
    }
    for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
        const uint32_t v = ts_load4(patch + j);
        slot[0] = ts_even_off(v, off2);
        slot[1] = ts_odd_off(v, off2);
    }
}

/* quad_fill_inside for filter rows under a word (len < 4: HAR's 2x2x1, rows of 2 bytes), kept apart
 * so that the other rows' code is the same: each row's bytes copied one by one, spelled out (a loop
 * is a memcpy call), then widened as quad_fill_inside widens. */
static TS_NOINLINE void quad_fill_bytes(const int8_t *src, int32_t step, int32_t m, int32_t fh, int32_t len,
                                        size_t row, int32_t k, int32_t k4, uint32_t off2, uint32_t pad4,
                                        uint32_t *slot0)
{
    int8_t patch[TS_QUAD_K4 + 4];
    int32_t q, ky, j;
    int8_t *const end = patch + TS_QUAD_K4; /* the caller's bound, k = fh * len <= TS_QUAD_K4 */
    for (q = 0; q < m; ++q, src += step) {
        const int8_t *s = src;
        int8_t *d = patch;
        uint32_t *slot = slot0 + 2 * q;
        for (ky = 0; ky < fh && d + len <= end; ++ky, s += row, d += len) {
            d[0] = s[0];
            if (len > 1) {
                d[1] = s[1];
            }
            if (len > 2) {
                d[2] = s[2];
            }
        }
        ts_store4(patch + k, pad4); /* the round-up: k4 - k <= 3 bytes */
        for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
            const uint32_t v = ts_load4(patch + j), e = ts_even_off(v, off2), o = ts_odd_off(v, off2);
            __asm__ volatile("strd    %[e], %[o], [%[s]]" : : [e] "r"(e), [o] "r"(o), [s] "r"(slot) : "memory");
        }
    }
}

/* Slots q0 .. q0 + m - 1 of a quad, m consecutive pixels of one output row whose windows lie inside
 * the input, with dilation_w 1 (src: the first window's first tap; step: input bytes from one window
 * to the next): each filter row's bytes copied as one run, then widened as quad_fill widens, the
 * checks made once by the caller (quad_inside). A filter row of 8 to 12 bytes (VWW's 3x3x3: 9) is
 * three words, the last overlapping the one before it, with no test on its length; each widened
 * pair of words is one STRD. */
static TS_NOINLINE void quad_fill_inside(const int8_t *src, int32_t step, int32_t m, int32_t fh, int32_t len,
                                         size_t row, int32_t k, int32_t k4, uint32_t off2, uint32_t pad4,
                                         uint32_t *slot0)
{
    int8_t patch[TS_QUAD_K4 + 4];
    const int words3 = len >= 8 && len <= 12;
    int32_t q, ky, j;
    if (len < 4) {
        quad_fill_bytes(src, step, m, fh, len, row, k, k4, off2, pad4, slot0);
        return;
    }
    for (q = 0; q < m; ++q, src += step) {
        const int8_t *s = src;
        int8_t *d = patch;
        uint32_t *slot = slot0 + 2 * q;
        if (words3) {
            for (ky = 0; ky < fh; ++ky, s += row, d += len) {
                const uint32_t w0 = ts_load4(s), w1 = ts_load4(s + 4), w2 = ts_load4(s + len - 4);
                ts_store4(d, w0);
                ts_store4(d + 4, w1);
                ts_store4(d + len - 4, w2);
            }
        } else {
            for (ky = 0; ky < fh; ++ky, s += row, d += len) {
                quad_run(d, s, len);
            }
        }
        ts_store4(patch + k, pad4); /* the round-up: k4 - k <= 3 bytes */
        for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
            const uint32_t v = ts_load4(patch + j), e = ts_even_off(v, off2), o = ts_odd_off(v, off2);
            __asm__ volatile("strd    %[e], %[o], [%[s]]" : : [e] "r"(e), [o] "r"(o), [s] "r"(slot) : "memory");
        }
    }
}

/* How many pixels from (y, x) on, up to `most` and within the row, have windows inside the input
 * that quad_fill_inside takes (dilation_w 1): 0 where (y, x)'s is clipped. */
static inline int32_t quad_inside(const ts_conv2d_s8_params *p, int32_t y, int32_t x, int32_t most)
{
    const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
    int32_t m;
    if (p->dilation_w != 1 || y0 < 0 || y0 + (p->filter_h - 1) * p->dilation_h >= p->in_h || x0 < 0 ||
        x0 + p->filter_w > p->in_w) {
        return 0;
    }
    m = (p->in_w - p->filter_w - x0) / p->stride_w + 1; /* the row's windows inside from x on */
    m = m < p->out_w - x ? m : p->out_w - x;
    return m < most ? m : most;
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
    int32_t b, i, q, j, o;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        int32_t y = 0, x = 0; /* pixel i's place */
        for (i = 0; i < pixels; i += TS_QUAD_PX) {
            const int32_t n = pixels - i < TS_QUAD_PX ? pixels - i : TS_QUAD_PX;
            for (q = 0; q < TS_QUAD_PX;) {
                uint32_t *slot = xs + 2 * q;
                const int32_t m = q < n ? quad_inside(p, y, x, n - q) : 0;
                if (m > 0) { /* a run of whole windows in this row */
                    const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
                    quad_fill_inside(in_b + ((size_t)y0 * p->in_w + x0) * p->in_c, p->stride_w * p->in_c, m,
                                     p->filter_h, p->filter_w * p->in_c, (size_t)p->dilation_h * p->in_w * p->in_c, k,
                                     k4, off2, ts_bytes4(pad), slot);
                } else if (q < n) {
                    quad_fill(p, in_b, y * p->stride_h - p->pad_top, x * p->stride_w - p->pad_left, pad, k, k4, off2,
                              slot);
                } else { /* a last quad's missing pixels: computed from zeros, not stored */
                    for (j = 0; j < k4; j += 4, slot += 2 * TS_QUAD_PX) {
                        slot[0] = 0;
                        slot[1] = 0;
                    }
                }
                if (q < n) {
                    const int32_t done = m > 0 ? m : 1;
                    q += done;
                    x += done;
                    if (x == out_w) {
                        x = 0;
                        ++y;
                    }
                } else {
                    ++q;
                }
            }
            if (p->quads != NULL && n == TS_QUAD_PX) {
                quad_channels(xs, p->quads, k4 / 4, output, out_c, lo4, hi4);
                output += (size_t)n * out_c;
                continue;
            }
            if (p->quads != NULL) {
                quad_channels_few(xs, p->quads, k4 / 4, output, out_c, n, lo, hi);
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

/* Strips of quad blocks (ts_conv2d_s8_strip, where a six-pixel block of the widened path does not fit
 * its room): up to `strip` blocks of TS_QUAD_PX pixels each (quad layout: pixel q's words of group g
 * at word 2 * (4 g + q) of its block, 8 * k4 bytes), filled from whole words of the input (in_c a
 * multiple of 4, dilation_w 1), then each output channel over the strip's blocks: quad_dot (17
 * instructions per 16 products, against the pair path's 26), ts_rq from the table (l1 0: the
 * formula), the four results packed, clamped bytewise and stored out_c apart. */


/* quad_dot two groups a pass (an odd first group by quad_dot): two filter words by one LDRD, 31
 * instructions per 32 products. */
static inline void quad_dot2(const uint32_t *xs, const int8_t *w, int32_t groups, int32_t *acc)
{
    if ((groups & 1) != 0) {
        quad_dot(xs, w, 1, acc);
        xs += 2 * TS_QUAD_PX;
        w += 4;
        --groups;
    }
    if (groups <= 0) {
        return;
    }
    {
        /* the 12 operands in registers named here (TS_REG, ts_simd.h) */
        register int32_t a0 TS_REG("r0") = acc[0], a1 TS_REG("r1") = acc[1], a2 TS_REG("r2") = acc[2];
        register int32_t a3 TS_REG("r3") = acc[3];
        register const int8_t *wp TS_REG("r4") = w, *const end TS_REG("r5") = w + 4 * groups;
        register const uint32_t *xp TS_REG("r6") = xs;
        register uint32_t we TS_REG("r8"), wo TS_REG("r9"), xe TS_REG("r10"), xo TS_REG("r11"), wn TS_REG("r12");
#define QUAD2_PIXEL(a, off)                                                                             \
    "ldrd    %[xe], %[xo], [%[xs], #" off "]\n\t"                                                        \
    "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                       \
    "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
        __asm__ volatile("1:\n\t"
                         "ldrd    %[wo], %[wn], [%[w]], #8\n\t"
                         "ldrd    %[xe], %[xo], [%[xs]], #64\n\t"
                         "sxtb16  %[we], %[wo]\n\t"
                         "sxtb16  %[wo], %[wo], ror #8\n\t"
                         "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
                         "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
                         QUAD2_PIXEL("a1", "-56") QUAD2_PIXEL("a2", "-48") QUAD2_PIXEL("a3", "-40")
                         "sxtb16  %[we], %[wn]\n\t"
                         "sxtb16  %[wo], %[wn], ror #8\n\t"
                         QUAD2_PIXEL("a0", "-32") QUAD2_PIXEL("a1", "-24") QUAD2_PIXEL("a2", "-16")
                         QUAD2_PIXEL("a3", "-8")
                         "cmp     %[w], %[end]\n\t"
                         "bne     1b\n\t"
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [w] "+r"(wp),
                           [xs] "+r"(xp), [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe), [xo] "=&r"(xo),
                           [wn] "=&r"(wn)
                         : [end] "r"(end)
                         : "cc", "memory");
#undef QUAD2_PIXEL
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}


/* Channels of one whole quad block xs (`groups` groups) from filter w (channels contiguous: each
 * channel's K = 4 * groups bytes), ts_rq table rq and bias (NULL: 0) on, the quad's output bytes of
 * the first at out (pixels out_c bytes apart), `channels` of them or up to one whose l1 is 0 (the
 * formula's: the caller's), in one asm loop: per channel the bias in four accumulators, groups % 4
 * first (one, then two), then four groups a pass (60 instructions per 64 products), ts_rq's six steps on
 * each, the four results packed (BFI), clamped bytewise and stored. Returns the channels done. */
static TS_NOINLINE int32_t quad_rq_channels(const uint32_t *xs, const int8_t *w, const int32_t *rq,
                                            const int32_t *bias, int32_t groups, int8_t *out, int32_t out_c,
                                            uint32_t lo4, uint32_t hi4, int32_t channels)
{
    static const int32_t zero = 0;
    const uint32_t *const xbase = xs;
    const int32_t rem = groups & 3, bias_step = bias != NULL ? 4 : 0;
    const int32_t *bp = bias != NULL ? bias : &zero;
    int32_t left = channels;
    int8_t *o = out;
    /* the loop's 13 register operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0"), a1 TS_REG("r1"), a2 TS_REG("r2"), a3 TS_REG("r3");
    register const int8_t *wp TS_REG("r4") = w;
    register const uint32_t *xp TS_REG("r5");
    register const uint32_t *const xend TS_REG("r6") = xs + 2 * TS_QUAD_PX * groups;
    register uint32_t we TS_REG("r8"), wo TS_REG("r9"), xe TS_REG("r10"), xo TS_REG("r11"), wn TS_REG("r12");
    register const int32_t *t TS_REG("lr") = rq;
    if (groups < 1 || channels < 1) {
        return 0;
    }
#define QRC_PIXEL(a, off)                                                                               \
    "ldrd    %[xe], %[xo], [%[xp], #" off "]\n\t"                                                        \
    "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                       \
    "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
/* two groups: their filter words by one LDRD, the block's words from xp on (post-indexed by `step`
 * bytes; pixels 1-3 of the first group and 0-3 of the second at the offsets after it) */
#define QRC_TWO(step, p1, p2, p3, q0, q1, q2, q3)                                                      \
    "ldrd    %[wo], %[wn], [%[w]], #8\n\t"                                                              \
    "ldrd    %[xe], %[xo], [%[xp]], #" step "\n\t"                                                      \
    "sxtb16  %[we], %[wo]\n\t"                                                                         \
    "sxtb16  %[wo], %[wo], ror #8\n\t"                                                                 \
    "smlad   %[a0], %[xe], %[we], %[a0]\n\t"                                                           \
    "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"                                                           \
    QRC_PIXEL("a1", p1) QRC_PIXEL("a2", p2) QRC_PIXEL("a3", p3)                                         \
    "sxtb16  %[we], %[wn]\n\t"                                                                         \
    "sxtb16  %[wo], %[wn], ror #8\n\t"                                                                 \
    QRC_PIXEL("a0", q0) QRC_PIXEL("a1", q1) QRC_PIXEL("a2", q2) QRC_PIXEL("a3", q3)
/* ts_rq_apply's six steps on a, in place: m we, left + 1 wo, base xe, rr xo, xp scratch */
#define QRC_RQ(a) TS_RQ_STEPS_ASM(a, a, a, "we", "wo", "xe", "xo", "xp")
    __asm__ volatile(
        "1:\n\t"
        "ldr     %[wo], [%[t], #4]\n\t" /* l1 0: the formula's channel, the caller's */
        "cmp     %[wo], #0\n\t"
        "beq     9f\n\t"
        "ldr     %[we], %[bp]\n\t"
        "ldr     %[wo], %[bstep]\n\t"
        "ldr     %[a0], [%[we]]\n\t"
        "add     %[we], %[we], %[wo]\n\t"
        "str     %[we], %[bp]\n\t"
        "mov     %[a1], %[a0]\n\t"
        "mov     %[a2], %[a0]\n\t"
        "mov     %[a3], %[a0]\n\t"
        "ldr     %[xp], %[xbase]\n\t"
        "ldr     %[we], %[rem]\n\t" /* groups % 4: N its bit 0, C its bit 1 */
        "lsls    %[we], %[we], #31\n\t"
        "bpl     4f\n\t"
        "ldr     %[wo], [%[w]], #4\n\t" /* a first group alone */
        "ldrd    %[xe], %[xo], [%[xp]], #32\n\t"
        "sxtb16  %[we], %[wo]\n\t"
        "sxtb16  %[wo], %[wo], ror #8\n\t"
        "smlad   %[a0], %[xe], %[we], %[a0]\n\t"
        "smlad   %[a0], %[xo], %[wo], %[a0]\n\t"
        QRC_PIXEL("a1", "-24") QRC_PIXEL("a2", "-16") QRC_PIXEL("a3", "-8")
        "4:\n\t"
        "bcc     5f\n\t"
        QRC_TWO("64", "-56", "-48", "-40", "-32", "-24", "-16", "-8") /* then two */
        "5:\n\t"
        "cmp     %[xp], %[xend]\n\t"
        "beq     3f\n\t"
        "2:\n\t" /* four groups a pass */
        QRC_TWO("128", "-120", "-112", "-104", "-96", "-88", "-80", "-72")
        "ldrd    %[wo], %[wn], [%[w]], #8\n\t"
        "sxtb16  %[we], %[wo]\n\t"
        "sxtb16  %[wo], %[wo], ror #8\n\t"
        QRC_PIXEL("a0", "-64") QRC_PIXEL("a1", "-56") QRC_PIXEL("a2", "-48") QRC_PIXEL("a3", "-40")
        "sxtb16  %[we], %[wn]\n\t"
        "sxtb16  %[wo], %[wn], ror #8\n\t"
        QRC_PIXEL("a0", "-32") QRC_PIXEL("a1", "-24") QRC_PIXEL("a2", "-16") QRC_PIXEL("a3", "-8")
        "cmp     %[xp], %[xend]\n\t"
        "bne     2b\n\t"
        "3:\n\t"
        "ldrd    %[we], %[wo], [%[t]], #8\n\t" /* m, l1 */
        "ldrd    %[xe], %[xo], [%[t]], #8\n\t" /* base, rr */
        QRC_RQ("a0") QRC_RQ("a1") QRC_RQ("a2") QRC_RQ("a3")
        "bfi     %[a0], %[a1], #8, #8\n\t"
        "bfi     %[a0], %[a2], #16, #8\n\t"
        "bfi     %[a0], %[a3], #24, #8\n\t"
        "ldr     %[we], %[lo4]\n\t"
        "ldr     %[wo], %[hi4]\n\t"
        TS_CLAMP4_ASM("a0", "we", "wo", "xe")
        "ldr     %[xp], %[o]\n\t"
        "ldr     %[xe], %[oc]\n\t"
        "strb    %[a0], [%[xp]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xp], %[xe]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "add     %[xo], %[xp], %[xe], lsl #1\n\t"
        "strb    %[a0], [%[xo]]\n\t"
        "lsr     %[a0], %[a0], #8\n\t"
        "strb    %[a0], [%[xo], %[xe]]\n\t"
        "add     %[xp], %[xp], #1\n\t"
        "str     %[xp], %[o]\n\t"
        "ldr     %[xp], %[left]\n\t"
        "subs    %[xp], %[xp], #1\n\t"
        "str     %[xp], %[left]\n\t"
        "bne     1b\n\t"
        "9:"
        : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [we] "=&r"(we), [wo] "=&r"(wo),
          [xe] "=&r"(xe), [xo] "=&r"(xo), [wn] "=&r"(wn), [xp] "=&r"(xp), [w] "+r"(wp), [t] "+r"(t),
          [bp] "+m"(bp), [o] "+m"(o), [left] "+m"(left)
        : [xend] "r"(xend), [xbase] "m"(xbase), [rem] "m"(rem), [bstep] "m"(bias_step), [lo4] "m"(lo4),
          [hi4] "m"(hi4), [oc] "m"(out_c)
        : "cc", "memory");
#undef QRC_PIXEL
#undef QRC_TWO
#undef QRC_RQ
    return channels - left;
}

/* Channels [o_first, o_last) of quad block xb (n of its pixels stored, from ob: channel o_first's
 * byte of its first pixel) in C: a short block, channels the formula requantises (no ts_rq, or a
 * table's l1 0). */
static void quad_channels_c(const ts_conv2d_s8_params *p, const uint32_t *xb, const int8_t *filter,
                            const int32_t *bias, int8_t *ob, int32_t o_first, int32_t o_last, int32_t n, int rq,
                            const int32_t *rq_table)
{
    const int32_t out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c, lo = p->act_min, hi = p->act_max;
    int32_t o, q;
    for (o = o_first; o < o_last; ++o, ++ob) {
        const int32_t b0 = bias != NULL ? bias[o] : 0, m = p->multiplier[o], sh = p->shift[o];
        int32_t acc[TS_QUAD_PX] = {b0, b0, b0, b0};
        ts_rq r;
        int rq_o = rq;
        if (rq_table != NULL) { /* prepared at compile time (l1 0: this channel by the formula) */
            r = *(const ts_rq *)(const void *)(rq_table + 4 * o);
            rq_o = rq && r.l1 != 0;
        } else {
            ts_rq_prepare(m, sh, p->output_offset, &r);
        }
        quad_dot2(xb, filter + (size_t)o * k, k >> 2, acc);
        for (q = 0; q < n; ++q) {
            ob[(size_t)q * out_c] = rq_o ? rq_clamp(acc[q], &r, lo, hi)
                                         : conv_out(acc[q], m, sh, p->output_offset, lo, hi);
        }
    }
}

/* Output pixels [first, first + pixels) of the flat order (one batch) in strips of up to `strip` quad
 * blocks at xs (word-aligned, strip * 8 * k4 bytes, disjoint from the input and those pixels'
 * outputs; in_c a multiple of 4, dilation_w 1): each whole block's channels by quad_rq_channels
 * where a table gives their ts_rq, the rest in C. Every input byte a strip reads is read before
 * any of its outputs is written. */
static TS_NOINLINE void quad_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int rq, uint32_t *xs, int32_t first, int32_t pixels,
                        int32_t strip, const int32_t *rq_table)
{
    const int32_t out_c = p->out_c, k = p->filter_h * p->filter_w * p->in_c;
    const int32_t strip_px = strip * TS_QUAD_PX;
    const uint32_t lo4 = ts_bytes4(p->act_min), hi4 = ts_bytes4(p->act_max);
    int32_t i, o, b;
    for (i = first; i < first + pixels; i += strip_px) {
        const int32_t np = first + pixels - i < strip_px ? first + pixels - i : strip_px;
        const int32_t nb = (np + TS_QUAD_PX - 1) / TS_QUAD_PX;
        fill_rows(p, input, i, np, nb, TS_QUAD_PX, xs);
        for (b = 0; b < nb; ++b) {
            const uint32_t *xb = xs + (size_t)b * 2 * k;
            const int32_t n = np - b * TS_QUAD_PX < TS_QUAD_PX ? np - b * TS_QUAD_PX : TS_QUAD_PX;
            int8_t *const ob = output + (size_t)(i + b * TS_QUAD_PX) * out_c;
            o = 0;
            while (rq && rq_table != NULL && n == TS_QUAD_PX && o < out_c) {
                o += quad_rq_channels(xb, filter + (size_t)o * k, rq_table + 4 * o, bias != NULL ? bias + o : NULL,
                                      k >> 2, ob + o, out_c, lo4, hi4, out_c - o);
                if (o < out_c) { /* channel o: l1 0, the formula's steps */
                    quad_channels_c(p, xb, filter, bias, ob + o, o, o + 1, n, rq, rq_table);
                    ++o;
                }
            }
            quad_channels_c(p, xb, filter, bias, ob + o, o, out_c, n, rq, rq_table);
        }
    }
}

/* CONV_2D stem (ts_kernels.h): 3x3 filters over 3 input channels from the generator's table
 * (p->stem), each output pixel straight from its window in the input, no copy (a clipped window
 * from a stack patch). stem_pixels' job, read at these byte offsets by its asm: */
typedef struct {
    const int32_t *table; /*  0: the generator's table, its first group */
    int32_t step;         /*  4: input bytes from one pixel's window to the next (3 * stride_w), less
                                 two rows (the widening leaves r10 at the window's third row) */
    int8_t *out_end;      /*  8: past the last pixel's output bytes */
    uint32_t lo4, hi4;    /* 12, 16: act_min, act_max in every byte */
    int32_t row;          /* 20: input bytes from one window row to the next (the asm's frame: the
                                 six words up to here, then the pixel's lanes) */
    const int8_t *in8;    /* 24: byte 8 of the first pixel's window's first row */
    int8_t *out;          /* 28: the first pixel's output bytes */
} stem_job;

#define TS_STEM_JOB_AT(field, at) typedef char stem_job_##field##_at[offsetof(stem_job, field) == (at) ? 1 : -1]
TS_STEM_JOB_AT(table, 0);
TS_STEM_JOB_AT(step, 4);
TS_STEM_JOB_AT(out_end, 8);
TS_STEM_JOB_AT(lo4, 12);
TS_STEM_JOB_AT(hi4, 16);
TS_STEM_JOB_AT(row, 20);
TS_STEM_JOB_AT(in8, 24);
TS_STEM_JOB_AT(out, 28);
#undef TS_STEM_JOB_AT

/* Output pixels job->out .. job->out_end, one window of 3 rows x 9 bytes each, job->step input bytes
 * apart, every output channel of each from the stem table, in one asm loop (no C between a call's
 * first pixel and its last). Per pixel, its window widened once into 14 words of 16-bit lanes on
 * the stack (frame word 6 on): the three rows' ninth bytes (LDRSB; rows 0 and 1 paired by PKHBT,
 * then row 2's), then per filter row its bytes 0-3 and 4-7, each one (unaligned) LDR widened by
 * SXTB16 into even and odd lanes (27 instructions, two STM). Then per group of four channels: the
 * four accumulators start at the table's biases (input_offset * sum(w) folded in, so the input
 * bytes are used as they are: int8 x int8 products, the same integer sum), the ninth bytes by one
 * SMLAD and one SMLABB/SMLABT a channel, each of the six lane pairs (LDRD) against four channels'
 * widened filter words (LDM, four words a load) by SMLAD (11 instructions per 32 products); then
 * per channel ts_rq with a right shift (left 0, so s2 = acc << 1, which the accumulator already
 * is: the table's filter words and biases are doubled; one LDM of two channels' m, base, rr;
 * base - [acc < 0] as base + (s2 ASR 31); a constant channel's filter, bias and m are zero, so the
 * result is its base), SSAT, the four bytes packed (BFI), clamped bytewise (SSUB8/SEL; left out
 * where the range is all of int8) and stored as one word (a last group of 1-3 channels byte by
 * byte). Reads each pixel's window before any of its bytes is written. Registers: r0-r3 the
 * accumulators, r4-r7 filter words, r4-r9 ts_rq fields, r8-r9 input lanes, r10 the window's byte 8
 * of its first row, r11 the table, r12 the row step (at a group's end the table's "another
 * group?" word), lr the output; the frame [sp] holds table, step, out_end, lo4, hi4, the row step,
 * then the lanes. 102 instructions per pixel and group of four channels (107 clamped), 33 per
 * pixel. */
__attribute__((naked, noinline))
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noipa))
#endif
static void stem_pixels(__attribute__((unused)) const stem_job *job)
{
/* a filter row word's lanes at sp + off, against four channels' filter words */
#define TS_STEM_WORD(off)                                                                              \
    "ldrd    r8, r9, [sp, #" off "]\n\t"                                                               \
    "ldm     r11!, {r4-r7}\n\t"                                                                        \
    "smlad   r0, r8, r4, r0\n\t"                                                                       \
    "smlad   r0, r9, r5, r0\n\t"                                                                       \
    "smlad   r1, r8, r6, r1\n\t"                                                                       \
    "smlad   r1, r9, r7, r1\n\t"                                                                       \
    "ldm     r11!, {r4-r7}\n\t"                                                                        \
    "smlad   r2, r8, r4, r2\n\t"                                                                       \
    "smlad   r2, r9, r5, r2\n\t"                                                                       \
    "smlad   r3, r8, r6, r3\n\t"                                                                       \
    "smlad   r3, r9, r7, r3\n\t"
/* four bytes of a filter row at r10 + off widened into even, odd lanes */
#define TS_STEM_WIDEN(off, even, odd)                                                                  \
    "ldr     " odd ", [r10, #" off "]\n\t"                                                             \
    "sxtb16  " even ", " odd "\n\t"                                                                    \
    "sxtb16  " odd ", " odd ", ror #8\n\t"
/* ts_rq with a right shift on accumulators a and b, which already hold s2 = acc << 1 (the table's
 * filter and biases doubled): their m, base, rr (r | 256) in r4-r6 and r7-r9 by one LDM, base -
 * [acc < 0] computed in place of base; `regs` r4-r9, or r4-r9 and r12 for the group's last pair
 * (r12: the table's "another group?" word) */
#define TS_STEM_RQ2(a, b, regs)                                                                        \
    "ldm     r11!, {" regs "}\n\t"                                                                     \
    "add     r5, r5, " a ", asr #31\n\t"                                                               \
    "smmlar  " a ", " a ", r4, r5\n\t"                                                                 \
    "asr     " a ", " a ", r6\n\t"                                                                     \
    "ssat    " a ", #8, " a "\n\t"                                                                     \
    "add     r8, r8, " b ", asr #31\n\t"                                                               \
    "smmlar  " b ", " b ", r7, r8\n\t"                                                                 \
    "asr     " b ", " b ", r9\n\t"                                                                     \
    "ssat    " b ", #8, " b "\n\t"
/* the four results clamped bytewise to [lo4, hi4] */
#define TS_STEM_CLAMP                                                                                  \
    "ldrd    r4, r5, [sp, #12]\n\t"                                                                    \
    "ssub8   r6, r0, r4\n\t"                                                                           \
    "sel     r0, r0, r4\n\t"                                                                           \
    "ssub8   r6, r5, r0\n\t"                                                                           \
    "sel     r0, r0, r5\n\t"
/* the pixel loop (labels: pixel, group, tail, next pixel), `clamp` TS_STEM_CLAMP or nothing; the
 * group word r12: 0 another group follows, 1 the last (four channels), 1 + t a last of t < 4 */
#define TS_STEM_PIXELS(pixel, group, tail, next, clamp)                                                \
    pixel ":\n\t"                                                                                      \
    "ldr     r12, [sp, #20]\n\t"                                                                       \
    "ldrsb   r0, [r10]\n\t"                                                                            \
    "ldrsb   r1, [r10, r12]\n\t"                                                                       \
    "pkhbt   r0, r0, r1, lsl #16\n\t"                                                                  \
    "ldrsb   r1, [r10, r12, lsl #1]\n\t" TS_STEM_WIDEN("-8", "r2", "r3") TS_STEM_WIDEN("-4", "r4", "r5") \
    "add     r10, r10, r12\n\t" TS_STEM_WIDEN("-8", "r6", "r7") TS_STEM_WIDEN("-4", "r8", "r9")          \
    "add     r11, sp, #24\n\t"                                                                         \
    "stm     r11!, {r0-r9}\n\t"                                                                        \
    "add     r10, r10, r12\n\t" TS_STEM_WIDEN("-8", "r0", "r1") TS_STEM_WIDEN("-4", "r2", "r3")          \
    "stm     r11, {r0-r3}\n\t"                                                                         \
    "ldr     r11, [sp]\n\t" group ":\n\t"                                                              \
    "ldm     r11!, {r0-r7}\n\t"                                                                        \
    "ldrd    r8, r9, [sp, #24]\n\t"                                                                    \
    "smlad   r0, r8, r4, r0\n\t"                                                                       \
    "smlad   r1, r8, r5, r1\n\t"                                                                       \
    "smlad   r2, r8, r6, r2\n\t"                                                                       \
    "smlad   r3, r8, r7, r3\n\t"                                                                       \
    "ldm     r11!, {r4, r5}\n\t"                                                                       \
    "smlabb  r0, r9, r4, r0\n\t"                                                                       \
    "smlabt  r1, r9, r4, r1\n\t"                                                                       \
    "smlabb  r2, r9, r5, r2\n\t"                                                                       \
    "smlabt  r3, r9, r5, r3\n\t" TS_STEM_WORD("32") TS_STEM_WORD("40") TS_STEM_WORD("48")               \
    TS_STEM_WORD("56") TS_STEM_WORD("64") TS_STEM_WORD("72") TS_STEM_RQ2("r0", "r1", "r4-r9")          \
    TS_STEM_RQ2("r2", "r3", "r4-r9, r12")                                                             \
    "bfi     r0, r1, #8, #8\n\t"                                                                       \
    "bfi     r0, r2, #16, #8\n\t"                                                                      \
    "bfi     r0, r3, #24, #8\n\t" clamp                                                                \
    "cmp     r12, #1\n\t"                                                                              \
    "bhi     " tail "f\n\t"                                                                            \
    "str     r0, [lr], #4\n\t"                                                                         \
    "bne     " group "b\n\t" next ":\n\t"                                                              \
    "ldrd    r8, r9, [sp, #4]\n\t"                                                                     \
    "add     r10, r10, r8\n\t"                                                                         \
    "cmp     lr, r9\n\t"                                                                               \
    "bne     " pixel "b\n\t"                                                                           \
    "b       9f\n\t" tail ":\n\t"                                                                      \
    "strb    r0, [lr], #1\n\t"                                                                         \
    "lsr     r0, r0, #8\n\t"                                                                           \
    "sub     r12, r12, #1\n\t"                                                                         \
    "cmp     r12, #1\n\t"                                                                              \
    "bne     " tail "b\n\t"                                                                            \
    "b       " next "b\n\t"
    __asm__ volatile("push    {r3-r11, lr}\n\t"
                     "ldm     r0, {r1-r6}\n\t"
                     "ldr     r10, [r0, #24]\n\t"
                     "ldr     lr, [r0, #28]\n\t"
                     "sub     sp, sp, #56\n\t" /* the lanes */
                     "push    {r1-r6}\n\t"
                     "cmp     r4, #0x80808080\n\t"
                     "bne     20f\n\t"
                     "cmp     r5, #0x7f7f7f7f\n\t"
                     "bne     20f\n\t" TS_STEM_PIXELS("1", "2", "3", "4", "")
                     "20:\n\t" TS_STEM_PIXELS("11", "12", "13", "14", TS_STEM_CLAMP)
                     "9:\n\t"
                     "add     sp, sp, #80\n\t"
                     "pop     {r3-r11, pc}\n\t");
#undef TS_STEM_PIXELS
#undef TS_STEM_CLAMP
#undef TS_STEM_RQ2
#undef TS_STEM_WIDEN
#undef TS_STEM_WORD
}

/* Whether the stem path takes p: its table, a 3x3 filter over 3 channels, dilation 1, strides of 1
 * or more, every channel ts_rq's or a constant (the table's fields; checks bit 2), the pad byte an
 * int8. */
static inline int stem_takes(const ts_conv2d_s8_params *p, int32_t checks)
{
    return p->stem != NULL && (checks & 4) != 0 && p->in_c == 3 && p->filter_h == 3 && p->filter_w == 3 &&
           p->dilation_h == 1 && p->dilation_w == 1 && p->stride_h >= 1 && p->stride_w >= 1 &&
           p->pad_left >= 0 && p->input_offset >= -127 && p->input_offset <= 128;
}

#define TS_STEM_PATCH_ROW 64 /* bytes of a patch row: windows of 1 + 18 / stride_w pixels side by side */

/* The windows of consecutive pixels of an output row that the input clips, `span` input columns
 * from column x0 (x0 < 0: left of the input) of rows y0 .. y0 + 2, into patch (3 rows of `row`
 * bytes, a multiple of 4): per row, pad words (the input zero point `pad` in every byte), then its
 * columns inside the input copied over them as one run (quad_run; rows outside the input stay
 * pad). */
static void stem_patch(const ts_conv2d_s8_params *p, const int8_t *in_b, int32_t y0, int32_t x0, int32_t span,
                       int32_t row, int8_t pad, int8_t *patch)
{
    const uint32_t pad4 = ts_bytes4(pad);
    const int32_t in_w = p->in_w, c0 = x0 < 0 ? (x0 < -span ? span : -x0) : 0;
    const int32_t c1 = in_w - x0 < span ? (in_w - x0 < c0 ? c0 : in_w - x0) : span;
    int32_t ky, j;
    for (ky = 0; ky < 3; ++ky) {
        int8_t *const d = patch + row * ky;
        const int32_t iy = y0 + ky;
        for (j = 0; j < row; j += 4) { /* a store per word (a plain loop becomes a memset call) */
            __asm__ volatile("str     %[v], [%[p], %[j]]" : : [v] "r"(pad4), [p] "r"(d), [j] "r"(j) : "memory");
        }
        if (iy >= 0 && iy < p->in_h && c1 > c0) {
            quad_run(d + 3 * c0, in_b + ((size_t)iy * in_w + (size_t)(x0 + c0)) * 3, 3 * (c1 - c0));
        }
    }
}

/* The layer through stem_pixels where stem_takes p (else 0, nothing done), output row by output row:
 * the run of pixels whose windows the input holds whole in one call, the others (a clipped row's,
 * its clipped first and last columns') in runs of up to 1 + 18 / stride_w pixels, each run's
 * windows first copied into a stack patch. Out of line, so that its callers pay a test of p->stem
 * only. */
static TS_NOINLINE int conv_stem(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output, int32_t checks)
{
    int8_t patch[3 * TS_STEM_PATCH_ROW] __attribute__((aligned(4)));
    const int32_t in_h = p->in_h, in_w = p->in_w, out_w = p->out_w, out_c = p->out_c;
    const int32_t sh = p->stride_h, sw = p->stride_w, pl = p->pad_left;
    const int8_t pad = (int8_t)-p->input_offset;
    const int32_t last = in_w - 3 + pl; /* the last window's first column, plus pad_left */
    stem_job job;
    int32_t b, y, x, xa, xb, most; /* the output columns [xa, xb) whose windows lie inside the input's */
    if (!stem_takes(p, checks)) {
        return 0;
    }
    xa = (pl + sw - 1) / sw;
    xb = last >= 0 ? last / sw + 1 : 0;
    xb = xb < out_w ? xb : out_w;
    xb = xb > xa ? xb : xa;
    most = (TS_STEM_PATCH_ROW / 3 - 3) / sw + 1;
    job.table = p->stem;
    job.lo4 = ts_bytes4(p->act_min);
    job.hi4 = ts_bytes4(p->act_max);
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * 3;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * sh - p->pad_top;
            const int whole = y0 >= 0 && y0 + 3 <= in_h;
            for (x = 0; x < out_w;) {
                const int32_t x0 = x * sw - pl;
                job.out = output;
                if (whole && x >= xa && x < xb) {
                    job.in8 = in_b + ((size_t)y0 * in_w + (size_t)x0) * 3 + 8;
                    job.row = 3 * in_w;
                    output += (size_t)(xb - x) * out_c;
                    x = xb;
                } else {
                    const int32_t end = whole && x < xa ? xa : out_w;
                    const int32_t n = end - x < most ? end - x : most, span = (n - 1) * sw + 3;
                    job.row = (3 * span + 3) & ~3;
                    stem_patch(p, in_b, y0, x0, span, job.row, pad, patch);
                    job.in8 = patch + 8;
                    output += (size_t)n * out_c;
                    x += n;
                }
                job.step = 3 * sw - 2 * job.row; /* the next window, from its third row */
                job.out_end = output;
                stem_pixels(&job);
            }
        }
    }
    return 1;
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

#define TS_PATHS_NO_POINTWISE 2 /* conv_paths' wide bit 1 */

static int conv_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int wide, int32_t checks, uint32_t *big);

#if TS_CONV_WIDE
/* A flat 1x1 layer's pixels [done, total) after the widened leading ones (`rest`: the layer's
 * parameters), by the other paths: first up to the next multiple of PW_CHUNK, then the rest (the
 * overlap the plan allows holds chunk by chunk of the whole layer's flat order only:
 * tinysched.memory.overlap `_conv`),
 * so no chunk of theirs spans two of the whole layer's (one such chunk, over an output that
 * overlaps its input, wrote pixel bytes a later channel pair of it still read). */
static int flat_rest(ts_conv2d_s8_params *rest, const int8_t *input, const int8_t *filter, const int32_t *bias,
                     int8_t *output, int32_t done, int32_t total, int32_t checks, uint32_t *big)
{
    const int32_t in_c = rest->in_c, out_c = rest->out_c;
    int32_t at = done;
    rest->in_h = rest->out_h = 1;
    while (at < total) {
        const int32_t aligned = (at / PW_CHUNK + 1) * PW_CHUNK;
        const int32_t end = at == done && aligned < total ? aligned : total;
        int status;
        rest->in_w = rest->out_w = end - at;
        status = conv_paths(rest, input + (size_t)at * in_c, filter, bias, output + (size_t)at * out_c, 0, checks,
                            big);
        if (status != TS_OK) {
            return status;
        }
        at = end;
    }
    return TS_OK;
}
#endif

#if TS_CONV_WIDE
/* 1x1 CONV_2D with a short K (in_c 8, 12 or 16) from the generator's pixel table (ts_kernels.h,
 * CONV_2D "pixel in registers"): pixel by pixel of the flat order, the pixel's in_c bytes loaded by
 * one LDM and widened by SXTB16 / SXTB16 ROR #8 into in_c / 2 registers of int16 lane pairs, even
 * bytes [x_4g | x_4g+2] then odd [x_4g+1 | x_4g+3] per group g, where they stay for all of its
 * output channels. Per channel the table holds (4 + in_c / 2 words, read by LDM in this order):
 *   acc0 = (bias + input_offset * sum(w)) * 2^l1 (wrapped to int32: 1x1 has no padding, so every
 *          product carries input_offset; l1 = left + 1 of the channel's ts_rq),
 *   the filter widened to lanes in the pixel's order and pre-shifted by l1 (w * 2^l1 is int16 for
 *          l1 <= 8), so the SMLAD sum IS ts_rq's s2 = acc << l1 (the same value mod 2^32, which
 *          ts_rq's bound makes exact), no shift,
 *   m, base, rr: ts_rq's fields, every channel's r >= 1 (the negative correction is then
 *          base - (s2 >> 31, logical)); rr's bit 9 marks the layer's last channel (ASR by register
 *          reads rr's low byte only).
 * A constant channel (ts_rq's m 0, rr 0) has acc0 and its filter all 0, so s2 = 0 needs no
 * correction and SMMLAR gives base, its value. (r >= 1 means no left shift: l1 is 1 for every
 * channel that is not a constant.) Then per output: SUB (correction), SMMLAR, ASR, SSAT (the
 * activation range is all of int8: the generator emits the table only then) and STRB: 19
 * instructions per 16 products at in_c 16 (4 LDM, 8 SMLAD, 5, TST + BEQ), 15 per 12, 12 per 8; with
 * out_c even two channels a pass share the TST + BEQ (18, 14, 11); per pixel 1 LDM, in_c / 2
 * SXTB16 and 5 more (7 for the pixels of a strided row: the LDM without write-back, then the step
 * from the stack added; pixel_rows). Read/write order: every input byte of pixel i is read
 * (one LDM) before its first output byte is written, pixels in increasing order, outputs of pixel i
 * channel by channel: no overlap the default order allows is broken (for out_c >= in_c the binding
 * pixel is the last for both; at a stride pixel i is output pixel i and its one input pixel, one
 * pixel at a time being one of the runs tinysched/memory/overlap.py `_conv` allows for). Registers: r0 the accumulator, r1-r3 (r8-r11 where the pixel leaves
 * them free) table words, the pixel in r4 up, r12 the table, lr the output; the input pointer and
 * its end on the stack. */
#define TS_PX_WIDEN(e, o) /* a word in e: e = its even lanes, o = its odd */                         \
    "sxtb16  " o ", " e ", ror #8\n\t"                                                                 \
    "sxtb16  " e ", " e "\n\t"
/* one output: base in b, the accumulator (s2) in r0, m in m, rr in rr; its byte stored */
#define TS_PX_RQ_STORE(b, m, rr)                                                                       \
    "sub     " b ", " b ", r0, lsr #31\n\t"                                                            \
    "smmlar  " b ", r0, " m ", " b "\n\t"                                                              \
    "asr     " b ", " b ", " rr "\n\t"                                                                 \
    "ssat    " b ", #8, " b "\n\t"                                                                     \
    "strb    " b ", [lr], #1\n\t"
/* one channel's words (r12) against the pixel, its output stored */
#define TS_PX_CHANNEL16                                                                                \
    "ldm     r12!, {r0, r1, r2, r3}\n\t" /* acc0, e0, o0, e1 */                                        \
    "smlad   r0, r4, r1, r0\n\t"                                                                       \
    "smlad   r0, r5, r2, r0\n\t"                                                                       \
    "smlad   r0, r6, r3, r0\n\t"                                                                       \
    "ldm     r12!, {r1, r2, r3}\n\t" /* o1, e2, o2 */                                                  \
    "smlad   r0, r7, r1, r0\n\t"                                                                       \
    "smlad   r0, r8, r2, r0\n\t"                                                                       \
    "smlad   r0, r9, r3, r0\n\t"                                                                       \
    "ldm     r12!, {r1, r2, r3}\n\t" /* e3, o3, m */                                                   \
    "smlad   r0, r10, r1, r0\n\t"                                                                      \
    "smlad   r0, r11, r2, r0\n\t"                                                                      \
    "ldm     r12!, {r1, r2}\n\t" /* base, rr */                                                        \
    TS_PX_RQ_STORE("r1", "r3", "r2")
#define TS_PX_CHANNEL12                                                                                \
    "ldm     r12!, {r0, r1, r2, r3, r10, r11}\n\t" /* acc0, e0, o0, e1, o1, e2 */                      \
    "smlad   r0, r4, r1, r0\n\t"                                                                       \
    "smlad   r0, r5, r2, r0\n\t"                                                                       \
    "smlad   r0, r6, r3, r0\n\t"                                                                       \
    "smlad   r0, r7, r10, r0\n\t"                                                                      \
    "smlad   r0, r8, r11, r0\n\t"                                                                      \
    "ldm     r12!, {r1, r2, r3, r10}\n\t" /* o2, m, base, rr */                                        \
    "smlad   r0, r9, r1, r0\n\t"                                                                       \
    TS_PX_RQ_STORE("r3", "r2", "r10")
#define TS_PX_CHANNEL8                                                                                 \
    "ldm     r12!, {r0, r1, r2, r3, r8, r9, r10, r11}\n\t" /* acc0, e0, o0, e1, o1, m, base, rr */     \
    "smlad   r0, r4, r1, r0\n\t"                                                                       \
    "smlad   r0, r5, r2, r0\n\t"                                                                       \
    "smlad   r0, r6, r3, r0\n\t"                                                                       \
    "smlad   r0, r7, r8, r0\n\t"                                                                       \
    TS_PX_RQ_STORE("r10", "r9", "r11")
/* pixels from input up to end (r0, r1: word-aligned, at least one pixel, end reached exactly by
 * the steps), every channel of the table (r2), outputs from r3 on: per pixel its words loaded into
 * the registers `regs` by `load` (which also moves r0 to the next pixel) and widened (`widen`), then
 * `channels` (one or two channel bodies) until the last channel's rr (in register `rr`) has bit 9
 * set. TS_PX_STEPPED's functions take a fifth argument (`step`): the bytes from one pixel to the
 * next. */
#define TS_PX_FUNCTION(name, load, regs, widen, channels, rr, step_arg)                                \
    __attribute__((naked, noinline)) TS_PX_NOIPA static void name(                                     \
        __attribute__((unused)) const int8_t *input, __attribute__((unused)) const int8_t *end,       \
        __attribute__((unused)) const int32_t *table, __attribute__((unused)) int8_t *output step_arg) \
    {                                                                                                  \
        __asm__ volatile("push    {r4-r11, lr}\n\t"                                                    \
                         "push    {r0, r1, r2}\n\t" /* [sp] input, [sp, #4] its end, [sp, #8] table */ \
                         "mov     lr, r3\n\t"                                                          \
                         "1:\n\t" load(regs) "str     r0, [sp]\n\t" widen "ldr     r12, [sp, #8]\n\t"  \
                         "2:\n\t" channels "tst     " rr ", #512\n\t"                                  \
                         "beq     2b\n\t"                                                              \
                         "ldrd    r0, r1, [sp]\n\t"                                                    \
                         "cmp     r0, r1\n\t"                                                          \
                         "bne     1b\n\t"                                                              \
                         "add     sp, sp, #12\n\t"                                                     \
                         "pop     {r4-r11, pc}\n\t");                                                  \
    }
/* consecutive pixels: one LDM with write-back (no fifth argument) */
#define TS_PX_FLAT(regs) "ldm     r0!, " regs "\n\t"
#define TS_PX_FLAT_ARG
/* pixels `step` bytes apart (a strided row): the step, the fifth argument, is on the stack above the
 * twelve words pushed ([sp, #48]) */
#define TS_PX_STEPPED(regs)                                                                            \
    "ldm     r0, " regs "\n\t"                                                                         \
    "ldr     r1, [sp, #48]\n\t"                                                                        \
    "add     r0, r0, r1\n\t"
#define TS_PX_STEPPED_ARG , __attribute__((unused)) int32_t step
#if defined(__GNUC__) && !defined(__clang__)
#define TS_PX_NOIPA __attribute__((noipa))
#else
#define TS_PX_NOIPA
#endif
#define TS_PX_WIDEN16 TS_PX_WIDEN("r4", "r5") TS_PX_WIDEN("r6", "r7") TS_PX_WIDEN("r8", "r9") TS_PX_WIDEN("r10", "r11")
#define TS_PX_WIDEN12 TS_PX_WIDEN("r4", "r5") TS_PX_WIDEN("r6", "r7") TS_PX_WIDEN("r8", "r9")
#define TS_PX_WIDEN8 TS_PX_WIDEN("r4", "r5") TS_PX_WIDEN("r6", "r7")
/* one channel a pass: any out_c (19 instructions per 16 products at in_c 16) */
TS_PX_FUNCTION(pixel_regs16, TS_PX_FLAT, "{r4, r6, r8, r10}", TS_PX_WIDEN16, TS_PX_CHANNEL16, "r2", TS_PX_FLAT_ARG)
TS_PX_FUNCTION(pixel_regs12, TS_PX_FLAT, "{r4, r6, r8}", TS_PX_WIDEN12, TS_PX_CHANNEL12, "r10", TS_PX_FLAT_ARG)
TS_PX_FUNCTION(pixel_regs8, TS_PX_FLAT, "{r4, r6}", TS_PX_WIDEN8, TS_PX_CHANNEL8, "r11", TS_PX_FLAT_ARG)
/* two channels a pass, one test of the marker (the second's): out_c even (18 per 16 at in_c 16) */
TS_PX_FUNCTION(pixel_regs16_pairs, TS_PX_FLAT, "{r4, r6, r8, r10}", TS_PX_WIDEN16, TS_PX_CHANNEL16 TS_PX_CHANNEL16, "r2", TS_PX_FLAT_ARG)
TS_PX_FUNCTION(pixel_regs12_pairs, TS_PX_FLAT, "{r4, r6, r8}", TS_PX_WIDEN12, TS_PX_CHANNEL12 TS_PX_CHANNEL12, "r10", TS_PX_FLAT_ARG)
TS_PX_FUNCTION(pixel_regs8_pairs, TS_PX_FLAT, "{r4, r6}", TS_PX_WIDEN8, TS_PX_CHANNEL8 TS_PX_CHANNEL8, "r11", TS_PX_FLAT_ARG)
/* the same over the pixels of a strided row (stride_w >= 2): 2 more instructions a pixel */
TS_PX_FUNCTION(pixel_steps16, TS_PX_STEPPED, "{r4, r6, r8, r10}", TS_PX_WIDEN16, TS_PX_CHANNEL16, "r2", TS_PX_STEPPED_ARG)
TS_PX_FUNCTION(pixel_steps12, TS_PX_STEPPED, "{r4, r6, r8}", TS_PX_WIDEN12, TS_PX_CHANNEL12, "r10", TS_PX_STEPPED_ARG)
TS_PX_FUNCTION(pixel_steps8, TS_PX_STEPPED, "{r4, r6}", TS_PX_WIDEN8, TS_PX_CHANNEL8, "r11", TS_PX_STEPPED_ARG)
TS_PX_FUNCTION(pixel_steps16_pairs, TS_PX_STEPPED, "{r4, r6, r8, r10}", TS_PX_WIDEN16, TS_PX_CHANNEL16 TS_PX_CHANNEL16, "r2", TS_PX_STEPPED_ARG)
TS_PX_FUNCTION(pixel_steps12_pairs, TS_PX_STEPPED, "{r4, r6, r8}", TS_PX_WIDEN12, TS_PX_CHANNEL12 TS_PX_CHANNEL12, "r10", TS_PX_STEPPED_ARG)
TS_PX_FUNCTION(pixel_steps8_pairs, TS_PX_STEPPED, "{r4, r6}", TS_PX_WIDEN8, TS_PX_CHANNEL8 TS_PX_CHANNEL8, "r11", TS_PX_STEPPED_ARG)
#define TS_PIXEL32_MAX_OUT_C 64 /* its partial sums on the stack: 256 bytes at most */
/* in_c 32 (strided layers only, out_c 32 to TS_PIXEL32_MAX_OUT_C: pixel_rows): the pixel in two halves of 16 bytes,
 * each widened once into r4-r11. The table: first, per channel from the last to the first, acc0 and
 * the 8 lane words of bytes 0-15 (9 words); then out_c * 4; then per channel from the first, the 8
 * lane words of bytes 16-31, m, base, rr (11 words; bit 9 of the last rr). Per pixel: the first half
 * widened, out_c words made room for below sp (so an interrupt never writes over them), each
 * channel's partial sum (acc0 + 8 SMLAD) stored from the top down (STR pre-indexed, lr), 14
 * instructions per 16 products; then the second half widened and each channel's partial popped from
 * the stack (channel 0 first), 8 SMLAD, ts_rq's steps and its byte stored, 20 per 16: 34 per 32
 * products (32 with out_c even: two channels a pass in each half, one test of the end) plus about
 * 35 a pixel. The frame: [sp] input, [sp, #4] its end, [sp, #8] table, [sp,
 * #12] the step to the next pixel, [sp, #16] the output. Read/write order: pixel_layer's (the
 * pixel's 32 bytes read before its first output byte is written). */
#define TS_PX32_FIRST \
    "ldm     r12!, {r0, r1, r2, r3}\n\t" \
    "smlad   r0, r4, r1, r0\n\t" \
    "smlad   r0, r5, r2, r0\n\t" \
    "smlad   r0, r6, r3, r0\n\t" \
    "ldm     r12!, {r1, r2, r3}\n\t" \
    "smlad   r0, r7, r1, r0\n\t" \
    "smlad   r0, r8, r2, r0\n\t" \
    "smlad   r0, r9, r3, r0\n\t" \
    "ldm     r12!, {r1, r2}\n\t" \
    "smlad   r0, r10, r1, r0\n\t" \
    "smlad   r0, r11, r2, r0\n\t" \
    "str     r0, [lr, #-4]!\n\t"
#define TS_PX32_SECOND \
    "pop     {r0}\n\t" \
    "ldm     r12!, {r1, r2, r3}\n\t" \
    "smlad   r0, r4, r1, r0\n\t" \
    "smlad   r0, r5, r2, r0\n\t" \
    "smlad   r0, r6, r3, r0\n\t" \
    "ldm     r12!, {r1, r2, r3}\n\t" \
    "smlad   r0, r7, r1, r0\n\t" \
    "smlad   r0, r8, r2, r0\n\t" \
    "smlad   r0, r9, r3, r0\n\t" \
    "ldm     r12!, {r1, r2, r3}\n\t" /* e7, o7, m */ \
    "smlad   r0, r10, r1, r0\n\t" \
    "smlad   r0, r11, r2, r0\n\t" \
    "ldm     r12!, {r1, r2}\n\t" /* base, rr */ \
    TS_PX_RQ_STORE("r1", "r3", "r2")
#define TS_PX32_FUNCTION(name, first, second) \
__attribute__((naked, noinline)) TS_PX_NOIPA static void name( \
    __attribute__((unused)) const int8_t *input, __attribute__((unused)) const int8_t *end, \
    __attribute__((unused)) const int32_t *table, __attribute__((unused)) int8_t *output, \
    __attribute__((unused)) int32_t step) \
{ \
    __asm__ volatile("push    {r4-r11, lr}\n\t" \
                     "ldr     r12, [sp, #36]\n\t" /* the step */ \
                     "sub     sp, sp, #20\n\t" \
                     "stm     sp, {r0, r1, r2, r12}\n\t" \
                     "str     r3, [sp, #16]\n\t" \
                     "1:\n\t" \
                     "ldm     r0, {r4, r6, r8, r10}\n\t" /* bytes 0-15 */ \
                     TS_PX_WIDEN16 \
                     "ldr     r12, [sp, #8]\n\t" \
                     "mov     lr, sp\n\t" \
                     "ldr     r1, [r12, #-4]\n\t" /* out_c * 4, the word before the table */ \
                     "sub     sp, sp, r1\n\t" \
                     "2:\n\t" /* the first half of one channel (from the last) */ \
                     first \
                     "cmp     sp, lr\n\t" \
                     "bne     2b\n\t" \
                     "ldr     r1, [r12], #4\n\t" /* out_c * 4 again: the frame above the partials */ \
                     "add     r2, sp, r1\n\t" \
                     "ldr     r0, [r2]\n\t" \
                     "ldr     lr, [r2, #16]\n\t" \
                     "ldr     r3, [r2, #12]\n\t" \
                     "add     r1, r0, #16\n\t" \
                     "add     r0, r0, r3\n\t" \
                     "str     r0, [r2]\n\t" \
                     "ldm     r1, {r4, r6, r8, r10}\n\t" /* bytes 16-31 */ \
                     TS_PX_WIDEN16 \
                     "3:\n\t" /* the second half of one channel (from the first), its byte stored */ \
                     second \
                     "tst     r2, #512\n\t" \
                     "beq     3b\n\t" \
                     "str     lr, [sp, #16]\n\t" \
                     "ldrd    r0, r1, [sp]\n\t" \
                     "cmp     r0, r1\n\t" \
                     "bne     1b\n\t" \
                     "add     sp, sp, #20\n\t" \
                     "pop     {r4-r11, pc}\n\t"); \
}
/* one channel a pass (any out_c) and two (out_c even: one test of the loop's end for two) */
TS_PX32_FUNCTION(pixel_steps32, TS_PX32_FIRST, TS_PX32_SECOND)
TS_PX32_FUNCTION(pixel_steps32_pairs, TS_PX32_FIRST TS_PX32_FIRST, TS_PX32_SECOND TS_PX32_SECOND)
#undef TS_PX32_FIRST
#undef TS_PX32_SECOND
#undef TS_PX32_FUNCTION
#undef TS_PX_WIDEN
#undef TS_PX_RQ_STORE
#undef TS_PX_CHANNEL16
#undef TS_PX_CHANNEL12
#undef TS_PX_CHANNEL8
#undef TS_PX_FUNCTION
#undef TS_PX_FLAT
#undef TS_PX_STEPPED
#undef TS_PX_FLAT_ARG
#undef TS_PX_STEPPED_ARG
#undef TS_PX_NOIPA
#undef TS_PX_WIDEN16
#undef TS_PX_WIDEN12
#undef TS_PX_WIDEN8

typedef void (*pixel_regs_fn)(const int8_t *, const int8_t *, const int32_t *, int8_t *);
typedef void (*pixel_steps_fn)(const int8_t *, const int8_t *, const int32_t *, int8_t *, int32_t);

/* The pixel-in-registers path for the layers pixel_layer leaves, whose output pixels' inputs are not
 * consecutive (1; else 0, nothing done): a 1x1 filter without padding at any strides, every output
 * pixel's input inside the input ((out_h - 1) * stride_h < in_h, (out_w - 1) * stride_w < in_w: a
 * whole layer, or one batch's rows in a stage's call, where in_h counts the rows present), in_c 8,
 * 12 or 16 (or 32 with out_c <= TS_PIXEL32_MAX_OUT_C: pixel_steps32), out_c >= in_c, a
 * word-aligned input. Output row by output row, each from its input row
 * (y * stride_h), its pixels stride_w * in_c bytes apart (the stepping functions; stride_w 1: the
 * flat ones): output pixels in increasing order, each read before it is written, as pixel_layer. */
__attribute__((noinline)) static int pixel_rows(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output,
                                                const int32_t *table)
{
    const int pairs = (p->out_c & 1) == 0;
    const size_t row_bytes = (size_t)p->in_w * (size_t)p->in_c, out_row = (size_t)p->out_w * (size_t)p->out_c;
    const size_t step = (size_t)p->stride_w * (size_t)p->in_c, run = (size_t)p->out_w * step;
    pixel_regs_fn flat;
    pixel_steps_fn steps;
    int32_t b, y;
    if (p->filter_h != 1 || p->filter_w != 1 || p->pad_top != 0 || p->pad_left != 0 || p->out_c < p->in_c ||
        p->batches < 1 || p->out_h < 1 || p->out_w < 1 || p->stride_h < 1 || p->stride_w < 1 ||
        (p->out_h - 1) * p->stride_h >= p->in_h || (p->out_w - 1) * p->stride_w >= p->in_w ||
        ((uintptr_t)input & 3u) != 0) {
        return 0;
    }
    switch (p->in_c) {
    case 16:
        flat = pairs ? pixel_regs16_pairs : pixel_regs16;
        steps = pairs ? pixel_steps16_pairs : pixel_steps16;
        break;
    case 12:
        flat = pairs ? pixel_regs12_pairs : pixel_regs12;
        steps = pairs ? pixel_steps12_pairs : pixel_steps12;
        break;
    case 8:
        flat = pairs ? pixel_regs8_pairs : pixel_regs8;
        steps = pairs ? pixel_steps8_pairs : pixel_steps8;
        break;
    case 32: /* the table's out_c * 4 first: the function gets the words after it */
        if (p->out_c > TS_PIXEL32_MAX_OUT_C) {
            return 0;
        }
        table += 1;
        flat = NULL;
        steps = pairs ? pixel_steps32_pairs : pixel_steps32;
        break;
    default:
        return 0;
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * (size_t)p->in_h * row_bytes;
        for (y = 0; y < p->out_h; ++y) {
            const int8_t *row = in_b + (size_t)y * (size_t)p->stride_h * row_bytes;
            if (flat != NULL && p->stride_w == 1) {
                flat(row, row + run, table, output);
            } else {
                steps(row, row + run, table, output, (int32_t)step);
            }
            output += out_row;
        }
    }
    return 1;
}

/* The layer by the pixel-in-registers path with the generator's table, where it takes p (1; else 0,
 * nothing done): a 1x1 filter without padding, in_c 8, 12 or 16, out_c >= in_c (the order argument
 * above; with `apart`, out_c < in_c too where the output shares no byte with the input: no order
 * matters then), a word-aligned input (then every pixel is: in_c is a multiple of 4). At stride 1 with rows
 * as wide as the input's, over the whole input or (one batch: a streamed stage's rows) its first
 * out_h rows, one call over the flat order (strided layers: pixel_rows, by their own entry
 * points). */
static int pixel_layer(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output, const int32_t *table,
                       ts_pixel_loop own, int apart)
{
    pixel_regs_fn run;
    size_t pixels;
    if (apart && p->out_c >= 1 && p->out_c < p->in_c && p->batches == 1 && p->in_h >= 1 && p->in_w >= 1 &&
        p->out_h >= 1 && p->out_w >= 1) {
        const uintptr_t i0 = (uintptr_t)input, o0 = (uintptr_t)output;
        const uintptr_t i1 = i0 + (size_t)p->in_h * (size_t)p->in_w * (size_t)p->in_c;
        const uintptr_t o1 = o0 + (size_t)p->out_h * (size_t)p->out_w * (size_t)p->out_c;
        apart = o1 <= i0 || i1 <= o0;
    } else {
        apart = 0;
    }
    if (p->filter_h != 1 || p->filter_w != 1 || p->stride_h != 1 || p->stride_w != 1 || p->pad_top != 0 ||
        p->pad_left != 0 || p->out_w != p->in_w || (p->out_c < p->in_c && !apart) || p->batches < 1 ||
        p->out_h < 1 ||
        p->out_w < 1 || (p->out_h != p->in_h && (p->batches != 1 || p->out_h > p->in_h)) ||
        ((uintptr_t)input & 3u) != 0) {
        return 0;
    }
    switch (own != NULL ? -1 : p->in_c) {
    case -1: /* the layer's own loop (in_c 8: ts_kernels.h, "own pixel loop") */
        if (p->in_c != 8) {
            return 0;
        }
        run = own;
        break;
    case 16:
        run = (p->out_c & 1) == 0 ? pixel_regs16_pairs : pixel_regs16;
        break;
    case 12:
        run = (p->out_c & 1) == 0 ? pixel_regs12_pairs : pixel_regs12;
        break;
    case 8:
        run = (p->out_c & 1) == 0 ? pixel_regs8_pairs : pixel_regs8;
        break;
    default:
        return 0;
    }
    pixels = (size_t)p->batches * (size_t)p->out_h * (size_t)p->out_w;
    run(input, input + pixels * (size_t)p->in_c, table, output);
    return 1;
}
#endif

/* The pixel-in-registers path alone on the generator's table (ts_kernels.h, "Legacy uint8"): a
 * legacy uint8 layer's table holds its filter plus the filter offset, which no other path of this
 * file knows, so nothing here falls back: 1 where pixel_layer or pixel_rows ran, 0 where the caller
 * computes the layer itself. Reads neither the filter nor the bias (the table holds both). */
int32_t ts_conv2d_s8_pixel_table(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output,
                                 const int32_t *table)
{
#if TS_CONV_WIDE
    if (table != NULL && (pixel_layer(p, input, output, table, NULL, 1) || pixel_rows(p, input, output, table))) {
        return 1;
    }
#endif
    (void)p;
    (void)input;
    (void)output;
    (void)table;
    return 0;
}

/* The stem path alone on p->stem (ts_kernels.h, "Legacy uint8"), as ts_conv2d_s8_pixel_table: its
 * table (filter plus filter offset, doubled) has every channel's fields checked by the generator for
 * that filter's reach, so checks bit 2 is the generator's, not ts_conv2d_s8_checks' (whose reach
 * assumes |w| <= 128). 1 where conv_stem ran, else 0. */
int32_t ts_conv2d_s8_stem_table(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output)
{
#if TS_CONV_WIDE
    if (p->stem != NULL && conv_stem(p, input, output, 4)) {
        return 1;
    }
#endif
    (void)p;
    (void)input;
    (void)output;
    return 0;
}

int ts_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                 const int32_t *bias, int8_t *output)
{
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, ts_conv2d_s8_checks(p, bias), NULL);
}

/* ts_conv2d_s8 with the generator's pixel table (ts_kernels.h, CONV_2D "pixel in registers"): the
 * whole layer pixel by pixel where that path takes it, else (and on other cores) ts_conv2d_s8. */
int ts_conv2d_s8_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, const int32_t *pixel_table)
{
#if TS_CONV_WIDE
    if (pixel_table != NULL && pixel_layer(p, input, output, pixel_table, NULL, 0)) {
        return TS_OK;
    }
#endif
    (void)pixel_table;
    return ts_conv2d_s8(p, input, filter, bias, output);
}

/* ts_conv2d_s8_pixels with ts_conv2d_s8's checks made once (a streamed stage's 1x1 member, called
 * row by row): its fallback is ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixels_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, const int32_t *pixel_table, int32_t checks)
{
#if TS_CONV_WIDE
    if (pixel_table != NULL && pixel_layer(p, input, output, pixel_table, NULL, 0)) {
        return TS_OK;
    }
#endif
    (void)pixel_table;
    return ts_conv2d_s8_checked(p, input, filter, bias, output, checks);
}

/* ts_conv2d_s8 with the layer's own pixel loop (ts_kernels.h, "own pixel loop") where the pixel
 * path takes the layer; without one (other cores) ts_conv2d_s8, the table unread. */
int ts_conv2d_s8_pixels_own(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, const int32_t *table, ts_pixel_loop own)
{
#if TS_CONV_WIDE
    if (own != NULL && table != NULL && pixel_layer(p, input, output, table, own, 0)) {
        return TS_OK;
    }
#endif
    (void)table;
    (void)own;
    return ts_conv2d_s8(p, input, filter, bias, output);
}

/* ts_conv2d_s8_pixels_own with ts_conv2d_s8's checks made once (a streamed stage's member): its
 * fallback is ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixels_own_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *table,
                                    ts_pixel_loop own, int32_t checks)
{
#if TS_CONV_WIDE
    if (own != NULL && table != NULL && pixel_layer(p, input, output, table, own, 0)) {
        return TS_OK;
    }
#endif
    (void)table;
    (void)own;
    return ts_conv2d_s8_checked(p, input, filter, bias, output, checks);
}

/* ts_conv2d_s8 with the generator's pixel table for a strided 1x1 layer (ts_kernels.h, CONV_2D
 * "pixel in registers"): output row by output row where that path takes it (pixel_rows), else (and
 * on other cores) ts_conv2d_s8. Its own entry, so that the flat layers' calls test nothing more. */
int ts_conv2d_s8_pixel_rows(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, const int32_t *pixel_table)
{
#if TS_CONV_WIDE
    if (pixel_table != NULL && pixel_rows(p, input, output, pixel_table)) {
        return TS_OK;
    }
#endif
    (void)pixel_table;
    return ts_conv2d_s8(p, input, filter, bias, output);
}

/* ts_conv2d_s8_pixel_rows with ts_conv2d_s8's checks made once (a streamed stage's strided 1x1
 * member, called row by row): its fallback is ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixel_rows_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *pixel_table,
                                    int32_t checks)
{
#if TS_CONV_WIDE
    if (pixel_table != NULL && pixel_rows(p, input, output, pixel_table)) {
        return TS_OK;
    }
#endif
    (void)pixel_table;
    return ts_conv2d_s8_checked(p, input, filter, bias, output, checks);
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

/* ts_conv2d_s8_checked with the generator's layer table (ts_kernels.h): on Helium cores the
 * small-field patch quads (what conv_paths runs for such a layer, filter not 1x1) take it instead
 * of making it per call; everything else, and other cores, as ts_conv2d_s8_checked. */
int ts_conv2d_s8_layer(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int32_t checks, const int32_t *layer)
{
#if TS_MVE
    const int32_t k = p->filter_h * p->filter_w * p->in_c;
    if (layer != NULL && (checks & 1) != 0 && p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1 &&
        p->dilation_w >= 1 && p->filter_h * p->filter_w > 1 && k <= TS_CONV_PATCH_BYTES && p->in_c < 8 &&
        p->input_offset >= -127 && p->input_offset <= 128 && k <= TS_MVE_PATCH_QUAD &&
        p->out_c <= TS_MVE_LAYER_CH) {
        ts_mve_patch_run(p, input, filter, bias, output, layer);
        return TS_OK;
    }
#endif
    (void)layer;
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, checks, NULL);
}

/* ts_conv2d_s8, the widened path allowed or not (wide bit 0; not: for the rows the widened path
 * leaves), with its checks (ts_conv2d_s8_checks) made (big: scratch for the pair path's fields, or
 * NULL); wide bit 1 (TS_PATHS_NO_POINTWISE: ts_conv2d_s8_strip's 1x1 rows without room) sends 1x1
 * filters with ts_rq to conv_fast, whose pair path widens a pixel pair's fields once, not to the
 * pointwise paths, which widen them once per channel pair. */
static int conv_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int wide, int32_t checks, uint32_t *big)
{
    int rq = 0;
    const int pointwise = (wide & TS_PATHS_NO_POINTWISE) == 0 || (checks & 2) == 0;
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
        ts_mve_pointwise_layer(p, input, filter, bias, output);
        return TS_OK;
    }
#endif
#if TS_RQ_ASM
    rq = (checks & 2) != 0;
#if TS_CONV_WIDE
    if (p->stem != NULL && conv_stem(p, input, output, checks)) {
        return TS_OK;
    }
    /* with the generator's quads table (and ts_rq) the quads below take the layer whole: their asm
     * channel loop over a table costs less than the widened leading rows for these small K */
    if ((wide & 1) != 0 && !(rq && p->quads != NULL)) {
        const int32_t done = conv_wide(p, input, filter, bias, output, rq);
        if (done > 0) {
            /* the other rows: the same layer from output row `rows` on */
            ts_conv2d_s8_params rest = *p;
            const int32_t rows = done / p->out_w, y0 = rows * p->stride_h - p->pad_top;
            if (done == p->out_h * p->out_w) {
                return TS_OK;
            }
            if (p->filter_h == 1 && p->filter_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
                p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
                /* a 1x1 layer over the whole input (the pointwise paths' flat order): its other pixels */
                return flat_rest(&rest, input, filter, bias, output, done, p->out_h * p->out_w, checks, big);
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
    if (rq && pointwise && p->filter_h == 1 && p->filter_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
        (p->out_h - 1) * p->stride_h < p->in_h && (p->out_w - 1) * p->stride_w < p->in_w) {
        conv_pointwise_rq(p, input, filter, bias, output);
        return TS_OK;
    }
#endif
    if (pointwise && p->filter_h == 1 && p->filter_w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
        p->pad_top == 0 && p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
        conv_pointwise(p, input, filter, bias, output, rq);
    } else if (p->filter_h * p->filter_w * p->in_c <= TS_CONV_PATCH_BYTES && p->in_c < 8 &&
               p->input_offset >= -127 && p->input_offset <= 128) { /* the pad byte is an int8 */
#if TS_MVE
        if (p->filter_h * p->filter_w * p->in_c <= TS_MVE_PATCH_QUAD) {
            ts_mve_patch_run(p, input, filter, bias, output, NULL);
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

/* Every output channel of one block of three pixels (staged_wide3's layout, pixel q's words of
 * group g at word 2 * (3 g + q)) from the generator's table of widened channels (p->quads of a 1x1
 * layer, the quads' format: per channel its bias, `groups` pairs of widened filter words, its ts_rq
 * fields), in one asm loop over the channels: the bias in three registers, per group one LDRD of the
 * filter words and per pixel LDRD + two SMLAD (12 instructions per 12 products; two groups a turn
 * where `groups` is even, 22 per 24; four where it is a multiple of 4, 42 per 48), ts_rq, pack, the
 * bytewise clamp and the first n (3 or 2) results stored out_c bytes apart; the table pointer steps
 * over the channel's fields, so nothing per channel is left to C (about 208 instructions per channel
 * of a three at in_c 64). */
#define PW3_PIXEL(a, load)                                                                              \
    load "smlad   %[" a "], %[xe], %[we], %[" a "]\n\t"                                                  \
         "smlad   %[" a "], %[xo], %[wo], %[" a "]\n\t"
/* one group: x words at xp (post-incremented by 24) and at -16, -8 from there */
#define PW3_GROUP1                                                                                      \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp]], #24\n\t")       \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #-16]\n\t")                                        \
            PW3_PIXEL("a2", "ldrd    %[xe], %[xo], [%[xp], #-8]\n\t")
/* a further group, its three pixels' x words at byte offsets q0, q1, q2 from xp */
#define PW3_GROUP_AT(q0, q1, q2)                                                                        \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp], #" q0 "]\n\t")   \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #" q1 "]\n\t")                                     \
            PW3_PIXEL("a2", "ldrd    %[xe], %[xo], [%[xp], #" q2 "]\n\t")
/* two groups: xp post-incremented by 48 */
#define PW3_GROUP2                                                                                      \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp]], #48\n\t")       \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #-40]\n\t")                                        \
            PW3_PIXEL("a2", "ldrd    %[xe], %[xo], [%[xp], #-32]\n\t") PW3_GROUP_AT("-24", "-16", "-8")
/* four groups: xp post-incremented by 96 */
#define PW3_GROUP4                                                                                      \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp]], #96\n\t")       \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #-88]\n\t")                                        \
            PW3_PIXEL("a2", "ldrd    %[xe], %[xo], [%[xp], #-80]\n\t")                                    \
                PW3_GROUP_AT("-72", "-64", "-56") PW3_GROUP_AT("-48", "-40", "-32") PW3_GROUP_AT("-24", "-16", "-8")
/* eight groups: xp post-incremented by 192 */
#define PW3_GROUP8                                                                                      \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp]], #192\n\t")      \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #-184]\n\t")                                       \
            PW3_PIXEL("a2", "ldrd    %[xe], %[xo], [%[xp], #-176]\n\t")                                   \
                PW3_GROUP_AT("-168", "-160", "-152") PW3_GROUP_AT("-144", "-136", "-128")                 \
                    PW3_GROUP_AT("-120", "-112", "-104") PW3_GROUP_AT("-96", "-88", "-80")                \
                        PW3_GROUP_AT("-72", "-64", "-56") PW3_GROUP_AT("-48", "-40", "-32")               \
                            PW3_GROUP_AT("-24", "-16", "-8")
/* eight groups of a last two pixels (the layout of a three, its third pixel neither read nor
 * accumulated: a2 keeps the bias and is not stored): xp post-incremented by 192 */
#define PW2_GROUP_AT(q0, q1)                                                                            \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp], #" q0 "]\n\t")   \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #" q1 "]\n\t")
#define PW2_GROUP8                                                                                      \
    "ldrd    %[we], %[wo], [%[t]], #8\n\t" PW3_PIXEL("a0", "ldrd    %[xe], %[xo], [%[xp]], #192\n\t")      \
        PW3_PIXEL("a1", "ldrd    %[xe], %[xo], [%[xp], #-184]\n\t") PW2_GROUP_AT("-168", "-160")           \
            PW2_GROUP_AT("-144", "-136") PW2_GROUP_AT("-120", "-112") PW2_GROUP_AT("-96", "-88")          \
                PW2_GROUP_AT("-72", "-64") PW2_GROUP_AT("-48", "-40") PW2_GROUP_AT("-24", "-16")
/* ts_rq_apply's six steps on a, in place: m we, left + 1 wo, base xe, rr xo, xp scratch */
#define PW3_RQ(a) TS_RQ_STEPS_ASM(a, a, a, "we", "wo", "xe", "xo", "xp")
/* the packed results clamped bytewise to [lo, hi] (PW3_NOCLAMP where that is [-128, 127], which
 * SSAT has already made sure of) */
#define PW3_CLAMP                                                                                       \
    "ldr     %[we], %[lo4]\n\t"                                                                         \
    "ldr     %[wo], %[hi4]\n\t" TS_CLAMP4_ASM("a0", "we", "wo", "xe")
#define PW3_NOCLAMP ""
/* the third pixel's requantisation and packing (PW3_THIRD), or nothing for a last two */
#define PW3_THIRD PW3_RQ("a2") "bfi     %[a0], %[a2], #16, #8\n\t"
#define PW3_CHANNELS_OF(group, clamp, stores, third)                                                    \
    "1:\n\t"                                                                                            \
    "ldr     %[a0], [%[t]], #4\n\t"                                                                      \
    "ldr     %[xp], %[xbase]\n\t"                                                                       \
    "mov     %[a1], %[a0]\n\t"                                                                          \
    "mov     %[a2], %[a0]\n\t"                                                                          \
    "2:\n\t" group "cmp     %[xp], %[xend]\n\t"                                                          \
    "bne     2b\n\t"                                                                                    \
    "ldm     %[t]!, {%[we], %[wo], %[xe], %[xo]}\n\t" PW3_RQ("a0") PW3_RQ("a1")                             \
    "bfi     %[a0], %[a1], #8, #8\n\t" third clamp                                                      \
    "strb    %[a0], [%[o]]\n\t"                                                                         \
    "lsr     %[a0], %[a0], #8\n\t"                                                                      \
    "strb    %[a0], [%[o], %[oc]]\n\t" stores                                                           \
    "add     %[o], %[o], #1\n\t"                                                                        \
    "cmp     %[o], %[oend]\n\t"                                                                         \
    "bne     1b"
#define PW3_CHANNELS(group, clamp, stores) PW3_CHANNELS_OF(group, clamp, stores, PW3_THIRD)
/* a last two: the third accumulator (bias plus what its zeros add, or nothing) neither requantised
 * nor stored */
#define PW2_CHANNELS(group, clamp) PW3_CHANNELS_OF(group, clamp, "", "")
#define PW3_STORE3                                                                                      \
    "lsr     %[a0], %[a0], #8\n\t"                                                                      \
    "strb    %[a0], [%[o], %[oc], lsl #1]\n\t"
#define PW3_OPERANDS                                                                                    \
    : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [we] "=&r"(we), [wo] "=&r"(wo), [xe] "=&r"(xe),         \
      [xo] "=&r"(xo), [xp] "=&r"(xp), [t] "+r"(t), [o] "+r"(o)                                            \
    : [xend] "r"(xend), [oc] "r"(oc), [oend] "r"(oend), [xbase] "m"(xbase), [lo4] "m"(lo4), [hi4] "m"(hi4) \
    : "cc", "memory"
static TS_NOINLINE void pw3_channels(const uint32_t *xs, const int32_t *table, int32_t groups, int8_t *out,
                                     int32_t out_c, int32_t n, uint32_t lo4, uint32_t hi4)
{
    const uint32_t *const xbase = xs;
    /* the 13 register operands named at every optimisation level (a local register variable is what
     * an asm operand takes, at -O2 too): the LDM of a channel's ts_rq fields needs we < wo < xe < xo */
    register int32_t a0 __asm__("r0"), a1 __asm__("r1"), a2 __asm__("r2");
    register const int32_t *t __asm__("r3") = table;
    register const uint32_t *xp __asm__("r4");
    register const uint32_t *const xend __asm__("r5") = xs + 6 * groups;
    register uint32_t we __asm__("r6"), wo __asm__("r8"), xe __asm__("r9"), xo __asm__("r10");
    register int8_t *o __asm__("r11") = out;
    register const int32_t oc __asm__("r12") = out_c;
    register int8_t *const oend __asm__("lr") = out + out_c;
    if (groups < 1 || out_c < 1) {
        return;
    }
    if (n == 3 && (groups & 7) == 0 && lo4 == 0x80808080u && hi4 == 0x7F7F7F7Fu) {
        __asm__ volatile(PW3_CHANNELS(PW3_GROUP8, PW3_NOCLAMP, PW3_STORE3) PW3_OPERANDS);
    } else if (n == 3 && (groups & 7) == 0) {
        __asm__ volatile(PW3_CHANNELS(PW3_GROUP8, PW3_CLAMP, PW3_STORE3) PW3_OPERANDS);
    } else if (n == 3 && (groups & 3) == 0) {
        __asm__ volatile(PW3_CHANNELS(PW3_GROUP4, PW3_CLAMP, PW3_STORE3) PW3_OPERANDS);
    } else if (n == 3 && (groups & 1) == 0) {
        __asm__ volatile(PW3_CHANNELS(PW3_GROUP2, PW3_CLAMP, PW3_STORE3) PW3_OPERANDS);
    } else if (n == 3) {
        __asm__ volatile(PW3_CHANNELS(PW3_GROUP1, PW3_CLAMP, PW3_STORE3) PW3_OPERANDS);
    } else if ((groups & 7) == 0 && lo4 == 0x80808080u && hi4 == 0x7F7F7F7Fu) { /* a last two */
        __asm__ volatile(PW2_CHANNELS(PW2_GROUP8, PW3_NOCLAMP) PW3_OPERANDS);
    } else if ((groups & 7) == 0) {
        __asm__ volatile(PW2_CHANNELS(PW2_GROUP8, PW3_CLAMP) PW3_OPERANDS);
    } else if ((groups & 3) == 0) {
        __asm__ volatile(PW2_CHANNELS(PW3_GROUP4, PW3_CLAMP) PW3_OPERANDS);
    } else {
        __asm__ volatile(PW2_CHANNELS(PW3_GROUP1, PW3_CLAMP) PW3_OPERANDS);
    }
}
#undef PW3_PIXEL
#undef PW2_GROUP_AT
#undef PW2_GROUP8
#undef PW3_GROUP1
#undef PW3_GROUP2
#undef PW3_GROUP4
#undef PW3_GROUP8
#undef PW3_CLAMP
#undef PW3_NOCLAMP
#undef PW3_GROUP_AT
#undef PW3_RQ
#undef PW3_CHANNELS
#undef PW3_CHANNELS_OF
#undef PW2_CHANNELS
#undef PW3_THIRD
#undef PW3_STORE3
#undef PW3_OPERANDS

/* Three consecutive input pixels of in_c bytes (a multiple of 4) at src widened into xs as
 * staged_wide3 lays them out (pixel q of group g at word 2 * (3 g + q), input_offset added): per
 * group three loads, six SXTAB16, three STRD (13 instructions a group with the loop). */
static TS_NOINLINE void pw3_widen(const int8_t *src, int32_t in_c, uint32_t off2, uint32_t *xs)
{
    const int8_t *const end = src + in_c;
    const int32_t in_c2 = 2 * in_c;
    uint32_t x0, x1, x2, e;
    if (in_c < 4) {
        return;
    }
    __asm__ volatile("1:\n\t"
                     "ldr     %[x1], [%[s], %[c1]]\n\t"
                     "ldr     %[x2], [%[s], %[c2]]\n\t"
                     "ldr     %[x0], [%[s]], #4\n\t"
                     "sxtab16 %[e], %[off2], %[x1]\n\t"
                     "sxtab16 %[x1], %[off2], %[x1], ror #8\n\t"
                     "strd    %[e], %[x1], [%[w], #8]\n\t"
                     "sxtab16 %[e], %[off2], %[x2]\n\t"
                     "sxtab16 %[x2], %[off2], %[x2], ror #8\n\t"
                     "strd    %[e], %[x2], [%[w], #16]\n\t"
                     "sxtab16 %[e], %[off2], %[x0]\n\t"
                     "sxtab16 %[x0], %[off2], %[x0], ror #8\n\t"
                     "strd    %[e], %[x0], [%[w]], #24\n\t"
                     "cmp     %[s], %[end]\n\t"
                     "bne     1b"
                     : [s] "+r"(src), [w] "+r"(xs), [x0] "=&r"(x0), [x1] "=&r"(x1), [x2] "=&r"(x2), [e] "=&r"(e)
                     : [end] "r"(end), [c1] "r"(in_c), [c2] "r"(in_c2), [off2] "r"(off2)
                     : "cc", "memory");
}

/* A last two pixels of in_c bytes (a multiple of 4) at src widened into xs as pw3_widen lays a three
 * out, the third pixel's words zeros (pw3_channels reads them for some group counts and stores
 * nothing of them): per group two loads, four SXTAB16, three STRD (12 instructions a group with
 * the loop). Why: the C loop it replaces cost three times as much on rows of 5 pixels. */
static TS_NOINLINE void pw2_widen(const int8_t *src, int32_t in_c, uint32_t off2, uint32_t *xs)
{
    const int8_t *const end = src + in_c;
    uint32_t x0, x1, e, z0 = 0u, z1 = 0u;
    if (in_c < 4) {
        return;
    }
    __asm__ volatile("1:\n\t"
                     "ldr     %[x1], [%[s], %[c1]]\n\t"
                     "ldr     %[x0], [%[s]], #4\n\t"
                     "sxtab16 %[e], %[off2], %[x1]\n\t"
                     "sxtab16 %[x1], %[off2], %[x1], ror #8\n\t"
                     "strd    %[e], %[x1], [%[w], #8]\n\t"
                     "strd    %[z0], %[z1], [%[w], #16]\n\t"
                     "sxtab16 %[e], %[off2], %[x0]\n\t"
                     "sxtab16 %[x0], %[off2], %[x0], ror #8\n\t"
                     "strd    %[e], %[x0], [%[w]], #24\n\t"
                     "cmp     %[s], %[end]\n\t"
                     "bne     1b"
                     : [s] "+r"(src), [w] "+r"(xs), [x0] "=&r"(x0), [x1] "=&r"(x1), [e] "=&r"(e)
                     : [end] "r"(end), [c1] "r"(in_c), [off2] "r"(off2), [z0] "r"(z0), [z1] "r"(z1)
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
        if (p->quads != NULL && n == 3) { /* widened, then every channel from the generator's table */
            pw3_widen(input + (size_t)i * in_c, in_c, off2, xs);
            pw3_channels(xs, p->quads, groups, output + (size_t)i * out_c, out_c, n, lo4, hi4);
            continue;
        }
        if (p->quads != NULL && n == 2) { /* the same for a last two */
            pw2_widen(input + (size_t)i * in_c, in_c, off2, xs);
            pw3_channels(xs, p->quads, groups, output + (size_t)i * out_c, out_c, n, lo4, hi4);
            continue;
        }
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
        if (p->quads != NULL && n == 2) { /* every channel from the generator's table */
            pw3_channels(xs, p->quads, groups, output + (size_t)i * out_c, out_c, n, lo4, hi4);
            continue;
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

/* One widened pixel's outputs (xs: k / 2 words, [x_4g | x_4g+2], [x_4g+1 | x_4g+3] per group g of
 * four k-indices; filter rows k bytes apart) written straight to out: channels four at a time
 * (wide_dot1x4, ts_rq4_store with the ts_rq table), the last out_c % 4 one at a time. */
static void widened_pixel_channels(const ts_conv2d_s8_params *p, const uint32_t *xs, int32_t k,
                                   const int8_t *filter, const int32_t *bias, int8_t *out, const int32_t *rq_table)
{
    const int32_t out_c = p->out_c, groups = k / 4, o4 = out_c & ~3;
    const ts_rq *q = (const ts_rq *)(const void *)rq_table;
    uint32_t lim[2];
    int32_t o, c;
    lim[0] = ts_bytes4(p->act_min);
    lim[1] = ts_bytes4(p->act_max);
    for (o = 0; o < o4; o += 4) {
        int32_t acc[4] = {0, 0, 0, 0};
        if (bias != NULL) {
            acc[0] = bias[o];
            acc[1] = bias[o + 1];
            acc[2] = bias[o + 2];
            acc[3] = bias[o + 3];
        }
        wide_dot1x4(xs, filter + (size_t)o * k, k, groups, acc);
        ts_rq4_store(out + o, acc[0], acc[1], acc[2], acc[3], q + o, lim);
    }
    for (; o < out_c; ++o) {
        const int8_t *w = filter + (size_t)o * k;
        int32_t acc = bias != NULL ? bias[o] : 0;
        for (c = 0; c < k; c += 4) {
            const uint32_t v = ts_load4(w + c);
            acc = ts_smlad(xs[c / 2], ts_even(v), acc);
            acc = ts_smlad(xs[c / 2 + 1], ts_odd(v), acc);
        }
        out[o] = rq_clamp(acc, &q[o], p->act_min, p->act_max);
    }
}

/* The staged pointwise variant one pixel at a time where the scratch holds one widened pixel and
 * no more (in_c a multiple of 4, the ts_rq table given): pixel k widened into xs, then its output
 * written straight to its bytes, channels four at a time (wide_dot1x4, ts_rq4_store), the last
 * out_c % 4 one at a time. The caller checks that output pixel k ends at or before input pixel
 * k + 1 starts (or the two tensors are apart), so writing it before reading that pixel is safe. */
static void staged_wide1(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, uint32_t *xs, int32_t pixels, const int32_t *rq_table)
{
    const int32_t in_c = p->in_c, out_c = p->out_c;
    const uint32_t off2 = ts_pack2x16(p->input_offset);
    int32_t i, c;
    for (i = 0; i < pixels; ++i) {
        const int8_t *src = input + (size_t)i * in_c;
        for (c = 0; c < in_c; c += 4) {
            const uint32_t x = ts_load4(src + c);
            xs[c / 2] = ts_even_off(x, off2);
            xs[c / 2 + 1] = ts_odd_off(x, off2);
        }
        widened_pixel_channels(p, xs, in_c, filter, bias, output + (size_t)i * out_c, rq_table);
    }
}

/* The last output pixel of a one-row call (x = out_w - 1, output row 0 of the call): its field,
 * fh * fw taps of in_c bytes (a multiple of 4) in the filter's order, widened into xs (int16 lanes +
 * input_offset as staged_wide1 lays a pixel; a tap outside the input 0, as its products are), then
 * its channels through widened_pixel_channels (ts_rq from the table). Same arithmetic as ts_conv2d_s8. */
static TS_NOINLINE void strip_last_pixel(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output, uint32_t *xs, const int32_t *rq_table)
{
    const int32_t in_c = p->in_c, x = p->out_w - 1, y0 = -p->pad_top, x0 = x * p->stride_w - p->pad_left;
    const uint32_t off2 = ts_pack2x16(p->input_offset);
    uint32_t *w = xs;
    int32_t ky, kx, c;
    for (ky = 0; ky < p->filter_h; ++ky) {
        const int32_t iy = y0 + ky * p->dilation_h;
        for (kx = 0; kx < p->filter_w; ++kx, w += in_c / 2) {
            const int32_t ix = x0 + kx * p->dilation_w;
            const int8_t *src;
            if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) {
                for (c = 0; c < in_c / 2; ++c) {
                    w[c] = 0;
                }
                continue;
            }
            src = input + ((size_t)iy * p->in_w + (size_t)ix) * in_c;
            for (c = 0; c < in_c; c += 4) {
                const uint32_t v = ts_load4(src + c);
                w[c / 2] = ts_even_off(v, off2);
                w[c / 2 + 1] = ts_odd_off(v, off2);
            }
        }
    }
    widened_pixel_channels(p, xs, p->filter_h * p->filter_w * in_c, filter, bias, output + (size_t)x * p->out_c,
                           rq_table);
}

/* One widened pixel on the stack: TS_PIXEL_WIDENED_C / 2 words, the pair path's 576-byte block. */
#define TS_PIXEL_WIDENED_C 288

/* The widened pixel from xs to xs_end (in_c / 2 words, a multiple of 4: [x_4g | x_4g+2],
 * [x_4g+1 | x_4g+3] per group g) against every channel of the generator's widened table (the quads'
 * format: per channel its bias, its in_c / 2 filter lane words in the pixel's order, m, left + 1,
 * base, rr), each channel's byte stored from out on, channels in order until out reaches out_end
 * (the fifth argument, on the stack). Per channel: the bias, then per four words one LDM of the
 * pixel (r4-r7), one of the table (r8-r11) and four SMLAD into r2 (8 instructions per 8 products
 * with the loop's CMP + BNE), then one LDM of the ts_rq fields and ts_rq's steps as TS_RQ_STEPS_ASM
 * (LSL, AND, SUB, SMMLAR, ASR, SSAT) and STRB: 13 more a channel with its loop test. The _clamp form
 * (an activation range narrower than int8) clamps the byte to lo4 / hi4 (the sixth and seventh
 * arguments: the bounds in every byte; SSUB8 / SEL on its lane): 5 more. Registers: r0 the pixel,
 * r1 its end, r3 the pixel pointer, r12 the table, lr the output. */
#if defined(__GNUC__) && !defined(__clang__)
#define PIXEL_CHANNELS_NOIPA __attribute__((noipa)) /* the callers pass its arguments as the ABI says */
#else
#define PIXEL_CHANNELS_NOIPA
#endif
#define PIXEL_CHANNELS_FUNCTION(name, clamp_text, extra_args)                                              \
    __attribute__((naked, noinline)) PIXEL_CHANNELS_NOIPA static void name(                               \
        __attribute__((unused)) const uint32_t *xs, __attribute__((unused)) const uint32_t *xs_end,          \
        __attribute__((unused)) const int32_t *table, __attribute__((unused)) int8_t *out,                  \
        __attribute__((unused)) const int8_t *out_end extra_args)                                         \
    {                                                                                                      \
        __asm__ volatile("push    {r4-r11, lr}\n\t" /* the fifth argument now at [sp, #36] */            \
                         "mov     r12, r2\n\t"                                                             \
                         "mov     lr, r3\n\t"                                                              \
                         "1:\n\t"                                                                          \
                         "ldr     r2, [r12], #4\n\t" /* the bias */                                        \
                         "mov     r3, r0\n\t"                                                              \
                         "2:\n\t"                                                                          \
                         "ldm     r3!, {r4, r5, r6, r7}\n\t"                                               \
                         "ldm     r12!, {r8, r9, r10, r11}\n\t"                                            \
                         "smlad   r2, r4, r8, r2\n\t"                                                      \
                         "smlad   r2, r5, r9, r2\n\t"                                                      \
                         "smlad   r2, r6, r10, r2\n\t"                                                     \
                         "smlad   r2, r7, r11, r2\n\t"                                                     \
                         "cmp     r3, r1\n\t"                                                              \
                         "bne     2b\n\t"                                                                  \
                         "ldm     r12!, {r8, r9, r10, r11}\n\t" /* m, left + 1, base, rr */              \
                         "lsl     r4, r2, r9\n\t"                                                          \
                         "and     r9, r11, r4, asr #31\n\t"                                                \
                         "sub     r9, r10, r9, lsr #8\n\t"                                                 \
                         "smmlar  r2, r4, r8, r9\n\t"                                                      \
                         "asr     r2, r2, r11\n\t"                                                         \
                         "ssat    r2, #8, r2\n\t" clamp_text                                               \
                         "strb    r2, [lr], #1\n\t"                                                        \
                         "ldr     r4, [sp, #36]\n\t"                                                       \
                         "cmp     lr, r4\n\t"                                                              \
                         "bne     1b\n\t"                                                                  \
                         "pop     {r4-r11, pc}\n\t");                                                      \
    }
#define PIXEL_CHANNELS_CLAMP                                                                               \
    "ldrd    r5, r6, [sp, #40]\n\t" /* lo4, hi4 */                                                        \
    "ssub8   r7, r2, r5\n\t"                                                                               \
    "sel     r2, r2, r5\n\t"                                                                               \
    "ssub8   r7, r6, r2\n\t"                                                                               \
    "sel     r2, r2, r6\n\t"
#define PIXEL_CHANNELS_LIMITS , __attribute__((unused)) uint32_t lo4, __attribute__((unused)) uint32_t hi4
PIXEL_CHANNELS_FUNCTION(pixel_channels, "", )
PIXEL_CHANNELS_FUNCTION(pixel_channels_clamp, PIXEL_CHANNELS_CLAMP, PIXEL_CHANNELS_LIMITS)
#undef PIXEL_CHANNELS_FUNCTION
#undef PIXEL_CHANNELS_NOIPA
#undef PIXEL_CHANNELS_CLAMP
#undef PIXEL_CHANNELS_LIMITS

/* Each pixel widened into a block of this frame (kept out of line: the other paths' stack does not
 * carry it), then its channels: from the widened table (channels non-NULL, in_c a multiple of 8:
 * pixel_channels), else four at a time from the ts_rq table (staged_wide1). */
static TS_NOINLINE void pixel_widened_run(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                          const int32_t *bias, int8_t *output, int32_t pixels,
                                          const int32_t *rq_table, const int32_t *channels)
{
    uint32_t xs[TS_PIXEL_WIDENED_C / 2];
    const int32_t in_c = p->in_c, out_c = p->out_c;
    if (channels != NULL && (in_c & 7) == 0) {
        const uint32_t off2 = ts_pack2x16(p->input_offset);
        const int clamp = p->act_min > -128 || p->act_max < 127;
        const uint32_t lo4 = ts_bytes4(p->act_min), hi4 = ts_bytes4(p->act_max);
        int32_t i, c;
        for (i = 0; i < pixels; ++i) {
            const int8_t *src = input + (size_t)i * in_c;
            for (c = 0; c < in_c; c += 4) {
                const uint32_t x = ts_load4(src + c);
                xs[c / 2] = ts_even_off(x, off2);
                xs[c / 2 + 1] = ts_odd_off(x, off2);
            }
            int8_t *const out = output + (size_t)i * out_c;
            if (clamp) {
                pixel_channels_clamp(xs, xs + in_c / 2, channels, out, out + out_c, lo4, hi4);
            } else {
                pixel_channels(xs, xs + in_c / 2, channels, out, out + out_c);
            }
        }
        return;
    }
    staged_wide1(p, input, filter, bias, output, xs, pixels, rq_table);
}
#endif

/* A streamed stage's 1x1 member on rows a few pixels wide (ts_kernels.h, "Streamed pairs"): where
 * the widened pixel path takes it (DSP cores, the ts_rq table with every channel's steps or a
 * constant, in_c a multiple of 4 up to TS_PIXEL_WIDENED_C, stride 1 without padding, input pixel i
 * under output pixel i), each pixel widened once on the stack and its channels from the widened
 * table or four at a time; else ts_conv2d_s8_checked. Why: the pointwise path it replaces widens
 * the pixel again and prepares ts_rq for every channel pair, on every row call. */
int ts_conv2d_s8_pixel_widened(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output, const int32_t *rq_table,
                               const int32_t *channels, int32_t checks)
{
#if TS_CONV_WIDE
    const int32_t pixels = p->out_h * p->out_w;
    if (rq_table != NULL && (checks & 4) != 0 && p->batches == 1 && p->filter_h == 1 && p->filter_w == 1 &&
        p->stride_h == 1 && p->stride_w == 1 && p->dilation_h >= 1 && p->dilation_w >= 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->out_w == p->in_w && p->out_h <= p->in_h && p->out_h >= 1 && p->out_w >= 1 &&
        (p->in_c & 3) == 0 && p->in_c <= TS_PIXEL_WIDENED_C &&
        staged_one_by_one(input, output, pixels, p->in_c, p->out_c)) {
        pixel_widened_run(p, input, filter, bias, output, pixels, rq_table, channels);
        return TS_OK;
    }
#endif
    (void)rq_table;
    (void)channels;
    return ts_conv2d_s8_checked(p, input, filter, bias, output, checks);
}

/* The staged in-place pointwise variant (see ts_kernels.h, "CONV_2D staged"): chunks of `chunk`
 * pixels of the flat order, each computed into `scratch` by the path ts_conv2d_s8 takes for the
 * whole layer, then copied to the output. */
int ts_conv2d_s8_staged(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                        const int32_t *rq_table)
{
    return ts_conv2d_s8_staged_checked(p, input, filter, bias, output, scratch, chunk, rq_table,
                                       ts_conv2d_s8_staged_checks(p, bias, rq_table));
}

/* The staged kernel's path (0 reference loop, 1 pointwise, 2 pointwise with ts_rq), from the
 * parameters' quantisation alone: the same for every row of a layer (ts_kernels.h). */
int32_t ts_conv2d_s8_staged_checks(const ts_conv2d_s8_params *p, const int32_t *bias, const int32_t *rq_table)
{
    int32_t mode = 0;
    if (!TS_CONV_GENERIC_ONLY && p->input_offset >= -255 && p->input_offset <= 255 &&
        ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        mode = 1;
#if TS_RQ_ASM
        /* Helium cores run modes 1 and 2 alike (the 1x1 Helium path): the bound is not looked at */
        if (!TS_MVE && ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, ts_acc_reach(p->in_c, p->input_offset),
                     rq_table != NULL ? TS_RQ_STEPS | TS_RQ_CONST : TS_RQ_STEPS)) {
            mode = 2;
        }
#endif
    }
    (void)bias;
    (void)rq_table;
    return mode;
}

static int staged_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                        const int32_t *rq_table, int32_t mode, const int32_t *layer);

int ts_conv2d_s8_staged_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                                const int32_t *rq_table, int32_t mode)
{
    return staged_paths(p, input, filter, bias, output, scratch, chunk, rq_table, mode, NULL);
}

int ts_conv2d_s8_staged_layer(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                              const int32_t *rq_table, int32_t mode, const int32_t *layer)
{
    return staged_paths(p, input, filter, bias, output, scratch, chunk, rq_table, mode, layer);
}

/* The staged kernel's paths, its checks made (mode) and, on Helium cores, the generator's layer
 * table (NULL: made here where a call has enough pixels to pay for it). */
static int staged_paths(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                        const int32_t *rq_table, int32_t mode, const int32_t *layer)
{
    const int32_t pixels = p->batches * p->out_h * p->out_w, in_c = p->in_c, out_c = p->out_c;
    ts_conv2d_s8_params sub; /* a chunk's parameters, set only on the paths that take chunks */
    int32_t k, n;
    if (p->filter_h != 1 || p->filter_w != 1 || p->stride_h != 1 || p->stride_w != 1 || p->pad_top != 0 ||
        p->pad_left != 0 || p->out_h != p->in_h || p->out_w != p->in_w || chunk < 1 || p->in_c < 1 ||
        p->out_c < 1 || p->dilation_h < 1 || p->dilation_w < 1 || mode < 0 || mode > 2) {
        return TS_ERR_PARAMS;
    }
    (void)rq_table;
    (void)layer; /* read on Helium cores only */
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
    sub = *p;
    sub.batches = 1;
    sub.in_h = sub.out_h = 1;
#if TS_MVE
    /* the 1x1 Helium path's table with the filter sums folded in, made once for the call */
    int32_t layer_tab[3 * TS_MVE_LAYER_CH];
    const int32_t *tab = NULL;
    if (mode != 0 && out_c <= TS_MVE_LAYER_CH && layer != NULL) {
        tab = layer; /* the generator's: ts_mve_layer_table's values */
    } else if (mode != 0 && out_c <= TS_MVE_LAYER_CH && pixels >= TS_MVE_LAYER_PIXELS) {
        ts_mve_layer_table(layer_tab, p, filter, bias);
        tab = layer_tab;
    }
    if (mode != 0 && in_c <= out_c) {
        /* Helium, in_c <= out_c: groups of up to 16 pixels (whole quads where the scratch holds four
         * pixels' input; a last five as one group where it holds five and the layer table is there),
         * each group's input bytes copied into scratch before any of its outputs is
         * written, then the 1x1 Helium path from the copy straight to the output */
        const size_t fit = (size_t)chunk * out_c / (size_t)in_c; /* >= chunk >= 1 */
        const int32_t g = fit >= 16 ? 16 : (fit >= 4 ? (int32_t)fit & ~3 : (int32_t)fit);
        for (k = 0; k < pixels; k += n) {
            n = pixels - k < g ? pixels - k : g;
            if (n == 4 && pixels - k == 5 && fit >= 5 && tab != NULL) {
                n = 5; /* a row of 5 as one group: a quad and one more (ts_mve_pw_five_row) */
            }
            sub.in_w = sub.out_w = n;
            ts_mve_copy(scratch, input + (size_t)k * in_c, n * in_c);
            ts_mve_pointwise(&sub, scratch, filter, bias, output + (size_t)k * out_c, tab);
        }
        return TS_OK;
    }
    if (mode != 0) { /* Helium: each chunk through the 1x1 Helium path (the same arithmetic) */
        for (k = 0; k < pixels; k += n) {
            n = pixels - k < chunk ? pixels - k : chunk;
            sub.in_w = sub.out_w = n;
            ts_mve_pointwise(&sub, input + (size_t)k * in_c, filter, bias, scratch, tab);
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
    if (p->stem != NULL && conv_stem(p, input, output, checks)) { /* costs less than widened blocks */
        return TS_OK;
    }
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

#if TS_CONV_WIDE
/* Whether ts_conv2d_s8_strip's quad blocks take p with this scratch: whole words of the input (in_c a
 * multiple of 4, dilation_w 1) and ts_rq (a table, or every channel's steps). */
static int strip_quads(const ts_conv2d_s8_params *p, const int8_t *scratch, int32_t room, const int32_t *rq_table,
                       int32_t checks)
{
    return room >= 8 * ((p->filter_h * p->filter_w * p->in_c + 3) & ~3) && (checks & 1) != 0 &&
           (rq_table != NULL || (checks & 2) != 0) && (p->in_c & 3) == 0 && p->dilation_w == 1 &&
           ((uintptr_t)scratch & 3u) == 0 && p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1;
}

/* ts_conv2d_s8_strip's rows with quad blocks: per batch its first wide_px pixels in strips of up to
 * `blocks` six-pixel blocks, the rest in strips of up to `quads` quad blocks, both at xs (kept out
 * of line: the other paths' stack does not carry its frame). */
static TS_NOINLINE void strip_rows(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, uint32_t *xs, int32_t wide_px,
                                   int32_t blocks, int32_t quads, const int32_t *rq_table)
{
    const int32_t n = p->out_h * p->out_w;
    const size_t in_b = (size_t)p->in_h * p->in_w * p->in_c, out_b = (size_t)n * p->out_c;
    int32_t b;
    for (b = 0; b < p->batches; ++b) {
        if (wide_px > 0) {
            wide_pixels(p, input + b * in_b, filter, bias, output + b * out_b, 1, xs, wide_px, blocks, rq_table);
        }
        quad_pixels(p, input + b * in_b, filter, bias, output + b * out_b, 1, xs, wide_px, n - wide_px, quads,
                    rq_table);
    }
}
#endif

/* A streamed stage's CONV_2D member on its rows with `room` bytes of strip scratch (ts_kernels.h,
 * "Streamed pairs"): with a quads table, conv_paths (conv_quads); the widened path with as many
 * blocks a strip as fit (at most TS_WIDE_STRIP), a row's
 * short end (4 or 8 pixels past whole blocks) in quad blocks; quad blocks only where no six-pixel
 * block fits; else the pair path with its two fields in the scratch where they exceed the stack
 * block (a 1x1 filter's on the stack: conv_paths with TS_PATHS_NO_POINTWISE), else
 * ts_conv2d_s8_checked. */
int ts_conv2d_s8_strip(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int8_t *scratch, int32_t room,
                       const int32_t *rq_table, int32_t checks)
{
    const int32_t k4 = (p->filter_h * p->filter_w * p->in_c + 3) & ~3;
    uint32_t *big = NULL;
#if TS_CONV_WIDE
    const int32_t block = (int32_t)wide_block_bytes(k4), quad = 8 * k4, n = p->out_h * p->out_w;
    /* the last 4 pixels past whole six-pixel blocks (n = 6 a + 4), or 8 (n = 6 a + 2), in quads, which
     * cost less than a six-pixel block for 4 pixels or one and a three-pixel one for 8 */
    const int32_t tail = n < 8 ? 0 : n % TS_WIDE_PX == 4 ? 4 : n % TS_WIDE_PX == 2 ? 8 : 0;
    /* as many six-pixel blocks a strip as the room holds (up to TS_WIDE_STRIP): each channel's set-up
     * paid once for more pixels (the room is the row's own, no output rows to leave it for) */
    const int32_t blocks = room / block < TS_WIDE_STRIP ? room / block : TS_WIDE_STRIP;
    if (p->stem != NULL && conv_stem(p, input, output, checks)) { /* resnet8's first layer */
        return TS_OK;
    }
    if (p->quads != NULL && (checks & 2) != 0) {
        /* the generator's quads table (conv_paths: conv_quads) costs less than the widened path for
         * these small K (KWS-L's first layer: K = 40) */
        return conv_paths(p, input, filter, bias, output, 0, checks, NULL);
    }
    if (room >= block && (tail == 0 || !strip_quads(p, scratch, room, rq_table, checks))) {
        return ts_conv2d_s8_wide_checked(p, input, filter, bias, output, scratch, blocks, rq_table, checks);
    }
    if (room >= quad && strip_quads(p, scratch, room, rq_table, checks)) {
        strip_rows(p, input, filter, bias, output, (uint32_t *)(void *)scratch, room >= block ? n - tail : 0,
                   blocks, room / quad < TS_WIDE_STRIP ? room / quad : TS_WIDE_STRIP, rq_table);
        return TS_OK;
    }
#endif
#if TS_RQ_ASM && !TS_MVE
    if (k4 > TS_PAIR_K4 && room >= 4 * k4 && ((uintptr_t)scratch & 3u) == 0) {
        big = (uint32_t *)(void *)scratch;
    }
    if (p->filter_h == 1 && p->filter_w == 1 && k4 <= TS_PAIR_K4 && (p->in_c & 3) == 0) {
        /* a 1x1 filter without room for a block: the pair path's fields widened once on the stack,
         * not the pointwise path's per channel pair */
        return conv_paths(p, input, filter, bias, output, TS_PATHS_NO_POINTWISE, checks, NULL);
    }
#endif
    (void)k4;
    (void)scratch;
    (void)room;
    (void)rq_table;
    return conv_paths(p, input, filter, bias, output, TS_CONV_WIDE, checks, big);
}

/* ts_conv2d_s8_strip for a member whose one-row calls have 6 a + 1 pixels (a >= 1; the generator's
 * choice, ts_kernels.h): where the strip holds a block of six and the ts_rq table serves every
 * channel (in_c a multiple of 4), the first 6 a pixels in whole blocks, the last alone
 * (strip_last_pixel), not a block of six computing one; else ts_conv2d_s8_strip. */
int ts_conv2d_s8_strip_lone(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int8_t *scratch, int32_t room,
                            const int32_t *rq_table, int32_t checks)
{
#if TS_CONV_WIDE
    const int32_t k4 = (p->filter_h * p->filter_w * p->in_c + 3) & ~3, n = p->out_w;
    const int32_t block = (int32_t)wide_block_bytes(k4);
    if (room >= block && n % TS_WIDE_PX == 1 && n > TS_WIDE_PX && p->out_h == 1 && p->batches == 1 &&
        rq_table != NULL && (checks & 4) != 0 && (p->in_c & 3) == 0 && ((uintptr_t)scratch & 3u) == 0 &&
        p->stem == NULL && p->quads == NULL && p->stride_w >= 1 && p->dilation_h >= 1 && p->dilation_w >= 1) {
        const int32_t blocks = room / block < TS_WIDE_STRIP ? room / block : TS_WIDE_STRIP;
        ts_conv2d_s8_params lead = *p;
        lead.out_w = n - 1;
        ts_conv2d_s8_wide_checked(&lead, input, filter, bias, output, scratch, blocks, rq_table, checks);
        strip_last_pixel(p, input, filter, bias, output, (uint32_t *)(void *)scratch, rq_table);
        return TS_OK;
    }
#endif
    return ts_conv2d_s8_strip(p, input, filter, bias, output, scratch, room, rq_table, checks);
}
