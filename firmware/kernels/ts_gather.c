/* ts_gather.c - GATHER of slices along one axis, any element size (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_gather(const ts_gather_params *p, const void *input, const void *indices, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const int32_t *idx32 = (const int32_t *)indices;
    const int64_t *idx64 = (const int64_t *)indices;
    const size_t inner = (size_t)p->inner_bytes;
    int32_t o, k;
    for (k = 0; k < p->num_indices; ++k) {
        const int64_t index = p->indices_are_int64 ? idx64[k] : (int64_t)idx32[k];
        if (index < 0 || index >= p->axis_size) {
            return TS_ERR_PARAMS; /* TFLite refuses an out-of-range index too */
        }
    }
    for (o = 0; o < p->outer; ++o) {
        const uint8_t *block = in + (size_t)o * (size_t)p->axis_size * inner;
        for (k = 0; k < p->num_indices; ++k) {
            const int64_t index = p->indices_are_int64 ? idx64[k] : (int64_t)idx32[k];
            memcpy(out, block + (size_t)index * inner, inner);
            out += inner;
        }
    }
    return TS_OK;
}
