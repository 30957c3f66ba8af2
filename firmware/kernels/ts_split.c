/* ts_split.c - SPLIT / SPLIT_V / UNPACK: the mirror image of ts_concatenation (see ts_kernels.h). */
#include <string.h>

#include "ts_kernels.h"

int ts_split(const ts_split_params *p, const void *input, void *const *outputs)
{
    const uint8_t *in = (const uint8_t *)input;
    int32_t slice, k;
    for (slice = 0; slice < p->outer; ++slice) {
        for (k = 0; k < p->num_outputs; ++k) {
            const size_t n = (size_t)p->chunk_bytes[k];
            memcpy((uint8_t *)outputs[k] + (size_t)slice * n, in, n);
            in += n;
        }
    }
    return TS_OK;
}
