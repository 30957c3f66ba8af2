/*
 * ts_mve.h - the kernels' Helium (M-profile Vector Extension) fast paths (private to firmware/kernels).
 *
 * TS_MVE is 1 where the compiler targets MVE (__ARM_FEATURE_MVE, integer or integer+float: the
 * Cortex-M55 and M85 with -mcpu=cortex-m55, which is what the mps3-an547 board's cflags give), else
 * 0; -DTS_MVE=0 turns the paths off on such a core (the kernels then take their DSP paths, which
 * every Helium core also has). The choice is made when the kernels are compiled, from the board's
 * -mcpu: no run-time dispatch. Each kernel entry (ts_conv2d_s8, ts_depthwise_conv2d_s8,
 * ts_fully_connected_s8, ts_add_s8, ts_avg_pool2d_s8) calls the function here for the shapes it
 * covers, under the same conditions as its other fast paths; everything else keeps the portable /
 * DSP code.
 *
 * Exactness: every path computes the portable kernel's int32 accumulator, only summed in another
 * order. Products w * (x + input_offset) are split as w * x (VMLADAV: int8 x int8 summed into a
 * 32-bit scalar; or VMULLB/VMULLT of 16-bit lanes) plus input_offset * sum(w) (VADDV of the same
 * filter bytes, or the filter's sum over the whole window for pixels whose window lies inside the
 * input, tabled once per call with the bias where the layer has at most 64 channels:
 * ts_mve_layer_table, ts_mve_dw_eff_table): both are exact integers and the accumulator bound of
 * ts_kernels.h keeps the total within int32, so the wrapping 32-bit sums equal it. Tails use predicated loads and stores (VCTP):
 * inactive lanes read and write nothing (so no byte outside the portable kernel's reads and writes
 * is touched) and load 0, which adds 0 to both sums. Requantisation of four lanes (ts_mve_requant,
 * ts_mve_requant_n) is the portable formula step by step: x << left (wrapping, as ts_requantize),
 * VQRDMULH (equal to ts_srdhm: both are floor((2ab + 2^31) / 2^32), saturating INT32_MIN^2), then
 * the rounding right shift with ties away from zero as VRSHL (ties up) after adding -1 to negative
 * lanes when right > 0 (saturating, so INT32_MIN stays exact). No accumulator bound is needed.
 *
 * Read/write order: every path keeps its kernel's documented groups (ts_kernels.h "Read/write
 * order"), so tinysched/memory/overlap.py's D covers it unchanged.
 *
 * The hot loops are asm blocks with explicit registers: VMLADAV and VADDV accumulate only into
 * even core registers, and GCC 12 spills the loop state from the same intrinsics (the staged
 * depthwise's taps: one of its four accumulators; its requantisation: every vector). The run
 * path's rows and the depthwise taps avoid r7 (Thumb's frame pointer); the 1x1 / k x k quads
 * (ts_mve_pw_quad, ts_mve_cq_block: dot products, requantisation and stores of a block of
 * channels in one block) use it for the output pointer, pushed and popped inside the block, and
 * take their other arguments through one struct at fixed offsets. All compile at -O0 to -O3.
 */
#ifndef TS_MVE_H
#define TS_MVE_H

#include <stdint.h>

#include "ts_index.h"
#include "ts_kernels.h"

#ifndef TS_MVE
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TS_MVE 1
#else
#define TS_MVE 0
#endif
#endif

#if TS_MVE
#include <arm_mve.h>

/* A hot loop in a function of its own (the register allocator sees only its values); unused in the
 * kernels that do not call it. */
#define TS_MVE_HOT static __attribute__((unused, noinline))

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

/* Where a CONV_2D block's runs lie: `rows` filter rows of `runs` runs of `len` bytes each; input run k
 * of row r at in + r * in_row + k * in_run, filter run at w + r * w_row + k * w_run. */
typedef struct {
    int32_t rows, runs, len;
    int32_t in_row, in_run, w_row, w_run;
} ts_mve_runs;

/* Whole 16-byte vectors of one run, then its len % 16 tail under the predicate pt (two pixels).
 * LOAD(p) is TS_MVE_LOAD (16 bytes) or TS_MVE_LOAD_TAIL (the tail: under pt, the rest zero); a
 * one-argument macro rather than a variadic one, which ISO C99 (-pedantic) refuses empty. */
#define TS_MVE_LOAD(p) vldrbq_s8(p)
#define TS_MVE_LOAD_TAIL(p) vldrbq_z_s8(p, pt)
#define TS_MVE_RUN2(LOAD)                                                                               \
    do {                                                                                                \
        const int8x16_t v0 = LOAD(x0), v1 = LOAD(x1);                                                   \
        const int8x16_t fa = LOAD(wa), fb = LOAD(wb);                                                   \
        a00 = vmladavaq_s8(a00, v0, fa);                                                                \
        a10 = vmladavaq_s8(a10, v1, fa);                                                                \
        a01 = vmladavaq_s8(a01, v0, fb);                                                                \
        a11 = vmladavaq_s8(a11, v1, fb);                                                                \
        s0 = vaddvaq_s8(s0, fa);                                                                        \
        s1 = vaddvaq_s8(s1, fb);                                                                        \
    } while (0)
#define TS_MVE_RUN1(LOAD)                                                                               \
    do {                                                                                                \
        const int8x16_t v0 = LOAD(x0);                                                                  \
        const int8x16_t fa = LOAD(wa), fb = LOAD(wb);                                                   \
        a00 = vmladavaq_s8(a00, v0, fa);                                                                \
        a01 = vmladavaq_s8(a01, v0, fb);                                                                \
        s0 = vaddvaq_s8(s0, fa);                                                                        \
        s1 = vaddvaq_s8(s1, fb);                                                                        \
    } while (0)

/* ts_mve_dot_2x2 over every run of a block (in1 == NULL: one pixel, acc[2..3] untouched), the six
 * sums kept in registers across runs (VMLADAV and VADDV accumulate only into even registers: six of
 * the seven are used) and the input offset applied once at the end. Runs are visited row by row,
 * in order, through pointers stepped from run to run. */
TS_MVE_HOT void ts_mve_block(const ts_mve_runs *r, const int8_t *in0, const int8_t *in1, const int8_t *w0,
                             const int8_t *w1, int32_t input_offset, int32_t *acc)
{
    const int32_t whole = r->len >> 4, tail = r->len & 15, runs = r->runs;
    const int32_t in_step = r->in_row - runs * r->in_run, w_step = r->w_row - runs * r->w_run;
    const int32_t in_run = r->in_run, w_run = r->w_run;
    const mve_pred16_t pt = vctp8q((uint32_t)tail);
    int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0, s0 = 0, s1 = 0;
    int32_t n, k, i;
    for (n = r->rows; n > 0; --n) {
        for (k = runs; k > 0; --k) {
            const int8_t *x0 = in0, *wa = w0, *wb = w1;
            if (in1 != NULL) {
                const int8_t *x1 = in1;
                for (i = whole; i > 0; --i) {
                    TS_MVE_RUN2(TS_MVE_LOAD);
                    x0 += 16;
                    x1 += 16;
                    wa += 16;
                    wb += 16;
                }
                if (tail) {
                    TS_MVE_RUN2(TS_MVE_LOAD_TAIL);
                }
                in1 += in_run;
            } else {
                for (i = whole; i > 0; --i) {
                    TS_MVE_RUN1(TS_MVE_LOAD);
                    x0 += 16;
                    wa += 16;
                    wb += 16;
                }
                if (tail) {
                    TS_MVE_RUN1(TS_MVE_LOAD_TAIL);
                }
            }
            in0 += in_run;
            w0 += w_run;
            w1 += w_run;
        }
        in0 += in_step;
        if (in1 != NULL) {
            in1 += in_step;
        }
        w0 += w_step;
        w1 += w_step;
    }
    {
        const uint32_t o0 = (uint32_t)input_offset * (uint32_t)s0, o1 = (uint32_t)input_offset * (uint32_t)s1;
        acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)a00 + o0);
        acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)a01 + o1);
        if (in1 != NULL) {
            acc[2] = (int32_t)((uint32_t)acc[2] + (uint32_t)a10 + o0);
            acc[3] = (int32_t)((uint32_t)acc[3] + (uint32_t)a11 + o1);
        }
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

/* ts_mve_block for the common case: two pixels, one run per filter row (dilation_w 1), the run a
 * whole number of vectors (len % 16 == 0: in_c a multiple of 16 and a 3-wide rectangle, say); the
 * raw sums out: d0 = {sum w0 x0, sum w1 x0}, d1 = the same for x1, sums = {sum w0, sum w1}. Each
 * row's pointers follow from the previous row's ends (two additions of a skip each), the row itself
 * a low-overhead loop (DLS/LE) of four loads, four VMLADAV and two VADDV per 16 bytes. Written as
 * one asm block: VMLADAV/VADDV accumulate only into even registers, and GCC 12 spills the row
 * state from the same intrinsics (30 instructions a row instead of 8). */
TS_MVE_HOT void ts_mve_block_rows(const ts_mve_runs *r, const int8_t *x0, const int8_t *x1, const int8_t *wa,
                                  const int8_t *wb, int32_t *d0, int32_t *d1, int32_t *sums)
{
    const int32_t skips[3] = {r->in_row - r->len, r->w_row - r->len, r->len >> 4};
    register int32_t a00 __asm__("r0") = 0, a10 __asm__("r2") = 0, a01 __asm__("r4") = 0;
    register int32_t a11 __asm__("r6") = 0, s0 __asm__("r8") = 0, s1 __asm__("r10") = 0;
    register const int8_t *p0 __asm__("r1") = x0, *p1 __asm__("r3") = x1, *pa __asm__("r5") = wa;
    register const int8_t *pb __asm__("r9") = wb;
    register const int32_t *sk __asm__("r12") = skips;
    register int32_t rows __asm__("r11") = r->rows;
    if (rows > 0 && skips[2] > 0) {
        __asm__ volatile("1:\n\t"
                         "ldr     lr, [%[sk], #8]\n\t"
                         "dls     lr, lr\n\t"
                         "2:\n\t"
                         "vldrb.8 q0, [%[p0]], #16\n\t"
                         "vldrb.8 q1, [%[p1]], #16\n\t"
                         "vldrb.8 q2, [%[pa]], #16\n\t"
                         "vldrb.8 q3, [%[pb]], #16\n\t"
                         "vmladava.s8 %[a00], q0, q2\n\t"
                         "vmladava.s8 %[a10], q1, q2\n\t"
                         "vmladava.s8 %[a01], q0, q3\n\t"
                         "vmladava.s8 %[a11], q1, q3\n\t"
                         "vaddva.s8 %[s0], q2\n\t"
                         "vaddva.s8 %[s1], q3\n\t"
                         "le      lr, 2b\n\t"
                         "ldr     lr, [%[sk]]\n\t"
                         "add     %[p0], %[p0], lr\n\t"
                         "add     %[p1], %[p1], lr\n\t"
                         "ldr     lr, [%[sk], #4]\n\t"
                         "add     %[pa], %[pa], lr\n\t"
                         "add     %[pb], %[pb], lr\n\t"
                         "subs    %[rows], %[rows], #1\n\t"
                         "bne     1b\n\t"
                         : [a00] "+r"(a00), [a10] "+r"(a10), [a01] "+r"(a01), [a11] "+r"(a11), [s0] "+r"(s0),
                           [s1] "+r"(s1), [p0] "+r"(p0), [p1] "+r"(p1), [pa] "+r"(pa), [pb] "+r"(pb),
                           [rows] "+r"(rows)
                         : [sk] "r"(sk)
                         : "q0", "q1", "q2", "q3", "lr", "cc", "memory");
    }
    d0[0] = a00;
    d0[1] = a01;
    d1[0] = a10;
    d1[1] = a11;
    sums[0] = s0;
    sums[1] = s1;
}

/* ts_mve_block_rows for one pixel (acc[0..1]; the window's edge pixels that pair with no other). */
TS_MVE_HOT void ts_mve_block_rows1(const ts_mve_runs *r, const int8_t *x0, const int8_t *wa, const int8_t *wb,
                                   int32_t *d0, int32_t *sums)
{
    const int32_t skips[3] = {r->in_row - r->len, r->w_row - r->len, r->len >> 4};
    register int32_t a00 __asm__("r0") = 0, a01 __asm__("r2") = 0, s0 __asm__("r4") = 0, s1 __asm__("r6") = 0;
    register const int8_t *p0 __asm__("r1") = x0, *pa __asm__("r3") = wa, *pb __asm__("r5") = wb;
    register const int32_t *sk __asm__("r12") = skips;
    register int32_t rows __asm__("r11") = r->rows;
    if (rows > 0 && skips[2] > 0) {
        __asm__ volatile("1:\n\t"
                         "ldr     lr, [%[sk], #8]\n\t"
                         "dls     lr, lr\n\t"
                         "2:\n\t"
                         "vldrb.8 q0, [%[p0]], #16\n\t"
                         "vldrb.8 q2, [%[pa]], #16\n\t"
                         "vldrb.8 q3, [%[pb]], #16\n\t"
                         "vmladava.s8 %[a00], q0, q2\n\t"
                         "vmladava.s8 %[a01], q0, q3\n\t"
                         "vaddva.s8 %[s0], q2\n\t"
                         "vaddva.s8 %[s1], q3\n\t"
                         "le      lr, 2b\n\t"
                         "ldr     lr, [%[sk]]\n\t"
                         "add     %[p0], %[p0], lr\n\t"
                         "ldr     lr, [%[sk], #4]\n\t"
                         "add     %[pa], %[pa], lr\n\t"
                         "add     %[pb], %[pb], lr\n\t"
                         "subs    %[rows], %[rows], #1\n\t"
                         "bne     1b\n\t"
                         : [a00] "+r"(a00), [a01] "+r"(a01), [s0] "+r"(s0), [s1] "+r"(s1), [p0] "+r"(p0),
                           [pa] "+r"(pa), [pb] "+r"(pb), [rows] "+r"(rows)
                         : [sk] "r"(sk)
                         : "q0", "q2", "q3", "lr", "cc", "memory");
    }
    d0[0] = a00;
    d0[1] = a01;
    sums[0] = s0;
    sums[1] = s1;
}

/* ts_requantize(acc, m, shift) on four lanes, left = max(shift, 0) and right = min(shift, 0) given. */
static inline int32x4_t ts_mve_requant_lr(int32x4_t acc, int32x4_t m, int32x4_t left, int32x4_t right)
{
    const int32x4_t h = vqrdmulhq_s32(vshlq_s32(acc, left), m);
    /* right < 0 has its sign bit set: (h & right) >> 31 is -1 exactly for negative h when right < 0 */
    return vrshlq_s32(vqaddq_s32(h, vshrq_n_s32(vandq_s32(h, right), 31)), right);
}

/* ts_requantize(acc, m, shift) on four lanes (see the top of this file for why it is the same value). */
static inline int32x4_t ts_mve_requant(int32x4_t acc, int32x4_t m, int32x4_t shift)
{
    return ts_mve_requant_lr(acc, m, vmaxq_s32(shift, vdupq_n_s32(0)), vminq_s32(shift, vdupq_n_s32(0)));
}

/* Channels [c0, c0 + n) of one pixel: acc[0..n) + bias + input_offset * sums[0..n) (bias and sums
 * may be NULL: 0) requantised with their own multiplier and shift, output offset added, clamped,
 * stored as bytes at out[0..n) (four lanes per step, the last step predicated: nothing past
 * out[n - 1] or the parameter arrays' end is touched). */
