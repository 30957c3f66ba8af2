/* ts_legacy_uint8.c - the arithmetic of legacy uint8-quantised models, run on their int8 form (the
 * bytes xor 0x80, zero points - 128; tinysched/model/uint8.py): convolutions with a filter offset,
 * AVERAGE_POOL_2D rounding as TFLite's uint8 kernel (RESIZE_BILINEAR's float version:
 * ts_resize_bilinear_float_s8.c). Plain loops, the convolutions' sums four bytes a word on DSP
 * cores (CONV_2D: the raw filter against the input, filter_offset * sum(x + input_offset) added
 * once per pixel, the generator's ts_rq fields where given); on DSP cores a layer with the
 * generator's table of its filter plus the filter offset runs an int8 path of
 * ts_conv2d_s8.c / ts_depthwise_conv2d_s8.c on it instead (a 1x1 CONV_2D's pixel table, a
 * 3x3 CONV_2D over 3 channels' stem table, a DEPTHWISE_CONV_2D's blocks). See ts_kernels.h "Legacy
 * uint8". */
#include <string.h>

#include "ts_fixedpoint.h"
#include "ts_kernels.h"
#include "ts_simd.h"

/* sum over c < n of (x[c] + input_offset) * (w[c] + filter_offset): on DSP cores four channels a
 * word, each byte widened with its offset into 16-bit lanes (SXTAB16: |x + offset| <= 255 fits) and
 * the lane pairs multiplied and added (SMLAD), then the channels past the last word one at a time;
 * the same int32 sum (integer addition is exact in any order: the generator bounds the products). */
static int32_t dot_offsets(const int8_t *x, const int8_t *w, int32_t n, int32_t input_offset, int32_t filter_offset)
{
    int32_t acc = 0, c = 0;
#if TS_DSP
    const uint32_t in2 = ts_pack2x16(input_offset), f2 = ts_pack2x16(filter_offset);
    for (; c + 4 <= n; c += 4) {
        const uint32_t xw = ts_load4(x + c), ww = ts_load4(w + c);
        acc = ts_smlad(ts_even_off(xw, in2), ts_even_off(ww, f2), acc);
        acc = ts_smlad(ts_odd_off(xw, in2), ts_odd_off(ww, f2), acc);
    }
#endif
    for (; c < n; ++c) {
        acc += (x[c] + input_offset) * (w[c] + filter_offset);
    }
    return acc;
}

#if TS_DSP
/* sum over c < n of x[c] (signed bytes): USADA8 adds the bytes' unsigned form (x xor 0x80, that is
 * x + 128) four a word, then 128 per byte is taken off; the tail one at a time. */
static int32_t sum_bytes(const int8_t *x, int32_t n)
{
    uint32_t u = 0;
    int32_t c = 0, s;
    for (; c + 4 <= n; c += 4) {
        u = __usada8(ts_load4(x + c) ^ 0x80808080u, 0u, u);
    }
    s = (int32_t)u - 128 * c;
    for (; c < n; ++c) {
        s += x[c];
    }
    return s;
}

/* Four output channels' sums over n bytes of a window, the raw filter (no filter offset: the caller
 * adds filter_offset * sum(x + input_offset) once per pixel for every channel), filters w, w +
 * stride, w + 2 stride, w + 3 stride: each input word widened once with the input offset
 * (SXTAB16), each filter word widened (SXTB16), SMLAD; the bytes past the last word one at a time.
 * Added into acc[0..3]. Two filter pointers (w, w + 2 stride) with the stride as the offset keep
 * the loop's values in registers; with the asm, pairs of words go through one asm loop (DOT4_WORD
 * twice, 49 instructions per 32 products), its 13 operands in registers named at every level
 * (DOT4_REG: left to the allocator, GCC 12 finds no room for them at -O3 on FPU cores). */
#if TS_RQ_ASM
#define DOT4_REG(r) __asm__(r)
/* One input word (p) against the four filters' words (w: channel 0, w + k: 1, b: 2, b + k: 3), each
 * filter pointer stepped past its word; t, u scratch. */
