/* ts_resize_nearest.c - RESIZE_NEAREST_NEIGHBOR by row/column maps, any element size (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_resize_nearest(const ts_resize_nearest_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t pixel = (size_t)p->pixel_bytes;
    int32_t b, y, x;
    for (b = 0; b < p->batches; ++b) {
        const uint8_t *in_b = in + (size_t)b * p->in_h * p->in_w * pixel;
        for (y = 0; y < p->out_h; ++y) {
            const uint8_t *row = in_b + (size_t)p->y_map[y] * p->in_w * pixel;
            for (x = 0; x < p->out_w; ++x) {
                memcpy(out, row + (size_t)p->x_map[x] * pixel, pixel);
                out += pixel;
            }
        }
    }
    return TS_OK;
}
