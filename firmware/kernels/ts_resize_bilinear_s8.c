/* ts_resize_bilinear_s8.c - RESIZE_BILINEAR, int8, 10-bit fixed-point weights (see ts_kernels.h). */
#include "ts_kernels.h"

int ts_resize_bilinear_s8_rows(const ts_resize_bilinear_s8_params *p, const int8_t *input, int32_t row,
                               int32_t count, int8_t *output)
{
    const int32_t c_n = p->channels;
    int32_t y, x, c;
    for (y = row; y < row + count; ++y) {
        const int8_t *row0 = input + (size_t)p->y0[y] * p->in_w * c_n;
        const int8_t *row1 = input + (size_t)p->y1[y] * p->in_w * c_n;
        const int64_t wy1 = p->wy[y];
        const int64_t wy0 = 1024 - wy1;
        for (x = 0; x < p->out_w; ++x) {
            const size_t x0 = (size_t)p->x0[x] * c_n;
            const size_t x1 = (size_t)p->x1[x] * c_n;
            const int64_t wx1 = p->wx[x];
            const int64_t wx0 = 1024 - wx1;
            for (c = 0; c < c_n; ++c) {
                const int64_t sum = row0[x0 + c] * wy0 * wx0 + row1[x0 + c] * wy1 * wx0 +
                                    row0[x1 + c] * wy0 * wx1 + row1[x1 + c] * wy1 * wx1;
                const int64_t round = sum > 0 ? ((int64_t)1 << 19) : -((int64_t)1 << 19);
                /* C division truncates toward zero, as the reference's does */
                *output++ = (int8_t)((sum + round) / ((int64_t)1 << 20));
            }
        }
    }
    return TS_OK;
}

int ts_resize_bilinear_s8(const ts_resize_bilinear_s8_params *p, const int8_t *input,
                          int8_t *output)
{
    const size_t in_batch = (size_t)p->in_h * p->in_w * p->channels;
    const size_t out_batch = (size_t)p->out_h * p->out_w * p->channels;
    int32_t b;
    for (b = 0; b < p->batches; ++b) {
        (void)ts_resize_bilinear_s8_rows(p, input + (size_t)b * in_batch, 0, p->out_h,
                                         output + (size_t)b * out_batch);
    }
    return TS_OK;
}
