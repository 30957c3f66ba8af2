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
 *  - dw_generic, the original loop nest, kept as the reference.
 */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

/* The planar path (dw_planar) on DSP cores, and in portable C on hosts (where the tests run it). */
#if TS_RQ_ASM || !defined(__arm__)
#define TS_DW_PLANAR 1
#else
#define TS_DW_PLANAR 0
#endif

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

#define DW_CHUNK 32

/* Depth multiplier 1, dilation_w 1, accumulators within ts_rq's bound. Output rows go in chunks of
 * up to DW_CHUNK pixels; for each chunk, channels c..c+3 of every pixel of it (the requantisation
 * constants prepared once per chunk): runs of pixels whose whole 3x3 window is inside the input
 * (3x3 filters) through dw_run3x3, the others one by one through dw_taps4; then the in_c % 4 tail
 * channels of each pixel one at a time. */
static TS_NOINLINE void dw_fast_rq(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, c_n = p->in_c, out_w = p->out_w;
    const int32_t fh = p->filter_h, fw = p->filter_w, stride_w = p->stride_w;
    const int32_t c4 = c_n & ~3, input_offset = p->input_offset;
    const int is3x3 = fh == 3 && fw == 3;
    int8_t px_kx0[DW_CHUNK], px_tw[DW_CHUNK], px_run[DW_CHUNK]; /* run: pixels left in a full-window run */
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
                for (c = 0; c < c4; c += 4) {
                    for (k = 0; k < 4; ++k) {
                        ts_rq_prepare(p->multiplier[c + k], p->shift[c + k], p->output_offset, &q[k]);
                        r.bias4[k] = bias != NULL ? bias[c + k] : 0;
                    }
                    for (i = 0; i < n;) {
                        const int32_t x0 = (x + i) * stride_w - p->pad_left + px_kx0[i];
                        const int8_t *in = in_y + (size_t)x0 * c_n + c;
                        int8_t *out = output + (size_t)i * c_n + c;
                        if (px_run[i] > 0) {
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
                    int32_t ky, kx;
                    for (c = c4; c < c_n; ++c) {
                        const int8_t *in_r = in_y + (size_t)x0 * c_n + c;
                        const int8_t *w_r = filter + (ky0 * fw + px_kx0[i]) * c_n + c;
                        int32_t acc = bias != NULL ? bias[c] : 0;
                        for (ky = 0; ky < (px_tw[i] > 0 ? th : 0); ++ky) {
                            for (kx = 0; kx < px_tw[i]; ++kx) {
                                acc += (int32_t)w_r[kx * c_n] * ((int32_t)in_r[kx * c_n] + input_offset);
                            }
                            in_r += r.in_row;
                            w_r += r.w_row;
                        }
                        output[(size_t)i * c_n + c] = dw_out(p, acc, c);
                    }
                }
                output += (size_t)n * c_n;
            }
        }
    }
}
#endif

#if TS_DW_PLANAR
/* ---- The planar path: 3x3 filters, depth multiplier 1, dilation 1, stride_w 1 or 2 -------------
 * Per output row, in chunks of up to 16 pixels (stride_w 1) or 8 (stride_w 2), and per block of
 * four channels: the chunk's three input rows are staged on the stack as (x + input_offset) in
 * 16-bit lanes, one plane per channel (column j of a row at halfword j), zero where the window
 * leaves the input, so that every pixel, clipped or not, takes the same nine products; the filter
 * as two words per channel and row, [w0 | w1] and [w1 | w2]. Four output pixels of one channel then
 * take, per filter row, three staged words and eight SMLAD / SMLABT / SMLATB: pixels x and x + 1
 * (stride 1) share [s0 | s1] and [s2 | s3], e.g. out_x += s0 w0 + s1 w1 (SMLAD) + s2 w2 (SMLABT)
 * and out_{x+1} += s1 w0 (SMLATB) + s2 w1 + s3 w2 (SMLAD). The products and the bias are the same
 * integers as dw_generic's (padded taps add 0), summed in another order within the accumulator
 * bound; the four results of a channel are requantised with ts_rq (the constants prepared once per
 * chunk and block), clamped bytewise and stored a byte each. */
#define DWP_PITCH 18 /* halfwords per staged row: 4 groups of 4 pixels at stride 1 (16 + 2), 2 at stride 2 */
#define DWP_ROWW (DWP_PITCH / 2)  /* the same in words */
#define DWP_PLANE (3 * DWP_ROWW)  /* words per channel plane */

