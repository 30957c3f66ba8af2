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
#include "ts_kernels.h"
#include "ts_simd.h"

static inline int8_t dw_out(const ts_depthwise_conv2d_s8_params *p, int32_t acc, int32_t o)
{
    acc = ts_requantize_nonsat(acc, p->multiplier[o], p->shift[o]) + p->output_offset;
    return (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
}

/* The taps [k0, k1) of a window starting at `start` (stride `dilation`) that land in [0, size). */
static inline void tap_range(int32_t start, int32_t dilation, int32_t taps, int32_t size, int32_t *k0,
                             int32_t *k1)
{
    int32_t lo = 0, hi = taps;
    while (lo < taps && start + lo * dilation < 0) {
        ++lo;
    }
    while (hi > lo && start + (hi - 1) * dilation >= size) {
        --hi;
    }
    *k0 = lo;
    *k1 = hi;
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
            tap_range(y0, p->dilation_h, p->filter_h, in_h, &ky0, &ky1);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int8_t *in = in_b; /* not read when the window misses the input */
                const int8_t *w = filter;
                int32_t kx0, kx1;
                tap_range(x0, p->dilation_w, p->filter_w, in_w, &kx0, &kx1);
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
    } else {
        dw_fast(p, input, filter, bias, output);
    }
    return TS_OK;
}
