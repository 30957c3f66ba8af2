/* ts_requantize_8bit.c - QUANTIZE between int8/uint8 scales and zero points (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

int ts_requantize_8bit(const ts_requantize_8bit_params *p, const void *input, void *output)
{
    const int8_t *in_s8 = (const int8_t *)input;
    const uint8_t *in_u8 = (const uint8_t *)input;
    int8_t *out_s8 = (int8_t *)output;
    uint8_t *out_u8 = (uint8_t *)output;
    const int32_t lo = p->output_is_uint8 ? 0 : -128;
    const int32_t hi = p->output_is_uint8 ? 255 : 127;
    int32_t i;
    for (i = 0; i < p->count; ++i) {
        const int32_t x = p->input_is_uint8 ? (int32_t)in_u8[i] : (int32_t)in_s8[i];
        const int32_t q = ts_clamp_i32(
            ts_requantize(x - p->input_zero_point, p->multiplier, p->shift) + p->output_zero_point,
            lo, hi);
        if (p->output_is_uint8) {
            out_u8[i] = (uint8_t)q;
        } else {
            out_s8[i] = (int8_t)q;
        }
    }
    return TS_OK;
}
