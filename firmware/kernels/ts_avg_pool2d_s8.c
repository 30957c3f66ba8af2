/* ts_avg_pool2d_s8.c - AVERAGE_POOL_2D, int8, window clipped to the input (see ts_kernels.h). */
#include <string.h>

#include "ts_fixedpoint.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

/* sum / count rounded to nearest, ties away from zero (C division truncates toward zero), clamped. */
static inline int8_t avg_out(int32_t acc, int32_t count, const ts_pool2d_s8_params *p)
{
    acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
    return (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
}

#if TS_DSP
/* The largest window the 16-bit lanes below sum exactly: |sum| <= 128 * 255 < 2^15. */
#define TS_POOL_LANE_TAPS 255
#endif

#if TS_DSP && !TS_MVE

/* Channels [0, channels & ~3) of one output pixel, its window `rows` rows of `taps` taps from
 * `first` (the window's first tap): per four channels one word per tap, its even and odd bytes
 * widened and added into two pairs of 16-bit lanes (SXTAB16), exact for up to TS_POOL_LANE_TAPS
 * taps; channel c's output written after every tap of channel c was read, as in the loop below. */
static void avg_pool_lanes(const ts_pool2d_s8_params *p, const int8_t *first, int32_t rows, int32_t taps,
                           int32_t count, int8_t *out)
{
    const int32_t ch = p->channels, c4 = ch & ~3;
    const size_t row_step = (size_t)p->in_w * ch;
    int32_t c, r, t;
    for (c = 0; c < c4; c += 4) {
        uint32_t even = 0, odd = 0; /* channels (c, c + 2) and (c + 1, c + 3) */
        const int8_t *row = first + c;
        for (r = 0; r < rows; ++r, row += row_step) {
            const int8_t *q = row;
            for (t = 0; t < taps; ++t, q += ch) {
                const uint32_t x = ts_load4(q);
                even = ts_even_off(x, even);
                odd = ts_odd_off(x, odd);
            }
        }
        out[c] = avg_out((int16_t)(even & 0xFFFFu), count, p);
        out[c + 1] = avg_out((int16_t)(odd & 0xFFFFu), count, p);
        out[c + 2] = avg_out((int16_t)(even >> 16), count, p);
        out[c + 3] = avg_out((int16_t)(odd >> 16), count, p);
    }
}
#endif

int ts_avg_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, y, x, c, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->filter_h < 1 || p->filter_w < 1) {
        return TS_ERR_PARAMS; /* the generator refuses these too (tinysched/model/shapes.py) */
    }
#if TS_MVE
    if (p->filter_h * p->filter_w <= 256) { /* Helium: 16-bit sums (firmware/kernels/ts_mve.h) */
        return ts_mve_avg_pool(p, input, output);
    }
#endif
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->channels;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            const int32_t ky_start = ts_max_i32(0, -y0);
            const int32_t ky_end = ts_min_i32(p->filter_h, p->in_h - y0);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                const int32_t kx_start = ts_max_i32(0, -x0);
                const int32_t kx_end = ts_min_i32(p->filter_w, p->in_w - x0);
                const int32_t count = (ky_end - ky_start) * (kx_end - kx_start);
                c = 0;
                if (ky_end <= ky_start || kx_end <= kx_start) {
                    return TS_ERR_PARAMS; /* an empty window: TFLite refuses it too */
                }
#if TS_DSP && !TS_MVE
                if (count <= TS_POOL_LANE_TAPS) {
                    avg_pool_lanes(p, in_b + ((size_t)(y0 + ky_start) * p->in_w + (x0 + kx_start)) * p->channels,
                                   ky_end - ky_start, kx_end - kx_start, count, output);
                    c = p->channels & ~3;
                }
#endif
                for (; c < p->channels; ++c) {
                    int32_t acc = 0;
                    for (ky = ky_start; ky < ky_end; ++ky) {
                        for (kx = kx_start; kx < kx_end; ++kx) {
                            acc += in_b[((size_t)(y0 + ky) * p->in_w + (x0 + kx)) * p->channels + c];
                        }
                    }
                    output[c] = avg_out(acc, count, p);
                }
                output += p->channels;
            }
        }
    }
    return TS_OK;
}

/* AVERAGE_POOL_2D by rows (ts_kernels.h): the sums are int32 in the host's byte order at any
 * alignment (memcpy: one word load or store where the core allows unaligned ones). On DSP cores
 * (Helium ones too) a call's rows (up to TS_POOL_LANE_TAPS taps) are summed four channels a word in 16-bit lanes, as
 * avg_pool_lanes sums a window, each lane then added to its channel's int32 sum: the same sums. */
/* A channel's int32 sum at any alignment (memcpy: one word load or store). */
static inline int32_t sum_get(const int8_t *at)
{
    int32_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static inline void sum_put(int8_t *at, int32_t v) { memcpy(at, &v, sizeof v); }

int ts_avg_pool2d_s8_rows(const ts_pool2d_s8_params *p, const int8_t *rows, int32_t first, int32_t count,
                          int8_t *sums, int8_t *output)
{
    const int32_t ch = p->channels, taps = count * p->in_w, total = p->in_h * p->in_w;
    int32_t c, t, acc;
    if (p->batches != 1 || p->out_h != 1 || p->out_w != 1 || p->filter_h != p->in_h || p->filter_w != p->in_w ||
        p->pad_top != 0 || p->pad_left != 0 || total < 1 || first < 0 || count < 1 || first + count > p->in_h) {
        return TS_ERR_PARAMS; /* not one window over the whole input (tinysched.memory.stream.global_pool) */
    }
    c = 0;
#if TS_DSP
    if (taps <= TS_POOL_LANE_TAPS) { /* four channels a word, summed in 16-bit lanes (avg_pool_lanes) */
        for (; c < (ch & ~3); c += 4) {
            uint32_t even = 0, odd = 0; /* channels (c, c + 2) and (c + 1, c + 3) */
            const int8_t *q = rows + c;
            int8_t *const at = sums + (size_t)4 * c;
            for (t = 0; t < taps; ++t, q += ch) {
                const uint32_t x = ts_load4(q);
                even = ts_even_off(x, even);
                odd = ts_odd_off(x, odd);
            }
            sum_put(at, (first != 0 ? sum_get(at) : 0) + (int16_t)(even & 0xFFFFu));
            sum_put(at + 4, (first != 0 ? sum_get(at + 4) : 0) + (int16_t)(odd & 0xFFFFu));
            sum_put(at + 8, (first != 0 ? sum_get(at + 8) : 0) + (int16_t)(even >> 16));
            sum_put(at + 12, (first != 0 ? sum_get(at + 12) : 0) + (int16_t)(odd >> 16));
        }
    }
#endif
    for (; c < ch; ++c) {
        const int8_t *q = rows + c;
        acc = 0;
        if (first != 0) {
            memcpy(&acc, sums + (size_t)4 * c, sizeof acc);
        }
        for (t = 0; t < taps; ++t, q += ch) {
            acc += *q;
        }
        memcpy(sums + (size_t)4 * c, &acc, sizeof acc);
    }
    if (first + count == p->in_h) {
        for (c = 0; c < ch; ++c) {
            memcpy(&acc, sums + (size_t)4 * c, sizeof acc);
            output[c] = avg_out(acc, total, p);
        }
    }
    return TS_OK;
}