#define DOT4_FILTER(a, load)                                                                            \
    load "sxtb16  %[u], %[t]\n\t"                                                                        \
    "sxtb16  %[t], %[t], ror #8\n\t"                                                                     \
    "smlad   %[" a "], %[xe], %[u], %[" a "]\n\t"                                                        \
    "smlad   %[" a "], %[xo], %[t], %[" a "]\n\t"
#define DOT4_WORD                                                                                       \
    "ldr     %[t], [%[p]], #4\n\t"                                                                       \
    "sxtab16 %[xe], %[off2], %[t]\n\t"                                                                   \
    "sxtab16 %[xo], %[off2], %[t], ror #8\n\t" DOT4_FILTER("a1", "ldr     %[t], [%[w], %[k]]\n\t")        \
        DOT4_FILTER("a0", "ldr     %[t], [%[w]], #4\n\t") DOT4_FILTER("a3", "ldr     %[t], [%[b], %[k]]\n\t") \
            DOT4_FILTER("a2", "ldr     %[t], [%[b]], #4\n\t")
#endif
static TS_ALWAYS_INLINE void dot4_words(const int8_t *x, const int8_t *w, size_t stride, int32_t n,
                                        int32_t input_offset, int32_t *acc)
{
    const uint32_t in2 = ts_pack2x16(input_offset);
    const int8_t *wb = w + 2 * stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], c, words = n >> 2;
#if TS_RQ_ASM
    if (words >= 2) {
        const int8_t *const end = x + 8 * (words >> 1);
        register int32_t r0 DOT4_REG("r0") = a0, r1 DOT4_REG("r1") = a1, r2 DOT4_REG("r2") = a2, r3 DOT4_REG("r3") = a3;
        register const int8_t *px DOT4_REG("r4") = x;
        register const int8_t *pw DOT4_REG("r5") = w;
        register const int8_t *pb DOT4_REG("r6") = wb;
        register const int32_t k DOT4_REG("r8") = (int32_t)stride;
        register const uint32_t off2 DOT4_REG("r9") = in2;
        register uint32_t xe DOT4_REG("r10"), xo DOT4_REG("r11"), t DOT4_REG("r12"), u DOT4_REG("lr");
        __asm__ volatile("1:\n\t" DOT4_WORD DOT4_WORD "ldr     %[t], %[end]\n\t"
                         "cmp     %[p], %[t]\n\t"
                         "bne     1b"
                         : [a0] "+r"(r0), [a1] "+r"(r1), [a2] "+r"(r2), [a3] "+r"(r3), [p] "+r"(px), [w] "+r"(pw),
                           [b] "+r"(pb), [xe] "=&r"(xe), [xo] "=&r"(xo), [t] "=&r"(t), [u] "=&r"(u)
                         : [k] "r"(k), [off2] "r"(off2), [end] "m"(end)
                         : "cc", "memory");
        a0 = r0;
        a1 = r1;
        a2 = r2;
        a3 = r3;
        x = px;
        w = pw;
        wb = pb;
        words &= 1;
    }
