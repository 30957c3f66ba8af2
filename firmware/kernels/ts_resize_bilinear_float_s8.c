/* ts_resize_bilinear_float_s8.c - RESIZE_BILINEAR of a legacy uint8 model run on its int8 form:
 * TFLite's generic float version, which uint8 runs (see ts_kernels.h "Legacy uint8"). */
#include "ts_kernels.h"

int ts_resize_bilinear_float_s8_rows(const ts_resize_bilinear_float_s8_params *p, const int8_t *input,
                                     int32_t row, int32_t count, int8_t *output)
{
    const int32_t c_n = p->channels;
    int32_t y, x, c;
    for (y = row; y < row + count; ++y) {
        const int8_t *row0 = input + (size_t)p->y0[y] * p->in_w * c_n;
        const int8_t *row1 = input + (size_t)p->y1[y] * p->in_w * c_n;
        const float dy = p->dy[y];
        for (x = 0; x < p->out_w; ++x) {
            const size_t x0 = (size_t)p->x0[x] * c_n;
            const size_t x1 = (size_t)p->x1[x] * c_n;
            const float dx = p->dx[x];
            for (c = 0; c < c_n; ++c) {
                /* the reference's expression, term by term in its order, on the uint8 values */
                const float v = (float)(row0[x0 + c] + 128) * (1.0f - dy) * (1.0f - dx) +
                                (float)(row1[x0 + c] + 128) * dy * (1.0f - dx) +
                                (float)(row0[x1 + c] + 128) * (1.0f - dy) * dx +
                                (float)(row1[x1 + c] + 128) * dy * dx + 0.5f;
                *output++ = (int8_t)((int32_t)v - 128); /* truncated toward zero, as static_cast */
            }
        }
    }
    return TS_OK;
}

int ts_resize_bilinear_float_s8(const ts_resize_bilinear_float_s8_params *p, const int8_t *input,
                                int8_t *output)
{
    const size_t in_batch = (size_t)p->in_h * p->in_w * p->channels;
    const size_t out_batch = (size_t)p->out_h * p->out_w * p->channels;
    int32_t b;
    for (b = 0; b < p->batches; ++b) {
        (void)ts_resize_bilinear_float_s8_rows(p, input + (size_t)b * in_batch, 0, p->out_h,
                                               output + (size_t)b * out_batch);
    }
    return TS_OK;
}
