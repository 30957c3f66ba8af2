/* ts_depthwise_conv2d_s8.c - DEPTHWISE_CONV_2D with depth multiplier and dilation (see ts_kernels.h).
 *
 * Two paths compute the same int32 accumulators (integer additions in another order, nothing else):
 *
 *  - dw_fast: the taps of an output pixel inside the input form a rectangle [ky0, ky1) x [kx0, kx1)
 *    found once per pixel, so the inner loops carry no bounds checks. With depth multiplier 1,
 *    channels go four at a time: one word of input and one of filter per tap, SXTAB16 (input offset
 *    added in the same step) and SMLABB/SMLATT into four accumulators where the DSP extension
 *    exists, four scalar products otherwise. Other multipliers, and the last in_c % 4 channels,
 *    take one output channel at a time over the same rectangle.
 *    On the ts_rq path (dw_fast_rq), runs of whole 3x3 windows take the filter widened once per
 *    chunk (dw_runw3x3: LDRD of two 16-bit-lane words per tap, no SXTB16 of the filter) when the
 *    chunk holds DW_WIDE_RUNS such pixels or more; shorter runs keep the raw filter (dw_run3x3),
 *    where widening would cost more than it saves.
 *  - dw_blocks_*: where the generator gave the layer its blocks (p->blocks: per four channels the
 *    biases, ts_rq fields and the filter widened once, at compile time), pixel by pixel, every block
 *    of a pixel in one asm loop: a whole 3x3 window in nine taps of eight instructions
 *    (dw_blocks_full), one with a row or column outside the input in six (dw_blocks_six),
 *    any other clipped one by rows of one to three taps (dw_blocks_rect), each block
 *    requantised, packed, clamped and stored inside the same loop. Nothing is prepared at run
 *    time, so a call on one row of a streamed chain costs no more per pixel than a whole layer.
 *  - dw_generic, the original loop nest, kept as the reference.
 */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

