/* ts_pad_s8.c - PAD of an 8-bit tensor with a constant (see ts_kernels.h). */
#include "ts_index.h"
#include "ts_kernels.h"

int ts_pad_s8(const ts_pad_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t in_strides[TS_MAX_DIMS];
    int32_t zero_strides[TS_MAX_DIMS];
    const size_t n = ts_dims_count(p->out_dims);
    size_t k;
    int d;
    ts_walk w;
    int32_t stride = 1;
    for (d = TS_MAX_DIMS - 1; d >= 0; --d) {
        in_strides[d] = stride;
        zero_strides[d] = 0;
        stride *= p->in_dims[d];
    }
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        int32_t offset = 0;
        int inside = 1;
        for (d = 0; d < TS_MAX_DIMS; ++d) {
            const int32_t i = w.index[d] - p->pad_before[d];
            if (i < 0 || i >= p->in_dims[d]) {
                inside = 0;
                break;
            }
            offset += i * in_strides[d];
        }
        output[k] = inside ? input[offset] : (int8_t)p->pad_value;
        ts_walk_next(&w, p->out_dims, zero_strides, NULL);
    }
    return TS_OK;
}
