/* ts_add_s8.c - ADD, int8, with broadcasting and per-input rescaling (see ts_kernels.h).
 *
 * When neither input broadcasts (both are laid out exactly like the output), add_flat walks the
 * three arrays with one index instead of the N-d walk; its arithmetic is add_generic's, with the
 * srdhm saturation test dropped once the three multipliers are checked not to be INT32_MIN.
 */
#include "ts_fixedpoint.h"
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"

/* 1 when both inputs are laid out like the output (strides row-major over dims wherever dims > 1). */
static int add_is_flat(const ts_broadcast_shape *s)
{
    int32_t stride = 1;
    int d;
    for (d = TS_MAX_DIMS - 1; d >= 0; --d) {
        if (s->dims[d] > 1 && (s->in1_strides[d] != stride || s->in2_strides[d] != stride)) {
            return 0;
        }
        stride *= s->dims[d] > 0 ? s->dims[d] : 1;
    }
    return 1;
}

static void add_flat(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                     int8_t *output)
{
    const int32_t off1 = p->input1_offset, off2 = p->input2_offset, out_off = p->output_offset;
    const int32_t m1 = p->input1_multiplier, s1 = p->input1_shift, m2 = p->input2_multiplier;
    const int32_t s2 = p->input2_shift, mo = p->output_multiplier, so = p->output_shift;
    const int32_t act_min = p->act_min, act_max = p->act_max;
    const int left = (int)p->left_shift;
    size_t k;
    for (k = 0; k < n; ++k) {
        const int32_t a = ((int32_t)input1[k] + off1) * (1 << left);
        const int32_t b = ((int32_t)input2[k] + off2) * (1 << left);
        const int32_t sum = ts_requantize_nonsat(a, m1, s1) + ts_requantize_nonsat(b, m2, s2);
        output[k] = (int8_t)ts_clamp_i32(ts_requantize_nonsat(sum, mo, so) + out_off, act_min, act_max);
    }
}

#if TS_MVE
#define ts_mve_add_flat ts_mve_add
#else
#define ts_mve_add_flat add_flat
#endif

static void add_generic(const ts_add_s8_params *p, size_t n, const int8_t *input1, const int8_t *input2,
                        int8_t *output)
{
    size_t k;
    ts_walk w;
    ts_walk_start(&w);
    for (k = 0; k < n; ++k) {
        const int32_t a = ((int32_t)input1[w.off_a] + p->input1_offset) * (1 << p->left_shift);
        const int32_t b = ((int32_t)input2[w.off_b] + p->input2_offset) * (1 << p->left_shift);
        const int32_t sa = ts_requantize(a, p->input1_multiplier, p->input1_shift);
        const int32_t sb = ts_requantize(b, p->input2_multiplier, p->input2_shift);
        const int32_t sum = ts_requantize(sa + sb, p->output_multiplier, p->output_shift);
        output[k] = (int8_t)ts_clamp_i32(sum + p->output_offset, p->act_min, p->act_max);
        ts_walk_next(&w, p->shape.dims, p->shape.in1_strides, p->shape.in2_strides);
    }
}

int ts_add_s8(const ts_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const size_t n = ts_dims_count(p->shape.dims);
    const int32_t multipliers[3] = {p->input1_multiplier, p->input2_multiplier, p->output_multiplier};
    const int32_t shifts[3] = {p->input1_shift, p->input2_shift, p->output_shift};
    if (p->left_shift < 0 || p->left_shift > 20) {
        return TS_ERR_PARAMS;
    }
    if (add_is_flat(&p->shape) && ts_multipliers_ok(multipliers, shifts, 3)) {
        (TS_MVE ? ts_mve_add_flat : add_flat)(p, n, input1, input2, output);
    } else {
        add_generic(p, n, input1, input2, output);
    }
    return TS_OK;
}
