/* ts_squared_difference_s8.c - SQUARED_DIFFERENCE, int8, with broadcasting (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"

int ts_squared_difference_s8(const ts_squared_difference_s8_params *p, const int8_t *input1,
                             const int8_t *input2, int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    size_t k;
    ts_walk w;
    if (p->left_shift < 0 || p->left_shift > 7) {
        return TS_ERR_PARAMS; /* keeps (255 << 7)^2 * 4 inside int32 */
    }
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int32_t a = ((int32_t)input1[w.off_a] + p->input1_offset) * (1 << p->left_shift);
        const int32_t b = ((int32_t)input2[w.off_b] + p->input2_offset) * (1 << p->left_shift);
        const int32_t diff = ts_requantize(a, p->input1_multiplier, p->input1_shift) -
                             ts_requantize(b, p->input2_multiplier, p->input2_shift);
        const int32_t out = ts_requantize(diff * diff, p->output_multiplier, p->output_shift);
        output[k] = (int8_t)ts_clamp_i32(out + p->output_offset, -128, 127);
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
    return TS_OK;
}
