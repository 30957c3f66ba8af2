/* ts_max_pool2d_s8.c - MAX_POOL_2D, int8, window clipped to the input (see ts_kernels.h). */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"
#include "ts_simd.h"

#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
/* The bytewise signed max and min of two words: SSUB8 sets a GE flag per byte where a - b >= 0,
 * SEL takes a's byte there and b's elsewhere. */
static inline uint32_t max4(uint32_t a, uint32_t b)
{
    uint32_t t, r;
    __asm__("ssub8   %[t], %[a], %[b]\n\t"
            "sel     %[r], %[a], %[b]"
            : [t] "=&r"(t), [r] "=r"(r)
            : [a] "r"(a), [b] "r"(b)
            : "cc");
    return r;
}

static inline uint32_t min4(uint32_t a, uint32_t b) { return max4(a, b) ^ a ^ b; }

/* Channels [0, channels & ~3) of one output pixel, its window `rows` rows of `taps` taps from
 * `first` (the window's first tap): per four channels one word per tap, the running bytewise max,
 * clamped bytewise to [act_min, act_max]; channels c..c+3 written after every tap of theirs was
 * read, as the loop below writes channel c after its taps. */
static void max_pool_words(const ts_pool2d_s8_params *p, const int8_t *first, int32_t rows, int32_t taps,
                           int8_t *out)
{
    const int32_t ch = p->channels, c4 = ch & ~3;
    const size_t row_step = (size_t)p->in_w * ch;
    const uint32_t lo4 = ts_bytes4(p->act_min), hi4 = ts_bytes4(p->act_max);
    int32_t c, r, t;
    for (c = 0; c < c4; c += 4) {
        uint32_t best = lo4; /* the clamp's lower bound first: max(taps, act_min) */
        const int8_t *row = first + c;
        for (r = 0; r < rows; ++r, row += row_step) {
            const int8_t *q = row;
            for (t = 0; t < taps; ++t, q += ch) {
                best = max4(best, ts_load4(q));
            }
        }
        ts_store4(out + c, min4(best, hi4));
    }
}
#endif

int ts_max_pool2d_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, y, x, c, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->filter_h < 1 || p->filter_w < 1) {
        return TS_ERR_PARAMS; /* the generator refuses these too (tinysched/model/shapes.py) */
    }
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
                c = 0;
#if TS_DSP && (defined(__GNUC__) || defined(__clang__))
                if (ky_end > ky_start && kx_end > kx_start) {
                    max_pool_words(p, in_b + ((size_t)(y0 + ky_start) * p->in_w + (x0 + kx_start)) * p->channels,
                                   ky_end - ky_start, kx_end - kx_start, output);
                    c = p->channels & ~3;
                }
#endif
                for (; c < p->channels; ++c) {
                    int32_t best = -128;
                    for (ky = ky_start; ky < ky_end; ++ky) {
                        for (kx = kx_start; kx < kx_end; ++kx) {
                            const int32_t v =
                                in_b[((size_t)(y0 + ky) * p->in_w + (x0 + kx)) * p->channels + c];
                            best = v > best ? v : best;
                        }
                    }
                    output[c] = (int8_t)ts_clamp_i32(best, p->act_min, p->act_max);
                }
                output += p->channels;
            }
        }
    }
    return TS_OK;
}