static inline void ts_mve_requant_store(const int32_t *acc, const int32_t *sums, const int32_t *bias,
                                        int32_t input_offset, const int32_t *multiplier, const int32_t *shift,
                                        int32_t n, int32_t output_offset, int32_t act_min, int32_t act_max,
                                        int8_t *out)
{
    int32_t k;
    for (k = 0; k < n; k += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(n - k));
        int32x4_t v = vldrwq_z_s32(acc + k, p);
        if (bias != NULL) {
            v = vaddq_s32(v, vldrwq_z_s32(bias + k, p));
        }
        if (sums != NULL) {
            v = vmlaq_n_s32(v, vldrwq_z_s32(sums + k, p), input_offset);
        }
        v = ts_mve_requant(v, vldrwq_z_s32(multiplier + k, p), vldrwq_z_s32(shift + k, p));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, output_offset), vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
        vstrbq_p_s32(out + k, v, p);
    }
}

/* CONV_2D, one group of one or two output pixels (in1/out1 NULL: one) whose runs `r` start at
 * in0 / in1, filter bytes from w_first (the filter plus the runs' first offset in a channel): output
 * channels in chunks of 16, each chunk's channel pairs through ts_mve_block into 16 accumulators per
 * pixel, then requantised four channels at a time and stored. */
TS_MVE_HOT void ts_mve_conv_group(const ts_conv2d_s8_params *p, const ts_mve_runs *r, const int8_t *in0,
                                  const int8_t *in1, const int8_t *w_first, const int32_t *bias,
                                  int8_t *out0, int8_t *out1)
{
    const int32_t out_c = p->out_c, fs = p->filter_h * p->filter_w * p->in_c, io = p->input_offset;
    const int rows_path = r->runs == 1 && (r->len & 15) == 0;
    int32_t acc0[16], acc1[16], sums[16];
    int32_t c0, j;
    for (c0 = 0; c0 < out_c; c0 += 16) {
        const int32_t n = out_c - c0 < 16 ? out_c - c0 : 16;
        for (j = 0; j < n; j += 2) { /* j + 1 <= 15: an odd last channel fills one slot more, unused */
            const int32_t o = c0 + j, o1 = o + 1 < out_c ? o + 1 : o;
            const int8_t *w0 = w_first + (size_t)o * fs, *w1 = w_first + (size_t)o1 * fs;
            if (rows_path && in1 != NULL) {
                ts_mve_block_rows(r, in0, in1, w0, w1, acc0 + j, acc1 + j, sums + j);
            } else if (rows_path) {
                ts_mve_block_rows1(r, in0, w0, w1, acc0 + j, sums + j);
            } else {
                int32_t a[4] = {0, 0, 0, 0};
                ts_mve_block(r, in0, in1, w0, w1, io, a);
                acc0[j] = a[0];
                acc0[j + 1] = a[1];
                acc1[j] = a[2];
                acc1[j + 1] = a[3];
            }
        }
        const int32_t *s = rows_path ? sums : NULL, *b = bias != NULL ? bias + c0 : NULL;
        ts_mve_requant_store(acc0, s, b, io, p->multiplier + c0, p->shift + c0, n, p->output_offset,
                             p->act_min, p->act_max, out0 + c0);
        if (out1 != NULL) {
            ts_mve_requant_store(acc1, s, b, io, p->multiplier + c0, p->shift + c0, n, p->output_offset,
                                 p->act_min, p->act_max, out1 + c0);
        }
    }
}

/* ts_conv2d_s8.c build_patch with vector copies: each filter row of the receptive field at
 * (y0, x0) that lies wholly inside the input (dilation_w 1) is one run of fw * in_c bytes, copied
 * 16 at a time (the last store predicated); a row above or below the input is pad bytes; a row
 * clipped at the left or right edge is pad bytes, then (dilation_w 1) the run of its taps inside
 * copied over them, or (dilation) goes tap by tap. Then round_up more pad bytes. */
static inline void ts_mve_build_patch(const ts_conv2d_s8_params *p, const int8_t *in_b, int32_t y0,
                                      int32_t x0, int8_t pad, int32_t round_up, int8_t *patch)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fw = p->filter_w, row = fw * in_c;
    const int whole_row = p->dilation_w == 1 && x0 >= 0 && x0 + fw <= in_w;
    const int8x16_t padv = vdupq_n_s8(pad);
    int32_t ky, kx, c, i;
    for (ky = 0; ky < p->filter_h; ++ky, patch += row) {
        const int32_t iy = y0 + ky * p->dilation_h;
        if (iy < 0 || iy >= in_h) {
            for (i = 0; i < row; i += 16) {
                vstrbq_p_s8(patch + i, padv, vctp8q((uint32_t)(row - i)));
            }
        } else if (whole_row) {
            const int8_t *src = in_b + ((size_t)iy * in_w + x0) * in_c;
            for (i = 0; i < row; i += 16) {
                const mve_pred16_t q = vctp8q((uint32_t)(row - i));
                vstrbq_p_s8(patch + i, vldrbq_z_s8(src + i, q), q);
            }
        } else if (p->dilation_w == 1) {
            /* clipped at the left or right edge: pad bytes over the row, then its run inside */
            const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = in_w - x0 < fw ? in_w - x0 : fw;
            for (i = 0; i < row; i += 16) {
                vstrbq_p_s8(patch + i, padv, vctp8q((uint32_t)(row - i)));
            }
            if (kx1 > kx0) {
                const int8_t *src = in_b + ((size_t)iy * in_w + (size_t)(x0 + kx0)) * in_c;
                const int32_t run = (kx1 - kx0) * in_c;
                int8_t *dst = patch + kx0 * in_c;
                for (i = 0; i < run; i += 16) {
                    const mve_pred16_t q = vctp8q((uint32_t)(run - i));
                    vstrbq_p_s8(dst + i, vldrbq_z_s8(src + i, q), q);
                }
            }
        } else {
            const int8_t *in_row = in_b + (size_t)iy * in_w * in_c;
            int8_t *dst = patch;
            for (kx = 0; kx < fw; ++kx) {
                const int32_t ix = x0 + kx * p->dilation_w;
                const int inside = ix >= 0 && ix < in_w;
                for (c = 0; c < in_c; ++c) {
                    *dst++ = inside ? in_row[(size_t)ix * in_c + c] : pad;
                }
            }
        }
    }
    for (c = 0; c < round_up; ++c) {
        patch[c] = pad;
    }
}

/* DEPTHWISE_CONV_2D, depth multiplier 1: eight channels per step. VLDRB.S16 widens eight bytes of
 * input and of filter to 16-bit lanes; VMULLB / VMULLT multiply the even / odd lanes into 32 bits
 * (exact: |(x + io) * w| < 2^16 * 2^7 fits), so the block's accumulators are two int32x4, `e` for
 * channels 0, 2, 4, 6 and `o` for 1, 3, 5, 7 of the block; VMOVNB / VMOVNT interleave the requantised
 * lanes back into channel order for one 8-byte store. The block's constants come deinterleaved in
 * ts_mve_dw_consts (once per chunk). */
typedef struct {
    int32_t start_e[4], start_o[4]; /* bias (clipped windows) */
    int32_t eff_e[4], eff_o[4];     /* bias + input_offset * sum of the filter over all taps */
    int32_t m_e[4], m_o[4];
    int32_t l_e[4], l_o[4], r_e[4], r_o[4]; /* max(shift, 0), min(shift, 0) */
} ts_mve_dw_consts;

/* Requantise, offset, clamp and store the block (n channels: the last block may be shorter). */
static inline void ts_mve_dw_store(int32x4_t e, int32x4_t o, const ts_mve_dw_consts *k,
                                   const ts_depthwise_conv2d_s8_params *p, int32_t n, int8_t *out)
{
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    int16x8_t v = vdupq_n_s16(0);
    e = ts_mve_requant_lr(e, vldrwq_s32(k->m_e), vldrwq_s32(k->l_e), vldrwq_s32(k->r_e));
    o = ts_mve_requant_lr(o, vldrwq_s32(k->m_o), vldrwq_s32(k->l_o), vldrwq_s32(k->r_o));
    e = vminq_s32(vmaxq_s32(vaddq_n_s32(e, p->output_offset), lo), hi);
    o = vminq_s32(vmaxq_s32(vaddq_n_s32(o, p->output_offset), lo), hi);
    v = vmovnbq_s32(v, e);
    v = vmovntq_s32(v, o);
    if (n == 8) {
        vstrbq_s16(out, v);
    } else {
        vstrbq_p_s16(out, v, vctp16q((uint32_t)n));
    }
}

/* One pixel's block over its tap rectangle (taps_h x taps_w taps from in / w, rows in_row / w_row
 * bytes apart, columns in_col / w_col): `full` (the whole window inside the input, n == 8) starts
 * from eff and multiplies the raw input; otherwise from the bias, input_offset added to each input
 * lane, loads predicated to n channels. */
static inline void ts_mve_dw8(const int8_t *in, const int8_t *w, int32_t taps_h, int32_t taps_w,
                              int32_t in_row, int32_t in_col, int32_t w_row, int32_t w_col, int32_t io,
                              int32_t n, int full, const ts_mve_dw_consts *k,
                              const ts_depthwise_conv2d_s8_params *p, int8_t *out)
{
    const int32_t in_next = in_row - taps_w * in_col, w_next = w_row - taps_w * w_col;
    int32x4_t e, o;
    int32_t ky, kx;
    if (full) {
        e = vldrwq_s32(k->eff_e);
        o = vldrwq_s32(k->eff_o);
        for (ky = taps_h; ky > 0; --ky) {
            for (kx = taps_w; kx > 0; --kx) {
                const int16x8_t xv = vldrbq_s16(in), wv = vldrbq_s16(w);
                e = vaddq_s32(e, vmullbq_int_s16(xv, wv));
                o = vaddq_s32(o, vmulltq_int_s16(xv, wv));
                in += in_col;
                w += w_col;
            }
            in += in_next;
            w += w_next;
        }
    } else {
        const mve_pred16_t pr = vctp16q((uint32_t)n);
        e = vldrwq_s32(k->start_e);
        o = vldrwq_s32(k->start_o);
        for (ky = taps_h; ky > 0; --ky) {
            for (kx = taps_w; kx > 0; --kx) {
                const int16x8_t xv = vaddq_n_s16(vldrbq_z_s16(in, pr), (int16_t)io), wv = vldrbq_z_s16(w, pr);
                e = vaddq_s32(e, vmullbq_int_s16(xv, wv));
                o = vaddq_s32(o, vmulltq_int_s16(xv, wv));
                in += in_col;
                w += w_col;
            }
            in += in_next;
            w += w_next;
        }
    }
    ts_mve_dw_store(e, o, k, p, n, out);
}

/* Two horizontally adjacent whole-window pixels (their windows in0 and in0 + px_step), the block's
 * eight channels: each filter tap loaded once for both (three loads, four VMULL, four VADD per tap). */
static inline void ts_mve_dw8_pair(const int8_t *in, int32_t px_step, const int8_t *w, int32_t taps_h,
                                   int32_t taps_w, int32_t in_row, int32_t in_col, int32_t w_row,
                                   int32_t w_col,
                                   const ts_mve_dw_consts *k, const ts_depthwise_conv2d_s8_params *p,
                                   int8_t *out0, int8_t *out1)
{
    const int32_t in_next = in_row - taps_w * in_col, w_next = w_row - taps_w * w_col;
    const int8_t *in1 = in + px_step;
    int32x4_t e0 = vldrwq_s32(k->eff_e), o0 = vldrwq_s32(k->eff_o), e1 = e0, o1 = o0;
    int32_t ky, kx;
    for (ky = taps_h; ky > 0; --ky) {
        for (kx = taps_w; kx > 0; --kx) {
            const int16x8_t wv = vldrbq_s16(w), xa = vldrbq_s16(in), xb = vldrbq_s16(in1);
            e0 = vaddq_s32(e0, vmullbq_int_s16(xa, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(xa, wv));
            e1 = vaddq_s32(e1, vmullbq_int_s16(xb, wv));
            o1 = vaddq_s32(o1, vmulltq_int_s16(xb, wv));
            in += in_col;
            in1 += in_col;
            w += w_col;
        }
        in += in_next;
        in1 += in_next;
        w += w_next;
    }
    ts_mve_dw_store(e0, o0, k, p, 8, out0);
    ts_mve_dw_store(e1, o1, k, p, 8, out1);
}

/* The constants of channels [c, c + n) deinterleaved (lanes past n: 0): gathers of the even and
 * odd channels (predicated: nothing past channel c + n - 1 is read), the filter sums over all taps
 * widened to 32 bits per tap. */
static inline void ts_mve_dw_prepare(const ts_depthwise_conv2d_s8_params *p, const int8_t *filter,
                                     const int32_t *bias, int32_t c, int32_t n, ts_mve_dw_consts *k)
{
    const int32_t taps = p->filter_h * p->filter_w, c_all = p->in_c;
    const mve_pred16_t pe = vctp32q((uint32_t)((n + 1) >> 1)), po = vctp32q((uint32_t)(n >> 1));
    const uint32x4_t even = vidupq_n_u32(0, 2), odd = vidupq_n_u32(1, 2);
    const mve_pred16_t p16 = vctp16q((uint32_t)n);
    int32x4_t se = vdupq_n_s32(0), so = vdupq_n_s32(0), be = se, bo = so;
    int32_t t;
    for (t = 0; t < taps; ++t) {
        const int16x8_t wv = vldrbq_z_s16(filter + (size_t)t * c_all + c, p16);
        se = vaddq_s32(se, vmovlbq_s16(wv));
        so = vaddq_s32(so, vmovltq_s16(wv));
    }
    if (bias != NULL) {
        be = vldrwq_gather_shifted_offset_z_s32(bias + c, even, pe);
        bo = vldrwq_gather_shifted_offset_z_s32(bias + c, odd, po);
    }
    vstrwq_s32(k->start_e, be);
    vstrwq_s32(k->start_o, bo);
    vstrwq_s32(k->eff_e, vmlaq_n_s32(be, se, p->input_offset));
    vstrwq_s32(k->eff_o, vmlaq_n_s32(bo, so, p->input_offset));
    vstrwq_s32(k->m_e, vldrwq_gather_shifted_offset_z_s32(p->multiplier + c, even, pe));
    vstrwq_s32(k->m_o, vldrwq_gather_shifted_offset_z_s32(p->multiplier + c, odd, po));
    {
        const int32x4_t se_ = vldrwq_gather_shifted_offset_z_s32(p->shift + c, even, pe);
        const int32x4_t so_ = vldrwq_gather_shifted_offset_z_s32(p->shift + c, odd, po);
        vstrwq_s32(k->l_e, vmaxq_s32(se_, vdupq_n_s32(0)));
        vstrwq_s32(k->r_e, vminq_s32(se_, vdupq_n_s32(0)));
        vstrwq_s32(k->l_o, vmaxq_s32(so_, vdupq_n_s32(0)));
        vstrwq_s32(k->r_o, vminq_s32(so_, vdupq_n_s32(0)));
    }
}

#define TS_MVE_DW_CHUNK 32

/* DEPTHWISE_CONV_2D with depth multiplier 1 (any stride, dilation, padding): each output row in
 * chunks of up to TS_MVE_DW_CHUNK pixels; per chunk, channel blocks of 8 in turn, each block's
 * constants (ts_mve_dw_prepare) computed once, then the chunk's pixels one by one, each block
 * requantised and stored right after its taps (the DSP path's read/write order: groups of one
 * chunk, channel block by block across it). */
TS_MVE_HOT void ts_mve_depthwise(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                 const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, c_all = p->in_c, fh = p->filter_h, fw = p->filter_w;
    const int32_t dh = p->dilation_h, dw = p->dilation_w, io = p->input_offset, out_w = p->out_w;
    const int32_t in_row = dh * in_w * c_all, in_col = dw * c_all, w_row = fw * c_all;
    const int32_t px_step = p->stride_w * c_all;
    int32_t b, y, x0, x, c;
    ts_mve_dw_consts k;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * c_all;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t iy0 = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            ts_tap_range(iy0, dh, fh, in_h, &ky0, &ky1);
            for (x0 = 0; x0 < out_w; x0 += TS_MVE_DW_CHUNK) {
                const int32_t x1 = out_w - x0 < TS_MVE_DW_CHUNK ? out_w : x0 + TS_MVE_DW_CHUNK;
                int8_t *out_row = output + ((size_t)(b * p->out_h + y) * out_w) * c_all;
                for (c = 0; c < c_all; c += 8) {
                    const int32_t n = c_all - c < 8 ? c_all - c : 8;
                    ts_mve_dw_prepare(p, filter, bias, c, n, &k);
                    for (x = x0; x < x1;) {
                        const int32_t ix0 = x * p->stride_w - p->pad_left;
                        int32_t kx0, kx1;
                        ts_tap_range(ix0, dw, fw, in_w, &kx0, &kx1);
                        if (n == 8 && ky0 == 0 && ky1 == fh && kx0 == 0 && kx1 == fw) {
                            /* a run of whole windows: the same taps, moved by the stride */
                            const int8_t *in = in_b + ((size_t)iy0 * in_w + ix0) * c_all + c;
                            int32_t last = (in_w - 1 - (fw - 1) * dw + p->pad_left) / p->stride_w;
                            last = last < x1 - 1 ? last : x1 - 1;
                            for (; x + 1 <= last; x += 2) {
                                int8_t *out = out_row + (size_t)x * c_all + c;
                                ts_mve_dw8_pair(in, px_step, filter + c, fh, fw, in_row, in_col, w_row, c_all,
                                                &k, p, out, out + c_all);
                                in += 2 * px_step;
                            }
                            if (x == last) {
                                ts_mve_dw8(in, filter + c, fh, fw, in_row, in_col, w_row, c_all, io, 8, 1, &k,
                                           p, out_row + (size_t)x * c_all + c);
                                ++x;
                            }
                            continue;
                        }
                        {
                            const int8_t *in = in_b;
                            if (ky1 > ky0 && kx1 > kx0) { /* else no tap inside: nothing is read */
                                in += ((size_t)(iy0 + ky0 * dh) * in_w + (ix0 + kx0 * dw)) * c_all + c;
                            }
                            ts_mve_dw8(in, filter + (size_t)(ky0 * fw + kx0) * c_all + c, ky1 - ky0,
                                       kx1 - kx0, in_row, in_col, w_row, c_all, io, n, 0, &k, p,
                                       out_row + (size_t)x * c_all + c);
                        }
                        ++x;
                    }
                }
            }
        }
    }
}

