/* ts_fully_connected_s8.c - FULLY_CONNECTED, int8 in/out, int8 weights, int32 bias (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

int ts_fully_connected_s8(const ts_fully_connected_s8_params *p, const int8_t *input,
                          const int8_t *weights, const int32_t *bias, int8_t *output)
{
    /* Local copies: stores through the int8 output may alias *p, which would force reloads. */
    const int32_t in_depth = p->in_depth;
    const int32_t out_depth = p->out_depth;
    const int32_t input_offset = p->input_offset;
    const int32_t filter_offset = p->filter_offset;
    int32_t b, o, i;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_depth;
        for (o = 0; o < out_depth; ++o) {
            const int8_t *w_o = weights + (size_t)o * in_depth;
            const int32_t q = p->per_channel ? o : 0;
            int32_t acc = 0;
            for (i = 0; i < in_depth; ++i) {
                acc += ((int32_t)w_o[i] + filter_offset) * ((int32_t)in_b[i] + input_offset);
            }
            if (bias != NULL) {
                acc += bias[o];
            }
            acc = ts_requantize_single(acc, p->multiplier[q], p->shift[q]) + p->output_offset;
            *output++ = (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
    return TS_OK;
}