#endif
    for (; words > 0; --words) {
        const uint32_t xw = ts_load4(x);
        const uint32_t xe = ts_even_off(xw, in2), xo = ts_odd_off(xw, in2);
        uint32_t ww = ts_load4(w);
        a0 = ts_smlad(xo, ts_odd(ww), ts_smlad(xe, ts_even(ww), a0));
        ww = ts_load4(w + stride);
        a1 = ts_smlad(xo, ts_odd(ww), ts_smlad(xe, ts_even(ww), a1));
        ww = ts_load4(wb);
        a2 = ts_smlad(xo, ts_odd(ww), ts_smlad(xe, ts_even(ww), a2));
        ww = ts_load4(wb + stride);
        a3 = ts_smlad(xo, ts_odd(ww), ts_smlad(xe, ts_even(ww), a3));
        x += 4;
        w += 4;
        wb += 4;
    }
    for (c = 0; c < (n & 3); ++c) {
        const int32_t v = x[c] + input_offset;
        a0 += v * w[c];
        a1 += v * w[stride + c];
        a2 += v * wb[c];
        a3 += v * wb[stride + c];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* dot4_words as a function of its own (its loop's registers its own). */
static TS_NOINLINE void dot4_raw(const int8_t *x, const int8_t *w, size_t stride, int32_t n, int32_t input_offset,
                                 int32_t *acc)
{
    dot4_words(x, w, stride, n, input_offset, acc);
}

#if TS_RQ_ASM
/* Every group of four output channels of one pixel whose window's taps inside the input are `rows`
 * runs of n bytes (x_row bytes apart in the input, w_row in each filter; one run for a 1x1 window):
 * per group its accumulators from `start` (filter_offset * sum(x + input_offset)) plus its biases,
 * dot4_words over the runs, then ts_rq with the generator's fields, clamped to lim, one word stored
 * (ts_rq4_store); the groups in order, each written after its window is read. In one function so a
 * group costs no call and no address arithmetic but its filter step. */
static TS_NOINLINE void pixel_groups(const int8_t *x, const int8_t *w, size_t per_out, int32_t n, int32_t rows,
                                     size_t x_row, size_t w_row, int32_t groups, int32_t input_offset,
                                     int32_t start, const int32_t *bias, const int32_t *rq, const uint32_t *lim,
                                     int8_t *out)
{
    int32_t g, r, acc[4];
    for (g = 0; g < groups; ++g, w += 4 * per_out, rq += 16, out += 4) {
        acc[0] = start + (bias != NULL ? bias[4 * g] : 0);
        acc[1] = start + (bias != NULL ? bias[4 * g + 1] : 0);
        acc[2] = start + (bias != NULL ? bias[4 * g + 2] : 0);
        acc[3] = start + (bias != NULL ? bias[4 * g + 3] : 0);
        for (r = 0; r < rows; ++r) {
            dot4_words(x + r * x_row, w + r * w_row, per_out, n, input_offset, acc);
        }
        ts_rq4_store(out, acc[0], acc[1], acc[2], acc[3], (const ts_rq *)(const void *)rq, lim);
    }
}
#endif
#endif

/* The taps [*lo, *hi) of a window starting at `start` (dilated by `dilation`) that fall inside
 * [0, size): empty when *hi <= *lo. */
static void taps_inside(int32_t start, int32_t size, int32_t taps, int32_t dilation, int32_t *lo, int32_t *hi)
{
    *lo = start < 0 ? (-start + dilation - 1) / dilation : 0;
    *hi = start >= size ? 0 : ts_min_i32(taps, (size - 1 - start) / dilation + 1);
}

/* One output of a convolution: the requantised, offset, clamped accumulator. */
static int8_t conv_out(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset, int32_t lo,
                       int32_t hi)
{
    acc = ts_requantize(acc, multiplier, shift) + output_offset;
    return (int8_t)ts_clamp_i32(acc, lo, hi);
}

/* The fields a legacy parameter struct shares, by name, with its int8 twin (ts_kernels.h), copied
 * into the twin for the int8 table paths (conv_table_path, depthwise_blocks). */
#define TS_LEGACY_SHARED_FIELDS(q, p) \
    do { \
        (q).batches = (p)->batches; \
        (q).in_h = (p)->in_h; \
        (q).in_w = (p)->in_w; \
        (q).in_c = (p)->in_c; \
        (q).out_h = (p)->out_h; \
        (q).out_w = (p)->out_w; \
        (q).out_c = (p)->out_c; \
        (q).filter_h = (p)->filter_h; \
        (q).filter_w = (p)->filter_w; \
        (q).stride_h = (p)->stride_h; \
        (q).stride_w = (p)->stride_w; \
        (q).dilation_h = (p)->dilation_h; \
        (q).dilation_w = (p)->dilation_w; \
        (q).pad_top = (p)->pad_top; \
        (q).pad_left = (p)->pad_left; \
        (q).input_offset = (p)->input_offset; \
        (q).output_offset = (p)->output_offset; \
        (q).act_min = (p)->act_min; \
        (q).act_max = (p)->act_max; \
        (q).multiplier = (p)->multiplier; \
        (q).shift = (p)->shift; \
    } while (0)

/* ts_conv2d_s8_stem_table or ts_conv2d_s8_pixel_table on p's stem or pixel table (ts_kernels.h,
 * "Legacy uint8"): 1 where it ran. */
static int32_t conv_table_path(const ts_conv2d_offset_s8_params *p, const int8_t *input, int8_t *output)
{
    ts_conv2d_s8_params q;
    TS_LEGACY_SHARED_FIELDS(q, p);
    q.quads = NULL;
    q.stem = p->stem;
    if (p->stem != NULL) {
        return ts_conv2d_s8_stem_table(&q, input, output);
    }
    return ts_conv2d_s8_pixel_table(&q, input, output, p->pixel_table);
}

int ts_conv2d_filter_offset_s8(const ts_conv2d_offset_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    const int32_t filter_offset = p->filter_offset;
    const size_t per_out = (size_t)p->filter_h * p->filter_w * p->in_c; /* one output channel's filter */
    int32_t b, y, x, o, ky, kx, range[4];
#if TS_RQ_ASM
    const uint32_t lim[2] = {ts_bytes4(p->act_min), ts_bytes4(p->act_max)};
#endif
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1) {
        return TS_ERR_PARAMS;
    }
    if ((p->pixel_table != NULL || p->stem != NULL) && conv_table_path(p, input, output)) {
        return TS_OK; /* DSP cores: the int8 pixel path on the generator's table of w + filter_offset */
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            taps_inside(y0, p->in_h, p->filter_h, p->dilation_h, &range[0], &range[1]);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                taps_inside(x0, p->in_w, p->filter_w, p->dilation_w, &range[2], &range[3]);
                o = 0;
#if TS_DSP
                if (p->out_c >= 4 && range[1] > range[0] && range[3] > range[2]) {
                    /* the window's taps inside the input as runs of contiguous bytes: a row's taps
                     * at once without dilation across, else tap by tap */
                    const int32_t run_taps = p->dilation_w == 1 ? range[3] - range[2] : 1;
                    const int32_t run = run_taps * p->in_c;
                    int32_t sum = 0, count = 0; /* sum(x) and the number of bytes over the window */
                    for (ky = range[0]; ky < range[1]; ++ky) {
                        for (kx = range[2]; kx < range[3]; kx += run_taps) {
                            sum += sum_bytes(in_b + ((size_t)(y0 + ky * p->dilation_h) * p->in_w +
                                                     (x0 + kx * p->dilation_w)) * p->in_c, run);
                            count += run;
                        }
                    }
                    sum = filter_offset * (sum + count * p->input_offset); /* filter_offset * sum(x + input_offset) */
#if TS_RQ_ASM
                    if (p->rq != NULL && run_taps == range[3] - range[2]) { /* a run per window row */
                        const int32_t groups = p->out_c / 4;
                        pixel_groups(in_b + ((size_t)(y0 + range[0] * p->dilation_h) * p->in_w + (x0 + range[2])) * p->in_c,
                                     filter + ((size_t)range[0] * p->filter_w + range[2]) * p->in_c, per_out, run,
                                     range[1] - range[0], (size_t)p->dilation_h * p->in_w * p->in_c,
                                     (size_t)p->filter_w * p->in_c, groups, p->input_offset, sum, bias, p->rq, lim,
                                     output);
                        o = 4 * groups;
                        output += o;
                    }
#endif
                    for (; o + 4 <= p->out_c; o += 4) { /* four output channels a pass over the window */
                        int32_t acc[4], k;
                        acc[0] = sum + (bias != NULL ? bias[o] : 0);
                        acc[1] = sum + (bias != NULL ? bias[o + 1] : 0);
                        acc[2] = sum + (bias != NULL ? bias[o + 2] : 0);
                        acc[3] = sum + (bias != NULL ? bias[o + 3] : 0);
                        for (ky = range[0]; ky < range[1]; ++ky) {
                            for (kx = range[2]; kx < range[3]; kx += run_taps) {
                                const int8_t *in_px = in_b + ((size_t)(y0 + ky * p->dilation_h) * p->in_w +
                                                              (x0 + kx * p->dilation_w)) * p->in_c;
                                const int8_t *w_px = filter + o * per_out + ((size_t)ky * p->filter_w + kx) * p->in_c;
                                dot4_raw(in_px, w_px, per_out, run, p->input_offset, acc);
                            }
                        }
#if TS_RQ_ASM
                        if (p->rq != NULL) { /* the generator's ts_rq fields: requantised, clamped, one word */
                            ts_rq4_store(output, acc[0], acc[1], acc[2], acc[3], (const ts_rq *)(const void *)(p->rq + 4 * o),
                                         lim);
                            output += 4;
                            continue;
                        }
#endif
                        for (k = 0; k < 4; ++k) {
                            *output++ = conv_out(acc[k], p->multiplier[o + k], p->shift[o + k], p->output_offset,
                                                 p->act_min, p->act_max);
                        }
                    }
                }
#endif
                for (; o < p->out_c; ++o) {
                    int32_t acc = 0;
                    for (ky = range[0]; ky < range[1]; ++ky) {
                        for (kx = range[2]; kx < range[3]; ++kx) {
                            const int8_t *in_px =
                                in_b + ((size_t)(y0 + ky * p->dilation_h) * p->in_w + (x0 + kx * p->dilation_w)) * p->in_c;
                            const int8_t *w_px = filter + o * per_out + ((size_t)ky * p->filter_w + kx) * p->in_c;
                            acc += dot_offsets(in_px, w_px, p->in_c, p->input_offset, filter_offset);
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[o];
                    }
                    *output++ = conv_out(acc, p->multiplier[o], p->shift[o], p->output_offset, p->act_min,
                                         p->act_max);
                }
            }
        }
    }
    return TS_OK;
}


