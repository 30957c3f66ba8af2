/* ts_quantize_f32_s8.c - QUANTIZE float32 -> int8 at a model's float input (see ts_kernels.h). */
#include <math.h>

#include "ts_kernels.h"

int ts_quantize_f32_s8(const ts_quantize_f32_s8_params *p, const float *input, int8_t *output)
{
    int32_t i;
    if (!(p->scale > 0.0)) {
        return TS_ERR_PARAMS;
    }
    for (i = 0; i < p->count; ++i) {
        /* round() rounds half away from zero, like the reference's std::round. */
        double q = round((double)input[i] / p->scale) + (double)p->zero_point;
        if (q != q) {
            q = (double)p->zero_point; /* NaN */
        }
        q = q < -128.0 ? -128.0 : (q > 127.0 ? 127.0 : q);
        output[i] = (int8_t)q;
    }
    return TS_OK;
}
