/*
 * tsb_cmsis_nn.c - CMSIS-NN in place of tinysched's kernels, for bench/bench_cmsis_nn.py (see
 * tsb_cmsis_nn.h). Compiled with the board's flags (mps3-an547: -mcpu=cortex-m55 -mfloat-abi=hard
 * -O2, so CMSIS-NN's arm_nn_math_types.h defines ARM_MATH_MVEI and its Helium paths are built).
 */
#include "tsb_cmsis_nn.h"

#include <string.h>

#include "arm_nnfunctions.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#endif

#ifndef TSB_SCRATCH_BYTES
#define TSB_SCRATCH_BYTES 16384
#endif
#ifndef TSB_OUT_BYTES
#define TSB_OUT_BYTES 4
#endif
#ifndef TSB_MID_BYTES
#define TSB_MID_BYTES 4
#endif
#define TSB_SUM_WORDS 8192 /* FULLY_CONNECTED kernel sums of all layers */
#define TSB_SUM_LAYERS 16

static int8_t tsb_scratch[TSB_SCRATCH_BYTES] __attribute__((aligned(16)));
static int8_t tsb_out[TSB_OUT_BYTES] __attribute__((aligned(16)));
static int8_t tsb_mids[2][TSB_MID_BYTES] __attribute__((aligned(16)));

int8_t *tsb_mid(int32_t k)
{
    return tsb_mids[k & 1];
}

/* ---- the planned output, or the static one where it overlaps the input ---------------------- */

static int overlaps(const void *a, uint32_t a_bytes, const void *b, uint32_t b_bytes)
{
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    return x < y + b_bytes && y < x + a_bytes;
}

static void copy_once(int8_t *dst, const int8_t *src, uint32_t n)
{
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    while (n > 0u) {
        mve_pred16_t pred = vctp8q(n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, pred), pred);
        dst += 16;
        src += 16;
        n = n > 16u ? n - 16u : 0u;
    }
#else
    memcpy(dst, src, n);
#endif
}

static void tsb_copy(int8_t *dst, const int8_t *src, uint32_t n)
{
    copy_once(dst, src, n);
#ifdef TSB_COPY_TWICE
    __asm volatile("" ::: "memory");
    copy_once(dst, src, n);
#endif
}

/* Where CMSIS-NN writes a layer of out_bytes reading in_bytes at input: the planned output, or
 * tsb_out when the two overlap (NULL: tsb_out is too small). */
static int8_t *destination(const int8_t *input, uint32_t in_bytes, int8_t *output, uint32_t out_bytes)
{
    if (!overlaps(input, in_bytes, output, out_bytes)) {
        return output;
    }
    return out_bytes <= sizeof tsb_out ? tsb_out : NULL;
}

static int finish(arm_cmsis_nn_status status, int8_t *dst, int8_t *output, uint32_t out_bytes)
{
    if (status != ARM_CMSIS_NN_SUCCESS) {
        return TS_ERR_PARAMS;
    }
    if (dst != output) {
        tsb_copy(output, dst, out_bytes);
    }
    return TS_OK;
}

static int scratch(cmsis_nn_context *ctx, int32_t bytes)
{
    ctx->buf = bytes > 0 ? tsb_scratch : NULL;
    ctx->size = bytes;
    return bytes <= (int32_t)sizeof tsb_scratch;
}

/* ---- CONV_2D: conv.cc's EvalQuantizedPerChannel ------------------------------------------------ */

int tsb_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                  int8_t *output)
{
    const cmsis_nn_conv_params conv = {
        .input_offset = p->input_offset,
        .output_offset = p->output_offset,
        .stride = {.w = p->stride_w, .h = p->stride_h},
        .padding = {.w = p->pad_left, .h = p->pad_top},
        .dilation = {.w = p->dilation_w, .h = p->dilation_h},
        .activation = {.min = p->act_min, .max = p->act_max},
    };
    const cmsis_nn_per_channel_quant_params quant = {(int32_t *)p->multiplier, (int32_t *)p->shift};
    const cmsis_nn_dims in_dims = {p->batches, p->in_h, p->in_w, p->in_c};
    const cmsis_nn_dims filter_dims = {p->out_c, p->filter_h, p->filter_w, p->in_c};
    const cmsis_nn_dims bias_dims = {1, 1, 1, p->out_c};
    const cmsis_nn_dims out_dims = {p->batches, p->out_h, p->out_w, p->out_c};
    const uint32_t in_bytes = (uint32_t)(p->batches * p->in_h * p->in_w * p->in_c);
    const uint32_t out_bytes = (uint32_t)(p->batches * p->out_h * p->out_w * p->out_c);
    cmsis_nn_context ctx;
    int8_t *dst = destination(input, in_bytes, output, out_bytes);
    if (!dst || !scratch(&ctx, arm_convolve_wrapper_s8_get_buffer_size(&conv, &in_dims, &filter_dims, &out_dims))) {
        return TS_ERR_PARAMS;
    }
    return finish(arm_convolve_wrapper_s8(&ctx, &conv, &quant, &in_dims, input, &filter_dims, filter, &bias_dims,
                                          bias, &out_dims, dst),
                  dst, output, out_bytes);
}

