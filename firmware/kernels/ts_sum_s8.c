/* ts_sum_s8.c - SUM over any set of axes, int8 (see ts_kernels.h). */
#include "ts_index.h"
#include "ts_kernels.h"

int ts_sum_s8(const ts_sum_s8_params *p, const int8_t *input, int8_t *output)
{
    const size_t n_out = ts_dims_count(p->out_dims);
    const size_t n_red = ts_dims_count(p->red_dims);
    size_t k, r;
    ts_walk out_walk;
    if (p->count < 1 || (size_t)p->count != n_red || p->count >= (1 << 23) || p->n_thresholds < 0 ||
        p->base < -128 || p->base + p->n_thresholds > 127 ||
        (p->n_thresholds > 0 && p->thresholds == NULL)) {
        return TS_ERR_PARAMS;
    }
    ts_walk_start(&out_walk);
    for (k = 0; k < n_out; ++k) {
        const int8_t *base = input + out_walk.off_a;
        ts_walk red_walk;
        int32_t sum = 0;
        int32_t lo = 0, hi = p->n_thresholds;
        ts_walk_start(&red_walk);
        for (r = 0; r < n_red; ++r) {
            sum += base[red_walk.off_a];
            ts_walk_next(&red_walk, p->red_dims, p->red_strides, NULL);
        }
        while (lo < hi) { /* lo = number of thresholds <= sum */
            const int32_t mid = lo + (hi - lo) / 2;
            if (p->thresholds[mid] <= sum) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        output[k] = (int8_t)(p->base + lo);
        ts_walk_next(&out_walk, p->out_dims, p->out_strides, NULL);
    }
    return TS_OK;
}
