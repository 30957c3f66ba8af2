/* ts_lut_s8.c - an 8-bit pointwise function by table lookup (LOGISTIC; see ts_kernels.h). */
#include "ts_kernels.h"

int ts_lut_s8(const ts_lut_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t i;
    for (i = 0; i < p->count; ++i) {
        output[i] = p->table[(uint8_t)input[i]];
    }
    return TS_OK;
}