int tsb_conv2d_s8_staged(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int8_t *scratch_unused, int32_t chunk,
                         const int32_t *rq_table)
{
    (void)scratch_unused;
    (void)chunk;
    (void)rq_table;
    return tsb_conv2d_s8(p, input, filter, bias, output);
}

int tsb_conv2d_s8_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int8_t *scratch_unused, int32_t blocks,
                       const int32_t *rq_table)
{
    (void)scratch_unused;
    (void)blocks;
    (void)rq_table;
    return tsb_conv2d_s8(p, input, filter, bias, output);
}

int tsb_conv2d_s8_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, const int32_t *pixel_table)
{
    (void)pixel_table;
    return tsb_conv2d_s8(p, input, filter, bias, output);
}

int tsb_conv2d_s8_pixel_rows(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, const int32_t *pixel_table)
{
    (void)pixel_table;
    return tsb_conv2d_s8(p, input, filter, bias, output);
}

int tsb_conv2d_s8_pixels_own(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, const int32_t *table, ts_pixel_loop own)
{
    (void)table;
    (void)own;
    return tsb_conv2d_s8(p, input, filter, bias, output);
}

/* ---- DEPTHWISE_CONV_2D: depthwise_conv.cc's EvalQuantizedPerChannel ------------------------------ */

int tsb_depthwise_conv2d_s8(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output)
{
    const cmsis_nn_dw_conv_params dw = {
        .input_offset = p->input_offset,
        .output_offset = p->output_offset,
        .ch_mult = p->depth_multiplier,
        .stride = {.w = p->stride_w, .h = p->stride_h},
        .padding = {.w = p->pad_left, .h = p->pad_top},
        .dilation = {.w = p->dilation_w, .h = p->dilation_h},
        .activation = {.min = p->act_min, .max = p->act_max},
    };
    const cmsis_nn_per_channel_quant_params quant = {(int32_t *)p->multiplier, (int32_t *)p->shift};
    const cmsis_nn_dims in_dims = {p->batches, p->in_h, p->in_w, p->in_c};
    const cmsis_nn_dims filter_dims = {1, p->filter_h, p->filter_w, p->out_c};
    const cmsis_nn_dims bias_dims = {1, 1, 1, p->out_c};
    const cmsis_nn_dims out_dims = {p->batches, p->out_h, p->out_w, p->out_c};
    const uint32_t in_bytes = (uint32_t)(p->batches * p->in_h * p->in_w * p->in_c);
    const uint32_t out_bytes = (uint32_t)(p->batches * p->out_h * p->out_w * p->out_c);
    cmsis_nn_context ctx;
    int8_t *dst = destination(input, in_bytes, output, out_bytes);
    if (!dst ||
        !scratch(&ctx, arm_depthwise_conv_wrapper_s8_get_buffer_size(&dw, &in_dims, &filter_dims, &out_dims))) {
        return TS_ERR_PARAMS;
    }
    return finish(arm_depthwise_conv_wrapper_s8(&ctx, &dw, &quant, &in_dims, input, &filter_dims, filter,
                                                &bias_dims, bias, &out_dims, dst),
                  dst, output, out_bytes);
}

int tsb_depthwise_conv2d_s8_staged(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output, int8_t *scratch_unused,
                                   int32_t lag, const int32_t *rq_table)
{
    (void)scratch_unused;
    (void)lag;
    (void)rq_table;
    return tsb_depthwise_conv2d_s8(p, input, filter, bias, output);
}

/* ---- FULLY_CONNECTED: fully_connected.cc (kernel sums prepared once per layer, as its Prepare) ---- */

static struct {
    const void *layer;
    int32_t *sums;
} sum_layers[TSB_SUM_LAYERS];
static int32_t sum_words[TSB_SUM_WORDS];
static uint32_t sum_used;