#if TS_DSP
static inline int32_t dwp_smlad(uint32_t a, uint32_t b, int32_t acc) { return __smlad(a, b, acc); }
static inline int32_t dwp_smlabt(uint32_t a, uint32_t b, int32_t acc) { return __smlabt(a, b, acc); }
static inline int32_t dwp_smlatb(uint32_t a, uint32_t b, int32_t acc) { return __smlatb(a, b, acc); }
#else
static inline int32_t dwp_lo(uint32_t a) { return (int32_t)(int16_t)(uint16_t)(a & 0xFFFFu); }
static inline int32_t dwp_hi(uint32_t a) { return (int32_t)(int16_t)(uint16_t)(a >> 16); }
static inline int32_t dwp_smlad(uint32_t a, uint32_t b, int32_t acc)
{
    return acc + dwp_lo(a) * dwp_lo(b) + dwp_hi(a) * dwp_hi(b);
}
static inline int32_t dwp_smlabt(uint32_t a, uint32_t b, int32_t acc) { return acc + dwp_lo(a) * dwp_hi(b); }
static inline int32_t dwp_smlatb(uint32_t a, uint32_t b, int32_t acc) { return acc + dwp_hi(a) * dwp_lo(b); }
#endif

/* Two 16-bit lanes [lo | hi] as one word. */
static inline uint32_t dwp_pack(int32_t lo, int32_t hi) { return ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16); }

/* Halfword j of row r of channel k's plane in st (words). */
static inline void dwp_put2(uint32_t *st, int32_t k, int32_t r, int32_t j, uint32_t v)
{
    memcpy((unsigned char *)st + 4 * (k * DWP_PLANE + r * DWP_ROWW) + 2 * j, &v, 4);
}
static inline void dwp_put1(uint32_t *st, int32_t k, int32_t r, int32_t j, int32_t v)
{
    const int16_t h = (int16_t)v;
    memcpy((unsigned char *)st + 4 * (k * DWP_PLANE + r * DWP_ROWW) + 2 * j, &h, 2);
}

/* Stages channels c..c+3 (in_b at channel c of batch b) of input rows iy0..iy0+2, columns
 * ix0 + j for j < cols (even), into st: (x + input_offset) for 0 <= j < need inside the input, 0
 * elsewhere. Reads only those input bytes. */
static TS_NOINLINE void dwp_stage(const int8_t *in_b, int32_t in_h, int32_t in_w, int32_t c_n, int32_t iy0,
                                  int32_t ix0, int32_t need, int32_t cols, int32_t input_offset, uint32_t *st)
{
    int32_t r, k, j;
#if TS_DSP
    const uint32_t off2 = ts_pack2x16(input_offset);
#endif
    int32_t jl = ix0 < 0 ? -ix0 : 0, jh = in_w - ix0 < need ? in_w - ix0 : need;
    if (jh < jl) {
        jh = jl;
    }
    for (r = 0; r < 3; ++r) {
        const int32_t iy = iy0 + r;
        if (iy < 0 || iy >= in_h) {
            for (k = 0; k < 4; ++k) {
                for (j = 0; j < cols / 2; ++j) {
                    st[k * DWP_PLANE + r * DWP_ROWW + j] = 0;
                }
            }
            continue;
        }
        for (j = 0; j < jl; ++j) {
            for (k = 0; k < 4; ++k) {
                dwp_put1(st, k, r, j, 0);
            }
        }
        {
            const int8_t *src = in_b + ((size_t)iy * in_w + (size_t)(ix0 + jl)) * c_n;
            for (j = jl; j + 1 < jh; j += 2) {
#if TS_DSP
                const uint32_t w0 = ts_load4(src), w1 = ts_load4(src + c_n);
                const uint32_t e0 = ts_even_off(w0, off2), o0 = ts_odd_off(w0, off2);
                const uint32_t e1 = ts_even_off(w1, off2), o1 = ts_odd_off(w1, off2);
                dwp_put2(st, 0, r, j, (e0 & 0xFFFFu) | (e1 << 16));
                dwp_put2(st, 1, r, j, (o0 & 0xFFFFu) | (o1 << 16));
                dwp_put2(st, 2, r, j, (e0 >> 16) | (e1 & 0xFFFF0000u));
                dwp_put2(st, 3, r, j, (o0 >> 16) | (o1 & 0xFFFF0000u));
#else
                for (k = 0; k < 4; ++k) {
                    dwp_put2(st, k, r, j, dwp_pack(src[k] + input_offset, src[c_n + k] + input_offset));
                }
#endif
                src += 2 * c_n;
            }
            if (j < jh) {
                for (k = 0; k < 4; ++k) {
                    dwp_put1(st, k, r, j, src[k] + input_offset);
                }
                ++j;
            }
        }
        for (; j < cols; ++j) {
            for (k = 0; k < 4; ++k) {
                dwp_put1(st, k, r, j, 0);
            }
        }
    }
}

