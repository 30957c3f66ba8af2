/*
 * ts_kernels.h - tinysched's int8 kernels: what each one computes, bit for bit.
 *
 * Every kernel is one C99 function in firmware/kernels/<name>.c, takes its shape and quantisation
 * in a small const parameter struct (the code generator writes these as `static const` data, so
 * they live in flash) and plain data pointers, and returns TS_OK or TS_ERR_PARAMS. No kernel
 * allocates, keeps state, or touches memory other than its arguments. None needs scratch memory;
 * one that did would declare it through a `<name>_scratch_bytes()` companion and the code generator
 * would plan it in the arena as a tensor live during that operator's step only.
 *
 * Conventions (the arithmetic is TFLite's reference integer arithmetic, re-implemented):
 *
 *  - Layout is NHWC for activations, [out_c][fh][fw][in_c] for CONV_2D filters, [1][fh][fw][c*m]
 *    for DEPTHWISE_CONV_2D filters, [out][in] for FULLY_CONNECTED weights, all row-major.
 *  - A quantised value q stands for scale * (q - zero_point). "offset" parameters hold the value to
 *    add to a raw int8 to get (q - zero_point), i.e. minus the zero point, for inputs; and the zero
 *    point itself for outputs.
 *  - Requantisation: a real multiplier M (e.g. input_scale * filter_scale / output_scale) is stored
 *    as (multiplier, shift) with M = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31). The
 *    generator computes these with TFLite's QuantizeMultiplier (frexp, round half away from zero).
 *    Applying it to an int32 x: x * 2^max(shift, 0), then round(x * multiplier / 2^31) with ties away
 *    from zero (saturating), then a rounding right shift by max(-shift, 0) with ties away from zero.
 *  - Fused activations (RELU, RELU6, RELU_N1_TO_1) are a clamp to [act_min, act_max], computed by
 *    the generator as zero_point + round(limit / scale), limited to the type's range.
 *  - Accumulators are int32. For convolutions and FULLY_CONNECTED each product is at most
 *    |q - zp| * |w| <= 255 * 128 = 32640, so a sum of fewer than 65,793 products (kernel height x
 *    width x input channels, or the input depth) cannot overflow, bias included; the generator
 *    refuses operators over that bound.
 *  - Right shifts of negative numbers are arithmetic (checked at compile time).
 */
#ifndef TS_KERNELS_H
#define TS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_OK 0
#define TS_ERR_PARAMS 1

/* Highest tensor rank the shape-generic kernels (broadcasting, MEAN, PAD, TRANSPOSE) handle. */
#define TS_MAX_DIMS 6

/* Alignment of the arena (and of nothing else); every compiler tinysched targets knows this form. */
#if defined(__GNUC__) || defined(__clang__) || defined(__ICCARM__) || defined(__CC_ARM)
#define TS_ALIGNED(n) __attribute__((aligned(n)))
#else
#define TS_ALIGNED(n)
#endif

/* ---- CONV_2D ------------------------------------------------------------------------------------
 * out[b][y][x][o] = clamp(out_offset + requant_o(bias[o] + sum_{ky,kx,c} w[o][ky][kx][c] *
 *                        (in[b][iy][ix][c] + input_offset)), act_min, act_max)
 * with iy = y * stride_h - pad_top + ky * dilation_h (likewise x); taps outside the input are
 * skipped (zero padding in real terms). Per-output-channel multiplier/shift; bias may be NULL. */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* [out_c] */
    const int32_t *shift;      /* [out_c] */
} ts_conv2d_s8_params;

int ts_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                 const int32_t *bias, int8_t *output);

/* ---- DEPTHWISE_CONV_2D --------------------------------------------------------------------------
 * Output channel o = c * depth_multiplier + m reads only input channel c:
 * out[b][y][x][o] = clamp(out_offset + requant_o(bias[o] + sum_{ky,kx} w[0][ky][kx][o] *
 *                        (in[b][iy][ix][c] + input_offset)), act_min, act_max). */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c; /* out_c == in_c * depth_multiplier */
    int32_t depth_multiplier;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* [out_c] */
    const int32_t *shift;      /* [out_c] */
} ts_depthwise_conv2d_s8_params;

int ts_depthwise_conv2d_s8(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                           const int8_t *filter, const int32_t *bias, int8_t *output);