static int32_t *kernel_sums(const ts_fully_connected_s8_params *p, const int8_t *weights, const int32_t *bias)
{
    for (uint32_t k = 0; k < TSB_SUM_LAYERS; k++) {
        if (sum_layers[k].layer == p) {
            return sum_layers[k].sums;
        }
        if (sum_layers[k].layer == NULL) {
            if (sum_used + (uint32_t)p->out_depth > TSB_SUM_WORDS) {
                return NULL;
            }
            int32_t *sums = sum_words + sum_used;
            sum_used += (uint32_t)p->out_depth;
            arm_vector_sum_s8(sums, p->in_depth, p->out_depth, weights, p->input_offset, p->filter_offset, bias);
            sum_layers[k].layer = p;
            sum_layers[k].sums = sums;
            return sums;
        }
    }
    return NULL;
}

int tsb_fully_connected_s8(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                           const int32_t *bias, int8_t *output)
{
    const cmsis_nn_fc_params fc = {
        .input_offset = p->input_offset,
        .filter_offset = p->filter_offset,
        .output_offset = p->output_offset,
        .activation = {.min = p->act_min, .max = p->act_max},
    };
    const cmsis_nn_quant_params quant = {(int32_t *)p->multiplier, (int32_t *)p->shift, p->per_channel != 0};
    const cmsis_nn_dims in_dims = {p->batches, 1, 1, p->in_depth};
    const cmsis_nn_dims filter_dims = {p->in_depth, 1, 1, p->out_depth};
    const cmsis_nn_dims bias_dims = {1, 1, 1, p->out_depth};
    const cmsis_nn_dims out_dims = {p->batches, 1, 1, p->out_depth};
    const uint32_t in_bytes = (uint32_t)(p->batches * p->in_depth);
    const uint32_t out_bytes = (uint32_t)(p->batches * p->out_depth);
    cmsis_nn_context ctx = {NULL, 0};
    if (arm_fully_connected_s8_get_buffer_size(&filter_dims) > 0) {
        ctx.buf = kernel_sums(p, weights, bias);
        ctx.size = arm_fully_connected_s8_get_buffer_size(&filter_dims);
        if (ctx.buf == NULL) {
            return TS_ERR_PARAMS;
        }
    }
    int8_t *dst = destination(input, in_bytes, output, out_bytes);
    if (!dst) {
        return TS_ERR_PARAMS;
    }
    return finish(arm_fully_connected_wrapper_s8(&ctx, &fc, &quant, &in_dims, input, &filter_dims, weights,
                                                 &bias_dims, bias, &out_dims, dst),
                  dst, output, out_bytes);
}

/* ---- ADD: add.cc (arm_elementwise_add_s8 when neither input broadcasts) --------------------------- */

static int flat(const ts_broadcast_shape *s, int32_t *count)
{
    int32_t stride = 1;
    for (int d = TS_MAX_DIMS - 1; d >= 0; d--) {
        if (s->dims[d] != 1 && (s->in1_strides[d] != stride || s->in2_strides[d] != stride)) {
            return 0;
        }
        stride *= s->dims[d];
    }
    *count = stride;
    return 1;
}

int tsb_add_s8(const ts_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    int32_t n;
    if (!flat(&p->shape, &n)) {
        return ts_add_s8(p, input1, input2, output);
    }
    /* element k is written after reading element k of both inputs, four or more at a time: an
     * output exactly over an input is safe, any other overlap goes through tsb_out */
    int8_t *dst = output;
    if ((output != input1 && overlaps(input1, (uint32_t)n, output, (uint32_t)n)) ||
        (output != input2 && overlaps(input2, (uint32_t)n, output, (uint32_t)n))) {
        dst = (uint32_t)n <= sizeof tsb_out ? tsb_out : NULL;
    }
    if (!dst) {
        return TS_ERR_PARAMS;
    }
    return finish(arm_elementwise_add_s8(input1, input2, p->input1_offset, p->input1_multiplier, p->input1_shift,
                                         p->input2_offset, p->input2_multiplier, p->input2_shift, p->left_shift, dst,
                                         p->output_offset, p->output_multiplier, p->output_shift, p->act_min,
                                         p->act_max, n),
                  dst, output, (uint32_t)n);
}

/* ---- AVERAGE_POOL_2D: pooling.cc's AverageEvalQuantized ------------------------------------------ */