static inline int8_t dw_out(const ts_depthwise_conv2d_s8_params *p, int32_t acc, int32_t o)
{
    acc = ts_requantize_nonsat(acc, p->multiplier[o], p->shift[o]) + p->output_offset;
    return (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
}

/* acc[0..3] += the products of channels c..c+3 (in and w already point at channel c of the first
 * tap) over taps_h x taps_w taps; depth multiplier 1, so input and filter advance alike along a row
 * when in_col == w_col (dilation_w 1), which leaves registers for the four accumulators. */
static TS_NOINLINE void dw_block4(const int8_t *in, const int8_t *w, int32_t taps_h, int32_t taps_w,
                                  int32_t in_row, int32_t in_col, int32_t w_row, int32_t w_col,
                                  int32_t input_offset, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t ky, kx;
#if TS_DSP
    const uint32_t off2 = ts_pack2x16(input_offset);
#endif
    for (ky = 0; ky < taps_h; ++ky) {
        const int8_t *x = in, *f = w;
        for (kx = 0; kx < taps_w; ++kx) {
#if TS_DSP
            const uint32_t xw = ts_load4(x), fw = ts_load4(f);
            const uint32_t xe = ts_even_off(xw, off2), fe = ts_even(fw);
            const uint32_t xo = ts_odd_off(xw, off2), fo = ts_odd(fw);
            a0 = ts_smlabb(xe, fe, a0);
            a2 = ts_smlatt(xe, fe, a2);
            a1 = ts_smlabb(xo, fo, a1);
            a3 = ts_smlatt(xo, fo, a3);
#else
            a0 += (int32_t)f[0] * ((int32_t)x[0] + input_offset);
            a1 += (int32_t)f[1] * ((int32_t)x[1] + input_offset);
            a2 += (int32_t)f[2] * ((int32_t)x[2] + input_offset);
            a3 += (int32_t)f[3] * ((int32_t)x[3] + input_offset);
#endif
            x += in_col;
            f += w_col;
        }
        in += in_row;
        w += w_row;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* One output pixel. `in` points at input channel 0 of the first tap inside the input, `w` at the
 * filter's first such tap; taps_h x taps_w taps, rows in_row / w_row bytes apart, columns in_col /
 * w_col (= out_c) bytes apart. */
static void dw_pixel(const ts_depthwise_conv2d_s8_params *p, const int8_t *in, const int8_t *w,
                     int32_t taps_h, int32_t taps_w, int32_t in_row, int32_t in_col, int32_t w_row,
                     const int32_t *bias, int8_t *out)
{
    const int32_t in_c = p->in_c, out_c = p->out_c, m = p->depth_multiplier;
    const int32_t input_offset = p->input_offset, w_col = out_c;
    int32_t c = 0, o, ky, kx;
    if (m == 1) {
        for (; c + 4 <= in_c; c += 4) {
            int32_t acc[4] = {0, 0, 0, 0};
            if (bias != NULL) {
                acc[0] = bias[c];
                acc[1] = bias[c + 1];
                acc[2] = bias[c + 2];
                acc[3] = bias[c + 3];
            }
            dw_block4(in + c, w + c, taps_h, taps_w, in_row, in_col, w_row, w_col, input_offset, acc);
            out[c] = dw_out(p, acc[0], c);
            out[c + 1] = dw_out(p, acc[1], c + 1);
            out[c + 2] = dw_out(p, acc[2], c + 2);
            out[c + 3] = dw_out(p, acc[3], c + 3);
        }
    }
    /* One output channel at a time: every multiplier, and the tail of multiplier 1. */
    for (o = c * m; o < out_c; ++o) {
        const int8_t *in_r = in + o / m, *w_r = w + o;
        int32_t acc = bias != NULL ? bias[o] : 0;
        for (ky = 0; ky < taps_h; ++ky) {
            const int8_t *x = in_r, *f = w_r;
            for (kx = 0; kx < taps_w; ++kx) {
                acc += (int32_t)*f * ((int32_t)*x + input_offset);
                x += in_col;
                f += w_col;
            }
            in_r += in_row;
            w_r += w_row;
        }
        out[o] = dw_out(p, acc, o);
    }
}

#if TS_RQ_ASM
/* One tap of four channels: the input word at [p, off] (offset added in SXTAB16) times the filter
 * word at [f, off], into a0..a3 with SMLABB/SMLATT; x, w, t1, t2 are scratch registers. */
#define DW_TAP(off)                                                                                     \
    "ldr     %[x], [%[p]" off "]\n\t"                                                                    \
    "ldr     %[w], [%[f]" off "]\n\t"                                                                    \
    "sxtab16 %[t1], %[off2], %[x]\n\t"                                                                   \
    "sxtb16  %[t2], %[w]\n\t"                                                                            \
    "smlabb  %[a0], %[t1], %[t2], %[a0]\n\t"                                                             \
    "smlatt  %[a2], %[t1], %[t2], %[a2]\n\t"                                                             \
    "sxtab16 %[x], %[off2], %[x], ror #8\n\t"                                                            \
    "sxtb16  %[w], %[w], ror #8\n\t"                                                                     \
    "smlabb  %[a1], %[x], %[w], %[a1]\n\t"                                                               \
    "smlatt  %[a3], %[x], %[w], %[a3]\n\t"
/* From the end of one filter row's taps to the start of the next: input and filter pointers advanced
 * by in_row / w_row (memory operands), t1 scratch. */
#define DW_NEXT_ROW                                                                                     \
    "ldr     %[t1], %[in_row]\n\t"                                                                       \
    "add     %[p], %[p], %[t1]\n\t"                                                                      \
    "ldr     %[t1], %[w_row]\n\t"                                                                        \
    "add     %[f], %[f], %[t1]\n\t"
#define DW_OPERANDS                                                                                     \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [w] "=&r"(w),            \
      [t1] "=&r"(t1), [t2] "=&r"(t2)                                                                     \
    : [p] "r"(pp), [f] "r"(ff), [c1] "r"(c1r), [c2] "r"(c2), [off2] "r"(off2r)                           \
    : "memory"

/* acc[0..3] += channels c..c+3 over taps_h x taps_w taps (in, flt at channel c of the first tap;
 * columns c1 = in_c bytes apart in both, dilation_w 1; rows in_row / w_row bytes apart). One asm
 * loop over the rows per row width 1, 2, 3; wider rows tap by tap. */
static TS_NOINLINE void dw_taps4(const int8_t *in, const int8_t *flt, int32_t taps_h, int32_t taps_w,
                                 int32_t in_row, int32_t w_row, int32_t c1, uint32_t off2, int32_t *acc)
{
    /* the blocks' 13 register operands in registers named here (TS_REG, ts_simd.h); nothing below
     * calls a function */
    register int32_t a0 TS_REG("r0") = acc[0], a1 TS_REG("r1") = acc[1];
    register int32_t a2 TS_REG("r2") = acc[2], a3 TS_REG("r3") = acc[3];
    register const int8_t *pp TS_REG("r4") = in, *ff TS_REG("r5") = flt;
    register const int32_t c1r TS_REG("r6") = c1, c2 TS_REG("r8") = 2 * c1;
    register const uint32_t off2r TS_REG("r9") = off2;
    register uint32_t x TS_REG("r10"), w TS_REG("r11"), t1 TS_REG("r12"), t2 TS_REG("lr");
    int32_t rows = taps_h, kx;
#define DW_ROWS(body)                                                                                   \
    __asm__("1:\n\t" body                                                                                \
            "ldr     %[t1], %[in_row]\n\t"                                                               \
            "add     %[p], %[p], %[t1]\n\t"                                                              \
            "ldr     %[t1], %[w_row]\n\t"                                                                \
            "add     %[f], %[f], %[t1]\n\t"                                                              \
            "ldr     %[t1], %[rows]\n\t"                                                                 \
            "subs    %[t1], %[t1], #1\n\t"                                                               \
            "str     %[t1], %[rows]\n\t"                                                                 \
            "bne     1b\n\t"                                                                             \
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [w] "=&r"(w),    \
              [t1] "=&r"(t1), [t2] "=&r"(t2), [p] "+r"(pp), [f] "+r"(ff), [rows] "+m"(rows)              \
            : [c1] "r"(c1r), [c2] "r"(c2), [off2] "r"(off2r), [in_row] "m"(in_row), [w_row] "m"(w_row)   \
            : "cc", "memory")
    if (taps_h > 0) {
        if (taps_w == 3) {
            DW_ROWS(DW_TAP("") DW_TAP(", %[c1]") DW_TAP(", %[c2]"));
        } else if (taps_w == 2) {
            DW_ROWS(DW_TAP("") DW_TAP(", %[c1]"));
        } else if (taps_w == 1) {
            DW_ROWS(DW_TAP(""));
        } else {
            for (; rows > 0; --rows) {
                const int8_t *const in0 = pp, *const flt0 = ff;
                for (kx = 0; kx < taps_w; ++kx) {
                    __asm__(DW_TAP("") DW_OPERANDS);
                    pp += c1r;
                    ff += c1r;
                }
                pp = in0 + in_row;
                ff = flt0 + w_row;
            }
        }
    }
#undef DW_ROWS
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* What a run of pixels needs besides its pointers (one block, so the run loop keeps few values). */
typedef struct {
    int32_t in_step;     /* input bytes from one pixel of the run to the next: stride_w * in_c */
    int32_t out_step;    /* output bytes from one pixel to the next: in_c */
    int32_t in_row;      /* input bytes from one filter row to the next */
    int32_t w_row;       /* filter bytes from one filter row to the next */
    int32_t c1;          /* bytes from one tap of a row to the next: in_c (dilation_w 1) */
    uint32_t off2;       /* input_offset in both halves */
    int32_t bias4[4];    /* the four channels' biases */
    const ts_rq *q;      /* [4]: their requantisation */
    uint32_t lim[2];     /* act_min, act_max in every byte */
} dw_run;

/* n consecutive output pixels of one row whose 3x3 windows lie inside the input, channels c..c+3
 * (in, flt, out at channel c of the first pixel): per pixel the nine taps in one asm block (rows
 * advanced inside it), then ts_rq4_store. */
static TS_NOINLINE void dw_run3x3(const int8_t *in, const int8_t *flt, int8_t *out, int32_t n, const dw_run *r)
{
    const int32_t in_row = r->in_row - 2 * r->c1, w_row = r->w_row - 2 * r->c1;
    /* the block's 13 register operands in registers named here (TS_REG, ts_simd.h); those kept
     * across the loop in callee-saved ones */
    register const int32_t c1 TS_REG("r6") = r->c1, c2 TS_REG("r8") = 2 * r->c1;
    register const uint32_t off2 TS_REG("r9") = r->off2;
    register uint32_t x TS_REG("r10"), w TS_REG("r11"), t1 TS_REG("r12"), t2 TS_REG("lr");
#define DW_ROW DW_TAP("") DW_TAP(", %[c1]") DW_TAP(", %[c2]")
    for (; n > 0; --n) {
        register int32_t a0 TS_REG("r0") = r->bias4[0], a1 TS_REG("r1") = r->bias4[1];
        register int32_t a2 TS_REG("r2") = r->bias4[2], a3 TS_REG("r3") = r->bias4[3];
        register const int8_t *pp TS_REG("r4") = in, *ff TS_REG("r5") = flt;
        __asm__(DW_ROW "add     %[p], %[p], %[c2]\n\t"
                       "add     %[f], %[f], %[c2]\n\t" DW_NEXT_ROW DW_ROW "add     %[p], %[p], %[c2]\n\t"
                       "add     %[f], %[f], %[c2]\n\t" DW_NEXT_ROW DW_ROW
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [w] "=&r"(w),
                  [t1] "=&r"(t1), [t2] "=&r"(t2), [p] "+r"(pp), [f] "+r"(ff)
                : [c1] "r"(c1), [c2] "r"(c2), [off2] "r"(off2), [in_row] "m"(in_row), [w_row] "m"(w_row)
                : "memory");
        ts_rq4_store(out, a0, a1, a2, a3, r->q, r->lim);
        in += r->in_step;
        out += r->out_step;
    }
#undef DW_ROW
}

/* One tap of four channels against a widened filter: the input word at [p, xoff] (offset added in
 * SXTAB16) times the filter's even / odd 16-bit lanes at [f, #foff] and [f, #foff + 4] (LDRD),
 * into a0..a3; x, fe, fo, t1 scratch. Eight instructions where DW_TAP takes ten. */
#define DWW_TAP(xoff, foff)                                                                             \
    "ldr     %[x], [%[p]" xoff "]\n\t"                                                                   \
    "ldrd    %[fe], %[fo], [%[f], #" foff "]\n\t"                                                        \
    "sxtab16 %[t1], %[off2], %[x]\n\t"                                                                   \
    "smlabb  %[a0], %[t1], %[fe], %[a0]\n\t"                                                             \
    "smlatt  %[a2], %[t1], %[fe], %[a2]\n\t"                                                             \
    "sxtab16 %[x], %[off2], %[x], ror #8\n\t"                                                            \
    "smlabb  %[a1], %[x], %[fo], %[a1]\n\t"                                                              \
    "smlatt  %[a3], %[x], %[fo], %[a3]\n\t"

/* Channels c..c+3 of a 3x3 filter widened once per chunk (dw_fast_rq): for tap t = ky * 3 + kx,
 * fw[2t] = SXTB16 of its four bytes ([c | c+2]), fw[2t + 1] = SXTB16 ROR 8 ([c+1 | c+3]). */
static inline void dw_widen3x3(const int8_t *flt, int32_t c_n, uint32_t *fw)
{
    int32_t t;
    for (t = 0; t < 9; ++t) {
        const uint32_t w = ts_load4(flt + t * c_n);
        fw[2 * t] = ts_even(w);
        fw[2 * t + 1] = ts_odd(w);
    }
}

/* dw_run3x3 against the filter widened once per chunk (dw_widen3x3): n consecutive output pixels
 * of one row whose 3x3 windows lie inside the input, channels c..c+3 (in, out at channel c of the
 * first pixel, pixels in_step / r->out_step bytes apart); per pixel the nine taps in one asm block
 * of eight instructions a tap (DWW_TAP), then ts_rq4_store. */
static TS_NOINLINE void dw_runw3x3(const int8_t *in, const uint32_t *fw, int8_t *out, int32_t n, int32_t in_step,
                                   const dw_run *r)
{
    const int32_t in_row = r->in_row;
    /* the block's 13 register operands in registers named here (TS_REG, ts_simd.h) */
    register const int32_t c1 TS_REG("r6") = r->c1, c2 TS_REG("r8") = 2 * r->c1;
    register const uint32_t off2 TS_REG("r9") = r->off2;
    register uint32_t x TS_REG("r10"), fe TS_REG("r11"), fo TS_REG("r12"), t1 TS_REG("lr");
    for (; n > 0; --n) {
        register int32_t a0 TS_REG("r0") = r->bias4[0], a1 TS_REG("r1") = r->bias4[1];
        register int32_t a2 TS_REG("r2") = r->bias4[2], a3 TS_REG("r3") = r->bias4[3];
        register const int8_t *pp TS_REG("r4") = in;
        register const uint32_t *ff TS_REG("r5") = fw;
        __asm__(DWW_TAP("", "0") DWW_TAP(", %[c1]", "8") DWW_TAP(", %[c2]", "16")
                "ldr     %[t1], %[in_row]\n\t"
                "add     %[p], %[p], %[t1]\n\t" DWW_TAP("", "24") DWW_TAP(", %[c1]", "32") DWW_TAP(", %[c2]", "40")
                "ldr     %[t1], %[in_row]\n\t"
                "add     %[p], %[p], %[t1]\n\t" DWW_TAP("", "48") DWW_TAP(", %[c1]", "56") DWW_TAP(", %[c2]", "64")
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [fe] "=&r"(fe),
                  [fo] "=&r"(fo), [t1] "=&r"(t1), [p] "+r"(pp)
                : [f] "r"(ff), [c1] "r"(c1), [c2] "r"(c2), [off2] "r"(off2), [in_row] "m"(in_row)
                : "memory");
        ts_rq4_store(out, a0, a1, a2, a3, r->q, r->lim);
        in += in_step;
        out += r->out_step;
    }
}

/* Channels c0 .. in_c - 1 of one pixel (depth multiplier 1) through the formula over the rectangle
 * of its window inside the input: th rows of tw taps (none when tw is 0), in and w at channel 0 of
 * the rectangle's first tap, rows in_row / w_row bytes apart: the tail after the blocks of four. */
static void dw_tail(const ts_depthwise_conv2d_s8_params *p, const int8_t *in, const int8_t *w, int32_t c0,
                    int32_t th, int32_t tw, int32_t in_row, int32_t w_row, const int32_t *bias, int8_t *out)
{
    const int32_t c_n = p->in_c;
    int32_t c, ky, kx;
    for (c = c0; c < c_n; ++c) {
        const int8_t *in_r = in + c, *w_r = w + c;
        int32_t acc = bias != NULL ? bias[c] : 0;
        for (ky = 0; ky < (tw > 0 ? th : 0); ++ky) {
            for (kx = 0; kx < tw; ++kx) {
                acc += (int32_t)w_r[kx * c_n] * ((int32_t)in_r[kx * c_n] + p->input_offset);
            }
            in_r += in_row;
            w_r += w_row;
        }
        out[c] = dw_out(p, acc, c);
    }
}

/* ---- Blocks: the generator's table per four channels (ts_kernels.h, "Blocks") ---------------- */
#define DWB_RQ_BYTES 16     /* where a block's four ts_rq start (after its four biases) */
#define DWB_FILTER_WORDS 20 /* where its widened filter starts */

/* What every pixel of a layer needs, one block of it so the pixel loop keeps few values. */
typedef struct {
    const int32_t *blocks; /* the table */
    int32_t block_words;   /* its words per block of four channels: 20 + 2 * filter_h * filter_w */
    int32_t groups;        /* in_c / 4 */
    int32_t c1;            /* input bytes from one tap of a row to the next: in_c */
    int32_t in_row;        /* input bytes from one filter row to the next */
    uint32_t off2;         /* input_offset in both halves */
    uint32_t lim[2];       /* act_min, act_max in every byte */
} dw_blk;

/* A block's four accumulators a0..a3 through its ts_rq at [f, #16..#76] (one channel: its fields by
 * two LDRD, then ts_rq_apply's six steps with the accumulator shifted in place), x, fe, fo, t1
 * scratch. */
#define DWB_RQ_ONE(a, off)                                                                              \
    "ldrd    %[x], %[fe], [%[f], #" off "]\n\t"                                                          \
    "ldrd    %[fo], %[t1], [%[f], #" off " + 8]\n\t" TS_RQ_STEPS_ASM(a, a, a, "x", "fe", "fo", "t1", "fe")
#define DWB_RQ4 DWB_RQ_ONE("a0", "16") DWB_RQ_ONE("a1", "32") DWB_RQ_ONE("a2", "48") DWB_RQ_ONE("a3", "64")
/* The four results packed into a0, clamped bytewise to [lo4, hi4] (SSUB8 sets a GE flag per byte,
 * SEL picks), x, fe, fo scratch. */
#define DWB_PACK_CLAMP                                                                                  \
    "bfi     %[a0], %[a1], #8, #8\n\t"                                                                   \
    "bfi     %[a0], %[a2], #16, #8\n\t"                                                                  \
    "bfi     %[a0], %[a3], #24, #8\n\t"                                                                  \
    "ldr     %[x], %[lo4]\n\t"                                                                           \
    "ldr     %[fe], %[hi4]\n\t" TS_CLAMP4_ASM("a0", "x", "fe", "fo")

/* a's ts_rq fields (m, left + 1, base, rr) into x, fe, fo, t1 by one LDM (f steps past them), then
 * ts_rq_apply's six steps on a in place, fe scratch */
#define DWB_RQ_LDM(a) "ldm     %[f]!, {%[x], %[fe], %[fo], %[t1]}\n\t" TS_RQ_STEPS_ASM(a, a, a, "x", "fe", "fo", "t1", "fe")
/* the packed word a0 clamped bytewise to [lo4, hi4] */
#define DWB_CLAMP                                                                                       \
    "ldr     %[x], %[lo4]\n\t"                                                                           \
    "ldr     %[fe], %[hi4]\n\t" TS_CLAMP4_ASM("a0", "x", "fe", "fo")
/* the next row of the window: p += in_row */
#define DWB_NEXT_ROW                                                                                    \
    "ldr     %[t1], %[in_row]\n\t"                                                                       \
    "add     %[p], %[p], %[t1]\n\t"
/* the three taps of a window row (tap ky * 3 + kx at byte 64 + 8 * (3 * ky + kx) from f, which has
 * stepped over the biases; r: the row's first), two rows of three taps, three rows of two */
#define DWB_ROW3(r) DWW_TAP("", r "+ 0") DWW_TAP(", %[c1]", r "+ 8") DWW_TAP(", %[c1], lsl #1", r "+ 16")
#define DWB_ROWS2(r0, r1) DWB_ROW3(r0) DWB_NEXT_ROW DWB_ROW3(r1)
#define DWB_COLS2(c0)                                                                                   \
    DWW_TAP("", c0 "+ 0") DWW_TAP(", %[c1]", c0 "+ 8") DWB_NEXT_ROW DWW_TAP("", c0 "+ 24")                \
        DWW_TAP(", %[c1]", c0 "+ 32") DWB_NEXT_ROW DWW_TAP("", c0 "+ 48") DWW_TAP(", %[c1]", c0 "+ 56")
/* The loop of dw_blocks_full and dw_blocks_six (their register variables): per block of four
 * channels its biases by one LDM, the window's taps (asm text), each channel's ts_rq by one LDM, the
 * four results packed, `clamp` (DWB_CLAMP or nothing), one word stored, p back by `back` to the next
 * block's first tap, until o reaches oend. */
#define DWB_BLOCKS(taps, clamp)                                                                         \
    __asm__ volatile("1:\n\t"                                                                            \
                     "ldm     %[f]!, {%[a0], %[a1], %[a2], %[a3]}\n\t" taps DWB_RQ_LDM("a0")             \
                         DWB_RQ_LDM("a1") DWB_RQ_LDM("a2") DWB_RQ_LDM("a3")                              \
                     "bfi     %[a0], %[a1], #8, #8\n\t"                                                  \
                     "bfi     %[a0], %[a2], #16, #8\n\t"                                                 \
                     "bfi     %[a0], %[a3], #24, #8\n\t" clamp                                           \
                     "str     %[a0], [%[o]], #4\n\t"                                                     \
                     "ldr     %[t1], %[back]\n\t"                                                        \
                     "sub     %[p], %[p], %[t1]\n\t"                                                     \
                     "add     %[f], %[f], #72\n\t" /* the next block: past the 2 * 9 filter words */     \
                     "ldr     %[t1], %[oend]\n\t"                                                        \
                     "cmp     %[o], %[t1]\n\t"                                                           \
                     "bne     1b"                                                                        \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [x] "=&r"(x),     \
                       [fe] "=&r"(fe), [fo] "=&r"(fo), [t1] "=&r"(t1), [p] "+r"(pp), [f] "+r"(ff),       \
                       [o] "+r"(oo)                                                                      \
                     : [c1] "r"(c1), [off2] "r"(off2), [in_row] "m"(in_row), [back] "m"(back),           \
                       [lo4] "m"(lo4), [hi4] "m"(hi4), [oend] "m"(oend)                                  \
                     : "cc", "memory")

/* DWB_BLOCKS's operands, in registers named at every optimisation level (a local register variable
 * is what an asm operand takes, at -O2 too): an LDM's register list must ascend, r0-r3 and r10-lr;
 * in, out and k the function's arguments. */
#define DWB_REGISTERS                                                                                   \
    register int32_t a0 __asm__("r0"), a1 __asm__("r1"), a2 __asm__("r2"), a3 __asm__("r3");         \
    register const int8_t *pp __asm__("r4") = in;                                                     \
    register const int32_t *ff __asm__("r5") = k->blocks;                                             \
    register const int32_t c1 __asm__("r6") = k->c1;                                                  \
    register const uint32_t off2 __asm__("r8") = k->off2;                                             \
    register int8_t *oo __asm__("r9") = out;                                                          \
    register uint32_t x __asm__("r10"), fe __asm__("r11"), fo __asm__("r12"), t1 __asm__("lr")

/* n >= 1 consecutive pixels of a row whose whole 3x3 windows lie inside the input (in: channel 0 of
 * the first window's first tap; in_step bytes from one window to the next), every block of each in
 * one asm loop: per block the biases (one LDM), nine taps against the widened filter, ts_rq with each
 * channel's fields by one LDM, pack, the bytewise clamp (left out where the activation range is all
 * of int8, which SSAT has already made sure of), one word stored (DWB_BLOCKS, its operands in
 * DWB_REGISTERS). Pixel j goes to output + j * in_c (scratch NULL) or, for the staged variant, to
 * its ring slot *s, then pixel j - lag (if any) is copied out, as dw_blocks_row does pixel by pixel;
 * one call for the run, so the per-pixel cost is the loop's, not a call's. *j and *s: the first
 * pixel's flat index and ring slot, left at the next pixel's. */
static TS_NOINLINE void dw_blocks_full(const int8_t *in, int32_t in_step, int32_t n, const dw_blk *k, int8_t *output,
                                       int8_t *scratch, int32_t lag, int32_t *j, int32_t *s)
{
    const int32_t in_row = k->in_row, back = 2 * k->in_row - 4; /* p from the last row to the next block */
    const int32_t c_n = k->c1;
    const uint32_t lo4 = k->lim[0], hi4 = k->lim[1];
    const int clamp = lo4 != 0x80808080u || hi4 != 0x7F7F7F7Fu;
    /* where pixel jj goes; past the ring's last slot, its first */
    int8_t *dst = scratch != NULL ? scratch + (size_t)*s * c_n : output + (size_t)*j * c_n;
    int8_t *const wrap = scratch != NULL ? scratch + (size_t)(lag + 1) * c_n : NULL;
    /* c_n is 4 * groups here: with the ring and the output word-aligned, every copy is in words */
    const int words = ((uintptr_t)output & 3u) == 0 && ((uintptr_t)scratch & 3u) == 0;
    int32_t i, jj = *j;
    if (k->groups < 1) {
        return;
    }
/* the run's loop with the clamp `clamp` (its test outside the loop) */
#define DWB_FULL_RUN(clamp)                                                                             \
    for (i = 0; i < n; ++i, in += in_step, ++jj) {                                                      \
        int8_t *const out = dst, *const oend = dst + 4 * k->groups;                                     \
        DWB_REGISTERS;                                                                                  \
        DWB_BLOCKS(DWB_ROW3("64") DWB_NEXT_ROW DWB_ROW3("88") DWB_NEXT_ROW DWB_ROW3("112"), clamp);      \
        dst += c_n;                                                                                     \
        if (dst == wrap) {                                                                              \
            dst = scratch;                                                                              \
        }                                                                                               \
        if (scratch != NULL && jj >= lag) { /* dst: the slot of pixel jj + 1, which held jj - lag */    \
            if (words) {                                                                                \
                ts_copy_words(output + (size_t)(jj - lag) * c_n, dst, (size_t)c_n);                     \
            } else {                                                                                    \
                ts_copy_bytes(output + (size_t)(jj - lag) * c_n, dst, (size_t)c_n);                     \
            }                                                                                           \
        }                                                                                               \
    }
    if (clamp) {
        DWB_FULL_RUN(DWB_CLAMP)
    } else {
        DWB_FULL_RUN("")
    }
#undef DWB_FULL_RUN
    *j = jj;
    if (scratch != NULL) {
        *s = (int32_t)((dst - scratch) / c_n);
    }
}

/* One pixel whose 3x3 window has six taps inside the input: its three rows and two columns (the
 * left or right column outside) or its three columns and two rows (the top or bottom row outside),
 * in at channel 0 of the window's first tap inside the input: dw_blocks_full's loop with those six
 * taps (the products dw_blocks_rect would add, without its loop over the rows). Shapes: */
#define DWB_LEFT 0   /* filter columns 1, 2 inside */
#define DWB_RIGHT 1  /* columns 0, 1 */
#define DWB_TOP 2    /* rows 1, 2 */
#define DWB_BOTTOM 3 /* rows 0, 1 */
static TS_NOINLINE void dw_blocks_six(const int8_t *in, int8_t *out, int shape, const dw_blk *k)
{
    const int32_t in_row = k->in_row;
    const int32_t back = (shape >= DWB_TOP ? 1 : 2) * k->in_row - 4; /* p from the last row to the next block */
    const uint32_t lo4 = k->lim[0], hi4 = k->lim[1];
    int8_t *const oend = out + 4 * k->groups;
    DWB_REGISTERS;
    if (k->groups < 1) {
        return;
    }
    if (shape == DWB_LEFT) {
        DWB_BLOCKS(DWB_COLS2("72"), DWB_CLAMP);
    } else if (shape == DWB_RIGHT) {
        DWB_BLOCKS(DWB_COLS2("64"), DWB_CLAMP);
    } else if (shape == DWB_TOP) {
        DWB_BLOCKS(DWB_ROWS2("88", "112"), DWB_CLAMP);
    } else {
        DWB_BLOCKS(DWB_ROWS2("64", "88"), DWB_CLAMP);
    }
}

#undef DWB_BLOCKS
#undef DWB_REGISTERS
#undef DWB_COLS2
#undef DWB_ROWS2
#undef DWB_ROW3
#undef DWB_NEXT_ROW
#undef DWB_CLAMP
#undef DWB_RQ_LDM

/* DWW_TAP against the filter pointer fp (which walks the window's rectangle) instead of f. */
#define DWB_RECT_TAP(xoff, foff)                                                                        \
    "ldr     %[x], [%[p]" xoff "]\n\t"                                                                   \
    "ldrd    %[fe], %[fo], [%[fp], #" foff "]\n\t"                                                       \
    "sxtab16 %[t1], %[off2], %[x]\n\t"                                                                   \
    "smlabb  %[a0], %[t1], %[fe], %[a0]\n\t"                                                             \
    "smlatt  %[a2], %[t1], %[fe], %[a2]\n\t"                                                             \
    "sxtab16 %[x], %[off2], %[x], ror #8\n\t"                                                            \
    "smlabb  %[a1], %[x], %[fo], %[a1]\n\t"                                                              \
    "smlatt  %[a3], %[x], %[fo], %[a3]\n\t"

/* One pixel over the rectangle of its window inside the input, th rows (>= 1) of tw taps (1..3), in
 * at channel 0 of the rectangle's first tap, tap0 that tap's index in the filter: every block in
 * one asm loop: per block the biases, a loop over the rows, ts_rq, pack, clamp, one word stored. */
static TS_NOINLINE void dw_blocks_rect(const int8_t *in, int8_t *out, int32_t th, int32_t tw, int32_t tap0,
                                       int32_t w_row, const dw_blk *k)
{
    const int32_t in_row = k->in_row, back = th * k->in_row - 4; /* p from past the last row to the next block */
    const int32_t foff = 4 * DWB_FILTER_WORDS + 8 * tap0, bstride = 4 * k->block_words;
    const uint32_t lo4 = k->lim[0], hi4 = k->lim[1];
    int32_t groups = k->groups, rows;
    int8_t *outp = out;
    /* the block's 13 register operands in registers named here (TS_REG, ts_simd.h) */
    register int32_t a0 TS_REG("r0"), a1 TS_REG("r1"), a2 TS_REG("r2"), a3 TS_REG("r3");
    register const int8_t *pp TS_REG("r4") = in;
    register const int32_t *ff TS_REG("r5") = k->blocks;
    register const uint32_t *fp TS_REG("r6");
    register const int32_t c1 TS_REG("r8") = k->c1;
    register const uint32_t off2 TS_REG("r9") = k->off2;
    register uint32_t x TS_REG("r10"), fe TS_REG("r11"), fo TS_REG("r12"), t1 TS_REG("lr");
    if (groups < 1) {
        return;
    }
#define DWB_RECT(body)                                                                                  \
    __asm__ volatile("1:\n\t"                                                                            \
                     "ldrd    %[a0], %[a1], [%[f]]\n\t"                                                  \
                     "ldrd    %[a2], %[a3], [%[f], #8]\n\t"                                              \
                     "ldr     %[t1], %[foff]\n\t"                                                        \
                     "add     %[fp], %[f], %[t1]\n\t"                                                    \
                     "ldr     %[t1], %[th]\n\t"                                                          \
                     "str     %[t1], %[rows]\n\t"                                                        \
                     "2:\n\t" body "ldr     %[t1], %[in_row]\n\t"                                        \
                     "add     %[p], %[p], %[t1]\n\t"                                                     \
                     "ldr     %[t1], %[w_row]\n\t"                                                       \
                     "add     %[fp], %[fp], %[t1]\n\t"                                                   \
                     "ldr     %[t1], %[rows]\n\t"                                                        \
                     "subs    %[t1], %[t1], #1\n\t"                                                      \
                     "str     %[t1], %[rows]\n\t"                                                        \
                     "bne     2b\n\t" DWB_RQ4 DWB_PACK_CLAMP "ldr     %[x], %[outp]\n\t"                 \
                     "str     %[a0], [%[x]], #4\n\t"                                                     \
                     "str     %[x], %[outp]\n\t"                                                         \
                     "ldr     %[t1], %[back]\n\t"                                                        \
                     "sub     %[p], %[p], %[t1]\n\t"                                                     \
                     "ldr     %[t1], %[bstride]\n\t"                                                     \
                     "add     %[f], %[f], %[t1]\n\t"                                                     \
                     "ldr     %[t1], %[groups]\n\t"                                                      \
                     "subs    %[t1], %[t1], #1\n\t"                                                      \
                     "str     %[t1], %[groups]\n\t"                                                      \
                     "bne     1b"                                                                        \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [x] "=&r"(x),     \
                       [fe] "=&r"(fe), [fo] "=&r"(fo), [t1] "=&r"(t1), [p] "+r"(pp), [f] "+r"(ff),       \
                       [fp] "=&r"(fp), [rows] "=m"(rows), [outp] "+m"(outp), [groups] "+m"(groups)       \
                     : [c1] "r"(c1), [off2] "r"(off2), [in_row] "m"(in_row), [w_row] "m"(w_row),         \
                       [foff] "m"(foff), [th] "m"(th), [back] "m"(back), [bstride] "m"(bstride),         \
                       [lo4] "m"(lo4), [hi4] "m"(hi4)                                                    \
                     : "cc", "memory")
    if (tw == 3) {
        DWB_RECT(DWB_RECT_TAP("", "0") DWB_RECT_TAP(", %[c1]", "8") DWB_RECT_TAP(", %[c1], lsl #1", "16"));
    } else if (tw == 2) {
        DWB_RECT(DWB_RECT_TAP("", "0") DWB_RECT_TAP(", %[c1]", "8"));
    } else {
        DWB_RECT(DWB_RECT_TAP("", "0"));
    }
#undef DWB_RECT
}

/* Output pixel (y, x) of batch base in_b, every channel, through the blocks (the in_c % 4 tail
 * channels through the formula), into out. */
static TS_NOINLINE void dw_blocks_pixel(const ts_depthwise_conv2d_s8_params *p, const dw_blk *k,
                                        const int8_t *in_b, int32_t y, int32_t x, const int8_t *filter,
                                        const int32_t *bias, int8_t *out)
{
    const int32_t c_n = p->in_c, fw = p->filter_w, c4 = 4 * k->groups;
    const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
    int32_t ky0, ky1, kx0, kx1, th, tw, g;
    const int8_t *in = in_b; /* not read when the window misses the input */
    ts_tap_range(y0, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
    ts_tap_range(x0, 1, fw, p->in_w, &kx0, &kx1);
    th = ky1 - ky0;
    tw = th > 0 && kx1 > kx0 ? kx1 - kx0 : 0;
    if (tw > 0) {
        in += ((size_t)(y0 + ky0 * p->dilation_h) * p->in_w + (size_t)(x0 + kx0)) * c_n;
    }
    if (th == 3 && tw == 3 && fw == 3 && p->filter_h == 3) {
        int32_t j = 0, slot = 0;
        dw_blocks_full(in, 0, 1, k, out, NULL, 0, &j, &slot);
    } else if (tw > 0) {
        dw_blocks_rect(in, out, th, tw, ky0 * fw + kx0, 8 * fw, k);
    } else { /* no tap inside the input: the biases alone */
        for (g = 0; g < k->groups; ++g) {
            const int32_t *blk = k->blocks + (size_t)g * k->block_words;
            ts_rq4_store(out + 4 * g, blk[0], blk[1], blk[2], blk[3],
                         (const ts_rq *)(const void *)(blk + DWB_RQ_BYTES / 4), k->lim);
        }
    }
    if (c4 < c_n) {
        dw_tail(p, in, filter + (ky0 * fw + kx0) * c_n, c4, th, tw, k->in_row, fw * c_n, bias, out);
    }
}

/* Whether the blocks path takes p (ts_kernels.h, "Blocks"), and its per-layer values. */
/* Whether the blocks (ts_kernels.h, "Blocks") take the layer: fields no row range changes. */
static int dw_blocks_take(const ts_depthwise_conv2d_s8_params *p)
{
    return p->blocks != NULL && p->depth_multiplier == 1 && p->dilation_w == 1 && p->filter_w <= 3;
}

static int dw_blocks_setup(const ts_depthwise_conv2d_s8_params *p, dw_blk *k)
{
    if (!dw_blocks_take(p)) {
        return 0;
    }
    k->blocks = p->blocks;
    k->block_words = DWB_FILTER_WORDS + 2 * p->filter_h * p->filter_w;
    k->groups = p->in_c / 4;
    k->c1 = p->in_c;
    k->in_row = p->dilation_h * p->in_w * p->in_c;
    k->off2 = ts_pack2x16(p->input_offset);
    k->lim[0] = ts_bytes4(p->act_min);
    k->lim[1] = ts_bytes4(p->act_max);
    return 1;
}

/* Output row y of batch base in_b through the blocks, pixel by pixel (flat indices k0, k0 + 1, ..):
 * each pixel straight to its output bytes (scratch NULL), or, for the staged variant, into ring
 * slot k % (lag + 1) of scratch, then pixel k - lag (if any) copied out. With in_c a multiple of
 * 4, the pixels whose whole 3x3 windows lie inside the input go to dw_blocks_full as one run, a
 * pixel whose window has one row or column outside (six taps inside) to dw_blocks_six. */
static TS_NOINLINE void dw_blocks_row(const ts_depthwise_conv2d_s8_params *p, const dw_blk *k, const int8_t *in_b,
                                      int32_t y, int32_t k0, const int8_t *filter, const int32_t *bias,
                                      int8_t *output, int8_t *scratch, int32_t lag)
{
    const int32_t c_n = p->in_c, out_w = p->out_w, in_w = p->in_w, stride_w = p->stride_w, slots = lag + 1;
    const int32_t y0 = y * p->stride_h - p->pad_top;
    int32_t ky0, ky1, x, j = k0, s = k0 % slots;
    int full_rows, two_rows;
    const int8_t *in_y = in_b;
    ts_tap_range(y0, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
    full_rows = p->filter_h == 3 && p->filter_w == 3 && ky1 - ky0 == 3 && 4 * k->groups == c_n;
    two_rows = p->filter_h == 3 && p->filter_w == 3 && ky1 - ky0 == 2 && 4 * k->groups == c_n;
    if (full_rows || two_rows) { /* the window's first row inside the input */
        in_y += (size_t)(y0 + ky0 * p->dilation_h) * in_w * c_n;
    }
    for (x = 0; x < out_w;) {
        const int32_t x0 = x * stride_w - p->pad_left;
        int8_t *dst = scratch != NULL ? scratch + (size_t)s * c_n : output + (size_t)j * c_n;
        if (full_rows && x0 >= 0 && x0 + 3 <= in_w) { /* the run of windows inside, in one call */
            int32_t n = (in_w - 3 - x0) / stride_w + 1;
            n = n < out_w - x ? n : out_w - x;
            dw_blocks_full(in_y + (size_t)x0 * c_n, stride_w * c_n, n, k, output, scratch, lag, &j, &s);
            x += n;
            continue;
        }
        if (full_rows && x0 == -1 && in_w >= 2) { /* filter column 0 left of the input */
            dw_blocks_six(in_y, dst, DWB_LEFT, k);
        } else if (full_rows && x0 >= 0 && x0 + 2 == in_w) { /* filter column 2 right of it */
            dw_blocks_six(in_y + (size_t)x0 * c_n, dst, DWB_RIGHT, k);
        } else if (two_rows && x0 >= 0 && x0 + 3 <= in_w) { /* a filter row above or below it */
            dw_blocks_six(in_y + (size_t)x0 * c_n, dst, ky0 == 1 ? DWB_TOP : DWB_BOTTOM, k);
        } else {
            dw_blocks_pixel(p, k, in_b, y, x, filter, bias, dst);
        }
        if (scratch != NULL) {
            s = s + 1 == slots ? 0 : s + 1; /* now the slot of pixel j + 1, which held pixel j - lag */
            if (j >= lag) {
                ts_copy_bytes(output + (size_t)(j - lag) * c_n, scratch + (size_t)s * c_n, (size_t)c_n);
            }
        }
        ++x;
        ++j;
    }
}

#define DW_CHUNK 32
#define DW_WIDE_RUNS 8
/* Depth multiplier 1, dilation_w 1, accumulators within ts_rq's bound. Output rows go in chunks of
 * up to DW_CHUNK pixels; for each chunk, channels c..c+3 of every pixel of it (the requantisation
 * constants prepared once per chunk): runs of pixels whose whole 3x3 window is inside the input
 * (3x3 filters) through dw_runw3x3 or dw_run3x3, the others one by one through dw_taps4; then the
 * in_c % 4 tail channels of each pixel one at a time. Inlined into ts_depthwise_conv2d_s8 (GCC
 * stopped doing so by itself when fwide came: one frame instead of two, fewer spills). */
__attribute__((always_inline)) static inline void dw_fast_rq(const ts_depthwise_conv2d_s8_params *p,
                                                             const int8_t *input, const int8_t *filter,
                                                             const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, c_n = p->in_c, out_w = p->out_w;
    const int32_t fh = p->filter_h, fw = p->filter_w, stride_w = p->stride_w;
    const int32_t c4 = c_n & ~3, input_offset = p->input_offset;
    const int is3x3 = fh == 3 && fw == 3;
    int8_t px_kx0[DW_CHUNK], px_tw[DW_CHUNK], px_run[DW_CHUNK]; /* run: pixels left in a full-window run */
    uint32_t fwide[18]; /* the block's filter widened, for chunks with DW_WIDE_RUNS pixels in runs or more */
    int32_t in_runs, wide;
    ts_rq q[4];
    dw_run r;
    int32_t b, y, x, n, i, c, k;
    r.in_step = stride_w * c_n;
    r.out_step = c_n;
    r.in_row = p->dilation_h * in_w * c_n;
    r.w_row = fw * c_n;
    r.c1 = c_n;
    r.off2 = ts_pack2x16(input_offset);
    r.q = q;
    r.lim[0] = ts_bytes4(p->act_min);
    r.lim[1] = ts_bytes4(p->act_max);
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * c_n;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1, th;
            const int8_t *in_y;
            ts_tap_range(y0, p->dilation_h, fh, in_h, &ky0, &ky1);
            th = ky1 - ky0;
            in_y = in_b + (size_t)(y0 + ky0 * p->dilation_h) * in_w * c_n; /* used only when th > 0 */
            for (x = 0; x < out_w; x += n) {
                n = out_w - x < DW_CHUNK ? out_w - x : DW_CHUNK;
                for (i = n - 1; i >= 0; --i) {
                    int32_t kx0, kx1;
                    ts_tap_range((x + i) * stride_w - p->pad_left, 1, fw, in_w, &kx0, &kx1);
                    px_kx0[i] = (int8_t)kx0;
                    px_tw[i] = (int8_t)(th > 0 && kx1 > kx0 ? kx1 - kx0 : 0);
                    px_run[i] = (int8_t)(is3x3 && th == 3 && px_tw[i] == 3 ? (i + 1 < n ? px_run[i + 1] : 0) + 1 : 0);
                }
                for (i = 0, in_runs = 0; i < n; ++i) {
                    in_runs += px_run[i] > 0;
                }
                wide = in_runs >= DW_WIDE_RUNS; /* widening the filter (45 instructions) pays 2 per pixel */
                for (c = 0; c < c4; c += 4) {
                    for (k = 0; k < 4; ++k) {
                        ts_rq_prepare(p->multiplier[c + k], p->shift[c + k], p->output_offset, &q[k]);
                        r.bias4[k] = bias != NULL ? bias[c + k] : 0;
                    }
                    if (wide) {
                        dw_widen3x3(filter + c, c_n, fwide);
                    }
                    for (i = 0; i < n;) {
                        const int32_t x0 = (x + i) * stride_w - p->pad_left + px_kx0[i];
                        const int8_t *in = in_y + (size_t)x0 * c_n + c;
                        int8_t *out = output + (size_t)i * c_n + c;
                        if (px_run[i] > 0 && wide) {
                            dw_runw3x3(in, fwide, out, px_run[i], r.in_step, &r);
                            i += px_run[i];
                        } else if (px_run[i] > 0) {
                            dw_run3x3(in, filter + c, out, px_run[i], &r);
                            i += px_run[i];
                        } else {
                            int32_t acc[4];
                            acc[0] = r.bias4[0];
                            acc[1] = r.bias4[1];
                            acc[2] = r.bias4[2];
                            acc[3] = r.bias4[3];
                            if (px_tw[i] > 0) {
                                dw_taps4(in, filter + (ky0 * fw + px_kx0[i]) * c_n + c, th, px_tw[i], r.in_row,
                                         r.w_row, c_n, r.off2, acc);
                            }
                            ts_rq4_store(out, acc[0], acc[1], acc[2], acc[3], q, r.lim);
                            ++i;
                        }
                    }
                }
                for (i = 0; i < n && c4 < c_n; ++i) {
                    const int32_t x0 = (x + i) * stride_w - p->pad_left + px_kx0[i];
                    dw_tail(p, in_y + (size_t)x0 * c_n, filter + (ky0 * fw + px_kx0[i]) * c_n, c4, th, px_tw[i],
                            r.in_row, r.w_row, bias, output + (size_t)i * c_n);
                }
                output += (size_t)n * c_n;
            }
        }
    }
}
#endif

static void dw_fast(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                    const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, out_c = p->out_c;
    const int32_t in_row = p->dilation_h * in_w * in_c, in_col = p->dilation_w * in_c;
    const int32_t w_row = p->filter_w * out_c;
    int32_t b, y, x;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            int32_t ky0, ky1;
            ts_tap_range(y0, p->dilation_h, p->filter_h, in_h, &ky0, &ky1);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int8_t *in = in_b; /* not read when the window misses the input */
                const int8_t *w = filter;
                int32_t kx0, kx1;
                ts_tap_range(x0, p->dilation_w, p->filter_w, in_w, &kx0, &kx1);
                if (ky1 > ky0 && kx1 > kx0) {
                    in += ((size_t)(y0 + ky0 * p->dilation_h) * in_w + (size_t)(x0 + kx0 * p->dilation_w)) *
                          in_c;
                    w += ((size_t)ky0 * p->filter_w + (size_t)kx0) * out_c;
                }
                dw_pixel(p, in, w, ky1 > ky0 && kx1 > kx0 ? ky1 - ky0 : 0, kx1 - kx0, in_row, in_col, w_row,
                         bias, output);
                output += out_c;
            }
        }
    }
}

static void dw_generic(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output)
{
    /* Local copies: stores through the int8 output may alias *p, which would force reloads. */
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c, out_c = p->out_c;
    const int32_t filter_h = p->filter_h, filter_w = p->filter_w;
    const int32_t dilation_h = p->dilation_h, dilation_w = p->dilation_w;
    const int32_t depth_multiplier = p->depth_multiplier, input_offset = p->input_offset;
    int32_t b, y, x, c, m, ky, kx;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                for (c = 0; c < in_c; ++c) {
                    for (m = 0; m < depth_multiplier; ++m) {
                        const int32_t o = c * depth_multiplier + m;
                        int32_t acc = 0;
                        for (ky = 0; ky < filter_h; ++ky) {
                            const int32_t iy = y0 + ky * dilation_h;
                            if (iy < 0 || iy >= in_h) {
                                continue;
                            }
                            for (kx = 0; kx < filter_w; ++kx) {
                                const int32_t ix = x0 + kx * dilation_w;
                                int32_t in_val;
                                int32_t w_val;
                                if (ix < 0 || ix >= in_w) {
                                    continue;
                                }
                                in_val = in_b[((size_t)iy * in_w + ix) * in_c + c];
                                w_val = filter[((size_t)ky * filter_w + kx) * out_c + o];
                                acc += w_val * (in_val + input_offset);
                            }
                        }
                        if (bias != NULL) {
                            acc += bias[o];
                        }
                        acc = ts_requantize(acc, p->multiplier[o], p->shift[o]) + p->output_offset;
                        output[o] = (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
                    }
                }
                output += out_c;
            }
        }
    }
}

