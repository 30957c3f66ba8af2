/*
 * tsb_cmsis_nn.h - bench/bench_cmsis_nn.py's wrappers: each takes exactly the arguments of the
 * tinysched kernel it stands in for (firmware/include/ts_kernels.h) and runs the layer with CMSIS-NN
 * instead, called the way TFLite Micro's cmsis_nn kernels call it. Not part of tinysched: the bench
 * compiles this file, and CMSIS-NN's own sources from a checkout given on its command line, into
 * a second image of the same generated program.
 *
 *   tinysched call                   CMSIS-NN call (TFLM kernel)
 *   ts_conv2d_s8[_staged|_wide]      arm_convolve_wrapper_s8 (conv.cc)
 *   ts_depthwise_conv2d_s8[_staged]  arm_depthwise_conv_wrapper_s8 (depthwise_conv.cc)
 *   ts_fully_connected_s8            arm_fully_connected_wrapper_s8, kernel sums by arm_vector_sum_s8
 *                                    computed once, on the first call (TFLM: in Prepare)
 *   ts_add_s8 (no broadcast)         arm_elementwise_add_s8 (add.cc)
 *   ts_avg_pool2d_s8                 arm_avgpool_s8 (pooling.cc)
 *   ts_softmax_s8 (no exp table)     arm_softmax_s8 (softmax.cc)
 *
 * A shape CMSIS-NN does not take here (ADD with broadcasting, SOFTMAX with tinysched's float table)
 * runs tinysched's kernel, as TFLM falls back to its reference kernel.
 *
 * Same weights, biases, per-channel multipliers and shifts (the generated parameter structs'), the
 * buffers the plan gave. CMSIS-NN's scratch (ctx.buf, sized by its get_buffer_size functions at each
 * call) is a static buffer outside the arena, TSB_SCRATCH_BYTES. CMSIS-NN never writes over its
 * input: where the plan puts a layer's output over its input bytes (tinysched's in-place variants),
 * the layer writes into a static buffer (TSB_OUT_BYTES) and the wrapper copies it to the planned
 * output (tsb_copy; built with -DTSB_COPY_TWICE it copies twice, which is how the bench measures
 * what the copies cost). Status: TS_OK, or TS_ERR_PARAMS when CMSIS-NN refuses or a static buffer
 * is too small.
 */
#ifndef TSB_CMSIS_NN_H
#define TSB_CMSIS_NN_H

#include <stdint.h>

#include "ts_kernels.h"

int tsb_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter, const int32_t *bias,
                  int8_t *output);
int tsb_conv2d_s8_staged(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                         const int32_t *rq_table);
int tsb_conv2d_s8_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int8_t *scratch, int32_t blocks,
                       const int32_t *rq_table);
int tsb_conv2d_s8_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, const int32_t *pixel_table);
int tsb_conv2d_s8_pixel_rows(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, const int32_t *pixel_table);
int tsb_conv2d_s8_pixels_own(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                             const int32_t *bias, int8_t *output, const int32_t *table, ts_pixel_loop own);
int tsb_depthwise_conv2d_s8(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output);
int tsb_depthwise_conv2d_s8_staged(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output, int8_t *scratch,
                                   int32_t lag, const int32_t *rq_table);
int tsb_fully_connected_s8(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                           const int32_t *bias, int8_t *output);
int tsb_add_s8(const ts_add_s8_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
int tsb_avg_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output);
int tsb_softmax_s8(const ts_softmax_s8_params *p, const int8_t *input, int8_t *output);

/* A streamed chain's tensors between its operators, whole (CMSIS-NN runs the chain layer by layer):
 * tsb_mid(k) is the k-th of two static buffers of TSB_MID_BYTES each, used alternately. */
int8_t *tsb_mid(int32_t k);

/* The per-layer check (built with -DTSB_CHECK): around each swapped step the bench's rewritten
 * invoke saves the arena, runs tinysched's call, keeps the step's output bytes, restores the
 * arena, runs the CMSIS-NN call and counts the output bytes that differ; tsb_check_report writes
 * "step differing bytes" lines to the host file TSB_CHECK_PATH by semihosting (QEMU only). */
void tsb_check_save(const uint8_t *arena, uint32_t bytes);
void tsb_check_keep(const uint8_t *output, uint32_t bytes);
void tsb_check_restore(uint8_t *arena, uint32_t bytes);
void tsb_check_compare(uint32_t step, const uint8_t *output, uint32_t bytes);
void tsb_check_report(uint32_t steps);

#endif /* TSB_CMSIS_NN_H */