/* The filter of channels c..c+3 (flt at channel c of tap 0), per channel six words: for each row
 * [w0 | w1], [w1 | w2]. */
static TS_NOINLINE void dwp_stage_filter(const int8_t *flt, int32_t c_n, uint32_t *fw)
{
    int32_t k, r;
    for (k = 0; k < 4; ++k) {
        const int8_t *f = flt + k;
        for (r = 0; r < 3; ++r) {
            const int32_t w0 = f[0], w1 = f[c_n], w2 = f[2 * c_n];
            fw[k * 6 + 2 * r] = dwp_pack(w0, w1);
            fw[k * 6 + 2 * r + 1] = dwp_pack(w1, w2);
            f += 3 * c_n;
        }
    }
}

/* Four accumulators of one channel (pixels x..x+3) requantised with q, clamped to lim, the first n
 * of them stored c_n bytes apart from out. */
static inline void dwp_store(int8_t *out, int32_t c_n, int32_t n, int32_t a0, int32_t a1, int32_t a2, int32_t a3,
                             const ts_rq *q, const uint32_t *lim)
{
#if TS_RQ_ASM
    const uint32_t w = ts_pack4_clamp(ts_rq_apply(a0, q), ts_rq_apply(a1, q), ts_rq_apply(a2, q),
                                      ts_rq_apply(a3, q), lim[0], lim[1]);
    out[0] = (int8_t)w;
    if (n == 4) {
        out[c_n] = (int8_t)(w >> 8);
        out[2 * c_n] = (int8_t)(w >> 16);
        out[3 * c_n] = (int8_t)(w >> 24);
    } else {
        if (n > 1) {
            out[c_n] = (int8_t)(w >> 8);
        }
        if (n > 2) {
            out[2 * c_n] = (int8_t)(w >> 16);
        }
    }
#else
    const int32_t lo = (int8_t)(lim[0] & 0xFFu), hi = (int8_t)(lim[1] & 0xFFu);
    const int32_t v[4] = {a0, a1, a2, a3};
    int32_t i;
    for (i = 0; i < n; ++i) {
        out[i * c_n] = (int8_t)ts_clamp_i32(ts_clamp_i32(ts_rq_emulated(v[i], q), -128, 127), lo, hi);
    }
#endif
}

/* n pixels (stride_w 1 or 2) of one channel from its plane pl and filter words f (six), into out
 * (the channel's byte of the first pixel, pixels c_n bytes apart). */