/* Set (e.g. -DTS_DEPTHWISE_GENERIC_ONLY=1) to run the reference loop for every shape. */
#ifndef TS_DEPTHWISE_GENERIC_ONLY
#define TS_DEPTHWISE_GENERIC_ONLY 0
#endif

int ts_depthwise_conv2d_s8(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                           const int8_t *filter, const int32_t *bias, int8_t *output)
{
    return ts_depthwise_conv2d_s8_checked(p, input, filter, bias, output, ts_depthwise_conv2d_s8_checks(p, bias));
}

/* What ts_depthwise_conv2d_s8 checks on every call that no row range changes (ts_kernels.h): bit 0,
 * the fast paths may run (shapes, input offset, multipliers); bit 1, dw_fast_rq's ts_rq bound holds
 * for every channel (depth_multiplier 1, dilation_w 1; looked at only where the blocks do not take
 * the layer, as dw_fast_rq runs only there; never on Helium cores, whose path for such layers
 * does not read it). */
int32_t ts_depthwise_conv2d_s8_checks(const ts_depthwise_conv2d_s8_params *p, const int32_t *bias)
{
    int32_t checks = 0;
    if (!TS_DEPTHWISE_GENERIC_ONLY && p->in_c >= 1 && p->filter_h >= 1 && p->filter_w >= 1 &&
        p->input_offset >= -255 && p->input_offset <= 255 && /* 16-bit lanes: int8 zero points give [-127, 128] */
        ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        checks = 1;
#if TS_RQ_ASM
        /* Helium cores take every depth multiplier 1 layer on their own path, which reads no bit 1 */
        if (!TS_MVE && p->depth_multiplier == 1 && p->dilation_w == 1 && !dw_blocks_take(p) &&
            ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, ts_acc_reach(p->filter_h * p->filter_w, p->input_offset),
                     TS_RQ_STEPS)) {
            checks |= 2;
        }
#endif
    }
    (void)bias; /* read only for the ts_rq bound */
    return checks;
}

