/* ts_arg_minmax_s8.c - ARG_MAX / ARG_MIN along one axis of an int8 tensor (see ts_kernels.h).
 * The output may overlap the input (ts_kernels.h "Read/write order"): each element's reads all
 * precede its one store, which precedes the next element's reads. */
#include "ts_kernels.h"

int ts_arg_minmax_s8(const ts_arg_minmax_s8_params *p, const int8_t *input, void *output)
{
    int32_t o, i, a;
    int32_t *out32 = (int32_t *)output;
    int64_t *out64 = (int64_t *)output;
    if (p->axis_size < 1) {
        return TS_ERR_PARAMS;
    }
    for (o = 0; o < p->outer; ++o) {
        const int8_t *block = input + (size_t)o * p->axis_size * p->inner;
        for (i = 0; i < p->inner; ++i) {
            int8_t best = block[i];
            int32_t best_index = 0;
            for (a = 1; a < p->axis_size; ++a) {
                const int8_t v = block[(size_t)a * p->inner + i];
                /* strict comparison: the first of equal values wins, as in TFLite */
                if (p->is_max ? v > best : v < best) {
                    best = v;
                    best_index = a;
                }
            }
            if (p->output_is_int64) {
                out64[(size_t)o * p->inner + i] = best_index;
            } else {
                out32[(size_t)o * p->inner + i] = best_index;
            }
        }
    }
    return TS_OK;
}
