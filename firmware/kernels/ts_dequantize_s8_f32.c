/* ts_dequantize_s8_f32.c - DEQUANTIZE int8 -> float32 at a model's float output (see ts_kernels.h). */
#include "ts_kernels.h"

int ts_dequantize_s8_f32(const ts_dequantize_s8_f32_params *p, const int8_t *input, float *output)
{
    int32_t i;
    for (i = 0; i < p->count; ++i) {
        output[i] = (float)(p->scale * (double)((int32_t)input[i] - p->zero_point));
    }
    return TS_OK;
}