static TS_ALWAYS_INLINE int dw_checked_paths(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output,
                                         int32_t checks, const int32_t *layer);

/* The blocks path alone (ts_kernels.h, "Legacy uint8"): a legacy uint8 layer's generator blocks
 * hold its filter plus the filter offset, which no other path of this file knows, so nothing here
 * may read the raw filter or fall back: with in_c a multiple of 4 the blocks read every product's
 * filter from the table (no tail channels through the formula), so the filter and bias pointers are
 * never read. 1 where the blocks ran (DSP cores with the asm), 0 where the caller runs its own loop. */
int32_t ts_depthwise_conv2d_s8_blocks(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, int8_t *output)
{
#if TS_RQ_ASM
    dw_blk blk;
    int32_t b, y;
    if (p->in_c < 4 || p->in_c % 4 != 0 || p->out_c != p->in_c || p->stride_h < 1 || p->stride_w < 1 ||
        p->dilation_h < 1 || p->input_offset < -255 || p->input_offset > 255 || !dw_blocks_setup(p, &blk)) {
        return 0;
    }
    for (b = 0; b < p->batches; ++b) {
        for (y = 0; y < p->out_h; ++y) {
            dw_blocks_row(p, &blk, input + (size_t)b * p->in_h * p->in_w * p->in_c, y, y * p->out_w, NULL, NULL,
                          output + (size_t)b * p->out_h * p->out_w * p->out_c, NULL, 0);
        }
    }
    return 1;
#else
    (void)p;
    (void)input;
    (void)output;
    return 0;
#endif
}

