/*
 * ts_mve.h - the kernels' Helium (M-profile Vector Extension) fast paths (private to firmware/kernels).
 *
 * TS_MVE is 1 where the compiler targets MVE (__ARM_FEATURE_MVE, integer or integer+float: the
 * Cortex-M55 and M85 with -mcpu=cortex-m55), else 0; -DTS_MVE=0 turns the paths off on such a core
 * (the kernels then take their DSP paths, which every Helium core also has). The choice is made when
 * the kernels are compiled, from the board's -mcpu: no run-time dispatch.
 *
 * Exactness: every path computes the portable kernel's int32 accumulator, only summed in another
 * order. Products w * (x + input_offset) are split as w * x (VMLADAV, int8 x int8 summed into a
 * 32-bit scalar) plus input_offset * sum(w) (VADDV of the same filter bytes): both are exact
 * integers and the accumulator bound of ts_kernels.h keeps the total within int32, so the wrapping
 * 32-bit sums equal it. Tails use predicated loads (VCTP): inactive lanes read nothing and load 0,
 * which adds 0 to both sums. Requantisation of four lanes (ts_mve_requant*) is the portable
 * formula step by step: x << left (wrapping, as ts_requantize), VQRDMULH (equal to ts_srdhm: both
 * are floor((2ab + 2^31) / 2^32), saturating INT32_MIN * INT32_MIN), then the rounding right shift
 * with ties away from zero as VRSHL (ties up) after adding -1 to negative lanes when right > 0
 * (saturating, so INT32_MIN stays exact).
 */
#ifndef TS_MVE_H
#define TS_MVE_H

#include <stdint.h>

#ifndef TS_MVE
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TS_MVE 1
#else
#define TS_MVE 0
#endif
#endif

#if TS_MVE
#include <arm_mve.h>

/* sum_i w[i] * x[i] over n bytes (acc added) and, through *wsum, sum_i w[i] added to it. */
static inline int32_t ts_mve_dot(const int8_t *x, const int8_t *w, int32_t n, int32_t acc, int32_t *wsum)
{
    int32_t s = *wsum;
    for (; n > 0; n -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        const int8x16_t wv = vldrbq_z_s8(w, p);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x, p), wv);
        s = vaddvaq_s8(s, wv);
        x += 16;
        w += 16;
    }
    *wsum = s;
    return acc;
}

/* Four dot products of n bytes against one x: acc[j] += sum_i w_j[i] * x[i], ws[j] += sum_i w_j[i]. */
static inline void ts_mve_dot4(const int8_t *x, const int8_t *w0, const int8_t *w1, const int8_t *w2,
                               const int8_t *w3, int32_t n, int32_t *acc, int32_t *ws)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t s0 = ws[0], s1 = ws[1], s2 = ws[2], s3 = ws[3];
    for (; n > 0; n -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        const int8x16_t xv = vldrbq_z_s8(x, p);
        int8x16_t wv = vldrbq_z_s8(w0, p);
        a0 = vmladavaq_s8(a0, xv, wv);
        s0 = vaddvaq_s8(s0, wv);
        wv = vldrbq_z_s8(w1, p);
        a1 = vmladavaq_s8(a1, xv, wv);
        s1 = vaddvaq_s8(s1, wv);
        wv = vldrbq_z_s8(w2, p);
        a2 = vmladavaq_s8(a2, xv, wv);
        s2 = vaddvaq_s8(s2, wv);
        wv = vldrbq_z_s8(w3, p);
        a3 = vmladavaq_s8(a3, xv, wv);
        s3 = vaddvaq_s8(s3, wv);
        x += 16;
        w0 += 16;
        w1 += 16;
        w2 += 16;
        w3 += 16;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    ws[0] = s0;
    ws[1] = s1;
    ws[2] = s2;
    ws[3] = s3;
}

/* The CONV_2D runs (ts_conv2d_s8.c dot_2x2 / dot_1x2, same contract): acc[0..3] += dot products of
 * len bytes (in0, w0), (in0, w1), (in1, w0), (in1, w1) with input_offset added to every input byte,
 * as sum(w x) + input_offset * sum(w). Whole vectors unpredicated, the last len % 16 bytes under a
 * VCTP predicate (one VPST for the four loads). */
