/* ts_mul_s8.c - MUL, int8, with broadcasting (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"

int ts_mul_s8(const ts_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int32_t a = (int32_t)input1[w.off_a] + p->input1_offset;
        const int32_t b = (int32_t)input2[w.off_b] + p->input2_offset;
        const int32_t prod = ts_requantize(a * b, p->output_multiplier, p->output_shift);
        output[k] = (int8_t)ts_clamp_i32(prod + p->output_offset, p->act_min, p->act_max);
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
    return TS_OK;
}