/* ---- FULLY_CONNECTED ----------------------------------------------------------------------------
 * out[b][o] = clamp(out_offset + requant_o(bias[o] + sum_i (w[o][i] + filter_offset) *
 *                  (in[b][i] + input_offset)), act_min, act_max).
 * multiplier/shift have out_depth entries when per_channel, else one. Bias may be NULL.
 * Unlike the convolutions, requant_o here rounds once: (acc * multiplier + 2^(30 - shift)) >>
 * (31 - shift) in 64 bits, which is what TFLite's FULLY_CONNECTED computes (verified bit-exact
 * against ai-edge-litert's reference kernels; the two-step rounding differs by 1 in ~1% of outputs). */
typedef struct {
    int32_t batches;
    int32_t in_depth;
    int32_t out_depth;
    int32_t input_offset;
    int32_t filter_offset;
    int32_t output_offset;
    int32_t act_min, act_max;
    int32_t per_channel;
    const int32_t *multiplier;
    const int32_t *shift;
} ts_fully_connected_s8_params;

int ts_fully_connected_s8(const ts_fully_connected_s8_params *p, const int8_t *input,
                          const int8_t *weights, const int32_t *bias, int8_t *output);

/* ---- AVERAGE_POOL_2D / MAX_POOL_2D ---------------------------------------------------------------
 * Input and output share one quantisation. The window is clipped to the input (padding is never
 * counted). Average: sum / count rounded to nearest, ties away from zero; max: the largest value.
 * Then clamp to [act_min, act_max]. */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t act_min, act_max;
} ts_pool2d_s8_params;

int ts_avg_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output);
int ts_max_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output);

/* ---- broadcasting -------------------------------------------------------------------------------
 * An elementwise binary operator walks the output in row-major order over dims[0..5] (the output
 * shape, padded on the left with 1s); input k reads element sum_d index[d] * in_strides[k][d],
 * where a stride is 0 along a dimension that input broadcasts. */
typedef struct {
    int32_t dims[TS_MAX_DIMS];
    int32_t in1_strides[TS_MAX_DIMS];
    int32_t in2_strides[TS_MAX_DIMS];
} ts_broadcast_shape;

/* ---- ADD ----------------------------------------------------------------------------------------
 * Both inputs are brought to a common scale with 20 bits of headroom, then summed and rescaled:
 *   a = requant((x1 + input1_offset) << left_shift, input1_multiplier, input1_shift)   (shift <= 0)
 *   b = requant((x2 + input2_offset) << left_shift, input2_multiplier, input2_shift)
 *   out = clamp(requant(a + b, output_multiplier, output_shift) + output_offset, act_min, act_max)
 * |x + offset| <= 255, so (x + offset) << 20 stays below 2^28: no overflow. */
typedef struct {
    ts_broadcast_shape shape;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} ts_add_s8_params;

int ts_add_s8(const ts_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);

/* ---- MUL ----------------------------------------------------------------------------------------
 * out = clamp(output_offset + requant((x1 + input1_offset) * (x2 + input2_offset), multiplier,
 *             shift), act_min, act_max); the product is at most 255 * 255. */
typedef struct {
    ts_broadcast_shape shape;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} ts_mul_s8_params;

int ts_mul_s8(const ts_mul_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);

/* ---- MEAN ---------------------------------------------------------------------------------------
 * For every output element: s = sum of the raw int8 values over the reduced axes (count of them),
 * out = clamp(requant(s - input_zero_point * count, multiplier, shift) + output_zero_point) where
 * (multiplier, shift) already fold in 1/count exactly as TFLite does (the integer division of the
 * multiplier, scaled up by floor(log2(count)) bits first). s fits int32 for count < 2^23. Output
 * elements are visited over out_dims with input strides out_strides; the reduced elements of each
 * over red_dims with input strides red_strides. */
typedef struct {
    int32_t out_dims[TS_MAX_DIMS];
    int32_t out_strides[TS_MAX_DIMS];
    int32_t red_dims[TS_MAX_DIMS];
    int32_t red_strides[TS_MAX_DIMS];
    int32_t count;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift;
} ts_mean_s8_params;

int ts_mean_s8(const ts_mean_s8_params *p, const int8_t *input, int8_t *output);