/* ts_mve_dw_taps's pass of two blocks: the accumulators' way in, then what the asm block's
 * requantisation reads (byte offsets fixed: 64, 80, 96, 100, 104, 108, 112). */
typedef struct {
    int32_t acc[16];  /* e0, o0, e1, o1 (the bias) */
    int32_t lo[4];    /* act_min */
    int32_t hi[4];    /* act_max */
    const int32_t *m; /* multiplier + c */
    const int32_t *s; /* shift + c */
    int8_t *out;      /* out + c */
    int32_t oo;       /* output_offset */
    uint32_t idx[4];  /* 0, 2, 4, 6 */
} ts_mve_dw16;

/* One accumulator vector QA (even or odd channels of a block; %[in] / %[w] at its first channel's
 * multiplier / shift, q7 = {0, 2, 4, 6}) requantised as ts_mve_requant (left = shift & ~(shift >> 31),
 * right = shift - left), output offset (%[rows]) added, clamped to d.lo / d.hi. */
#define TS_MVE_DW16_RQ(QA)                                                                              \
    "vldrw.u32 q4, [%[in], q7, uxtw #2]\n\t"                                                            \
    "vldrw.u32 q5, [%[w], q7, uxtw #2]\n\t"                                                             \
    "vshr.s32 q6, q5, #31\n\t"                                                                          \
    "vbic    q6, q5, q6\n\t"                                                                            \
    "vshl.s32 " QA ", " QA ", q6\n\t"                                                                   \
    "vsub.i32 q5, q5, q6\n\t"                                                                           \
    "vqrdmulh.s32 " QA ", " QA ", q4\n\t"                                                               \
    "vand    q6, " QA ", q5\n\t"                                                                        \
    "vshr.s32 q6, q6, #31\n\t"                                                                          \
    "vqadd.s32 " QA ", " QA ", q6\n\t"                                                                  \
    "vrshl.s32 " QA ", " QA ", q5\n\t"                                                                  \
    "vadd.i32 " QA ", " QA ", %[rows]\n\t"                                                              \
    "vldrw.32 q6, [%[acc], #64]\n\t"                                                                    \
    "vmax.s32 " QA ", " QA ", q6\n\t"                                                                   \
    "vldrw.32 q6, [%[acc], #80]\n\t"                                                                    \
    "vmin.s32 " QA ", " QA ", q6\n\t"

/* ts_mve_dw_taps's asm block for a pass of two blocks (its local names: in, w, rows, t, acc, st,
 * in_col, c_all, io, tw, in_next, w_next): START loads the four accumulators q0-q3 (from d.acc, or
 * from the layer's table through st), then each row's taps (COLS: TS_MVE_DW16_COLS or, three taps,
 * TS_MVE_DW16_COLS3), IO adding input_offset to the 16-bit input lanes of each of the two blocks
 * (or ""), then the requantisation, the clamp and the two 8-byte stores. */
/* One tap of the pass: eight input and eight filter bytes of each block widened, IO0 / IO1, the
 * products accumulated, both pointers moved to the next tap column. */
#define TS_MVE_DW16_TAP(IO0, IO1)                                                                       \
    "vldrb.s16 q4, [%[in]]\n\t"                                                                         \
    "vldrb.s16 q5, [%[w]]\n\t" IO0 "vmullb.s16 q6, q4, q5\n\t"                                          \
    "vmullt.s16 q7, q4, q5\n\t"                                                                         \
    "vadd.i32 q0, q0, q6\n\t"                                                                           \
    "vadd.i32 q1, q1, q7\n\t"                                                                           \
    "vldrb.s16 q4, [%[in], #8]\n\t"                                                                     \
    "vldrb.s16 q5, [%[w], #8]\n\t" IO1 "vmullb.s16 q6, q4, q5\n\t"                                      \
    "vmullt.s16 q7, q4, q5\n\t"                                                                         \
    "vadd.i32 q2, q2, q6\n\t"                                                                           \
    "vadd.i32 q3, q3, q7\n\t"                                                                           \
    "add     %[in], %[in], %[in_col]\n\t"                                                               \
    "add     %[w], %[w], %[w_col]\n\t"
/* A row of the window: tw taps in a DLS/LE loop, or three written out (TS_MVE_DW16_COLS3). */
#define TS_MVE_DW16_COLS(IO0, IO1)                                                                      \
    "ldr     lr, %[tw]\n\t"                                                                             \
    "dls     lr, lr\n\t"                                                                                \
    "2:\n\t" TS_MVE_DW16_TAP(IO0, IO1) "le      lr, 2b\n\t"
#define TS_MVE_DW16_COLS3(IO0, IO1) TS_MVE_DW16_TAP(IO0, IO1) TS_MVE_DW16_TAP(IO0, IO1) TS_MVE_DW16_TAP(IO0, IO1)
#define TS_MVE_DW16_ASM(START, COLS, IO0, IO1)                                                          \
    __asm__ volatile(START "1:\n\t" COLS(IO0, IO1)                                                      \
                     "ldr     %[t], %[in_next]\n\t"                                                     \
                     "add     %[in], %[in], %[t]\n\t"                                                   \
                     "ldr     %[t], %[w_next]\n\t"                                                      \
                     "add     %[w], %[w], %[t]\n\t"                                                     \
                     "subs    %[rows], %[rows], #1\n\t"                                                 \
                     "bne     1b\n\t"                                                                   \
                     "vldrw.32 q7, [%[acc], #112]\n\t"                                                  \
                     "ldr     %[in], [%[acc], #96]\n\t"                                                 \
                     "ldr     %[w], [%[acc], #100]\n\t"                                                 \
                     "ldr     %[rows], [%[acc], #108]\n\t"                                              \
                     TS_MVE_DW16_RQ("q0") "adds    %[in], %[in], #4\n\t"                                \
                     "adds    %[w], %[w], #4\n\t"                                                       \
                     TS_MVE_DW16_RQ("q1") "adds    %[in], %[in], #28\n\t"                               \
                     "adds    %[w], %[w], #28\n\t"                                                      \
                     TS_MVE_DW16_RQ("q2") "adds    %[in], %[in], #4\n\t"                                \
                     "adds    %[w], %[w], #4\n\t"                                                       \
                     TS_MVE_DW16_RQ("q3") "ldr     %[t], [%[acc], #104]\n\t"                            \
                     "vmovnb.i32 q4, q0\n\t"                                                            \
                     "vmovnt.i32 q4, q1\n\t"                                                            \
                     "vstrb.16 q4, [%[t]]\n\t"                                                          \
                     "vmovnb.i32 q5, q2\n\t"                                                            \
                     "vmovnt.i32 q5, q3\n\t"                                                            \
                     "vstrb.16 q5, [%[t], #8]\n\t"                                                      \
                     : [in] "+l"(in), [w] "+l"(w), [rows] "+r"(rows), [t] "=&l"(t)                      \
                     : [acc] "r"(acc), [in_col] "r"(in_col), [w_col] "r"(c_all), [io] "r"((int32_t)io), \
                       [tw] "m"(tw), [in_next] "m"(in_next), [w_next] "m"(w_next), [st] "m"(st)         \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "lr", "cc", "memory")

/* TS_MVE_DW16_ASM's START from d.acc or from the layer's table (st), and its IO. */
#define TS_MVE_DW16_START_ACC                                                                           \
    "vldrw.32 q0, [%[acc]]\n\t"                                                                         \
    "vldrw.32 q1, [%[acc], #16]\n\t"                                                                    \
    "vldrw.32 q2, [%[acc], #32]\n\t"                                                                    \
    "vldrw.32 q3, [%[acc], #48]\n\t"
#define TS_MVE_DW16_START_EFF                                                                           \
    "ldr     %[t], %[st]\n\t"                                                                           \
    "vldrw.32 q0, [%[t]]\n\t"                                                                           \
    "vldrw.32 q1, [%[t], #16]\n\t"                                                                      \
    "vldrw.32 q2, [%[t], #32]\n\t"                                                                      \
    "vldrw.32 q3, [%[t], #48]\n\t"
#define TS_MVE_DW16_IO "vadd.i16 q4, q4, %[io]\n\t"

/* The whole-window starts of ts_mve_dw_taps's passes of two blocks (channels c = 0, 16, .. while
 * c + 16 <= in_c <= TS_MVE_DW_EFF_CH), 16 words a pass in its accumulators' order (e0, o0, e1, o1:
 * the even and odd channels of c..c+7, then of c+8..c+15): bias + input_offset * the channel's
 * filter summed over every tap (wrapping 32-bit arithmetic; the accumulator is within int32 by
 * ts_kernels.h's bound, so the wrapped total is exact). */
#define TS_MVE_DW_EFF_CH 64
static inline void ts_mve_dw_eff_table(const ts_depthwise_conv2d_s8_params *p, const int8_t *filter,
                                       const int32_t *bias, int32_t *eff)
{
    const int32_t taps = p->filter_h * p->filter_w, c_all = p->in_c;
    const uint32x4_t even = vidupq_n_u32(0, 2), odd = vidupq_n_u32(1, 2);
    int32_t c, h, t;
    for (c = 0; c + 16 <= c_all; c += 16) {
        for (h = 0; h < 16; h += 8) {
            int32x4_t se = vdupq_n_s32(0), so = vdupq_n_s32(0), be = se, bo = so;
            for (t = 0; t < taps; ++t) {
                const int16x8_t wv = vldrbq_s16(filter + (size_t)t * c_all + c + h);
                se = vaddq_s32(se, vmovlbq_s16(wv));
                so = vaddq_s32(so, vmovltq_s16(wv));
            }
            if (bias != NULL) {
                be = vldrwq_gather_shifted_offset_s32(bias + c + h, even);
                bo = vldrwq_gather_shifted_offset_s32(bias + c + h, odd);
            }
            vstrwq_s32(eff + c + h, vmlaq_n_s32(be, se, p->input_offset));
            vstrwq_s32(eff + c + h + 4, vmlaq_n_s32(bo, so, p->input_offset));
        }
    }
}

/* DEPTHWISE_CONV_2D staged, depth multiplier 1: one output pixel, every channel, into out (a ring
 * slot), from its th x tw taps inside the input (in_first / w_first: the first such tap's input and
 * filter bytes at channel 0; th == 0: no tap, nothing read). ts_mve_dw8's clipped-window arithmetic
 * with no constants prepared ahead (one pixel's blocks would not amortise them): per block of 8
 * channels the bias, multiplier and shift of the even and odd channels are gathered, input_offset is
 * added to each 16-bit input lane, VMULLB / VMULLT accumulate over the taps, then requantised,
 * offset, clamped and stored as in ts_mve_dw_store. Pairs of whole blocks first (the taps, the
 * requantisation, the clamp and the two 8-byte stores in one asm block, accumulators in q0-q3;
 * ts_mve_dw16), then a whole block, then a tail predicated to its n channels. eff (the layer's
 * ts_mve_dw_eff_table, or NULL; given only for a whole window, th x tw = filter_h x filter_w): the
 * passes of two blocks start from its bias + input_offset * sum(w) and multiply the raw input
 * lanes (no input_offset added per tap); the same int32 accumulators.
 * Reads only those taps (and the parameters), writes only out[0..in_c). */