#if TS_DSP
/* Depth multiplier 1, channels [c, c + 4) of one output pixel: four accumulators over the window's
 * taps inside the input, each tap one word of input and one of filter, their bytes widened with
 * their offsets into 16-bit lanes (SXTAB16) and multiplied lane by lane (SMLABB / SMLATT): the
 * same int32 sums as the loop below. */
static void dw_four(const ts_depthwise_conv2d_offset_s8_params *p, const int8_t *in_b, const int8_t *filter,
                    int32_t c, int32_t y0, int32_t x0, const int32_t *range, int32_t *acc)
{
    const uint32_t in2 = ts_pack2x16(p->input_offset), f2 = ts_pack2x16(p->filter_offset);
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, ky, kx;
    for (ky = range[0]; ky < range[1]; ++ky) {
        const int8_t *row = in_b + ((size_t)(y0 + ky * p->dilation_h) * p->in_w) * p->in_c + c;
        const int8_t *w_row = filter + (size_t)ky * p->filter_w * p->out_c + c;
        for (kx = range[2]; kx < range[3]; ++kx) {
            const uint32_t xw = ts_load4(row + (size_t)(x0 + kx * p->dilation_w) * p->in_c);
            const uint32_t ww = ts_load4(w_row + (size_t)kx * p->out_c);
            const uint32_t xe = ts_even_off(xw, in2), xo = ts_odd_off(xw, in2);
            const uint32_t we = ts_even_off(ww, f2), wo = ts_odd_off(ww, f2);
            a0 = ts_smlabb(xe, we, a0);
            a1 = ts_smlabb(xo, wo, a1);
            a2 = ts_smlatt(xe, we, a2);
            a3 = ts_smlatt(xo, wo, a3);
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#endif

/* ts_depthwise_conv2d_s8_blocks on p's blocks (ts_kernels.h, "Legacy uint8"): 1 where it ran. */
static int32_t depthwise_blocks(const ts_depthwise_conv2d_offset_s8_params *p, const int8_t *input, int8_t *output)
{
    ts_depthwise_conv2d_s8_params q;
    TS_LEGACY_SHARED_FIELDS(q, p);
    q.depth_multiplier = p->depth_multiplier;
    q.blocks = p->blocks;
    return ts_depthwise_conv2d_s8_blocks(&q, input, output);
}

int ts_depthwise_conv2d_filter_offset_s8(const ts_depthwise_conv2d_offset_s8_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t filter_offset = p->filter_offset, dm = p->depth_multiplier;
    int32_t b, y, x, ic, m, ky, kx, range[4];
#if TS_RQ_ASM
    const uint32_t lim[2] = {ts_bytes4(p->act_min), ts_bytes4(p->act_max)};
#endif
    if (p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->out_c != p->in_c * dm) {
        return TS_ERR_PARAMS;
    }
    if (p->blocks != NULL && dm == 1 && depthwise_blocks(p, input, output)) {
        return TS_OK; /* DSP cores: the int8 blocks path on the generator's table of w + filter_offset */
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (y = 0; y < p->out_h; ++y) {
            const int32_t y0 = y * p->stride_h - p->pad_top;
            taps_inside(y0, p->in_h, p->filter_h, p->dilation_h, &range[0], &range[1]);
            for (x = 0; x < p->out_w; ++x) {
                const int32_t x0 = x * p->stride_w - p->pad_left;
                taps_inside(x0, p->in_w, p->filter_w, p->dilation_w, &range[2], &range[3]);
                ic = 0;
#if TS_DSP
                for (; dm == 1 && ic + 4 <= p->in_c; ic += 4) {
                    int32_t acc[4], k;
                    dw_four(p, in_b, filter, ic, y0, x0, range, acc);
#if TS_RQ_ASM
                    if (p->rq != NULL) { /* the generator's ts_rq fields: requantised, clamped, one word */
                        for (k = 0; k < 4; ++k) {
                            acc[k] += bias != NULL ? bias[ic + k] : 0;
                        }
                        ts_rq4_store(output, acc[0], acc[1], acc[2], acc[3],
                                     (const ts_rq *)(const void *)(p->rq + 4 * ic), lim);
                        output += 4;
                        continue;
                    }
#endif
                    for (k = 0; k < 4; ++k) {
                        const int32_t o = ic + k;
                        *output++ = conv_out(acc[k] + (bias != NULL ? bias[o] : 0), p->multiplier[o], p->shift[o],
                                             p->output_offset, p->act_min, p->act_max);
                    }
                }
#endif
                for (; ic < p->in_c; ++ic) {
                    for (m = 0; m < dm; ++m) {
                        const int32_t o = ic * dm + m;
                        int32_t acc = 0;
                        for (ky = range[0]; ky < range[1]; ++ky) {
                            const int8_t *row = in_b + ((size_t)(y0 + ky * p->dilation_h) * p->in_w) * p->in_c + ic;
                            const int8_t *w_row = filter + (size_t)ky * p->filter_w * p->out_c + o;
                            for (kx = range[2]; kx < range[3]; ++kx) {
                                acc += (row[(size_t)(x0 + kx * p->dilation_w) * p->in_c] + p->input_offset) *
                                       (w_row[(size_t)kx * p->out_c] + filter_offset);
                            }
                        }
                        if (bias != NULL) {
                            acc += bias[o];
                        }
                        *output++ = conv_out(acc, p->multiplier[o], p->shift[o], p->output_offset, p->act_min,
                                             p->act_max);
                    }
                }
            }
        }
    }
    return TS_OK;
}

int ts_avg_pool2d_half_up_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output)
{
    int32_t b, y, x, c, ky, kx;
    if (p->stride_h < 1 || p->stride_w < 1 || p->filter_h < 1 || p->filter_w < 1) {
        return TS_ERR_PARAMS;
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
                const int32_t count = (ky_end - ky_start) * (kx_end - kx_start);
                if (ky_end <= ky_start || kx_end <= kx_start) {
                    return TS_ERR_PARAMS; /* an empty window: TFLite refuses it too */
                }
                for (c = 0; c < p->channels; ++c) {
                    int32_t sum = 128 * count; /* the uint8 bytes' sum: each int8 q is uint8 q - 128 */
                    for (ky = ky_start; ky < ky_end; ++ky) {
                        for (kx = kx_start; kx < kx_end; ++kx) {
                            sum += in_b[((size_t)(y0 + ky) * p->in_w + (x0 + kx)) * p->channels + c];
                        }
                    }
                    sum = (sum + count / 2) / count - 128; /* TFLite's uint8 rounding, back to int8 */
                    output[c] = (int8_t)ts_clamp_i32(sum, p->act_min, p->act_max);
                }
                output += p->channels;
            }
        }
    }
    return TS_OK;
}
