/* ts_legacy_uint8.c - the arithmetic of legacy uint8-quantised models, run on their int8 form (the
 * bytes xor 0x80, zero points - 128; tinysched/model/uint8.py): convolutions with a filter offset,
 * AVERAGE_POOL_2D rounding as TFLite's uint8 kernel (RESIZE_BILINEAR's float version:
 * ts_resize_bilinear_float_s8.c). Plain loops: speed is secondary for these models. See
 * ts_kernels.h "Legacy uint8". */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

/* One output of a convolution: the requantised, offset, clamped accumulator. */
static int8_t conv_out(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset, int32_t lo,
                       int32_t hi)
{
    acc = ts_requantize(acc, multiplier, shift) + output_offset;
    return (int8_t)ts_clamp_i32(acc, lo, hi);
}

int ts_conv2d_filter_offset_s8(const ts_conv2d_offset_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    const int32_t filter_offset = p->filter_offset;
    int32_t b, y, x, o, ky, kx, c;
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1) {
        return TS_ERR_PARAMS;
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (y = 0; y < p->out_h; ++y) {
            for (x = 0; x < p->out_w; ++x) {
                const int32_t y0 = y * p->stride_h - p->pad_top;
                const int32_t x0 = x * p->stride_w - p->pad_left;
                for (o = 0; o < p->out_c; ++o) {
                    const int8_t *w_o = filter + (size_t)o * p->filter_h * p->filter_w * p->in_c;
                    int32_t acc = 0;
                    for (ky = 0; ky < p->filter_h; ++ky) {
                        const int32_t iy = y0 + ky * p->dilation_h;
                        if (iy < 0 || iy >= p->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < p->filter_w; ++kx) {
                            const int32_t ix = x0 + kx * p->dilation_w;
                            const int8_t *in_px, *w_px;
                            if (ix < 0 || ix >= p->in_w) {
                                continue;
                            }
                            in_px = in_b + ((size_t)iy * p->in_w + ix) * p->in_c;
                            w_px = w_o + ((size_t)ky * p->filter_w + kx) * p->in_c;
                            for (c = 0; c < p->in_c; ++c) {
                                acc += (in_px[c] + p->input_offset) * (w_px[c] + filter_offset);
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[o];
                    }
                    *output++ = conv_out(acc, p->multiplier[o], p->shift[o], p->output_offset, p->act_min,
                                         p->act_max);
                }
            }
        }
    }
    return TS_OK;
}

int ts_depthwise_conv2d_filter_offset_s8(const ts_depthwise_conv2d_offset_s8_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t filter_offset = p->filter_offset;
    int32_t b, y, x, ic, m, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->out_c != p->in_c * p->depth_multiplier) {
        return TS_ERR_PARAMS;
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (y = 0; y < p->out_h; ++y) {
            for (x = 0; x < p->out_w; ++x) {
                const int32_t y0 = y * p->stride_h - p->pad_top;
                const int32_t x0 = x * p->stride_w - p->pad_left;
                for (ic = 0; ic < p->in_c; ++ic) {
                    for (m = 0; m < p->depth_multiplier; ++m) {
                        const int32_t o = ic * p->depth_multiplier + m;
                        int32_t acc = 0;
                        for (ky = 0; ky < p->filter_h; ++ky) {
                            const int32_t iy = y0 + ky * p->dilation_h;
                            if (iy < 0 || iy >= p->in_h) {
                                continue;
                            }
                            for (kx = 0; kx < p->filter_w; ++kx) {
                                const int32_t ix = x0 + kx * p->dilation_w;
                                if (ix < 0 || ix >= p->in_w) {
                                    continue;
                                }
                                acc += (in_b[((size_t)iy * p->in_w + ix) * p->in_c + ic] + p->input_offset) *
                                       (filter[((size_t)ky * p->filter_w + kx) * p->out_c + o] + filter_offset);
                            }
                        }
                        if (bias != NULL) {
                            acc += bias[o];
                        }
                        *output++ = conv_out(acc, p->multiplier[o], p->shift[o], p->output_offset, p->act_min,
                                             p->act_max);
                    }
                }
            }
        }
    }
    return TS_OK;
}

int ts_avg_pool2d_half_up_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, y, x, c, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->filter_h < 1 || p->filter_w < 1) {
        return TS_ERR_PARAMS;
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->channels;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            const int32_t ky_start = ts_max_i32(0, -y0);
            const int32_t ky_end = ts_min_i32(p->filter_h, p->in_h - y0);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int32_t kx_start = ts_max_i32(0, -x0);
                const int32_t kx_end = ts_min_i32(p->filter_w, p->in_w - x0);
                const int32_t count = (ky_end - ky_start) * (kx_end - kx_start);
                if (ky_end <= ky_start || kx_end <= kx_start) {
                    return TS_ERR_PARAMS; /* an empty window: TFLite refuses it too */
                }
                for (c = 0; c < p->channels; ++c) {
                    int32_t sum = 128 * count; /* the uint8 bytes' sum: each int8 q is uint8 q - 128 */
                    for (ky = ky_start; ky < ky_end; ++ky) {
                        for (kx = kx_start; kx < kx_end; ++kx) {
                            sum += in_b[((size_t)(y0 + ky) * p->in_w + (x0 + kx)) * p->channels + c];
                        }
                    }
                    sum = (sum + count / 2) / count - 128; /* TFLite's uint8 rounding, back to int8 */
                    output[c] = (int8_t)ts_clamp_i32(sum, p->act_min, p->act_max);
                }
                output += p->channels;
            }
        }
    }
    return TS_OK;
}