static inline __attribute__((always_inline)) void ts_mve_dw_taps(const ts_depthwise_conv2d_s8_params *p,
                                                                  const int8_t *in_first, const int8_t *w_first,
                                                                  int32_t th, int32_t tw, const int32_t *bias,
                                                                  const int32_t *eff, int8_t *out)
{
    const int32_t c_all = p->in_c;
    const int32_t in_col = p->dilation_w * c_all;
    const int32_t in_next = p->dilation_h * p->in_w * c_all - tw * in_col, w_next = (p->filter_w - tw) * c_all;
    const int16_t io = (int16_t)p->input_offset;
    const uint32x4_t even = vidupq_n_u32(0, 2), odd = vidupq_n_u32(1, 2);
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    ts_mve_dw16 d __attribute__((aligned(16)));
    int32_t c;
    if (c_all >= 16) {
        vstrwq_s32(d.lo, lo);
        vstrwq_s32(d.hi, hi);
        d.oo = p->output_offset;
        vstrwq_u32(d.idx, even);
    }
    for (c = 0; c + 16 <= c_all; c += 16) { /* two whole blocks per pass: one pointer pair, #8 apart */
        const int8_t *in = in_first + c, *w = w_first + c;
        int32x4_t e0 = vdupq_n_s32(0), o0 = e0, e1 = e0, o1 = e0;
        int16x8_t v0 = vdupq_n_s16(0), v1 = v0;
        if (bias != NULL && eff == NULL) {
            e0 = vldrwq_gather_shifted_offset_s32(bias + c, even);
            o0 = vldrwq_gather_shifted_offset_s32(bias + c, odd);
            e1 = vldrwq_gather_shifted_offset_s32(bias + c + 8, even);
            o1 = vldrwq_gather_shifted_offset_s32(bias + c + 8, odd);
        }
        if (th > 0) {
            int32_t rows = th, t;
            int32_t *const acc = d.acc;
            d.m = p->multiplier + c;
            d.s = p->shift + c;
            d.out = out + c;
            if (eff != NULL) { /* the whole window: from the table, the raw input bytes */
                const int32_t *st = eff + c;
                if (tw == 3) {
                    TS_MVE_DW16_ASM(TS_MVE_DW16_START_EFF, TS_MVE_DW16_COLS3, "", "");
                } else {
                    TS_MVE_DW16_ASM(TS_MVE_DW16_START_EFF, TS_MVE_DW16_COLS, "", "");
                }
            } else {
                const int32_t *st = acc;
                vstrwq_s32(acc, e0);
                vstrwq_s32(acc + 4, o0);
                vstrwq_s32(acc + 8, e1);
                vstrwq_s32(acc + 12, o1);
                TS_MVE_DW16_ASM(TS_MVE_DW16_START_ACC, TS_MVE_DW16_COLS, TS_MVE_DW16_IO, TS_MVE_DW16_IO);
            }
            continue; /* requantised and stored by the asm block */
        }
        e0 = ts_mve_requant(e0, vldrwq_gather_shifted_offset_s32(p->multiplier + c, even),
                            vldrwq_gather_shifted_offset_s32(p->shift + c, even));
        o0 = ts_mve_requant(o0, vldrwq_gather_shifted_offset_s32(p->multiplier + c, odd),
                            vldrwq_gather_shifted_offset_s32(p->shift + c, odd));
        e1 = ts_mve_requant(e1, vldrwq_gather_shifted_offset_s32(p->multiplier + c + 8, even),
                            vldrwq_gather_shifted_offset_s32(p->shift + c + 8, even));
        o1 = ts_mve_requant(o1, vldrwq_gather_shifted_offset_s32(p->multiplier + c + 8, odd),
                            vldrwq_gather_shifted_offset_s32(p->shift + c + 8, odd));
        v0 = vmovnbq_s32(v0, vminq_s32(vmaxq_s32(vaddq_n_s32(e0, p->output_offset), lo), hi));
        v0 = vmovntq_s32(v0, vminq_s32(vmaxq_s32(vaddq_n_s32(o0, p->output_offset), lo), hi));
        v1 = vmovnbq_s32(v1, vminq_s32(vmaxq_s32(vaddq_n_s32(e1, p->output_offset), lo), hi));
        v1 = vmovntq_s32(v1, vminq_s32(vmaxq_s32(vaddq_n_s32(o1, p->output_offset), lo), hi));
        vstrbq_s16(out + c, v0);
        vstrbq_s16(out + c + 8, v1);
    }
    if (c + 8 <= c_all) { /* a whole block left: no predicates */
        const int8_t *in = in_first + c, *w = w_first + c;
        int32x4_t e = vdupq_n_s32(0), o = e;
        int16x8_t v = vdupq_n_s16(0);
        int32_t ky, kx;
        if (bias != NULL) {
            e = vldrwq_gather_shifted_offset_s32(bias + c, even);
            o = vldrwq_gather_shifted_offset_s32(bias + c, odd);
        }
        for (ky = th; ky > 0; --ky) {
            for (kx = tw; kx > 0; --kx) {
                const int16x8_t xv = vaddq_n_s16(vldrbq_s16(in), io), wv = vldrbq_s16(w);
                e = vaddq_s32(e, vmullbq_int_s16(xv, wv));
                o = vaddq_s32(o, vmulltq_int_s16(xv, wv));
                in += in_col;
                w += c_all;
            }
            in += in_next;
            w += w_next;
        }
        e = ts_mve_requant(e, vldrwq_gather_shifted_offset_s32(p->multiplier + c, even),
                           vldrwq_gather_shifted_offset_s32(p->shift + c, even));
        o = ts_mve_requant(o, vldrwq_gather_shifted_offset_s32(p->multiplier + c, odd),
                           vldrwq_gather_shifted_offset_s32(p->shift + c, odd));
        v = vmovnbq_s32(v, vminq_s32(vmaxq_s32(vaddq_n_s32(e, p->output_offset), lo), hi));
        v = vmovntq_s32(v, vminq_s32(vmaxq_s32(vaddq_n_s32(o, p->output_offset), lo), hi));
        vstrbq_s16(out + c, v);
        c += 8;
    }
    for (; c < c_all; c += 8) { /* the predicated tail */
        const int32_t n = c_all - c < 8 ? c_all - c : 8;
        const mve_pred16_t pe = vctp32q((uint32_t)((n + 1) >> 1)), po = vctp32q((uint32_t)(n >> 1));
        const int8_t *in = in_first + c, *w = w_first + c;
        int32x4_t e = vdupq_n_s32(0), o = vdupq_n_s32(0);
        int16x8_t v = vdupq_n_s16(0);
        int32_t ky, kx;
        if (bias != NULL) {
            e = vldrwq_gather_shifted_offset_z_s32(bias + c, even, pe);
            o = vldrwq_gather_shifted_offset_z_s32(bias + c, odd, po);
        }
        if (n == 8) {
            for (ky = th; ky > 0; --ky) {
                for (kx = tw; kx > 0; --kx) {
                    const int16x8_t xv = vaddq_n_s16(vldrbq_s16(in), io), wv = vldrbq_s16(w);
                    e = vaddq_s32(e, vmullbq_int_s16(xv, wv));
                    o = vaddq_s32(o, vmulltq_int_s16(xv, wv));
                    in += in_col;
                    w += c_all;
                }
                in += in_next;
                w += w_next;
            }
        } else {
            const mve_pred16_t pr = vctp16q((uint32_t)n);
            for (ky = th; ky > 0; --ky) {
                for (kx = tw; kx > 0; --kx) {
                    const int16x8_t xv = vaddq_n_s16(vldrbq_z_s16(in, pr), io), wv = vldrbq_z_s16(w, pr);
                    e = vaddq_s32(e, vmullbq_int_s16(xv, wv));
                    o = vaddq_s32(o, vmulltq_int_s16(xv, wv));
                    in += in_col;
                    w += c_all;
                }
                in += in_next;
                w += w_next;
            }
        }
        e = ts_mve_requant(e, vldrwq_gather_shifted_offset_z_s32(p->multiplier + c, even, pe),
                           vldrwq_gather_shifted_offset_z_s32(p->shift + c, even, pe));
        o = ts_mve_requant(o, vldrwq_gather_shifted_offset_z_s32(p->multiplier + c, odd, po),
                           vldrwq_gather_shifted_offset_z_s32(p->shift + c, odd, po));
        e = vminq_s32(vmaxq_s32(vaddq_n_s32(e, p->output_offset), lo), hi);
        o = vminq_s32(vmaxq_s32(vaddq_n_s32(o, p->output_offset), lo), hi);
        v = vmovnbq_s32(v, e);
        v = vmovntq_s32(v, o);
        if (n == 8) {
            vstrbq_s16(out + c, v);
        } else {
            vstrbq_p_s16(out + c, v, vctp16q((uint32_t)n));
        }
    }
}

/* Output pixel (y, x) of batch base in_b through ts_mve_dw_taps: its tap rectangle inside the input
 * (none: nothing is read, the bias alone). */
static inline __attribute__((always_inline)) void ts_mve_dw_pixel(const ts_depthwise_conv2d_s8_params *p,
                                                                   const int8_t *in_b, int32_t y, int32_t x,
                                                                   const int8_t *filter, const int32_t *bias,
                                                                   int8_t *out)
{
    const int32_t c_all = p->in_c, fw = p->filter_w, dh = p->dilation_h, dw = p->dilation_w;
    const int32_t iy0 = y * p->stride_h - p->pad_top, ix0 = x * p->stride_w - p->pad_left;
    int32_t ky0, ky1, kx0, kx1, th, tw;
    const int8_t *in_first = in_b;
    ts_tap_range(iy0, dh, p->filter_h, p->in_h, &ky0, &ky1);
    ts_tap_range(ix0, dw, fw, p->in_w, &kx0, &kx1);
    th = ky1 - ky0;
    tw = th > 0 && kx1 > kx0 ? kx1 - kx0 : 0;
    th = tw > 0 ? th : 0; /* no tap inside: nothing is read */
    if (tw > 0) {
        in_first += ((size_t)(iy0 + ky0 * dh) * p->in_w + (size_t)(ix0 + kx0 * dw)) * c_all;
    }
    ts_mve_dw_taps(p, in_first, filter + (size_t)(ky0 * fw + kx0) * c_all, th, tw, bias, NULL, out);
}

/* DEPTHWISE_CONV_2D with depth multiplier 1 and at least 32 channels, one output pixel at a time
 * (the staged variant's per-pixel arithmetic, ts_mve_dw_taps / ts_mve_dw_pixel, straight into the
 * output): the groups of one pixel of ts_kernels.h's order, every channel of a pixel written after
 * reading only its window. layer (in_c <= TS_MVE_DW_EFF_CH: the generator's ts_mve_dw_eff_table of
 * this layer, for a streamed stage's row calls; or NULL: made here, once a call). */
TS_MVE_HOT void ts_mve_depthwise_pixels(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                        const int8_t *filter, const int32_t *bias, int8_t *output,
                                        const int32_t *layer)
{
    const ts_depthwise_conv2d_s8_params q = *p;
    const int32_t c_n = q.in_c, fw = q.filter_w, reach = (fw - 1) * q.dilation_w;
    int32_t b, y, x, ky0, ky1;
    int32_t eff_tab[TS_MVE_DW_EFF_CH];
    const int32_t *eff = NULL;
    if (c_n <= TS_MVE_DW_EFF_CH && layer != NULL) {
        eff = layer;
    } else if (c_n <= TS_MVE_DW_EFF_CH) {
        ts_mve_dw_eff_table(&q, filter, bias, eff_tab);
        eff = eff_tab;
    }
    for (b = 0; b < q.batches; ++b) {
        const int8_t *in_b = input + (size_t)b * q.in_h * q.in_w * c_n;
        for (y = 0; y < q.out_h; ++y) {
            const int32_t iy0 = y * q.stride_h - q.pad_top;
            const int8_t *in_y = in_b;
            ts_tap_range(iy0, q.dilation_h, q.filter_h, q.in_h, &ky0, &ky1);
            if (ky1 > ky0) {
                in_y += (size_t)(iy0 + ky0 * q.dilation_h) * q.in_w * c_n;
            }
            for (x = 0; x < q.out_w; ++x, output += c_n) {
                const int32_t ix0 = x * q.stride_w - q.pad_left;
                if (ky1 > ky0 && ix0 >= 0 && ix0 + reach < q.in_w) { /* every tap column inside the input */
                    ts_mve_dw_taps(&q, in_y + (size_t)ix0 * c_n, filter + (size_t)ky0 * fw * c_n, ky1 - ky0, fw,
                                   bias, ky1 - ky0 == q.filter_h ? eff : NULL, output);
                } else {
                    ts_mve_dw_pixel(&q, in_b, y, x, filter, bias, output);
                }
            }
        }
    }
}

/* ts_requantize(x, m, shift) on four lanes with one multiplier and shift (right = min(shift, 0)). */
static inline int32x4_t ts_mve_requant_n(int32x4_t x, int32_t m, int32_t left, int32_t right)
{
    int32x4_t h = vqrdmulhq_n_s32(vshlq_r_s32(x, left), m);
    if (right < 0) {
        h = vqaddq_s32(h, vshrq_n_s32(h, 31)); /* -1 on negative lanes: ties away from zero */
    }
    return vrshlq_n_s32(h, right);
}

#ifdef __OPTIMIZE__
/* The ADD loop's tie corrections (ts_mve_requant_n's -1 on negative lanes, only where that input's
 * or the output's right shift is nonzero). */
#define TS_MVE_ADD_FIX(Q) "vshr.s32 q2, " Q ", #31\n\t" "vqadd.s32 " Q ", " Q ", q2\n\t"
#define TS_MVE_ADD_ASM(FIX1, FIX2, FIXO)                                                                \
    __asm__ volatile("vldrw.32 q3, [%[v]]\n\t"                                                          \
                     "vldrw.32 q4, [%[v], #16]\n\t"                                                     \
                     "vldrw.32 q5, [%[v], #32]\n\t"                                                     \
                     "vldrw.32 q6, [%[v], #48]\n\t"                                                     \
                     "vldrw.32 q7, [%[v], #64]\n\t"                                                     \
                     "ldr     lr, [%[v], #80]\n\t"                                                     \
                     "dls     lr, lr\n\t"                                                               \
                     "2:\n\t"                                                                           \
                     "vldrb.s32 q0, [%[a]], #4\n\t"                                                     \
                     "vldrb.s32 q1, [%[b]], #4\n\t"                                                     \
                     "vadd.i32 q0, q0, q3\n\t"                                                          \
                     "vadd.i32 q1, q1, q4\n\t"                                                          \
                     "vshl.i32 q0, q0, #20\n\t"                                                        \
                     "vshl.i32 q1, q1, #20\n\t"                                                        \
                     "vqrdmulh.s32 q0, q0, %[m1]\n\t"                                                   \
                     "vqrdmulh.s32 q1, q1, %[m2]\n\t" FIX1 "vrshl.s32 q0, %[r1]\n\t" FIX2                \
                     "vrshl.s32 q1, %[r2]\n\t"                                                          \
                     "vadd.i32 q0, q0, q1\n\t"                                                          \
                     "vqrdmulh.s32 q0, q0, %[mo]\n\t" FIXO "vrshl.s32 q0, %[ro]\n\t"                    \
                     "vadd.i32 q0, q0, q5\n\t"                                                          \
                     "vmax.s32 q0, q0, q6\n\t"                                                          \
                     "vmin.s32 q0, q0, q7\n\t"                                                          \
                     "vstrb.32 q0, [%[o]], #4\n\t"                                                      \
                     "le      lr, 2b\n\t"                                                               \
                     : [a] "+l"(x1), [b] "+l"(x2), [o] "+l"(y)                                          \
                     : [v] "r"(vec), [m1] "r"(m1), [m2] "r"(m2), [mo] "r"(mo), [r1] "r"(r1), [r2] "r"(r2), \
                       [ro] "r"(ro)                                                                     \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "lr", "memory")

/* ts_mve_add's whole vectors (n / 4 of them, n >= 4) where no shift is positive and the left shift
 * is 20 (TFLite's int8 ADD: input and output shifts <= 0, left shift 20): per four elements both inputs widened (VLDRB.S32), offset, shifted
 * left, requantised (VQRDMULH, the tie correction where the right shift is nonzero, VRSHL),
 * summed, requantised again, offset, clamped and stored, in one DLS/LE loop with every constant in a
 * register (the offsets and the clamp as vectors). The same steps as the loop of ts_mve_add. */
TS_MVE_HOT void ts_mve_add_whole(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                                 int8_t *output)
{
    int32_t vec[24] __attribute__((aligned(16)));
    const int8_t *x1 = input1, *x2 = input2;
    int8_t *y = output;
    const int32_t m1 = p->input1_multiplier;
    const int32_t m2 = p->input2_multiplier, mo = p->output_multiplier;
    const int32_t r1 = p->input1_shift, r2 = p->input2_shift, ro = p->output_shift;
    const int code = (r1 < 0 ? 4 : 0) | (r2 < 0 ? 2 : 0) | (ro < 0 ? 1 : 0);
    vstrwq_s32(vec, vdupq_n_s32(p->input1_offset));
    vstrwq_s32(vec + 4, vdupq_n_s32(p->input2_offset));
    vstrwq_s32(vec + 8, vdupq_n_s32(p->output_offset));
    vstrwq_s32(vec + 12, vdupq_n_s32(p->act_min));
    vstrwq_s32(vec + 16, vdupq_n_s32(p->act_max));
    vec[20] = (int32_t)(n >> 2);
    switch (code) {
    case 7:
        TS_MVE_ADD_ASM(TS_MVE_ADD_FIX("q0"), TS_MVE_ADD_FIX("q1"), TS_MVE_ADD_FIX("q0"));
        break;
    case 6:
        TS_MVE_ADD_ASM(TS_MVE_ADD_FIX("q0"), TS_MVE_ADD_FIX("q1"), "");
        break;
    case 5:
        TS_MVE_ADD_ASM(TS_MVE_ADD_FIX("q0"), "", TS_MVE_ADD_FIX("q0"));
        break;
    case 4:
        TS_MVE_ADD_ASM(TS_MVE_ADD_FIX("q0"), "", "");
        break;
    case 3:
        TS_MVE_ADD_ASM("", TS_MVE_ADD_FIX("q1"), TS_MVE_ADD_FIX("q0"));
        break;
    case 2:
        TS_MVE_ADD_ASM("", TS_MVE_ADD_FIX("q1"), "");
        break;
    case 1:
        TS_MVE_ADD_ASM("", "", TS_MVE_ADD_FIX("q0"));
        break;
    default:
        TS_MVE_ADD_ASM("", "", "");
        break;
    }
}
#endif