int ts_depthwise_conv2d_s8_checked(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output, int32_t checks)
{
    return dw_checked_paths(p, input, filter, bias, output, checks, NULL);
}

/* ts_depthwise_conv2d_s8_checked with the generator's whole-window table (Helium cores; ts_kernels.h). */
int ts_depthwise_conv2d_s8_layer(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                 const int8_t *filter, const int32_t *bias, int8_t *output, int32_t checks,
                                 const int32_t *layer)
{
    return dw_checked_paths(p, input, filter, bias, output, checks, layer);
}

/* The checked kernel's paths (inlined into both entries: ts_depthwise_conv2d_s8_checked's code as
 * before); layer (or NULL) read on Helium cores only. */
static TS_ALWAYS_INLINE int dw_checked_paths(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output,
                                         int32_t checks, const int32_t *layer)
{
#if TS_RQ_ASM
    dw_blk blk;
#endif
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->depth_multiplier < 1 || p->out_c != p->in_c * p->depth_multiplier) {
        return TS_ERR_PARAMS;
    }
    (void)layer;
    if ((checks & 1) == 0) {
        dw_generic(p, input, filter, bias, output);
#if TS_MVE
    } else if (p->depth_multiplier == 1 && p->in_c >= 32) {
        ts_mve_depthwise_pixels(p, input, filter, bias, output, layer);
    } else if (p->depth_multiplier == 1) {
        ts_mve_depthwise(p, input, filter, bias, output);
#endif
#if TS_RQ_ASM
    } else if (dw_blocks_setup(p, &blk)) {
        int32_t b, y;
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < p->out_h; ++y) {
                dw_blocks_row(p, &blk, input + (size_t)b * p->in_h * p->in_w * p->in_c, y, y * p->out_w, filter,
                              bias, output + (size_t)b * p->out_h * p->out_w * p->out_c, NULL, 0);
            }
        }
    } else if ((checks & 2) != 0) {
        dw_fast_rq(p, input, filter, bias, output);
#endif
    } else {
        dw_fast(p, input, filter, bias, output);
    }
    return TS_OK;
}

