/* ts_prelu_s8.c - PRELU, int8, alpha broadcast against the input (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"

int ts_prelu_s8(const ts_prelu_s8_params *p, const int8_t *input, const int8_t *alpha,
                int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int32_t x = (int32_t)input[w.off_a] + p->input_offset;
        int32_t v;
        if (x >= 0) {
            v = ts_requantize(x, p->multiplier_pos, p->shift_pos);
        } else {
            const int32_t a = (int32_t)alpha[w.off_b] + p->alpha_offset;
            v = ts_requantize(x * a, p->multiplier_neg, p->shift_neg);
        }
        output[k] = (int8_t)ts_clamp_i32(v + p->output_offset, -128, 127);
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
    return TS_OK;
}
