/* ts_transpose_conv_s8.c - TRANSPOSE_CONV, int8, per-channel filter (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

int ts_transpose_conv_s8(const ts_transpose_conv_s8_params *p, const int8_t *input,
                         const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, in_c = p->in_c;
    const int32_t fh = p->filter_h, fw = p->filter_w;
    const int32_t sh = p->stride_h, sw = p->stride_w;
    int32_t b, y, x, o, ky, kx, c;
    if (sh < 1 || sw < 1) {
        return TS_ERR_PARAMS;
    }
    /* Gathered instead of TFLite's scatter into an int32 scratch: the same int32 sums. */
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_h * in_w * in_c;
        for (y = 0; y < p->out_h; ++y) {
            for (x = 0; x < p->out_w; ++x) {
                for (o = 0; o < p->out_c; ++o) {
                    int32_t acc = 0;
                    for (ky = 0; ky < fh; ++ky) {
                        const int32_t ty = y + p->pad_top - ky;
                        int32_t iy;
                        if (ty < 0 || ty % sh != 0) {
                            continue;
                        }
                        iy = ty / sh;
                        if (iy >= in_h) {
                            continue;
                        }
                        for (kx = 0; kx < fw; ++kx) {
                            const int32_t tx = x + p->pad_left - kx;
                            const int8_t *in_px;
                            const int8_t *w_px;
                            int32_t ix;
                            if (tx < 0 || tx % sw != 0) {
                                continue;
                            }
                            ix = tx / sw;
                            if (ix >= in_w) {
                                continue;
                            }
                            in_px = in_b + ((size_t)iy * in_w + ix) * in_c;
                            w_px = filter + (((size_t)o * fh + ky) * fw + kx) * in_c;
                            for (c = 0; c < in_c; ++c) {
                                acc += ((int32_t)in_px[c] + p->input_offset) * (int32_t)w_px[c];
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