#if TS_RQ_ASM
/* One pixel's channel blocks c = 0, 4, .. (`groups` of them) through a nine-tap asm
 * block: in, flt, out at channel 0 of the pixel's first tap / the filter / the output; biases b4
 * (b_step 4, or 0 for none) and requantisation constants q advance with the channels. */
static TS_NOINLINE void dw_groups3x3(const int8_t *in, const int8_t *flt, int8_t *out, int32_t groups,
                                     const int32_t *b4, int32_t b_step, const ts_rq *q, const dw_run *r)
{
    const int32_t in_row = r->in_row - 2 * r->c1, w_row = r->w_row - 2 * r->c1;
    /* the block's 12 register operands in registers named here (TS_REG, ts_simd.h); the third tap
     * at c1, lsl #1: one register fewer than three column registers (M55) */
    register const int32_t c1 TS_REG("r6") = r->c1;
    register const uint32_t off2 TS_REG("r8") = r->off2;
    register uint32_t x TS_REG("r9"), w TS_REG("r10"), t1 TS_REG("r11"), t2 TS_REG("r12");
#define DW_ROW DW_TAP("") DW_TAP(", %[c1]") DW_TAP(", %[c1], lsl #1")
    for (; groups > 0; --groups) {
        register int32_t a0 TS_REG("r0") = b4[0], a1 TS_REG("r1") = b4[1];
        register int32_t a2 TS_REG("r2") = b4[2], a3 TS_REG("r3") = b4[3];
        register const int8_t *pp TS_REG("r4") = in, *ff TS_REG("r5") = flt;
        __asm__(DW_ROW "add     %[p], %[p], %[c1], lsl #1\n\t"
                       "add     %[f], %[f], %[c1], lsl #1\n\t" DW_NEXT_ROW DW_ROW
                       "add     %[p], %[p], %[c1], lsl #1\n\t"
                       "add     %[f], %[f], %[c1], lsl #1\n\t" DW_NEXT_ROW DW_ROW
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [w] "=&r"(w),
                  [t1] "=&r"(t1), [t2] "=&r"(t2), [p] "+r"(pp), [f] "+r"(ff)
                : [c1] "r"(c1), [off2] "r"(off2), [in_row] "m"(in_row), [w_row] "m"(w_row)
                : "memory");
        ts_rq4_store(out, a0, a1, a2, a3, q, r->lim);
        in += 4;
        flt += 4;
        out += 4;
        b4 += b_step;
        q += 4;
    }
#undef DW_ROW
}