static TS_NOINLINE void dwp_channel(const uint32_t *pl, const uint32_t *f, int32_t bias, const ts_rq *q0,
                                    const uint32_t *lim, int8_t *out, int32_t c_n, int32_t n, int32_t stride)
{
    const ts_rq q = *q0;
    const uint32_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4], f5 = f[5];
    const uint32_t l2[2] = {lim[0], lim[1]};
    int32_t g;
    if (stride == 1) {
        for (g = 0; g < n; g += 4, pl += 2, out += 4 * c_n) {
            int32_t a0, a1, a2, a3;
            uint32_t p0 = pl[0], p2 = pl[1], p4 = pl[2];
            a0 = dwp_smlabt(p2, f1, dwp_smlad(p0, f0, bias));
            a1 = dwp_smlad(p2, f1, dwp_smlatb(p0, f0, bias));
            a2 = dwp_smlabt(p4, f1, dwp_smlad(p2, f0, bias));
            a3 = dwp_smlad(p4, f1, dwp_smlatb(p2, f0, bias));
            p0 = pl[DWP_ROWW], p2 = pl[DWP_ROWW + 1], p4 = pl[DWP_ROWW + 2];
            a0 = dwp_smlabt(p2, f3, dwp_smlad(p0, f2, a0));
            a1 = dwp_smlad(p2, f3, dwp_smlatb(p0, f2, a1));
            a2 = dwp_smlabt(p4, f3, dwp_smlad(p2, f2, a2));
            a3 = dwp_smlad(p4, f3, dwp_smlatb(p2, f2, a3));
            p0 = pl[2 * DWP_ROWW], p2 = pl[2 * DWP_ROWW + 1], p4 = pl[2 * DWP_ROWW + 2];
            a0 = dwp_smlabt(p2, f5, dwp_smlad(p0, f4, a0));
            a1 = dwp_smlad(p2, f5, dwp_smlatb(p0, f4, a1));
            a2 = dwp_smlabt(p4, f5, dwp_smlad(p2, f4, a2));
            a3 = dwp_smlad(p4, f5, dwp_smlatb(p2, f4, a3));
            dwp_store(out, c_n, n - g < 4 ? n - g : 4, a0, a1, a2, a3, &q, l2);
        }
    } else {
        for (g = 0; g < n; g += 4, pl += 4, out += 4 * c_n) {
            int32_t a0, a1, a2, a3, r;
            a0 = a1 = a2 = a3 = bias;
            for (r = 0; r < 3; ++r) {
                const uint32_t *row = pl + r * DWP_ROWW, fa = f[2 * r], fb = f[2 * r + 1];
                const uint32_t p0 = row[0], p2 = row[1], p4 = row[2], p6 = row[3], p8 = row[4];
                a0 = dwp_smlabt(p2, fb, dwp_smlad(p0, fa, a0));
                a1 = dwp_smlabt(p4, fb, dwp_smlad(p2, fa, a1));
                a2 = dwp_smlabt(p6, fb, dwp_smlad(p4, fa, a2));
                a3 = dwp_smlabt(p8, fb, dwp_smlad(p6, fa, a3));
            }
            dwp_store(out, c_n, n - g < 4 ? n - g : 4, a0, a1, a2, a3, &q, l2);
        }
    }
}

/* ts_depthwise_conv2d_s8 through the planar path (see above): 3x3, depth multiplier 1, dilation 1,
 * stride_w 1 or 2, accumulators within ts_rq's bound. Per output row, chunks of up to 16 / 8
 * pixels; per chunk the channel blocks of four in turn (staged, then channel by channel over the
 * chunk's pixels), then the in_c % 4 tail channels pixel by pixel. */