/* ---- SOFTMAX (int8 in, int8 out with scale 1/256 and zero point -128) --------------------------
 * TFLite's fixed-point softmax along the last axis: d = x - max(row); rows entries with d < diff_min
 * give -128; the others e = exp(d * beta * scale) in Q0.31 (gemmlowp's exp_on_negative_values on
 * Q5.26 input d * input_multiplier << input_left_shift), summed in Q12.19, and the output is
 * e / sum in Q0.8 (reciprocal by Newton-Raphson in fixed point), minus 128, clamped. */
typedef struct {
    int32_t outer;
    int32_t depth;
    int32_t input_multiplier;
    int32_t input_left_shift;
    int32_t diff_min;
} ts_softmax_s8_params;

int ts_softmax_s8(const ts_softmax_s8_params *p, const int8_t *input, int8_t *output);

/* ---- 8-bit table lookup (LOGISTIC, and later other pointwise functions) ---------------------------
 * out[i] = table[(uint8_t)in[i]]: the generator fills the 256-entry table exactly as TFLite's
 * LUTPopulate does (float32 function of the dequantised input, rounded, requantised, clamped). */
typedef struct {
    int32_t count;
    const int8_t *table; /* [256], indexed by the input byte */
} ts_lut_s8_params;

int ts_lut_s8(const ts_lut_s8_params *p, const int8_t *input, int8_t *output);

/* ---- QUANTIZE int8/uint8 -> int8/uint8 ----------------------------------------------------------
 * out = clamp(requant(x - input_zero_point, multiplier, shift) + output_zero_point) to the output
 * type's range; multiplier/shift represent input_scale / output_scale. */
typedef struct {
    int32_t count;
    int32_t input_is_uint8, output_is_uint8;
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;
} ts_requantize_8bit_params;

int ts_requantize_8bit(const ts_requantize_8bit_params *p, const void *input, void *output);

/* ---- QUANTIZE float32 -> int8: out = clamp(round(x / scale) + zero_point), in double precision,
 * rounding half away from zero (NaN becomes the zero point). */
typedef struct {
    int32_t count;
    double scale;
    int32_t zero_point;
} ts_quantize_f32_s8_params;

int ts_quantize_f32_s8(const ts_quantize_f32_s8_params *p, const float *input, int8_t *output);

/* ---- DEQUANTIZE int8 -> float32: out = (float)(scale * (x - zero_point)), scale in double. */
typedef struct {
    int32_t count;
    double scale;
    int32_t zero_point;
} ts_dequantize_s8_f32_params;

int ts_dequantize_s8_f32(const ts_dequantize_s8_f32_params *p, const int8_t *input, float *output);

/* ---- CONCATENATION ------------------------------------------------------------------------------
 * Inputs share the output's type and quantisation; for each of `outer` slices the output receives
 * chunk_bytes[k] bytes of input k in turn. */
typedef struct {
    int32_t num_inputs;
    int32_t outer;
    const int32_t *chunk_bytes; /* [num_inputs] */
} ts_concatenation_params;

int ts_concatenation(const ts_concatenation_params *p, const void *const *inputs, void *output);

/* ---- PAD (8-bit) --------------------------------------------------------------------------------
 * out has out_dims; the element at index i is in[i - pad_before] where that lies inside in_dims,
 * else pad_value (the output zero point: real 0). */
typedef struct {
    int32_t in_dims[TS_MAX_DIMS];
    int32_t out_dims[TS_MAX_DIMS];
    int32_t pad_before[TS_MAX_DIMS];
    int32_t pad_value;
} ts_pad_s8_params;

int ts_pad_s8(const ts_pad_s8_params *p, const int8_t *input, int8_t *output);

/* ---- TRANSPOSE (any element size) ---------------------------------------------------------------
 * Walks the output over out_dims in row-major order; output index i reads input element
 * sum_d i[d] * in_strides[d] (the input strides permuted by the operator's perm). */
typedef struct {
    int32_t out_dims[TS_MAX_DIMS];
    int32_t in_strides[TS_MAX_DIMS];
    int32_t element_bytes;
} ts_transpose_params;

int ts_transpose(const ts_transpose_params *p, const void *input, void *output);

/* ---- RESHAPE / SQUEEZE / EXPAND_DIMS: the bytes are unchanged, only the shape is new. ----------- */
typedef struct {
    int32_t bytes;
} ts_copy_params;

int ts_copy(const ts_copy_params *p, const void *input, void *output);

#ifdef __cplusplus
}
#endif

#endif /* TS_KERNELS_H */
