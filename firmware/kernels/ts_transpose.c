/* ts_transpose.c - TRANSPOSE of a tensor of any element size (see ts_kernels.h). */
#include <string.h>

#include "ts_index.h"
#include "ts_kernels.h"

int ts_transpose(const ts_transpose_params *p, const void *input, void *output)
{
    const size_t n = ts_dims_count(p->out_dims);
    const size_t e = (size_t)p->element_bytes;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        if (e == 1) {
            out[k] = in[w.off_a];
        } else {
            memcpy(out + k * e, in + (ptrdiff_t)w.off_a * (ptrdiff_t)e, e);
        }
        ts_walk_next(&w, p->out_dims, p->in_strides, NULL);
    }
    return TS_OK;
}
