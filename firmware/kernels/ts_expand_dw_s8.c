/* ts_expand_dw_s8.c - a 1x1 expansion CONV_2D and the DEPTHWISE_CONV_2D that alone reads it, channel
 * group by channel group through a small scratch (see ts_kernels.h, "Expansion then depthwise").
 *
 * Nothing here computes a product: each piece is a call of ts_conv2d_s8 or ts_depthwise_conv2d_s8 on
 * a copy of the whole layer's parameters narrowed to a group's channels and a few rows. A channel of
 * either layer depends only on its own filter, bias, multiplier and shift (and, for the depthwise,
 * on the same channel of the expansion), so the narrowed calls give the whole calls' bytes.
 */
#include "ts_kernels.h"

/* The group's expansion: expanded rows [lo, lo + n) of channels [c0, c0 + w) into `out` ([n][in_w][w]). */
static int ed_expand(const ts_expand_dw_s8_params *p, const int8_t *input, int32_t lo, int32_t n, int32_t c0,
                     int32_t w, int8_t *out)
{
    ts_conv2d_s8_params q = p->expand;
    const int32_t cin = q.in_c;
    q.batches = 1;
    q.in_h = q.out_h = n;
    q.out_c = w;
    q.multiplier += c0;
    q.shift += c0;
    q.quads = NULL; /* the generator's tables are the whole layer's */
    q.stem = NULL;
    return ts_conv2d_s8(&q, input + (size_t)lo * q.in_w * cin, p->expand_filter + (size_t)c0 * cin,
                        p->expand_bias != NULL ? p->expand_bias + c0 : NULL, out);
}

/* Output row y's channels [c0, c0 + w): the depthwise over the n expanded rows at `rows` (the first
 * of them expanded row `first`, window top `top`), into `tmp`, then scattered to the output's pixels. */
static int ed_depthwise(const ts_expand_dw_s8_params *p, const int8_t *rows, int32_t first, int32_t n,
                        int32_t top, int32_t y, int32_t c0, int32_t w, int8_t *tmp, int8_t *output)
{
    ts_depthwise_conv2d_s8_params q = p->depthwise;
    const int32_t c = q.out_c, out_w = q.out_w;
    int8_t *dst = output + (size_t)y * out_w * c + c0;
    int32_t x;
    int rc;
    q.batches = 1;
    q.in_h = n;
    q.out_h = 1;
    q.pad_top = first - top; /* rows outside [first, first + n) are padding, as in the whole call */
    q.in_c = q.out_c = w;
    q.multiplier += c0;
    q.shift += c0;
    q.blocks = NULL; /* the generator's blocks are the whole layer's */
    rc = ts_depthwise_conv2d_s8(&q, rows, p->depthwise_filter + (size_t)q.filter_h * q.filter_w * c0,
                                p->depthwise_bias != NULL ? p->depthwise_bias + c0 : NULL, tmp);
    if (rc != TS_OK) {
        return rc;
    }
    for (x = 0; x < out_w; ++x) {
        memcpy(dst + (size_t)x * c, tmp + (size_t)x * w, (size_t)w);
    }
    return TS_OK;
}

int ts_expand_dw_s8(const ts_expand_dw_s8_params *p, const int8_t *input, int8_t *output, int8_t *scratch)
{
    const ts_depthwise_conv2d_s8_params *d = &p->depthwise;
    const int32_t c = d->out_c, in_w = p->expand.in_w, group = p->group;
    const int32_t span = (d->filter_h - 1) * d->dilation_h + 1;
    const size_t row_bytes = (size_t)in_w * group; /* a ring row of the widest group */
    int8_t *const tmp = scratch + (size_t)span * row_bytes;
    int32_t c0, y;
    int rc;
    /* what the row mapping and the scratch size assume; the called kernels check the rest */
    if (group < 1 || d->depth_multiplier != 1 || d->in_c != c || p->expand.out_c != c || p->stride_h < 1 ||
        d->filter_h < 1 || d->dilation_h < 1 || p->expand.filter_h != 1 || p->expand.filter_w != 1 ||
        p->expand.stride_h != 1 || p->expand.stride_w != 1 || p->expand.pad_top != 0 || p->expand.pad_left != 0 ||
        d->in_w != in_w || p->expand.out_w != in_w) {
        return TS_ERR_PARAMS;
    }
    for (c0 = 0; c0 < c; c0 += group) {
        const int32_t w = c - c0 < group ? c - c0 : group;
        const size_t wrow = (size_t)in_w * w; /* an expanded row of this group */
        int32_t first = 0, next = 0;          /* the ring's rows (by_rows 0) */
        for (y = 0; y < p->out_h; ++y) {
            const int32_t top = y * p->stride_h - p->pad_top;
            const int32_t lo = top > 0 ? top : 0;
            int32_t hi = top + span < p->in_h ? top + span : p->in_h;
            if (hi < lo) {
                hi = lo; /* the whole window is padding */
            }
            if (p->by_rows) {
                /* the window's rows expanded again for every output row */
                if (hi > lo && (rc = ed_expand(p, input, lo, hi - lo, c0, w, scratch)) != TS_OK) {
                    return rc;
                }
                first = lo;
            } else {
                /* drop rows no later output row reads (lo never decreases), keep the rest at the start */
                if (lo >= next) {
                    first = next = lo;
                } else if (lo > first) {
                    memmove(scratch, scratch + (size_t)(lo - first) * wrow, (size_t)(next - lo) * wrow);
                    first = lo;
                }
                if (hi > next) {
                    rc = ed_expand(p, input, next, hi - next, c0, w, scratch + (size_t)(next - first) * wrow);
                    if (rc != TS_OK) {
                        return rc;
                    }
                    next = hi;
                }
            }
            rc = ed_depthwise(p, scratch, first, hi - first, top, y, c0, w, tmp, output);
            if (rc != TS_OK) {
                return rc;
            }
        }
    }
    return TS_OK;
}