/* Output pixel (y, x) of batch base in_b, every channel, through the dw_fast_rq arithmetic with the
 * requantisation constants `q` prepared at compile time ([out_c] ts_rq fields), into out. */
static TS_NOINLINE void dw_pixel_rq(const ts_depthwise_conv2d_s8_params *p, const int8_t *in_b, int32_t y,
                                    int32_t x,
                        const int8_t *filter, const int32_t *bias, const int32_t *rq_table, dw_run *r,
                        int8_t *out)
{
    const int32_t c_n = p->in_c, fw = p->filter_w, c4 = c_n & ~3;
    const int32_t y0 = y * p->stride_h - p->pad_top, x0 = x * p->stride_w - p->pad_left;
    static const int32_t no_bias[4] = {0, 0, 0, 0};
    const int32_t *b4 = bias != NULL ? bias : no_bias, b_step = bias != NULL ? 4 : 0;
    const ts_rq *q = (const ts_rq *)(const void *)rq_table;
    int32_t ky0, ky1, kx0, kx1, th, tw, c;
    const int8_t *in = in_b; /* not read when the window misses the input */
    ts_tap_range(y0, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
    ts_tap_range(x0, 1, fw, p->in_w, &kx0, &kx1);
    th = ky1 - ky0;
    tw = th > 0 && kx1 > kx0 ? kx1 - kx0 : 0;
    if (tw > 0) {
        in += ((size_t)(y0 + ky0 * p->dilation_h) * p->in_w + (size_t)(x0 + kx0)) * c_n;
    }
    if (fw == 3 && p->filter_h == 3 && th == 3 && tw == 3) {
        dw_groups3x3(in, filter, out, c4 / 4, b4, b_step, q, r);
    } else {
        for (c = 0; c < c4; c += 4) {
            int32_t acc[4];
            acc[0] = b4[0];
            acc[1] = b4[1];
            acc[2] = b4[2];
            acc[3] = b4[3];
            if (tw > 0) {
                dw_taps4(in + c, filter + (ky0 * fw + kx0) * c_n + c, th, tw, r->in_row, r->w_row, c_n, r->off2,
                         acc);
            }
            ts_rq4_store(out + c, acc[0], acc[1], acc[2], acc[3], q, r->lim);
            b4 += b_step;
            q += 4;
        }
    }
    if (c4 < c_n) {
        dw_tail(p, in, filter + (ky0 * fw + kx0) * c_n, c4, th, tw, r->in_row, r->w_row, bias, out);
    }
}

/* Output row y (batch base in_b, its first pixel k0 of the flat order) for the staged variant on the
 * ts_rq path: each pixel k into ring slot k % (lag + 1), then pixel k - lag (if any) copied out. A
 * pixel whose whole 3x3 window is inside the input, with in_c a multiple of 4, takes dw_groups3x3;
 * any other pixel dw_pixel_rq. */
static TS_NOINLINE void dw_row_rq(const ts_depthwise_conv2d_s8_params *p, const int8_t *in_b, int32_t y,
                                  int32_t k0, const int8_t *filter, const int32_t *bias, const int32_t *rq_table,
                                  dw_run *r, int8_t *output, int8_t *scratch, int32_t lag)
{
    static const int32_t no_bias[4] = {0, 0, 0, 0};
    const int32_t c_n = p->in_c, out_w = p->out_w, in_w = p->in_w, slots = lag + 1;
    const int32_t y0 = y * p->stride_h - p->pad_top;
    const int32_t *b4 = bias != NULL ? bias : no_bias, b_step = bias != NULL ? 4 : 0;
    const ts_rq *q = (const ts_rq *)(const void *)rq_table;
    int32_t ky0, ky1, x, k, s = k0 % slots;
    int full_rows;
    const int8_t *in_y = in_b;
    ts_tap_range(y0, p->dilation_h, p->filter_h, p->in_h, &ky0, &ky1);
    full_rows = p->filter_h == 3 && p->filter_w == 3 && ky1 - ky0 == 3 && (c_n & 3) == 0;
    if (full_rows) {
        in_y += (size_t)y0 * in_w * c_n;
    }
    for (x = 0, k = k0; x < out_w; ++x, ++k) {
        const int32_t x0 = x * p->stride_w - p->pad_left;
        int8_t *slot = scratch + (size_t)s * c_n;
        if (full_rows && x0 >= 0 && x0 + 3 <= in_w) {
            dw_groups3x3(in_y + (size_t)x0 * c_n, filter, slot, c_n / 4, b4, b_step, q, r);
        } else {
            dw_pixel_rq(p, in_b, y, x, filter, bias, rq_table, r, slot);
        }
        s = s + 1 == slots ? 0 : s + 1; /* now the slot of pixel k + 1, which held pixel k - lag */
        if (k >= lag) {
            ts_copy_bytes(output + (size_t)(k - lag) * c_n, scratch + (size_t)s * c_n, (size_t)c_n);
        }
    }
}
#endif

#if TS_MVE
/* Output row y (batch base in_b, its first pixel k0 of the flat order) for the staged variant on
 * Helium: each pixel k into ring slot k % (lag + 1) (ts_mve_dw_taps when every tap column of its
 * window is inside the input, else ts_mve_dw_pixel), then pixel k - lag (if any) copied out. The
 * parameters are copied once so that the row's invariants stay out of the slot stores' way. */
static TS_NOINLINE void dw_row_mve(const ts_depthwise_conv2d_s8_params *p, const int8_t *in_b, int32_t y,
                                   int32_t k0, const int8_t *filter, const int32_t *bias, const int32_t *eff,
                                   int8_t *output, int8_t *scratch, int32_t lag)
{
    const ts_depthwise_conv2d_s8_params q = *p;
    const int32_t c_n = q.in_c, slots = lag + 1, fw = q.filter_w, dw = q.dilation_w;
    const int32_t iy0 = y * q.stride_h - q.pad_top, reach = (fw - 1) * dw;
    int32_t x, k, s = k0 % slots, ky0, ky1;
    const int8_t *in_y = in_b;
    ts_tap_range(iy0, q.dilation_h, q.filter_h, q.in_h, &ky0, &ky1);
    if (ky1 > ky0) {
        in_y += (size_t)(iy0 + ky0 * q.dilation_h) * q.in_w * c_n;
    }
    for (x = 0, k = k0; x < q.out_w; ++x, ++k) {
        const int32_t ix0 = x * q.stride_w - q.pad_left;
        int8_t *slot = scratch + (size_t)s * c_n;
        if (ky1 > ky0 && ix0 >= 0 && ix0 + reach < q.in_w) { /* every tap column inside the input */
            ts_mve_dw_taps(&q, in_y + (size_t)ix0 * c_n, filter + (size_t)ky0 * fw * c_n, ky1 - ky0, fw, bias,
                           ky1 - ky0 == q.filter_h ? eff : NULL, slot);
        } else {
            ts_mve_dw_pixel(&q, in_b, y, x, filter, bias, slot);
        }
        s = s + 1 == slots ? 0 : s + 1; /* now the slot of pixel k + 1, which held pixel k - lag */
        if (k >= lag) {
            ts_copy_bytes(output + (size_t)(k - lag) * c_n, scratch + (size_t)s * c_n, (size_t)c_n);
        }
    }
}
#endif

/* The staged in-place variant (see ts_kernels.h, "DEPTHWISE_CONV_2D staged"): output pixel k of the
 * flat order is computed into ring slot k % (lag + 1) of `scratch`, then pixel k - lag is copied
 * from its slot to the output; the last `lag` pixels are copied after the last one is computed. */
int ts_depthwise_conv2d_s8_staged(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                  const int8_t *filter, const int32_t *bias, int8_t *output, int8_t *scratch,
                                  int32_t lag, const int32_t *rq_table)
{
    const int32_t out_c = p->out_c, out_h = p->out_h, out_w = p->out_w, slots = lag + 1;
    const int32_t pixels = p->batches * out_h * out_w;
    const size_t in_batch = (size_t)p->in_h * p->in_w * p->in_c;
    ts_depthwise_conv2d_s8_params sub = *p;
    int32_t k, j;
    int mode = 0; /* 0 reference loop, 1 fast, 2 fast with compile-time ts_rq, 3 Helium, 4 blocks */
#if TS_RQ_ASM
    dw_run r;
    dw_blk blk;
#endif
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->depth_multiplier < 1 || p->out_c != p->in_c * p->depth_multiplier || lag < 0) {
        return TS_ERR_PARAMS;
    }
    if (!TS_DEPTHWISE_GENERIC_ONLY && p->in_c >= 1 && p->filter_h >= 1 && p->filter_w >= 1 &&
        p->input_offset >= -255 && p->input_offset <= 255 && ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        mode = 1;
#if TS_MVE
        if (p->depth_multiplier == 1) {
            mode = 3; /* as ts_depthwise_conv2d_s8: Helium before the DSP paths */
        }
#endif
#if TS_RQ_ASM
        if (mode == 1 && dw_blocks_setup(p, &blk)) {
            mode = 4;
        }
        if (mode == 1 && rq_table != NULL && p->depth_multiplier == 1 && p->dilation_w == 1 &&
            ts_rq_ok(p->multiplier, p->shift, bias, p->out_c, ts_acc_reach(p->filter_h * p->filter_w, p->input_offset),
                     TS_RQ_STEPS | TS_RQ_CONST)) {
            mode = 2;
            r.in_step = p->stride_w * p->in_c;
            r.out_step = p->in_c;
            r.in_row = p->dilation_h * p->in_w * p->in_c;
            r.w_row = p->filter_w * p->in_c;
            r.c1 = p->in_c;
            r.off2 = ts_pack2x16(p->input_offset);
            r.lim[0] = ts_bytes4(p->act_min);
            r.lim[1] = ts_bytes4(p->act_max);
        }
#endif
    }
    (void)rq_table;
    sub.batches = 1;
    sub.out_h = sub.out_w = 1;
    int32_t b = 0, y = 0, x = 0, s = 0; /* pixel k = (b, y, x), its ring slot s */
#if TS_RQ_ASM
    if (mode == 2) {
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < out_h; ++y) {
                dw_row_rq(p, input + (size_t)b * in_batch, y, (b * out_h + y) * out_w, filter, bias, rq_table, &r,
                          output, scratch, lag);
            }
        }
    }
