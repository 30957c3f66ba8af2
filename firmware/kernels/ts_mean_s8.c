/* ts_mean_s8.c - MEAN over any set of axes, int8 (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"

int ts_mean_s8(const ts_mean_s8_params *p, const int8_t *input, int8_t *output)
{
    const size_t n_out = ts_dims_count(p->out_dims);
    const size_t n_red = ts_dims_count(p->red_dims);
    size_t k, r;
    ts_walk out_walk;
    if (p->count < 1 || (size_t)p->count != n_red || p->count >= (1 << 23)) {
        return TS_ERR_PARAMS;
    }
    ts_walk_start(&out_walk);
    for (k = 0; k < n_out; ++k) {
        const int8_t *base = input + out_walk.off_a;
        ts_walk red_walk;
        int32_t sum = 0;
        int32_t value;
        ts_walk_start(&red_walk);
        for (r = 0; r < n_red; ++r) {
            sum += base[red_walk.off_a];
            ts_walk_next(&red_walk, p->red_dims, p->red_strides, NULL);
        }
        /* The reference subtracts zero_point * count in 64 bits and keeps the low 32. */
        value = (int32_t)(uint32_t)((int64_t)sum - (int64_t)p->input_zero_point * p->count);
        value = ts_requantize(value, p->multiplier, p->shift) + p->output_zero_point;
        output[k] = (int8_t)ts_clamp_i32(value, -128, 127);
        ts_walk_next(&out_walk, p->out_dims, p->out_strides, NULL);
    }
    return TS_OK;
}
