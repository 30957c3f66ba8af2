/* ts_quantize_f32_s8.c - QUANTIZE float32 -> int8 at a model's float input (see ts_kernels.h). */
#include <math.h>

#include "ts_kernels.h"

int ts_quantize_f32_s8(const ts_quantize_f32_s8_params *p, const float *input, int8_t *output)
{
    const float scale = p->scale;
    /* the rounded quotient's range that clamps to -128 and 127 (exact: zero_point is in [-128, 127]) */
    const float low = (float)(-128 - p->zero_point), high = (float)(127 - p->zero_point);
    int32_t i;
    if (!(scale > 0.0f)) {
        return TS_ERR_PARAMS;
    }
    for (i = 0; i < p->count; ++i) {
        /* The reference's AffineQuantize: TfLiteRound(val / static_cast<float>(scale)), a float32
         * quotient (one IEEE division, nothing to contract) rounded half away from zero by roundf. */
        const float r = roundf(input[i] / scale);
        int32_t q;
        if (r != r) {
            q = p->zero_point; /* NaN */
        } else if (r <= low) {
            q = -128;
        } else if (r >= high) {
            q = 127;
        } else {
            q = (int32_t)r + p->zero_point;
        }
        output[i] = (int8_t)q;
    }
    return TS_OK;
}
