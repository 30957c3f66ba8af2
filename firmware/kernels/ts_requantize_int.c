/* ts_requantize_int.c - QUANTIZE between integer types (int8, uint8, int16, int32; see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"

static int32_t ts_load(const void *data, int32_t type, int32_t i)
{
    switch (type) {
    case TS_TYPE_UINT8:
        return ((const uint8_t *)data)[i];
    case TS_TYPE_INT16:
        return ((const int16_t *)data)[i];
    case TS_TYPE_INT32:
        return ((const int32_t *)data)[i];
    default:
        return ((const int8_t *)data)[i];
    }
}

int ts_requantize_int(const ts_requantize_int_params *p, const void *input, void *output)
{
    int64_t lo, hi;
    int32_t i;
    switch (p->output_type) {
    case TS_TYPE_INT8: lo = -128; hi = 127; break;
    case TS_TYPE_UINT8: lo = 0; hi = 255; break;
    case TS_TYPE_INT16: lo = -32768; hi = 32767; break;
    case TS_TYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: return TS_ERR_PARAMS;
    }
    for (i = 0; i < p->count; ++i) {
        /* the reference subtracts the zero point in int32 and adds the output's in int32 */
        const int32_t x = (int32_t)((uint32_t)ts_load(input, p->input_type, i) - (uint32_t)p->input_zero_point);
        const int64_t q = (int64_t)ts_requantize(x, p->multiplier, p->shift) + p->output_zero_point;
        const int32_t v = (int32_t)(q < lo ? lo : (q > hi ? hi : q));
        switch (p->output_type) {
        case TS_TYPE_UINT8: ((uint8_t *)output)[i] = (uint8_t)v; break;
        case TS_TYPE_INT16: ((int16_t *)output)[i] = (int16_t)v; break;
        case TS_TYPE_INT32: ((int32_t *)output)[i] = v; break;
        default: ((int8_t *)output)[i] = (int8_t)v; break;
        }
    }
    return TS_OK;
}
