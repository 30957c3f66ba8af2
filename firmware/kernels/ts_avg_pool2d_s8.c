/* ts_avg_pool2d_s8.c - AVERAGE_POOL_2D, int8, window clipped to the input (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"
#include "ts_mve.h"

int ts_avg_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, y, x, c, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->filter_h < 1 || p->filter_w < 1) {
        return TS_ERR_PARAMS; /* the generator refuses these too (tinysched/model/shapes.py) */
    }
#if TS_MVE
    if (p->filter_h * p->filter_w <= 256) { /* Helium: 16-bit sums (firmware/kernels/ts_mve.h) */
        return ts_mve_avg_pool(p, input, output);
    }
#endif
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
                    int32_t acc = 0;
                    for (ky = ky_start; ky < ky_end; ++ky) {
                        for (kx = kx_start; kx < kx_end; ++kx) {
                            acc += in_b[((size_t)(y0 + ky) * p->in_w + (x0 + kx)) * p->channels + c];
                        }
                    }
                    /* Round to nearest, ties away from zero (C division truncates toward zero). */
                    acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    *output++ = (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
    return TS_OK;
}