static TS_NOINLINE void dw_planar(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, c_n = p->in_c, out_w = p->out_w, s = p->stride_w;
    const int32_t c4 = c_n & ~3, chunk = s == 1 ? 16 : 8;
    uint32_t st[4 * DWP_PLANE], fw[24], lim[2];
    ts_rq q[4];
    int32_t b, y, x, n, c, k, i;
    lim[0] = ts_bytes4(p->act_min);
    lim[1] = ts_bytes4(p->act_max);
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * c_n;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t iy0 = y * p->stride_h - p->pad_top;
            for (x = 0; x < out_w; x += n) {
                const int32_t ix0 = x * s - p->pad_left;
                int32_t need, cols;
                n = out_w - x < chunk ? out_w - x : chunk;
                need = (n - 1) * s + 3;                        /* the chunk's columns */
                cols = s == 1 ? ((n + 3) & ~3) + 2 : 2 * ((n + 3) & ~3) + 2; /* what its groups read */
                for (c = 0; c < c4; c += 4) {
                    dwp_stage(in_b + c, in_h, in_w, c_n, iy0, ix0, need, cols, p->input_offset, st);
                    dwp_stage_filter(filter + c, c_n, fw);
                    for (k = 0; k < 4; ++k) {
                        ts_rq_prepare(p->multiplier[c + k], p->shift[c + k], p->output_offset, &q[k]);
                    }
                    for (k = 0; k < 4; ++k) {
                        dwp_channel(st + k * DWP_PLANE, fw + 6 * k, bias != NULL ? bias[c + k] : 0, &q[k], lim,
                                    output + c + k, c_n, n, s);
                    }
                }
                for (i = 0; i < n && c4 < c_n; ++i) {
                    const int32_t y0 = iy0, x0 = (x + i) * s - p->pad_left;
                    int32_t ky0, ky1, kx0, kx1, ky, kx;
                    ts_tap_range(y0, 1, 3, in_h, &ky0, &ky1);
                    ts_tap_range(x0, 1, 3, in_w, &kx0, &kx1);
                    for (c = c4; c < c_n; ++c) {
                        int32_t acc = bias != NULL ? bias[c] : 0;
                        for (ky = ky0; ky < ky1; ++ky) {
                            for (kx = kx0; kx < kx1; ++kx) {
                                acc += (int32_t)filter[(ky * 3 + kx) * c_n + c] *
                                       ((int32_t)in_b[((size_t)(y0 + ky) * in_w + (size_t)(x0 + kx)) * c_n + c] +
                                        p->input_offset);
                            }
                        }
                        output[(size_t)i * c_n + c] = dw_out(p, acc, c);
                    }
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
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->depth_multiplier < 1 || p->out_c != p->in_c * p->depth_multiplier) {
        return TS_ERR_PARAMS;
    }
    if (TS_DEPTHWISE_GENERIC_ONLY || p->in_c < 1 || p->filter_h < 1 || p->filter_w < 1 ||
        p->input_offset < -255 || p->input_offset > 255 || /* 16-bit lanes: int8 zero points give [-127, 128] */
        !ts_multipliers_ok(p->multiplier, p->shift, p->out_c)) {
        dw_generic(p, input, filter, bias, output);
#if TS_MVE
    } else if (p->depth_multiplier == 1) {
        ts_mve_depthwise(p, input, filter, bias, output);
#endif
#if TS_DW_PLANAR
    } else if (p->depth_multiplier == 1 && p->dilation_w == 1 && p->dilation_h == 1 && p->filter_h == 3 &&
               p->filter_w == 3 && (p->stride_w == 1 || p->stride_w == 2) && p->in_c >= 4 &&
               ts_rq_ok(p->multiplier, p->shift, p->out_c, ts_acc_bound(9, p->input_offset, bias, p->out_c))) {
        dw_planar(p, input, filter, bias, output);
#endif
#if TS_RQ_ASM
    } else if (p->depth_multiplier == 1 && p->dilation_w == 1 &&
               ts_rq_ok(p->multiplier, p->shift, p->out_c,
                        ts_acc_bound(p->filter_h * p->filter_w, p->input_offset, bias, p->out_c))) {
        dw_fast_rq(p, input, filter, bias, output);
#endif
    } else {
        dw_fast(p, input, filter, bias, output);
    }
    return TS_OK;
}

#if TS_RQ_ASM
/* One pixel's channel blocks c = 0, 4, .. (`groups` of them) through dw_run3x3's nine-tap asm
 * block: in, flt, out at channel 0 of the pixel's first tap / the filter / the output; biases b4
 * (b_step 4, or 0 for none) and requantisation constants q advance with the channels. */
static TS_NOINLINE void dw_groups3x3(const int8_t *in, const int8_t *flt, int8_t *out, int32_t groups,
                                     const int32_t *b4, int32_t b_step, const ts_rq *q, const dw_run *r)
{
    const int32_t in_row = r->in_row - 2 * r->c1, w_row = r->w_row - 2 * r->c1;
    /* the block's 12 register operands in registers named here (TS_REG, ts_simd.h); the third tap
     * at c1, lsl #1: one register fewer than dw_run3x3 (M55) */
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
    for (c = c4; c < c_n; ++c) {
        const int8_t *in_r = in + c;
        const int8_t *w_r = filter + (ky0 * fw + kx0) * c_n + c;
        int32_t acc = bias != NULL ? bias[c] : 0, ky, kx;
        for (ky = 0; ky < (tw > 0 ? th : 0); ++ky) {
            for (kx = 0; kx < tw; ++kx) {
                acc += (int32_t)w_r[kx * c_n] * ((int32_t)in_r[kx * c_n] + p->input_offset);
            }
            in_r += r->in_row;
            w_r += r->w_row;
        }
        out[c] = dw_out(p, acc, c);
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
                                   int32_t k0, const int8_t *filter, const int32_t *bias, int8_t *output,
                                   int8_t *scratch, int32_t lag)
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
                           slot);
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
    int mode = 0; /* 0 reference loop, 1 fast, 2 fast with compile-time ts_rq, 3 Helium */
#if TS_RQ_ASM
    dw_run r;
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
        if (mode == 1 && rq_table != NULL && p->depth_multiplier == 1 && p->dilation_w == 1 &&
            ts_rq_ok(p->multiplier, p->shift, p->out_c,
                     ts_acc_bound(p->filter_h * p->filter_w, p->input_offset, bias, p->out_c))) {
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
#if TS_MVE
    if (mode == 3) {
        for (b = 0; b < p->batches; ++b) {
            for (y = 0; y < out_h; ++y) {
                dw_row_mve(p, input + (size_t)b * in_batch, y, (b * out_h + y) * out_w, filter, bias, output,
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
