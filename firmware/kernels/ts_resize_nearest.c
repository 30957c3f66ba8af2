/* ts_resize_nearest.c - RESIZE_NEAREST_NEIGHBOR by row/column maps, any element size (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_resize_nearest_rows(const ts_resize_nearest_params *p, const void *input, int32_t row, int32_t count,
                           void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t pixel = (size_t)p->pixel_bytes;
    int32_t y, x;
    for (y = row; y < row + count; ++y) {
        const uint8_t *src = in + (size_t)p->y_map[y] * p->in_w * pixel;
        for (x = 0; x < p->out_w; ++x) {
            memcpy(out, src + (size_t)p->x_map[x] * pixel, pixel);
            out += pixel;
        }
    }
    return TS_OK;
}

int ts_resize_nearest(const ts_resize_nearest_params *p, const void *input, void *output)
{
    const size_t in_batch = (size_t)p->in_h * p->in_w * p->pixel_bytes;
    const size_t out_batch = (size_t)p->out_h * p->out_w * p->pixel_bytes;
    int32_t b;
    for (b = 0; b < p->batches; ++b) {
        (void)ts_resize_nearest_rows(p, (const uint8_t *)input + (size_t)b * in_batch, 0, p->out_h,
                                     (uint8_t *)output + (size_t)b * out_batch);
    }
    return TS_OK;
}