/* ADD where neither input broadcasts (ts_add_s8.c add_flat's arithmetic): four elements per step,
 * each input widened (VLDRB.S32), offset, shifted left, requantised, summed, requantised again,
 * offset, clamped and stored as bytes; the last n % 4 under a predicate. Elements k..k+3 of the
 * output are written after reading elements k..k+3 of both inputs, and nothing later is read before
 * them: the one-loop order of the portable kernel, four elements at a time. */
TS_MVE_HOT void ts_mve_add(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                           int8_t *output)
{
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset, out_off = p->output_offset;
    const int32_t m1 = p->input1_multiplier, m2 = p->input2_multiplier, mo = p->output_multiplier;
    const int32_t s1 = p->input1_shift, s2 = p->input2_shift, so = p->output_shift;
    const int32_t l1 = s1 > 0 ? s1 : 0, r1 = s1 > 0 ? 0 : s1, l2 = s2 > 0 ? s2 : 0, r2 = s2 > 0 ? 0 : s2;
    const int32_t lo_ = so > 0 ? so : 0, ro = so > 0 ? 0 : so;
    const int32_t left = p->left_shift, act_min = p->act_min, act_max = p->act_max;
    size_t k = 0;
#ifdef __OPTIMIZE__ /* -O0 keeps r7 and leaves too few registers for the asm block's ten */
    if (s1 <= 0 && s2 <= 0 && so <= 0 && left == 20 && n >= 4) { /* whole vectors in one asm loop */
        ts_mve_add_whole(p, n, input1, input2, output);
        k = n & ~(size_t)3;
    }
#endif
    for (; k < n; k += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)(n - k < 4 ? n - k : 4));
        const int32x4_t a = vshlq_r_s32(vaddq_n_s32(vldrbq_z_s32(input1 + k, pr), off1), left);
        const int32x4_t b = vshlq_r_s32(vaddq_n_s32(vldrbq_z_s32(input2 + k, pr), off2), left);
        const int32x4_t sum = vaddq_s32(ts_mve_requant_n(a, m1, l1, r1), ts_mve_requant_n(b, m2, l2, r2));
        int32x4_t v = vaddq_n_s32(ts_mve_requant_n(sum, mo, lo_, ro), out_off);
        v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
        vstrbq_p_s32(output + k, v, pr);
    }
}

/* sum_i x[i] over n bytes: 64 bytes a step while they last (four unpredicated loads), then 16 a
 * step, the last predicated (nothing past x[n - 1] is read). */
static inline int32_t ts_mve_sum(const int8_t *x, int32_t n)
{
    int32_t s = 0;
    for (; n >= 64; n -= 64) {
        s = vaddvaq_s8(s, vldrbq_s8(x));
        s = vaddvaq_s8(s, vldrbq_s8(x + 16));
        s = vaddvaq_s8(s, vldrbq_s8(x + 32));
        s = vaddvaq_s8(s, vldrbq_s8(x + 48));
        x += 64;
    }
    for (; n > 0; n -= 16) {
        s = vaddvaq_s8(s, vldrbq_z_s8(x, vctp8q((uint32_t)n)));
        x += 16;
    }
    return s;
}

/* One pixel quad of the 1x1 path against a block of channels, the asm block's arguments (byte
 * offsets fixed: the asm reads them through r10). */
typedef struct {
    int32_t scatter[4]; /*  0: 0, out_c, 2 out_c, 3 out_c (the quad's four output pixels) */
    int32_t lo[4];      /* 16: act_min */
    int32_t hi[4];      /* 32: act_max */
    int32_t oo[4];      /* 48: output_offset */
    const int8_t *x[4]; /* 64: the quad's input pixels (missing ones repeat the last) */
    int32_t whole;      /* 80: in_c / 16 - 1 (ts_mve_pw_quad), run_len / 16 (ts_mve_cq_block) */
    int32_t tail;       /* 84: in_c % 16 */
    int32_t k;          /* 88: pixels of the quad stored (1..4) */
    const int32_t *end; /* 92: past the block's last {bias, multiplier, shift} */
    int32_t io;         /* 96: input_offset */
} ts_mve_pw_args;

/* The quad loops' constants for layer p: the four output pixels' scatter offsets, the clamp bounds,
 * the output and input offsets. */
static inline void ts_mve_quad_consts(ts_mve_pw_args *a, const ts_conv2d_s8_params *p)
{
    vstrwq_s32(a->scatter, vreinterpretq_s32_u32(vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)p->out_c)));
    vstrwq_s32(a->lo, vdupq_n_s32(p->act_min));
    vstrwq_s32(a->hi, vdupq_n_s32(p->act_max));
    vstrwq_s32(a->oo, vdupq_n_s32(p->output_offset));
    a->io = p->input_offset;
}

/* Channels [c0, c0 + n) of layer p as the quad loops' LDM takes them: bias, multiplier, shift. */
static inline void ts_mve_quad_table(int32_t *tab, const ts_conv2d_s8_params *p, const int32_t *bias, int32_t c0,
                                     int32_t n)
{
    int32_t j;
    for (j = 0; j < n; ++j) {
        tab[3 * j] = bias != NULL ? bias[c0 + j] : 0;
        tab[3 * j + 1] = p->multiplier[c0 + j];
        tab[3 * j + 2] = p->shift[c0 + j];
    }
}

/* One 16-byte step of a pixel quad's dot products (the 1x1 and small-field quads' loops): 16 filter
 * bytes from r11 against 16 bytes of each pixel (r1, r3, r5, r9), summed into r0, r2, r4, r6; SUM:
 * the filter bytes' sum into r8 (TS_MVE_SUM_R8) or nothing (""; the channel's table entry then holds
 * bias + input_offset * sum(w) already: ts_mve_layer_table, TS_MVE_RQ_EFF). */
#define TS_MVE_SUM_R8 "vaddva.s8 r8, q1\n\t"
#define TS_MVE_QUAD_DOTS(SUM)                                                                           \
    "vldrb.8 q1, [r11], #16\n\t"                                                                        \
    "vldrb.8 q0, [r1], #16\n\t"                                                                         \
    "vmladava.s8 r0, q0, q1\n\t"                                                                        \
    "vldrb.8 q0, [r3], #16\n\t"                                                                         \
    "vmladava.s8 r2, q0, q1\n\t"                                                                        \
    "vldrb.8 q0, [r5], #16\n\t"                                                                         \
    "vmladava.s8 r4, q0, q1\n\t"                                                                        \
    "vldrb.8 q0, [r9], #16\n\t"                                                                         \
    "vmladava.s8 r6, q0, q1\n\t" SUM

/* The entry of the pixel-quad channel loops (TS_MVE_PW_ASM, TS_MVE_CQ_ASM): r7 (Thumb's frame
 * pointer, saved) the output, q5 the scatter offsets, q6/q7 the clamp bounds, q4 the output offset
 * from the argument block at r10; then, per channel (label 1), pixels 0 and 1's pointers into r1, r3
 * (pixels 2 and 3's follow, by LDRD into r5, r9). */
#define TS_MVE_QUAD_ENTRY                                                                               \
    "push    {r7}\n\t"                                                                                   \
    "mov     r7, %[out]\n\t"                                                                             \
    "vldrw.32 q5, [r10]\n\t"                                                                             \
    "vldrw.32 q6, [r10, #16]\n\t"                                                                        \
    "vldrw.32 q7, [r10, #32]\n\t"                                                                        \
    "vldrw.32 q4, [r10, #48]\n\t"                                                                        \
    "1:\n\t"                                                                                             \
    "ldrd    r1, r3, [r10, #64]\n\t"

/* The requantisation of a pixel quad's four sums in q0 (the TS_MVE_PW_ASM and TS_MVE_CQ_ASM loops):
 * TS_MVE_RQ_SUM(t): r0 the channel's bias plus t (a register named by the caller, the value LDR'd
 * into it) times r8 (the filter sum's factor), added to every lane; TS_MVE_RQ_EFF: r0 (the table's
 * bias + input_offset * sum(w)) added to every lane; then TS_MVE_RQ_SHIFT: the shift (r4 > 0: VSHL
 * before VQRDMULH by r2; r4 < 0: VQRDMULH, the tie correction, VRSHL; r4 == 0: VQRDMULH alone), the
 * output offset (q4) and the clamp (q6, q7). */
#define TS_MVE_RQ_SUM(t)                                                                                \
    "mla     r0, " t ", r8, r0\n\t"                                                                       \
    "vadd.i32 q0, q0, r0\n\t"
#define TS_MVE_RQ_EFF "vadd.i32 q0, q0, r0\n\t"
#define TS_MVE_RQ_SHIFT                                                                                 \
    "cmp     r4, #0\n\t"                                                                               \
    "ble     4f\n\t"                                                                                   \
    "vshl.s32 q0, r4\n\t"                                                                              \
    "vqrdmulh.s32 q0, q0, r2\n\t"                                                                      \
    "b       5f\n\t"                                                                                   \
    "4:\n\t"                                                                                           \
    "vqrdmulh.s32 q0, q0, r2\n\t"                                                                      \
    "beq     5f\n\t"                                                                                   \
    "vshr.s32 q1, q0, #31\n\t"                                                                         \
    "vqadd.s32 q0, q0, q1\n\t"                                                                         \
    "vrshl.s32 q0, r4\n\t"                                                                             \
    "5:\n\t"                                                                                           \
    "vadd.i32 q0, q0, q4\n\t"                                                                          \
    "vmax.s32 q0, q0, q6\n\t"                                                                          \
    "vmin.s32 q0, q0, q7\n\t"

/* The quad's channels, each: four VMLADAV dot products of the raw bytes and (SUM) VADDV of the
 * filter bytes (one filter load serving the four pixels, 16 bytes a step in a DLS/LE loop, then the
 * in_c % 16 tail under VCTP.8: inactive lanes load 0), the four sums into one vector (two VMOVs of
 * two lanes each), plus bias + input_offset * sum(w) (START: TS_MVE_PW_START_SUM from the VADDV, or
 * TS_MVE_RQ_EFF from the table), requantised as ts_mve_requant_n (VSHL by the left shift,
 * VQRDMULH, -1 on negative lanes and VRSHL by the right shift), offset, clamped and stored with one
 * byte scatter (VCTP.32-predicated to k pixels when the quad is short). r12 walks the block's table
 * (LDM of bias or bias + input_offset * sum(w), multiplier, shift), r11 the filter rows, r7 (saved
 * and restored: Thumb's frame pointer) pixel 0's output byte. DOTS, TAIL, STORE, START: the asm
 * text of the variable parts. */
#define TS_MVE_PW_TAIL_NONE(SUM) ""
#define TS_MVE_PW_TAIL(SUM)                                                                             \
    "ldr     lr, [r10, #84]\n\t"                                                                        \
    "vctp.8  lr\n\t"                                                                                    \
    "vpstt\n\t"                                                                                         \
    "vldrbt.8 q1, [r11]\n\t"                                                                            \
    "vldrbt.8 q0, [r1]\n\t"                                                                             \
    "vmladava.s8 r0, q0, q1\n\t" SUM                                                                    \
    "vpst\n\t"                                                                                          \
    "vldrbt.8 q0, [r3]\n\t"                                                                             \
    "vmladava.s8 r2, q0, q1\n\t"                                                                        \
    "vpst\n\t"                                                                                          \
    "vldrbt.8 q0, [r5]\n\t"                                                                             \
    "vmladava.s8 r4, q0, q1\n\t"                                                                        \
    "vpst\n\t"                                                                                          \
    "vldrbt.8 q0, [r9]\n\t"                                                                             \
    "vmladava.s8 r6, q0, q1\n\t"                                                                        \
    "add     r11, r11, lr\n\t"
#define TS_MVE_PW_STORE "vstrb.32 q0, [r7, q5]\n\t"
#define TS_MVE_PW_STORE_SHORT                                                                           \
    "ldr     lr, [r10, #88]\n\t"                                                                        \
    "vctp.32 lr\n\t"                                                                                    \
    "vpst\n\t"                                                                                          \
    "vstrbt.32 q0, [r7, q5]\n\t"
#define TS_MVE_PW_START_SUM "ldr     lr, [r10, #96]\n\t" TS_MVE_RQ_SUM("lr")
/* The channel's dot products before the tail: DOTS_ZERO (in_c < 16) zeroes the sums (SUM: r8 too);
 * DOTS_WHOLE (a->whole = in_c / 16 - 1) does the first 16 bytes with the non-accumulating VMLADAV
 * (and VADDV) (no zeroing), then the rest in a WLS/LE loop. */
#define TS_MVE_PW_DOTS_ZERO(SUM)                                                                        \
    "movs    r0, #0\n\t"                                                                                \
    "movs    r2, #0\n\t"                                                                                \
    "movs    r4, #0\n\t"                                                                                \
    "movs    r6, #0\n\t" SUM
#define TS_MVE_PW_ZERO_R8 "mov     r8, #0\n\t"
#define TS_MVE_SUM_R8_FIRST "vaddv.s8 r8, q1\n\t"
/* the first 16 bytes of the four channels' dot products, by the non-accumulating VMLADAV */
#define TS_MVE_PW_FIRST16                                                                               \
    "vldrb.8 q1, [r11], #16\n\t"                                                                        \
    "vldrb.8 q0, [r1], #16\n\t"                                                                         \
    "vmladav.s8 r0, q0, q1\n\t"                                                                         \
    "vldrb.8 q0, [r3], #16\n\t"                                                                         \
    "vmladav.s8 r2, q0, q1\n\t"                                                                         \
    "vldrb.8 q0, [r5], #16\n\t"                                                                         \
    "vmladav.s8 r4, q0, q1\n\t"                                                                         \
    "vldrb.8 q0, [r9], #16\n\t"                                                                         \
    "vmladav.s8 r6, q0, q1\n\t"
#define TS_MVE_PW_DOTS_WHOLE(FIRST, SUM)                                                                \
    TS_MVE_PW_FIRST16 FIRST                                                                             \
    "ldr     lr, [r10, #80]\n\t"                                                                        \
    "wls     lr, lr, 3f\n\t"                                                                            \
    "2:\n\t"                                                                                            \
    TS_MVE_QUAD_DOTS(SUM)                                                                               \
    "le      lr, 2b\n\t"
/* DOTS_WHOLE with its loop unrolled: the first 16 bytes, then REST (a->whole more steps of
 * TS_MVE_QUAD_DOTS written out: in_c 16, 32 or 64 against the layer table). */
