/* ts_svdf_s8.c - SVDF, int8 input/output, int8 feature weights, int16 time weights and state
 * (see ts_kernels.h). */
#include <string.h>

#include "ts_fixedpoint.h"
#include "ts_kernels.h"

int ts_svdf_s8(const ts_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,
               const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output)
{
    const int32_t n_filter = p->num_filters, n_memory = p->memory_size, n_input = p->input_size;
    const int32_t n_unit = p->num_filters / p->rank;
    const size_t state_count = (size_t)p->batches * n_memory * n_filter;
    int32_t b, f, c, u, r, m;
    if (p->rank < 1 || n_unit * p->rank != n_filter || n_memory < 1) {
        return TS_ERR_PARAMS;
    }
    /* Age the state by one step: everything moves one element towards the front. */
    memmove(state, state + 1, (state_count - 1) * sizeof(int16_t));
    /* Feature matmul: the newest entry of each filter's memory. */
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in = input + (size_t)b * n_input;
        for (f = 0; f < n_filter; ++f) {
            const int8_t *w = weights_feature + (size_t)f * n_input;
            int32_t dot = 0;
            for (c = 0; c < n_input; ++c) {
                dot += (int32_t)w[c] * ((int32_t)in[c] - p->input_zero_point);
            }
            dot = ts_requantize(dot, p->multiplier_1, p->shift_1);
            state[((size_t)b * n_filter + f) * n_memory + n_memory - 1] =
                (int16_t)ts_clamp_i32(dot, -32768, 32767);
        }
    }
    /* Time matmul, reduced over the rank, bias, rescale. int32 sums wrap as the reference's do. */
    for (b = 0; b < p->batches; ++b) {
        for (u = 0; u < n_unit; ++u) {
            uint32_t acc = 0;
            for (r = 0; r < p->rank; ++r) {
                const size_t filter = (size_t)u * p->rank + r;
                const int16_t *s = state + ((size_t)b * n_filter + filter) * n_memory;
                const int16_t *w = weights_time + filter * n_memory;
                uint32_t dot = 0;
                for (m = 0; m < n_memory; ++m) {
                    dot += (uint32_t)((int32_t)w[m] * (int32_t)s[m]);
                }
                acc += dot;
            }
            if (bias != NULL) {
                acc += (uint32_t)bias[u];
            }
            output[(size_t)b * n_unit + u] = (int8_t)ts_clamp_i32(
                ts_requantize((int32_t)acc, p->multiplier_2, p->shift_2) + p->output_zero_point,
                p->act_min, p->act_max);
        }
    }
    return TS_OK;
}
