/* ts_space_batch_nd.c - SPACE_TO_BATCH_ND with padding and BATCH_TO_SPACE_ND with crops, NHWC,
 * whole pixels of any size (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_space_batch_nd(const ts_space_batch_nd_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t pixel = (size_t)p->pixel_bytes;
    int32_t b, y, x;
    if (p->block_h < 1 || p->block_w < 1) {
        return TS_ERR_PARAMS;
    }
    if (p->to_batch) {
        /* out[(i * block_w + j) * in_batches + n][y][x] =
         *     in[n][y * block_h + i - pad_top][x * block_w + j - pad_left], else pad_value */
        for (b = 0; b < p->out_batches; ++b) {
            const int32_t n = b % p->in_batches;
            const int32_t i = (b / p->in_batches) / p->block_w;
            const int32_t j = (b / p->in_batches) % p->block_w;
            for (y = 0; y < p->out_h; ++y) {
                const int32_t iy = y * p->block_h + i - p->offset_top;
                for (x = 0; x < p->out_w; ++x) {
                    const int32_t ix = x * p->block_w + j - p->offset_left;
                    if (iy < 0 || iy >= p->in_h || ix < 0 || ix >= p->in_w) {
                        memset(out, p->pad_value, pixel);
                    } else {
                        memcpy(out, in + (((size_t)n * p->in_h + iy) * p->in_w + ix) * pixel, pixel);
                    }
                    out += pixel;
                }
            }
        }
    } else {
        /* out[n][y][x] = in[(i * block_w + j) * out_batches + n][yy / block_h][xx / block_w] with
         * yy = y + crop_top, i = yy % block_h (likewise x) */
        for (b = 0; b < p->out_batches; ++b) {
            for (y = 0; y < p->out_h; ++y) {
                const int32_t yy = y + p->offset_top;
                for (x = 0; x < p->out_w; ++x) {
                    const int32_t xx = x + p->offset_left;
                    const int32_t src =
                        ((yy % p->block_h) * p->block_w + xx % p->block_w) * p->out_batches + b;
                    const size_t at =
                        ((size_t)src * p->in_h + yy / p->block_h) * p->in_w + xx / p->block_w;
                    if (src >= p->in_batches || yy / p->block_h >= p->in_h || xx / p->block_w >= p->in_w) {
                        return TS_ERR_PARAMS;
                    }
                    memcpy(out, in + at * pixel, pixel);
                    out += pixel;
                }
            }
        }
    }
    return TS_OK;
}
