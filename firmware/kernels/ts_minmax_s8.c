/* ts_minmax_s8.c - MAXIMUM / MINIMUM of raw int8 values, with broadcasting (see ts_kernels.h). */
#include "ts_index.h"
#include "ts_kernels.h"

int ts_minmax_s8(const ts_minmax_s8_params *p, const int8_t *input1, const int8_t *input2,
                 int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int8_t a = input1[w.off_a];
        const int8_t b = input2[w.off_b];
        if (p->is_max) {
            output[k] = a > b ? a : b;
        } else {
            output[k] = a < b ? a : b;
        }
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
    return TS_OK;
}