#define TS_MVE_PW_DOTS_UNROLLED(REST) TS_MVE_PW_FIRST16 REST
#define TS_MVE_PW_ASM(DOTS, TAIL, STORE, START)                                                         \
    __asm__ volatile(TS_MVE_QUAD_ENTRY                                                                  \
                     "ldrd    r5, r9, [r10, #72]\n\t" DOTS                                               \
                     "3:\n\t" TAIL "vmov    q0[2], q0[0], r0, r4\n\t"                                   \
                     "vmov    q0[3], q0[1], r2, r6\n\t"                                                 \
                     "ldm     r12!, {r0, r2, r4}\n\t"                                                   \
                     START TS_MVE_RQ_SHIFT STORE "adds    r7, r7, #1\n\t"                               \
                     "ldr     r0, [r10, #92]\n\t"                                                       \
                     "cmp     r12, r0\n\t"                                                              \
                     "bne     1b\n\t"                                                                   \
                     "pop     {r7}\n\t"                                                                 \
                     : [tab] "+r"(tab), [w] "+r"(w), [out] "+r"(out)                                    \
                     : [a] "r"(a)                                                                       \
                     : "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "lr", "q0", "q1", "q2", "q3", \
                       "q4", "q5", "q6", "q7", "cc", "memory")
/* The five shapes of a quad (in_c < 16; whole vectors with or without a tail; four pixels or fewer)
 * with the filter sums summed (ZERO TS_MVE_PW_ZERO_R8, FIRST TS_MVE_SUM_R8_FIRST, SUM
 * TS_MVE_SUM_R8, START TS_MVE_PW_START_SUM) or tabled (ZERO, FIRST, SUM "", START TS_MVE_RQ_EFF). */
#define TS_MVE_PW_SHAPES(ZERO, FIRST, SUM, START)                                                       \
    do {                                                                                                \
        if (a->whole < 0) { /* in_c < 16: the tail alone */                                            \
            if (a->k == 4) {                                                                            \
                TS_MVE_PW_ASM(TS_MVE_PW_DOTS_ZERO(ZERO), TS_MVE_PW_TAIL(SUM), TS_MVE_PW_STORE, START);  \
            } else {                                                                                    \
                TS_MVE_PW_ASM(TS_MVE_PW_DOTS_ZERO(ZERO), TS_MVE_PW_TAIL(SUM), TS_MVE_PW_STORE_SHORT,    \
                              START);                                                                   \
            }                                                                                           \
        } else if (a->tail == 0 && a->k == 4) {                                                         \
            TS_MVE_PW_ASM(TS_MVE_PW_DOTS_WHOLE(FIRST, SUM), TS_MVE_PW_TAIL_NONE(SUM), TS_MVE_PW_STORE, START); \
        } else if (a->tail == 0) {                                                                      \
            TS_MVE_PW_ASM(TS_MVE_PW_DOTS_WHOLE(FIRST, SUM), TS_MVE_PW_TAIL_NONE(SUM), TS_MVE_PW_STORE_SHORT,   \
                          START);                                                                       \
        } else if (a->k == 4) {                                                                         \
            TS_MVE_PW_ASM(TS_MVE_PW_DOTS_WHOLE(FIRST, SUM), TS_MVE_PW_TAIL(SUM), TS_MVE_PW_STORE, START);      \
        } else {                                                                                        \
            TS_MVE_PW_ASM(TS_MVE_PW_DOTS_WHOLE(FIRST, SUM), TS_MVE_PW_TAIL(SUM), TS_MVE_PW_STORE_SHORT, START); \
        }                                                                                               \
    } while (0)

/* The quad a (x, k set) against the block's channels: table t (up to a->end; eff 0: {bias,
 * multiplier, shift} each, the filter sums taken in the loop; eff 1: {bias + input_offset * sum(w),
 * multiplier, shift}, ts_mve_layer_table), filter rows from w_first, outputs from out_first (pixel
 * 0's byte of the block's first channel). With the table, a full quad over 16, 32 or 64 input
 * channels has its dot products written out (TS_MVE_PW_DOTS_UNROLLED). */
TS_MVE_HOT void ts_mve_pw_quad(const ts_mve_pw_args *args, const int32_t *t, const int8_t *w_first,
                               int8_t *out_first, int eff)
{
    register const ts_mve_pw_args *a __asm__("r10") = args;
    register const int32_t *tab __asm__("r12") = t;
    register const int8_t *w __asm__("r11") = w_first;
    register int8_t *out __asm__("r0") = out_first; /* moved to r7 first thing */
    if (eff && a->tail == 0 && a->k == 4 && a->whole == 0) { /* in_c 16 */
        TS_MVE_PW_ASM(TS_MVE_PW_DOTS_UNROLLED(""), "", TS_MVE_PW_STORE, TS_MVE_RQ_EFF);
    } else if (eff && a->tail == 0 && a->k == 4 && a->whole == 1) { /* in_c 32 */
        TS_MVE_PW_ASM(TS_MVE_PW_DOTS_UNROLLED(TS_MVE_QUAD_DOTS("")), "", TS_MVE_PW_STORE, TS_MVE_RQ_EFF);
    } else if (eff && a->tail == 0 && a->k == 4 && a->whole == 3) { /* in_c 64 */
        TS_MVE_PW_ASM(TS_MVE_PW_DOTS_UNROLLED(TS_MVE_QUAD_DOTS("") TS_MVE_QUAD_DOTS("") TS_MVE_QUAD_DOTS("")), "",
                      TS_MVE_PW_STORE, TS_MVE_RQ_EFF);
    } else if (eff) {
        TS_MVE_PW_SHAPES("", "", "", TS_MVE_RQ_EFF);
    } else {
        TS_MVE_PW_SHAPES(TS_MVE_PW_ZERO_R8, TS_MVE_SUM_R8_FIRST, TS_MVE_SUM_R8, TS_MVE_PW_START_SUM);
    }
}

/* Output channels of a layer whose filter sums one table holds (ts_mve_layer_table): a table of
 * 3 * TS_MVE_LAYER_CH words on the caller's stack. */
#define TS_MVE_LAYER_CH 64

/* Layer p's table for the quads with the filter sums folded in (out_c <= TS_MVE_LAYER_CH): per
 * output channel c, bias[c] + input_offset * sum(w_c) (w_c: the K = filter_h * filter_w * in_c
 * filter bytes of channel c; wrapping 32-bit arithmetic: the quad's total, the accumulator, is
 * within int32 by ts_kernels.h's bound, so its wrapped sum is exact), multiplier[c], shift[c]. */
static inline void ts_mve_layer_table(int32_t *tab, const ts_conv2d_s8_params *p, const int8_t *filter,
                                      const int32_t *bias)
{
    const int32_t k = p->filter_h * p->filter_w * p->in_c;
    int32_t c;
    for (c = 0; c < p->out_c; ++c) {
        const uint32_t s = (uint32_t)ts_mve_sum(filter + (size_t)c * k, k);
        tab[3 * c] = (int32_t)((bias != NULL ? (uint32_t)bias[c] : 0u) + (uint32_t)p->input_offset * s);
        tab[3 * c + 1] = p->multiplier[c];
        tab[3 * c + 2] = p->shift[c];
    }
}

/* The five-pixel row of the 1x1 path (a streamed stage's rows of 5, a chunk's last 4 k + 1 pixels),
 * against the layer table (eff: {bias + input_offset * sum(w), multiplier, shift}, ts_mve_layer_table)
 * and in_c 16, 32 or 64: the five pixels' inputs lie in_c bytes apart from one word-aligned base (a
 * single register, fixed immediate offsets: VLDRW.32 of 16 bytes is VLDRB.8's register contents), so
 * each channel loads its in_c filter bytes once (VLDRB.8 16 a step) for five VMLADAV dot products a
 * step (r0, r2, r4, r6, r8: pixels 0-4). Pixels 0-3 are requantised and stored as the quad's (the
 * four sums into one vector, TS_MVE_RQ_EFF, TS_MVE_RQ_SHIFT, one byte scatter); pixel 4's sum plus
 * the table's first word goes to fifth[] (the caller's, one word a channel) and is requantised after
 * the block, four channels a vector (ts_mve_pw_five_row). slots64 (the small-field patches,
 * ts_mve_patch_quads): five receptive fields of K <= 64 bytes in 64-byte slots, K / 16 whole steps
 * then the last K % 16 filter bytes under a predicate (TS_MVE_P5_TAIL). STEP(OP, o0..o4): one
 * 16-byte step, OP VMLADAV (the first) or VMLADAVA, the pixels' byte offsets o0..o4 from the base
 * in r1. */
#define TS_MVE_P5_STEP(OP, o0, o1, o2, o3, o4)                                                         \
    "vldrb.8 q1, [r11], #16\n\t"                                                                        \
    "vldrw.u32 q0, [r1, #" o0 "]\n\t" OP " r0, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o1 "]\n\t" OP " r2, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o2 "]\n\t" OP " r4, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o3 "]\n\t" OP " r6, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o4 "]\n\t" OP " r8, q0, q1\n\t"
#define TS_MVE_P5_FIRST(o0, o1, o2, o3, o4) TS_MVE_P5_STEP("vmladav.s8", o0, o1, o2, o3, o4)
#define TS_MVE_P5_NEXT(o0, o1, o2, o3, o4) TS_MVE_P5_STEP("vmladava.s8", o0, o1, o2, o3, o4)
/* The last K % 16 filter bytes (r9 = K % 16, the patches' path): the filter load predicated by
 * VCTP.8 (inactive lanes load 0, nothing past the channel's row or the filter is read), the pixels'
 * 16 bytes whole (their bytes past K: the next patch or the patch buffer's own, times 0). */
#define TS_MVE_P5_TAIL(OP, o0, o1, o2, o3, o4)                                                         \
    "vctp.8  r9\n\t"                                                                                     \
    "vpst\n\t"                                                                                           \
    "vldrbt.8 q1, [r11]\n\t"                                                                             \
    "add     r11, r11, r9\n\t"                                                                           \
    "vldrw.u32 q0, [r1, #" o0 "]\n\t" OP " r0, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o1 "]\n\t" OP " r2, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o2 "]\n\t" OP " r4, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o3 "]\n\t" OP " r6, q0, q1\n\t"                                             \
    "vldrw.u32 q0, [r1, #" o4 "]\n\t" OP " r8, q0, q1\n\t"
/* Steps 0-3 of five pixels 64 bytes apart (the 1x1 path at in_c 64; the patches, each in a 64-byte
 * slot), and the tail after s whole steps. */
#define TS_MVE_P5_64_0 TS_MVE_P5_FIRST("0", "64", "128", "192", "256")
#define TS_MVE_P5_64_1 TS_MVE_P5_NEXT("16", "80", "144", "208", "272")
#define TS_MVE_P5_64_2 TS_MVE_P5_NEXT("32", "96", "160", "224", "288")
#define TS_MVE_P5_64_3 TS_MVE_P5_NEXT("48", "112", "176", "240", "304")
#define TS_MVE_P5_64_T0 TS_MVE_P5_TAIL("vmladav.s8", "0", "64", "128", "192", "256")
#define TS_MVE_P5_64_T1 TS_MVE_P5_TAIL("vmladava.s8", "16", "80", "144", "208", "272")
#define TS_MVE_P5_64_T2 TS_MVE_P5_TAIL("vmladava.s8", "32", "96", "160", "224", "288")
#define TS_MVE_P5_64_T3 TS_MVE_P5_TAIL("vmladava.s8", "48", "112", "176", "240", "304")
#define TS_MVE_P5_ASM(DOTS)                                                                             \
    __asm__ volatile("push    {r7}\n\t"                                                                 \
                     "mov     r7, %[out]\n\t"                                                           \
                     "vldrw.32 q5, [r10]\n\t"                                                           \
                     "vldrw.32 q6, [r10, #16]\n\t"                                                      \
                     "vldrw.32 q7, [r10, #32]\n\t"                                                      \
                     "vldrw.32 q4, [r10, #48]\n\t"                                                      \
                     "ldr     r1, [r10, #64]\n\t"                                                       \
                     "ldr     r5, [r10, #92]\n\t"                                                       \
                     "ldr     r9, [r10, #84]\n\t"                                                       \
                     "1:\n\t" DOTS "vmov    q0[2], q0[0], r0, r4\n\t"                                  \
                     "vmov    q0[3], q0[1], r2, r6\n\t"                                                 \
                     "ldm     r12!, {r0, r2, r4}\n\t"                                                   \
                     "add     r8, r8, r0\n\t"                                                           \
                     "str     r8, [%[f]], #4\n\t" TS_MVE_RQ_EFF TS_MVE_RQ_SHIFT TS_MVE_PW_STORE          \
                     "adds    r7, r7, #1\n\t"                                                           \
                     "cmp     r12, r5\n\t"                                                              \
                     "bne     1b\n\t"                                                                   \
                     "pop     {r7}\n\t"                                                                 \
                     : [tab] "+r"(tab), [w] "+r"(w), [out] "+r"(out), [f] "+r"(f)                       \
                     : [a] "r"(a)                                                                       \
                     : "r1", "r2", "r4", "r5", "r6", "r8", "r9", "q0", "q1", "q4", "q5", "q6", "q7",     \
                       "cc", "memory")
TS_MVE_HOT void ts_mve_pw_five(const ts_mve_pw_args *args, const int32_t *t, const int8_t *w_first,
                               int8_t *out_first, int32_t *fifth, int slots64)
{
    register const ts_mve_pw_args *a __asm__("r10") = args;
    register const int32_t *tab __asm__("r12") = t;
    register const int8_t *w __asm__("r11") = w_first;
    register int8_t *out __asm__("r0") = out_first; /* moved to r7 first thing */
    register int32_t *f __asm__("r3") = fifth;
    if (a->whole == 3 && a->tail == 0) { /* in_c 64 (or K 64 in 64-byte slots) */
        TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_1 TS_MVE_P5_64_2 TS_MVE_P5_64_3);
    } else if (slots64 && a->whole < 0) { /* K < 16 */
        TS_MVE_P5_ASM(TS_MVE_P5_64_T0);
    } else if (slots64 && a->whole == 0) {
        if (a->tail == 0) {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0);
        } else {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_T1);
        }
    } else if (slots64 && a->whole == 1) {
        if (a->tail == 0) {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_1);
        } else {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_1 TS_MVE_P5_64_T2);
        }
    } else if (slots64) { /* K 48 to 63 */
        if (a->tail == 0) {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_1 TS_MVE_P5_64_2);
        } else {
            TS_MVE_P5_ASM(TS_MVE_P5_64_0 TS_MVE_P5_64_1 TS_MVE_P5_64_2 TS_MVE_P5_64_T3);
        }
    } else if (a->whole == 1) { /* in_c 32 */
        TS_MVE_P5_ASM(TS_MVE_P5_FIRST("0", "32", "64", "96", "128") TS_MVE_P5_NEXT("16", "48", "80", "112", "144"));
    } else { /* in_c 16 */
        TS_MVE_P5_ASM(TS_MVE_P5_FIRST("0", "16", "32", "48", "64"));
    }
}

/* Whether ts_mve_pw_five takes a row of five pixels of layer p at x (the layer table given). */
static inline int ts_mve_five_ok(const ts_conv2d_s8_params *p, int32_t px_step, const int8_t *x)
{
    return px_step == p->in_c && (p->in_c == 16 || p->in_c == 32 || p->in_c == 64) &&
           p->out_c <= TS_MVE_LAYER_CH && ((uintptr_t)x & 3u) == 0;
}

/* Five pixels of a 1x1 layer, or five patches in 64-byte slots (slots64; a set: x[0] the first
 * pixel or slot, end the table's end; the table tab of
 * ts_mve_layer_table, every channel one block) through ts_mve_pw_five, then pixel 4's accumulators
 * (fifth: bias + input_offset * sum(w) + the dot product) requantised four channels a vector with
 * their own multiplier and shift (gathered from the table), offset, clamped and stored at out + 4 *
 * out_c (the last vector predicated). */
TS_MVE_HOT void ts_mve_pw_five_row(const ts_conv2d_s8_params *p, const ts_mve_pw_args *a, const int32_t *tab,
                                   const int8_t *filter, int8_t *out, int slots64)
{
    int32_t fifth[TS_MVE_LAYER_CH];
    const int32_t out_c = p->out_c;
    const uint32x4_t rows = vmulq_n_u32(vidupq_n_u32(0, 1), 3u); /* table words 0, 3, 6, 9 */
    int8_t *const o4 = out + (size_t)4 * out_c;
    int32_t c;
    ts_mve_pw_five(a, tab, filter, out, fifth, slots64);
    for (c = 0; c < out_c; c += 4) {
        const mve_pred16_t live = vctp32q((uint32_t)(out_c - c));
        const int32_t *t = tab + 3 * c;
        int32x4_t v = vldrwq_z_s32(fifth + c, live);
        v = ts_mve_requant(v, vldrwq_gather_shifted_offset_z_s32(t + 1, rows, live),
                           vldrwq_gather_shifted_offset_z_s32(t + 2, rows, live));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, p->output_offset), vdupq_n_s32(p->act_min)), vdupq_n_s32(p->act_max));
        vstrbq_p_s32(o4 + c, v, live);
    }
}