static inline void ts_mve_dot_2x2(const int8_t *in0, const int8_t *in1, const int8_t *w0, const int8_t *w1,
                                  int32_t len, int32_t input_offset, int32_t *acc)
{
    int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0, s0 = 0, s1 = 0;
    for (; len >= 16; len -= 16) {
        const int8x16_t x0 = vldrbq_s8(in0), x1 = vldrbq_s8(in1), wa = vldrbq_s8(w0), wb = vldrbq_s8(w1);
        a00 = vmladavaq_s8(a00, x0, wa);
        a10 = vmladavaq_s8(a10, x1, wa);
        a01 = vmladavaq_s8(a01, x0, wb);
        a11 = vmladavaq_s8(a11, x1, wb);
        s0 = vaddvaq_s8(s0, wa);
        s1 = vaddvaq_s8(s1, wb);
        in0 += 16;
        in1 += 16;
        w0 += 16;
        w1 += 16;
    }
    if (len > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)len);
        const int8x16_t x0 = vldrbq_z_s8(in0, p), x1 = vldrbq_z_s8(in1, p);
        const int8x16_t wa = vldrbq_z_s8(w0, p), wb = vldrbq_z_s8(w1, p);
        a00 = vmladavaq_s8(a00, x0, wa);
        a10 = vmladavaq_s8(a10, x1, wa);
        a01 = vmladavaq_s8(a01, x0, wb);
        a11 = vmladavaq_s8(a11, x1, wb);
        s0 = vaddvaq_s8(s0, wa);
        s1 = vaddvaq_s8(s1, wb);
    }
    {
        const uint32_t o0 = (uint32_t)input_offset * (uint32_t)s0, o1 = (uint32_t)input_offset * (uint32_t)s1;
        acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)a00 + o0);
        acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)a01 + o1);
        acc[2] = (int32_t)((uint32_t)acc[2] + (uint32_t)a10 + o0);
        acc[3] = (int32_t)((uint32_t)acc[3] + (uint32_t)a11 + o1);
    }
}

/* acc[0..1] += dot products of len bytes (in, w0), (in, w1), input_offset added to every input byte. */
static inline void ts_mve_dot_1x2(const int8_t *in, const int8_t *w0, const int8_t *w1, int32_t len,
                                  int32_t input_offset, int32_t *acc)
{
    int32_t a0 = 0, a1 = 0, s0 = 0, s1 = 0;
    for (; len >= 16; len -= 16) {
        const int8x16_t x = vldrbq_s8(in), wa = vldrbq_s8(w0), wb = vldrbq_s8(w1);
        a0 = vmladavaq_s8(a0, x, wa);
        a1 = vmladavaq_s8(a1, x, wb);
        s0 = vaddvaq_s8(s0, wa);
        s1 = vaddvaq_s8(s1, wb);
        in += 16;
        w0 += 16;
        w1 += 16;
    }
    if (len > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)len);
        const int8x16_t x = vldrbq_z_s8(in, p), wa = vldrbq_z_s8(w0, p), wb = vldrbq_z_s8(w1, p);
        a0 = vmladavaq_s8(a0, x, wa);
        a1 = vmladavaq_s8(a1, x, wb);
        s0 = vaddvaq_s8(s0, wa);
        s1 = vaddvaq_s8(s1, wb);
    }
    acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)a0 + (uint32_t)input_offset * (uint32_t)s0);
    acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)a1 + (uint32_t)input_offset * (uint32_t)s1);
}

/* sum_i x[i] over n bytes. */
static inline int32_t ts_mve_sum(const int8_t *x, int32_t n)
{
    int32_t s = 0;
    for (; n > 0; n -= 16) {
        s = vaddvaq_s8(s, vldrbq_z_s8(x, vctp8q((uint32_t)n)));
        x += 16;
    }
    return s;
}

#endif /* TS_MVE */
#endif /* TS_MVE_H */