int tsb_avg_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    const cmsis_nn_pool_params pool = {
        .stride = {.w = p->stride_w, .h = p->stride_h},
        .padding = {.w = p->pad_left, .h = p->pad_top},
        .activation = {.min = p->act_min, .max = p->act_max},
    };
    const cmsis_nn_dims in_dims = {p->batches, p->in_h, p->in_w, p->channels};
    const cmsis_nn_dims filter_dims = {1, p->filter_h, p->filter_w, 1};
    const cmsis_nn_dims out_dims = {p->batches, p->out_h, p->out_w, p->channels};
    const uint32_t in_bytes = (uint32_t)(p->batches * p->in_h * p->in_w * p->channels);
    const uint32_t out_bytes = (uint32_t)(p->batches * p->out_h * p->out_w * p->channels);
    cmsis_nn_context ctx;
    int8_t *dst = destination(input, in_bytes, output, out_bytes);
    if (!dst || !scratch(&ctx, arm_avgpool_s8_get_buffer_size(p->out_w, p->channels))) {
        return TS_ERR_PARAMS;
    }
    return finish(arm_avgpool_s8(&ctx, &pool, &in_dims, input, &filter_dims, &out_dims, dst), dst, output,
                  out_bytes);
}

/* ---- SOFTMAX: softmax.cc (int8 in and out) ----------------------------------------------------- */

int tsb_softmax_s8(const ts_softmax_s8_params *p, const int8_t *input, int8_t *output)
{
    if (p->exp_table != NULL || p->table_only) {
        return ts_softmax_s8(p, input, output);
    }
    const uint32_t bytes = (uint32_t)(p->outer * p->depth);
    int8_t *dst = destination(input, bytes, output, bytes);
    if (!dst) {
        return TS_ERR_PARAMS;
    }
    arm_softmax_s8(input, p->outer, p->depth, p->input_multiplier, p->input_left_shift, p->diff_min, dst);
    return finish(ARM_CMSIS_NN_SUCCESS, dst, output, bytes);
}

/* ---- the per-layer check ------------------------------------------------------------------------ */

#ifdef TSB_CHECK
#ifndef TSB_ARENA_BYTES
#error "TSB_CHECK needs TSB_ARENA_BYTES"
#endif
#ifndef TSB_CHECK_PATH
#error "TSB_CHECK needs TSB_CHECK_PATH (a host file, written by semihosting)"
#endif
#define TSB_MAX_STEPS 512

static uint8_t check_arena[TSB_ARENA_BYTES];
static uint8_t check_ours[TSB_OUT_BYTES > TSB_MID_BYTES ? TSB_OUT_BYTES : TSB_MID_BYTES];
static uint32_t check_diffs[TSB_MAX_STEPS];
static uint32_t check_bytes[TSB_MAX_STEPS];
static uint32_t check_kept;

void tsb_check_save(const uint8_t *arena, uint32_t bytes)
{
    memcpy(check_arena, arena, bytes);
}

void tsb_check_keep(const uint8_t *output, uint32_t bytes)
{
    check_kept = bytes <= sizeof check_ours ? bytes : 0u;
    memcpy(check_ours, output, check_kept);
}

void tsb_check_restore(uint8_t *arena, uint32_t bytes)
{
    memcpy(arena, check_arena, bytes);
}

void tsb_check_compare(uint32_t step, const uint8_t *output, uint32_t bytes)
{
    if (step >= TSB_MAX_STEPS) {
        return;
    }
    uint32_t diffs = 0;
    for (uint32_t i = 0; i < bytes; i++) {
        diffs += i >= check_kept || output[i] != check_ours[i];
    }
    check_diffs[step] = diffs;
    check_bytes[step] = bytes;
}

static int semihost(uint32_t op, void *args)
{
    register uint32_t r0 __asm("r0") = op;
    register void *r1 __asm("r1") = args;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int)r0;
}

static char *put_u32(char *at, uint32_t v)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    while (n) {
        *at++ = digits[--n];
    }
    return at;
}

void tsb_check_report(uint32_t steps)
{
    static char text[TSB_MAX_STEPS * 24];
    char *at = text;
    for (uint32_t k = 0; k < steps && k < TSB_MAX_STEPS; k++) {
        at = put_u32(at, k);
        *at++ = ' ';
        at = put_u32(at, check_diffs[k]);
        *at++ = ' ';
        at = put_u32(at, check_bytes[k]);
        *at++ = '\n';
    }
    static const char path[] = TSB_CHECK_PATH;
    uint32_t open_args[3] = {(uint32_t)(uintptr_t)path, 4u /* "w" */, (uint32_t)(sizeof path - 1u)};
    int handle = semihost(0x01u /* SYS_OPEN */, open_args);
    if (handle < 0) {
        return;
    }
    uint32_t write_args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)text, (uint32_t)(at - text)};
    (void)semihost(0x05u /* SYS_WRITE */, write_args);
    uint32_t close_args[1] = {(uint32_t)handle};
    (void)semihost(0x02u /* SYS_CLOSE */, close_args);
}
#endif /* TSB_CHECK */