#define TS_MVE_PW_BLOCK 16

/* One pixel x of a 1x1 layer against channels [c0, c0 + nb) (filter rows from w), in steps of
 * TS_MVE_PW_BLOCK channels: per channel the dot product of the raw bytes (VMLADAVA, 16 a step, the
 * last predicated) and the filter bytes' sum (VADDVA), then the step's channels through
 * ts_mve_requant_store (bias + input_offset * sum(w) + the dot product, each channel's multiplier
 * and shift, offset, clamp, stored as bytes). Why: a quad's four pixels cost the same for one, and
 * a row of 4 k + 1 pixels (a streamed stage's rows of 5) ends in one. The same accumulator, the
 * same requantisation: the same bytes. */
TS_MVE_HOT void ts_mve_pw_one(const ts_conv2d_s8_params *p, const int8_t *x, const int8_t *w, const int32_t *bias,
                              int32_t c0, int32_t nb, int8_t *out)
{
    const int32_t in_c = p->in_c, whole = in_c & ~15, tail = in_c & 15;
    const mve_pred16_t live = vctp8q((uint32_t)tail);
    int32_t dots[TS_MVE_PW_BLOCK], sums[TS_MVE_PW_BLOCK];
    int32_t c, j, i;
    for (c = 0; c < nb; c += TS_MVE_PW_BLOCK) {
        const int32_t n = nb - c < TS_MVE_PW_BLOCK ? nb - c : TS_MVE_PW_BLOCK;
        for (j = 0; j < n; ++j, w += in_c) {
            int32_t dot = 0, sum = 0;
            for (i = 0; i < whole; i += 16) {
                const int8x16_t wv = vldrbq_s8(w + i);
                dot = vmladavaq_s8(dot, vldrbq_s8(x + i), wv);
                sum = vaddvaq_s8(sum, wv);
            }
            if (tail != 0) {
                const int8x16_t wv = vldrbq_z_s8(w + whole, live);
                dot = vmladavaq_s8(dot, vldrbq_z_s8(x + whole, live), wv);
                sum = vaddvaq_s8(sum, wv);
            }
            dots[j] = dot;
            sums[j] = sum;
        }
        ts_mve_requant_store(dots, sums, bias != NULL ? bias + c0 + c : NULL, p->input_offset,
                             p->multiplier + c0 + c, p->shift + c0 + c, n, p->output_offset, p->act_min, p->act_max,
                             out + c);
    }
}

/* 1x1 CONV_2D without padding (any strides), the DSP path's groups: output pixels of a row (with
 * stride 1 over the whole input: all pixels as one row) in chunks of up to 16; per chunk, output
 * channels in blocks of TS_MVE_PW_BLOCK, each block's {bias, multiplier, shift} tabled once, then
 * the chunk's pixels four at a time (a short last quad of two or three has its missing rows repeat
 * the last pixel, computed and not stored; a lone last pixel goes through ts_mve_pw_one), each quad
 * channel by channel through ts_mve_pw_quad. With layer_tab
 * (ts_mve_layer_table of this layer, or NULL) every channel is one block against that table, the
 * filter sums taken from it instead of summed per quad, and a chunk's last five pixels (in_c 16, 32
 * or 64, stride 1, the input word-aligned) go through ts_mve_pw_five_row: each filter byte loaded
 * once for five pixels, the same accumulators and requantisation. */
TS_MVE_HOT void ts_mve_pointwise(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                 const int32_t *bias, int8_t *output, const int32_t *layer_tab)
{
    const int32_t in_c = p->in_c, out_c = p->out_c;
    const int32_t px_step = p->stride_w * in_c;
    const int flat = p->stride_h == 1 && p->stride_w == 1 && p->out_h == p->in_h && p->out_w == p->in_w;
    const int32_t rows = flat ? 1 : p->batches * p->out_h;
    const int32_t out_w = flat ? p->batches * p->out_h * p->out_w : p->out_w;
    const int32_t block = layer_tab != NULL ? out_c : TS_MVE_PW_BLOCK;
    ts_mve_pw_args a __attribute__((aligned(16)));
    int32_t own[3 * TS_MVE_PW_BLOCK];
    int32_t y, x, n, j, c0;
    ts_mve_quad_consts(&a, p);
    a.whole = (in_c >> 4) - 1; /* -1: in_c < 16 */
    a.tail = in_c & 15;
    for (y = 0; y < rows; ++y) {
        const int32_t b = y / p->out_h, yy = y % p->out_h;
        const int8_t *in_row = input + ((size_t)b * p->in_h + (size_t)yy * p->stride_h) * p->in_w * in_c;
        for (x = 0; x < out_w; x += n) {
            const int8_t *in_x = in_row + (size_t)x * px_step;
            n = out_w - x < 16 ? out_w - x : 16;
            for (c0 = 0; c0 < out_c; c0 += block) {
                const int32_t nb = out_c - c0 < block ? out_c - c0 : block;
                const int32_t *tab = layer_tab;
                if (tab == NULL) {
                    ts_mve_quad_table(own, p, bias, c0, nb);
                    tab = own;
                }
                a.end = tab + 3 * nb;
                for (j = 0; j < n; j += 4) {
                    const int32_t k = n - j < 4 ? n - j : 4;
                    if (k == 4 && n - j == 5 && layer_tab != NULL && ts_mve_five_ok(p, px_step, in_x)) {
                        /* the last five: a quad and one more, each filter byte loaded once */
                        a.x[0] = in_x + (size_t)j * px_step;
                        ts_mve_pw_five_row(p, &a, tab, filter, output + (size_t)j * out_c, 0);
                        break;
                    }
                    if (k == 1) { /* a lone last pixel: its own loop, not a quad's four */
                        ts_mve_pw_one(p, in_x + (size_t)j * px_step, filter + (size_t)c0 * in_c, bias, c0, nb,
                                      output + (size_t)j * out_c + c0);
                        continue;
                    }
                    /* rows past the chunk's last pixel repeat it (read, not stored) */
                    a.x[0] = in_x + (size_t)j * px_step;
                    a.x[1] = a.x[0] + (k > 1 ? px_step : 0);
                    a.x[2] = a.x[1] + (k > 2 ? px_step : 0);
                    a.x[3] = a.x[2] + (k > 3 ? px_step : 0);
                    a.k = k;
                    ts_mve_pw_quad(&a, tab, filter + (size_t)c0 * in_c, output + (size_t)j * out_c + c0,
                                   layer_tab != NULL);
                }
            }
            output += (size_t)n * out_c;
        }
    }
}

/* Fewest output pixels of a call for which the quads' layer table (ts_mve_layer_table) pays: it
 * costs about what the sums of two or three quads cost in the loop. */
#define TS_MVE_LAYER_PIXELS 12

/* About how many quads of layer p's whole-width windows use every filter row (ts_mve_conv_quad with
 * a layer table): the output rows whose window rows all lie inside the input times the quads of a
 * row less its two edge pixels. */
static inline int32_t ts_mve_full_quads(const ts_conv2d_s8_params *p)
{
    int32_t y, ky0, ky1, rows = 0;
    for (y = 0; y < p->out_h; ++y) {
        ts_tap_range(y * p->stride_h - p->pad_top, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
        rows += ky0 == 0 && ky1 == p->filter_h;
    }
    return p->batches * rows * ((p->out_w - 2) / 4);
}

/* ts_mve_pointwise with the layer's table on the stack where out_c <= TS_MVE_LAYER_CH and the call
 * has TS_MVE_LAYER_PIXELS output pixels or more. */
TS_MVE_HOT void ts_mve_pointwise_layer(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                       const int32_t *bias, int8_t *output)
{
    int32_t tab[3 * TS_MVE_LAYER_CH];
    if (p->out_c <= TS_MVE_LAYER_CH && p->batches * p->out_h * p->out_w >= TS_MVE_LAYER_PIXELS) {
        ts_mve_layer_table(tab, p, filter, bias);
        ts_mve_pointwise(p, input, filter, bias, output, tab);
    } else {
        ts_mve_pointwise(p, input, filter, bias, output, NULL);
    }
}

/* CONV_2D's small receptive fields, K = fh * fw * in_c <= TS_MVE_PATCH_QUAD bytes (ts_conv2d_s8.c's
 * patch path, in quads): four consecutive output pixels of the flat order (rows and batches wrap;
 * the last quad may be short), their four receptive fields first copied into stack patches (taps
 * outside the input hold the input zero point, so w * x + input_offset * w adds 0 for them:
 * ts_mve_build_patch), then the quad as a 1x1 pixel quad over in_c = K (ts_mve_pw_quad: with
 * out_c <= TS_MVE_LAYER_CH every channel against the layer's table of ts_mve_layer_table, made once;
 * else output channels in blocks of 16 tabled per quad; a call of 4 k + 1 pixels has the table too
 * and its last five go as one group, their fields in 64-byte slots, through ts_mve_pw_five_row). All
 * four (five) fields are read before any of their outputs is written. layer (or NULL): the
 * generator's ts_mve_layer_table of the layer (a streamed stage's head, called row by row). */
#define TS_MVE_PATCH_QUAD 64
static inline __attribute__((always_inline)) void ts_mve_patch_body(const ts_conv2d_s8_params *p,
                                                                     const int8_t *input, const int8_t *filter,
                                                                     const int32_t *bias, int8_t *output,
                                                                     const int32_t *layer, const int fives)
{
    const int32_t k = p->filter_h * p->filter_w * p->in_c, out_c = p->out_c, out_w = p->out_w;
    const int32_t pixels = p->batches * p->out_h * out_w;
    const int8_t pad = (int8_t)-p->input_offset;
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fh = p->filter_h, fw = p->filter_w;
    const int32_t row = fw * in_c, in_row = p->dilation_h * in_w * in_c, last_dy = (fh - 1) * p->dilation_h;
    const int short_rows = p->dilation_w == 1 && row <= 16; /* a window row: one predicated vector */
    const mve_pred16_t prow = vctp8q((uint32_t)row);
    /* the table where the call is long enough, or where it ends in five (rows of 5: a quad and one
     * more in one pass, ts_mve_pw_five_row, against it) */
    const int whole_layer =
        out_c <= TS_MVE_LAYER_CH && (layer != NULL || pixels >= TS_MVE_LAYER_PIXELS || (fives && (pixels & 3) == 1));
    ts_mve_pw_args a __attribute__((aligned(16)));
    int32_t tab[3 * TS_MVE_LAYER_CH];
    const int32_t *lt = out_c <= TS_MVE_LAYER_CH && layer != NULL ? layer : tab; /* the layer's table */
    int8_t patches[5 * TS_MVE_PATCH_QUAD] __attribute__((aligned(4)));
    int32_t i, q, n, c0, ky, b = 0, y = 0, x = 0;
    ts_mve_quad_consts(&a, p);
    a.whole = (k >> 4) - 1; /* -1: k < 16 */
    a.tail = k & 15;
    for (i = 0; i < pixels; i += 4) {
        const int five = fives && whole_layer && pixels - i == 5; /* the last five: 64-byte slots */
        const int32_t slot = five ? TS_MVE_PATCH_QUAD : k;
        const int32_t fields = five ? 5 : 4; /* n <= fields */
        n = five ? 5 : pixels - i < 4 ? pixels - i : 4;
        for (q = 0; q < fields; ++q) {
            if (q < n) {
                const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
                const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
                if (short_rows && y0 >= 0 && y0 + last_dy < in_h && x0 >= 0 && x0 + fw <= in_w) {
                    /* the whole window inside the input: its rows copied one vector each */
                    const int8_t *src = in_b + ((size_t)y0 * in_w + x0) * in_c;
                    int8_t *dst = patches + q * slot;
                    for (ky = fh; ky > 0; --ky) {
                        vstrbq_p_s8(dst, vldrbq_z_s8(src, prow), prow);
                        src += in_row;
                        dst += row;
                    }
                } else {
                    ts_mve_build_patch(p, in_b, y0, x0, pad, 0, patches + q * slot);
                }
                if (++x == out_w) {
                    x = 0;
                    if (++y == p->out_h) {
                        y = 0;
                        ++b;
                    }
                }
            }
            if (!fives || q < 4) {
                a.x[q] = patches + (q < n ? q : n - 1) * slot; /* a short quad repeats its last pixel */
            }
        }
        a.k = fives ? (n < 4 ? n : 4) : n;
        if (whole_layer) { /* every channel one block, the table made once (or the generator's) */
            if (i == 0 && lt == tab) {
                ts_mve_layer_table(tab, p, filter, bias);
            }
            a.end = lt + 3 * out_c;
            if (five) {
                ts_mve_pw_five_row(p, &a, lt, filter, output + (size_t)i * out_c, 1);
                break;
            }
            ts_mve_pw_quad(&a, lt, filter, output + (size_t)i * out_c, 1);
            continue;
        }
        for (c0 = 0; c0 < out_c; c0 += TS_MVE_PW_BLOCK) {
            const int32_t nb = out_c - c0 < TS_MVE_PW_BLOCK ? out_c - c0 : TS_MVE_PW_BLOCK;
            ts_mve_quad_table(tab, p, bias, c0, nb);
            a.end = tab + 3 * nb;
            ts_mve_pw_quad(&a, tab, filter + (size_t)c0 * k, output + (size_t)i * out_c + c0, 0);
        }
    }
}

/* The patch quads in two functions, so that calls of 4 k pixels keep their loop (and its register
 * allocation) as it was: ts_mve_patch_quads, the quads alone (ts_mve_patch_body's loop without the
 * five and the given table, written out); ts_mve_patch_fives (the generator's table, or a call of
 * 4 k + 1 pixels; out_c <= TS_MVE_LAYER_CH), ts_mve_patch_body with the last five and the table
 * pointer (fives 1). ts_mve_patch_run picks. */
TS_MVE_HOT void ts_mve_patch_quads(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output)
{
    const int32_t k = p->filter_h * p->filter_w * p->in_c, out_c = p->out_c, out_w = p->out_w;
    const int32_t pixels = p->batches * p->out_h * out_w;
    const int8_t pad = (int8_t)-p->input_offset;
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, fh = p->filter_h, fw = p->filter_w;
    const int32_t row = fw * in_c, in_row = p->dilation_h * in_w * in_c, last_dy = (fh - 1) * p->dilation_h;
    const int short_rows = p->dilation_w == 1 && row <= 16; /* a window row: one predicated vector */
    const mve_pred16_t prow = vctp8q((uint32_t)row);
    const int whole_layer = out_c <= TS_MVE_LAYER_CH && pixels >= TS_MVE_LAYER_PIXELS;
    ts_mve_pw_args a __attribute__((aligned(16)));
    int32_t tab[3 * TS_MVE_LAYER_CH];
    int8_t patches[4 * TS_MVE_PATCH_QUAD];
    int32_t i, q, n, c0, ky, b = 0, y = 0, x = 0;
    ts_mve_quad_consts(&a, p);
    a.whole = (k >> 4) - 1; /* -1: k < 16 */
    a.tail = k & 15;
    for (i = 0; i < pixels; i += 4) {
        n = pixels - i < 4 ? pixels - i : 4;
        for (q = 0; q < 4; ++q) {
            if (q < n) {
                const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
                const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
                if (short_rows && y0 >= 0 && y0 + last_dy < in_h && x0 >= 0 && x0 + fw <= in_w) {
                    /* the whole window inside the input: its rows copied one vector each */
                    const int8_t *src = in_b + ((size_t)y0 * in_w + x0) * in_c;
                    int8_t *dst = patches + q * k;
                    for (ky = fh; ky > 0; --ky) {
                        vstrbq_p_s8(dst, vldrbq_z_s8(src, prow), prow);
                        src += in_row;
                        dst += row;
                    }
                } else {
                    ts_mve_build_patch(p, in_b, y0, x0, pad, 0, patches + q * k);
                }
                if (++x == out_w) {
                    x = 0;
                    if (++y == p->out_h) {
                        y = 0;
                        ++b;
                    }
                }
            }
            a.x[q] = patches + (q < n ? q : n - 1) * k; /* a short quad repeats its last pixel */
        }
        a.k = n;
        if (whole_layer) { /* every channel one block, the table made once */
            if (i == 0) {
                ts_mve_layer_table(tab, p, filter, bias);
            }
            a.end = tab + 3 * out_c;
            ts_mve_pw_quad(&a, tab, filter, output + (size_t)i * out_c, 1);
            continue;
        }
        for (c0 = 0; c0 < out_c; c0 += TS_MVE_PW_BLOCK) {
            const int32_t nb = out_c - c0 < TS_MVE_PW_BLOCK ? out_c - c0 : TS_MVE_PW_BLOCK;
            ts_mve_quad_table(tab, p, bias, c0, nb);
            a.end = tab + 3 * nb;
            ts_mve_pw_quad(&a, tab, filter + (size_t)c0 * k, output + (size_t)i * out_c + c0, 0);
        }
    }
}
TS_MVE_HOT void ts_mve_patch_fives(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                   const int32_t *bias, int8_t *output, const int32_t *layer)
{
    ts_mve_patch_body(p, input, filter, bias, output, layer, 1);
}
static inline void ts_mve_patch_run(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *layer)
{
    if (p->out_c <= TS_MVE_LAYER_CH && (layer != NULL || ((p->batches * p->out_h * p->out_w) & 3) == 1)) {
        ts_mve_patch_fives(p, input, filter, bias, output, layer);
    } else {
        ts_mve_patch_quads(p, input, filter, bias, output);
    }
}

/* n bytes from src to dst (disjoint): 16 a step, the last step predicated (nothing past either end
 * is touched). */
static inline void ts_mve_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; i += 16) {
        const mve_pred16_t q = vctp8q((uint32_t)(n - i));
        vstrbq_p_s8(dst + i, vldrbq_z_s8(src + i, q), q);
    }
}

