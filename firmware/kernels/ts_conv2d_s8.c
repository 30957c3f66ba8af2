/* ts_conv2d_s8.c - CONV_2D, int8 activations, per-channel int8 filter, int32 bias (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

int ts_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                 const int32_t *bias, int8_t *output)
{
    /* Local copies: stores through the int8 output may alias *p, which would force reloads. */
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c;
    const int32_t filter_h = p->filter_h, filter_w = p->filter_w;
    const int32_t dilation_h = p->dilation_h, dilation_w = p->dilation_w;
    const int32_t input_offset = p->input_offset;
    int32_t b, y, x, o, ky, kx, c;
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1) {
        return TS_ERR_PARAMS;
    }
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
    return TS_OK;
}
