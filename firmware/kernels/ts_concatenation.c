/* ts_concatenation.c - CONCATENATION of same-typed, same-quantised inputs (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_concatenation(const ts_concatenation_params *p, const void *const *inputs, void *output)
{
    uint8_t *out = (uint8_t *)output;
    int32_t slice, k;
    for (slice = 0; slice < p->outer; ++slice) {
        for (k = 0; k < p->num_inputs; ++k) {
            const size_t n = (size_t)p->chunk_bytes[k];
            memcpy(out, (const uint8_t *)inputs[k] + (size_t)slice * n, n);
            out += n;
        }
    }
    return TS_OK;
}