/* A quad of CONV_2D output pixels with the same tap rows, every filter column inside the input
 * (dilation_w 1): the asm block's arguments, ts_mve_pw_args's first 100 bytes (k unused) and: */
typedef struct {
    ts_mve_pw_args pw;
    int32_t rows;       /* 100: filter rows inside the input */
    int32_t in_skip;    /* 104: from a row's last whole vector to the next row's first byte */
    int32_t w_skip;     /* 108: from a channel's last row to the next channel's first */
    const int32_t *tab; /* 112: the channel's {bias, multiplier, shift} */
} ts_mve_cq_args;

/* ts_mve_pw_quad's channel loop with `rows` runs of run_len = fw * in_c bytes per pixel (whole
 * vectors, then the TAIL), the pixel pointers moved by in_skip and the filter by the tail after each
 * run, by w_skip after each channel; the table pointer in memory (r12 counts the rows). ZERO, SUM,
 * START: as TS_MVE_PW_SHAPES's (the filter sums summed, or from the table). */
#define TS_MVE_CQ_START_SUM "ldr     r12, [r10, #96]\n\t" TS_MVE_RQ_SUM("r12")
#define TS_MVE_CQ_ROW_LOOP(SUM)                                                                         \
    "ldr     lr, [r10, #80]\n\t"                                                                        \
    "dls     lr, lr\n\t"                                                                                \
    "2:\n\t"                                                                                            \
    TS_MVE_QUAD_DOTS(SUM)                                                                               \
    "le      lr, 2b\n\t"
/* A row of 3, 6 or 12 whole vectors (3x3 filters over 16, 32 or 64 channels) unrolled: no loop. */
#define TS_MVE_CQ_ROW_3(SUM) TS_MVE_QUAD_DOTS(SUM) TS_MVE_QUAD_DOTS(SUM) TS_MVE_QUAD_DOTS(SUM)
#define TS_MVE_CQ_ROW_6(SUM) TS_MVE_CQ_ROW_3(SUM) TS_MVE_CQ_ROW_3(SUM)
#define TS_MVE_CQ_ROW_12(SUM) TS_MVE_CQ_ROW_6(SUM) TS_MVE_CQ_ROW_6(SUM)
#define TS_MVE_CQ_ASM(ROW, TAIL, ZERO, SUM, START)                                                      \
    __asm__ volatile(TS_MVE_QUAD_ENTRY                                                                  \
                     "ldrd    r5, r9, [r10, #72]\n\t"                                                   \
                     "movs    r0, #0\n\t"                                                               \
                     "movs    r2, #0\n\t"                                                               \
                     "movs    r4, #0\n\t"                                                               \
                     "movs    r6, #0\n\t" ZERO                                                          \
                     "ldr     r12, [r10, #100]\n\t"                                                     \
                     "6:\n\t" ROW(SUM) TAIL(SUM) "ldr     lr, [r10, #104]\n\t"                          \
                     "add     r1, r1, lr\n\t"                                                           \
                     "add     r3, r3, lr\n\t"                                                           \
                     "add     r5, r5, lr\n\t"                                                           \
                     "add     r9, r9, lr\n\t"                                                           \
                     "subs    r12, r12, #1\n\t"                                                         \
                     "bne     6b\n\t"                                                                   \
                     "ldr     lr, [r10, #108]\n\t"                                                      \
                     "add     r11, r11, lr\n\t"                                                         \
                     "vmov    q0[2], q0[0], r0, r4\n\t"                                                 \
                     "vmov    q0[3], q0[1], r2, r6\n\t"                                                 \
                     "ldr     lr, [r10, #112]\n\t"                                                      \
                     "ldm     lr!, {r0, r2, r4}\n\t"                                                    \
                     "str     lr, [r10, #112]\n\t" START TS_MVE_RQ_SHIFT                                 \
                     "vstrb.32 q0, [r7, q5]\n\t"                                                        \
                     "adds    r7, r7, #1\n\t"                                                           \
                     "ldr     r0, [r10, #92]\n\t"                                                       \
                     "cmp     lr, r0\n\t"                                                               \
                     "bne     1b\n\t"                                                                   \
                     "pop     {r7}\n\t"                                                                 \
                     : [w] "+r"(w), [out] "+r"(out)                                                     \
                     : [a] "r"(a)                                                                       \
                     : "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r12", "lr", "q0", "q1", "q2", "q3", \
                       "q4", "q5", "q6", "q7", "cc", "memory")

/* The quad's channels of one block (args->pw.end, args->tab set: eff as ts_mve_pw_quad's), filter
 * from w_first, outputs from out_first (pixel 0's byte of the block's first channel). With the
 * table, rows of 3, 6 or 12 whole vectors are unrolled (TS_MVE_CQ_ROW_3/6/12), others loop. */
TS_MVE_HOT void ts_mve_cq_block(ts_mve_cq_args *args, const int8_t *w_first, int8_t *out_first, int eff)
{
    register ts_mve_cq_args *a __asm__("r10") = args;
    register const int8_t *w __asm__("r11") = w_first;
    register int8_t *out __asm__("r0") = out_first; /* moved to r7 first thing */
    if (eff && a->pw.tail == 0 && a->pw.whole == 3) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_3, TS_MVE_PW_TAIL_NONE, "", "", TS_MVE_RQ_EFF);
    } else if (eff && a->pw.tail == 0 && a->pw.whole == 6) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_6, TS_MVE_PW_TAIL_NONE, "", "", TS_MVE_RQ_EFF);
    } else if (eff && a->pw.tail == 0 && a->pw.whole == 12) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_12, TS_MVE_PW_TAIL_NONE, "", "", TS_MVE_RQ_EFF);
    } else if (eff && a->pw.tail == 0) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_LOOP, TS_MVE_PW_TAIL_NONE, "", "", TS_MVE_RQ_EFF);
    } else if (eff) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_LOOP, TS_MVE_PW_TAIL, "", "", TS_MVE_RQ_EFF);
    } else if (a->pw.tail == 0) {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_LOOP, TS_MVE_PW_TAIL_NONE, TS_MVE_PW_ZERO_R8, TS_MVE_SUM_R8,
                      TS_MVE_CQ_START_SUM);
    } else {
        TS_MVE_CQ_ASM(TS_MVE_CQ_ROW_LOOP, TS_MVE_PW_TAIL, TS_MVE_PW_ZERO_R8, TS_MVE_SUM_R8, TS_MVE_CQ_START_SUM);
    }
}

/* Output channels of a k x k quad whose outputs go through the stack (ts_mve_conv_quad_staged). */
#define TS_MVE_CQ_STAGE 64

/* CONV_2D, four horizontally adjacent output pixels whose windows have the same `rows` tap rows and
 * every tap column inside the input (dilation_w 1, filter_w * in_c >= 16): pixel q's field starts at
 * in0 + q * px_step, its rows in_row bytes apart, each one run of filter_w * in_c bytes; the filter
 * from w_first (its first used row in channel 0). Output channels in blocks of TS_MVE_PW_BLOCK, each
 * block's {bias, multiplier, shift} tabled, then the four pixels' accumulators channel by channel
 * (ts_mve_cq_block: VMLADAV of the raw bytes, one filter load serving the four pixels, plus
 * input_offset * sum(w) of the rows used), requantised on four lanes and stored with one scatter.
 * layer_tab (ts_mve_layer_table of this layer, or NULL): where every filter row is used (rows ==
 * filter_h) all channels are one block against it, the sums of w taken from it. */
TS_MVE_HOT void ts_mve_conv_quad(const ts_conv2d_s8_params *p, const int8_t *in0, int32_t px_step, int32_t rows,
                                 int32_t in_row, const int8_t *w_first, const int32_t *bias, int8_t *out,
                                 const int32_t *layer_tab)
{
    const int32_t out_c = p->out_c, len = p->filter_w * p->in_c, fs = p->filter_h * len;
    ts_mve_cq_args a __attribute__((aligned(16)));
    int32_t tab[3 * TS_MVE_PW_BLOCK];
    int32_t c0;
    ts_mve_quad_consts(&a.pw, p);
    a.pw.x[0] = in0;
    a.pw.x[1] = in0 + px_step;
    a.pw.x[2] = in0 + 2 * px_step;
    a.pw.x[3] = in0 + 3 * px_step;
    a.pw.whole = len >> 4;
    a.pw.tail = len & 15;
    a.pw.k = 4;
    a.rows = rows;
    a.in_skip = in_row - (len & ~15);
    a.w_skip = fs - rows * len;
    if (layer_tab != NULL && rows == p->filter_h) {
        a.pw.end = layer_tab + 3 * out_c;
        a.tab = layer_tab;
        ts_mve_cq_block(&a, w_first, out, 1);
        return;
    }
    for (c0 = 0; c0 < out_c; c0 += TS_MVE_PW_BLOCK) {
        const int32_t nb = out_c - c0 < TS_MVE_PW_BLOCK ? out_c - c0 : TS_MVE_PW_BLOCK;
        ts_mve_quad_table(tab, p, bias, c0, nb);
        a.pw.end = tab + 3 * nb;
        a.tab = tab;
        ts_mve_cq_block(&a, w_first + (size_t)c0 * fs, out + c0, 0);
    }
}

/* ts_mve_conv_quad with out_c <= TS_MVE_CQ_STAGE, its outputs stored into a stack block and copied
 * to the four pixels' output bytes after the last channel: all four fields are read before any of
 * their outputs is written. */
TS_MVE_HOT void ts_mve_conv_quad_staged(const ts_conv2d_s8_params *p, const int8_t *in0, int32_t px_step,
                                        int32_t rows, int32_t in_row, const int8_t *w_first, const int32_t *bias,
                                        int8_t *out, const int32_t *layer_tab)
{
    int8_t stage[4 * TS_MVE_CQ_STAGE];
    ts_mve_conv_quad(p, in0, px_step, rows, in_row, w_first, bias, stage, layer_tab);
    ts_mve_copy(out, stage, 4 * p->out_c);
}

/* round(acc / count) with ties away from zero (ts_avg_pool2d_s8.c's (acc +- count / 2) / count, C's
 * truncating division) on four lanes, |acc| <= 256 * 128: the quotient of n = |acc| + count / 2 as
 * VMULH.U32 by m = ceil(2^32 / count) (exact: n < 2^16 and m * count - 2^32 < count <= 2^16 make the
 * error n * (m * count - 2^32) / (count * 2^32) smaller than 1 / count, the gap between n / count and
 * the next integer), negated back on negative lanes. count 1: acc itself. */
static inline int32x4_t ts_mve_avg_div(int32x4_t acc, int32_t count, int32_t half, uint32_t m)
{
    if (count == 1) {
        return acc;
    }
    {
        const mve_pred16_t neg = vcmpltq_n_s32(acc, 0);
        const uint32x4_t n = vreinterpretq_u32_s32(vaddq_n_s32(vabsq_s32(acc), half));
        const int32x4_t q = vreinterpretq_s32_u32(vmulhq_u32(n, vdupq_n_u32(m)));
        return vpselq_s32(vnegq_s32(q), q, neg);
    }
}

/* AVERAGE_POOL_2D with at most 256 taps a window (ts_avg_pool2d_s8.c's loop nest and arithmetic):
 * output pixels in order, each one's channels eight at a time: the window's taps inside the input
 * summed in 16-bit lanes (VLDRB.S16: exact, |sum| <= 256 * 128), widened (even and odd channels),
 * divided as ts_mve_avg_div, clamped, interleaved back and stored as bytes (the last block
 * predicated to the channels left). Each pixel's outputs are written after reading its window only
 * (the portable kernel's groups of one pixel). An empty window: TS_ERR_PARAMS, as the portable. */
TS_MVE_HOT int ts_mve_avg_pool(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    const int32_t ch = p->channels, in_w = p->in_w;
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    int32_t b, y, x, c, i, j;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * in_w * ch;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            const int32_t ky0 = y0 < 0 ? -y0 : 0;
            const int32_t ky1 = p->filter_h < p->in_h - y0 ? p->filter_h : p->in_h - y0;
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int32_t kx0 = x0 < 0 ? -x0 : 0;
                const int32_t kx1 = p->filter_w < in_w - x0 ? p->filter_w : in_w - x0;
                const int32_t th = ky1 - ky0, tw = kx1 - kx0, count = th * tw, half = count / 2;
                const uint32_t m = count > 1 ? 0xFFFFFFFFu / (uint32_t)count + 1u : 0u;
                const int8_t *first;
                int32_t skip;
                if (th <= 0 || tw <= 0) {
                    return TS_ERR_PARAMS; /* an empty window: TFLite refuses it too */
                }
                first = in_b + ((size_t)(y0 + ky0) * in_w + (size_t)(x0 + kx0)) * ch;
                skip = (in_w - tw) * ch;
                for (c = 0; c < ch; c += 8) {
                    const mve_pred16_t pr = vctp16q((uint32_t)(ch - c));
                    const int8_t *q = first + c;
                    int16x8_t acc = vdupq_n_s16(0), v = acc;
                    int32x4_t e, o;
                    for (i = th; i > 0; --i) {
                        for (j = tw; j > 0; --j) {
                            acc = vaddq_s16(acc, vldrbq_z_s16(q, pr));
                            q += ch;
                        }
                        q += skip;
                    }
                    e = ts_mve_avg_div(vmovlbq_s16(acc), count, half, m);
                    o = ts_mve_avg_div(vmovltq_s16(acc), count, half, m);
                    v = vmovnbq_s32(v, vminq_s32(vmaxq_s32(e, lo), hi));
                    v = vmovntq_s32(v, vminq_s32(vmaxq_s32(o, lo), hi));
                    vstrbq_p_s16(output + c, v, pr);
                }
                output += ch;
            }
        }
    }
    return TS_OK;
}


#endif /* TS_MVE */
#endif /* TS_MVE_H */
