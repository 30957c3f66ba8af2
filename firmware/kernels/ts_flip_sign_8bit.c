/* ts_flip_sign_8bit.c - uint8 <-> int8 of one scale at a legacy uint8 model's edges: each byte xor
 * 0x80 (see ts_kernels.h "Legacy uint8"). */
#include <string.h>

#include "ts_kernels.h"

int ts_flip_sign_8bit(const ts_flip_sign_8bit_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    int32_t i = 0;
    for (; i + 4 <= p->count; i += 4) {
        uint32_t w;
        memcpy(&w, in + i, sizeof w);
        w ^= 0x80808080u;
        memcpy(out + i, &w, sizeof w);
    }
    for (; i < p->count; ++i) {
        out[i] = (uint8_t)(in[i] ^ 0x80u);
    }
    return TS_OK;
}
