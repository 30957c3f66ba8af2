/* ts_reduce_max_s8.c - REDUCE_MAX over any set of axes, int8 (see ts_kernels.h). */
#include "ts_index.h"
#include "ts_kernels.h"

int ts_reduce_max_s8(const ts_reduce_max_s8_params *p, const int8_t *input, int8_t *output)
{
    const size_t n_out = ts_dims_count(p->out_dims);
    const size_t n_red = ts_dims_count(p->red_dims);
    size_t k, r;
    ts_walk out_walk;
    if (n_red < 1) {
        return TS_ERR_PARAMS;
    }
    ts_walk_start(&out_walk);
    for (k = 0; k < n_out; ++k) {
        const int8_t *base = input + out_walk.off_a;
        ts_walk red_walk;
        int8_t best = -128;
        ts_walk_start(&red_walk);
        for (r = 0; r < n_red; ++r) {
            const int8_t v = base[red_walk.off_a];
            best = v > best ? v : best;
            ts_walk_next(&red_walk, p->red_dims, p->red_strides, NULL);
        }
        output[k] = best;
        ts_walk_next(&out_walk, p->out_dims, p->out_strides, NULL);
    }
    return TS_OK;
}