#endif
#if TS_RQ_ASM
    if (mode == 4) {
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < out_h; ++y) {
                dw_blocks_row(p, &blk, input + (size_t)b * in_batch, y, (b * out_h + y) * out_w, filter, bias, output,
                              scratch, lag);
            }
        }
    }
#endif
#if TS_MVE
    if (mode == 3) {
        /* whole windows start from bias + input_offset * sum(w), made once (ts_mve_dw_eff_table) */
        int32_t eff_tab[TS_MVE_DW_EFF_CH];
        const int32_t *eff = NULL;
        if (p->in_c <= TS_MVE_DW_EFF_CH) {
            ts_mve_dw_eff_table(p, filter, bias, eff_tab);
            eff = eff_tab;
        }
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < out_h; ++y) {
                dw_row_mve(p, input + (size_t)b * in_batch, y, (b * out_h + y) * out_w, filter, bias, eff, output,
                           scratch, lag);
            }
        }
    }
#endif
    for (k = mode >= 2 ? pixels : 0; k < pixels; ++k) {
        const int8_t *in_b = input + (size_t)b * in_batch;
        int8_t *slot = scratch + (size_t)s * out_c;
        {
            /* the one pixel as a 1x1 output whose window starts where (y, x)'s does */
            sub.pad_top = p->pad_top - y * p->stride_h;
            sub.pad_left = p->pad_left - x * p->stride_w;
            if (mode == 1) {
                dw_fast(&sub, in_b, filter, bias, slot);
            } else {
                dw_generic(&sub, in_b, filter, bias, slot);
            }
        }
        s = s + 1 == slots ? 0 : s + 1; /* now the slot of pixel k + 1, which held pixel k - lag */
        if (k >= lag) {
            ts_copy_bytes(output + (size_t)(k - lag) * out_c, scratch + (size_t)s * out_c, (size_t)out_c);
        }
        if (++x == out_w) {
            x = 0;
            if (++y == out_h) {
                y = 0;
                ++b;
            }
        }
    }
    for (j = pixels - lag > 0 ? pixels - lag : 0; j < pixels; ++j) {
        ts_copy_bytes(output + (size_t)j * out_c, scratch + (size_t)(j % slots) * out_c, (size_t)out_c);
    }
    return TS_OK;
}
