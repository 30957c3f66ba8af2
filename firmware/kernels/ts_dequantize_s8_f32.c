/* ts_dequantize_s8_f32.c - DEQUANTIZE int8 -> float32 at a model's float output (see ts_kernels.h). */
#include "ts_kernels.h"

int ts_dequantize_s8_f32(const ts_dequantize_s8_f32_params *p, const int8_t *input, float *output)
{
    int32_t i;
    for (i = 0; i < p->count; ++i) {
        /* one float32 product of exact operands (|q - zero_point| <= 255): rounded once, as the
         * reference's static_cast<float>(double(scale) * (q - zero_point)), whose double is exact */
        output[i] = p->scale * (float)((int32_t)input[i] - p->zero_point);
    }
    return TS_OK;
}
