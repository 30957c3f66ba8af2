/* ts_expand_dw_s8.c - a 1x1 expansion CONV_2D and the DEPTHWISE_CONV_2D that alone reads it, channel
 * group by channel group through a small scratch (see ts_kernels.h, "Expansion then depthwise").
 *
 * Each piece is one of the two kernels' arithmetic on a group's channels and a few rows: a call of
 * ts_conv2d_s8_checked / ts_depthwise_conv2d_s8_checked on a copy of the whole layer's parameters
 * narrowed to the group (its checks made once per group and call), or, on DSP cores without Helium
 * where every channel of the group takes ts_rq's steps (the checks' bit 1), a cheaper way to the
 * same int32 accumulators and the same ts_rq:
 *  - the expansion by the kernel's pixel-in-registers path (ts_conv2d_s8_pixel_table) on a table
 *    made here per call (ed_expand_pixels), else in blocks of four channels (ed_expand_rq);
 *  - the depthwise by the kernel's Blocks path on blocks made here per call (ed_depthwise_blocks),
 *    or, for groups of one to three channels, by its own loop over each window's rectangle
 *    (ed_depthwise_narrow), whose fast paths would take them one at a time through the formula.
 * The per-call cost of the kernels' setup (their checks, the ts_rq fields, widened filters) is what
 * made small groups slow; these paths keep it to a table of the group's few channels.
 * A channel of either layer depends only on its own filter, bias, multiplier and shift (and, for the
 * depthwise, on the same channel of the expansion), so the narrowed calls give the whole calls' bytes.
 */
#include "ts_index.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

#if TS_RQ_ASM && !TS_MVE
#define ED_RQ 1
/* ts_rq_apply clamped to [lo, hi]: the kernel's rq_clamp */
static inline int8_t ed_rq_clamp(int32_t acc, const ts_rq *q, int32_t lo, int32_t hi)
{
    const int32_t v = ts_rq_apply(acc, q);
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}
#define ED_RQ_CIN 32 /* the widest input ed_expand_rq takes: its widened filter block, 256 bytes of stack */

/* The expansion of n pixels (flat, cin bytes each, cin a multiple of 4 up to ED_RQ_CIN) for the
 * narrowed q's channels (out_c a multiple of 4) into out ([n][out_c]): blocks of four channels in
 * turn, each with its filter widened to 16-bit lanes and its ts_rq fields prepared once, then the
 * pixels in turn: bias + the SMLAD dot products of (x + input_offset) and w (the same int32
 * accumulator as the kernel's 1x1 paths), ts_rq, packed, clamped bytewise, one word stored. */
static TS_NOINLINE void ed_expand_rq(const ts_conv2d_s8_params *q, const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int32_t n, int8_t *out)
{
    const int32_t cin = q->in_c, w = q->out_c, g4 = cin >> 2;
    const uint32_t off2 = ts_pack2x16(q->input_offset);
    uint32_t lim[2];
    uint32_t fw[ED_RQ_CIN * 2]; /* per group of four bytes k, per channel j: even then odd lanes */
    ts_rq rq[4];
    int32_t o, i, k, j;
    lim[0] = ts_bytes4(q->act_min);
    lim[1] = ts_bytes4(q->act_max);
    for (o = 0; o < w; o += 4) {
        int32_t b0, b1, b2, b3;
        const int8_t *x = input;
        int8_t *dst = out + o;
        for (j = 0; j < 4; ++j) {
            const int8_t *f = filter + (size_t)(o + j) * cin;
            ts_rq_prepare(q->multiplier[o + j], q->shift[o + j], q->output_offset, &rq[j]);
            for (k = 0; k < g4; ++k) {
                const uint32_t v = ts_load4(f + 4 * k);
                fw[(k * 4 + j) * 2] = ts_even(v);
                fw[(k * 4 + j) * 2 + 1] = ts_odd(v);
            }
        }
        b0 = bias != NULL ? bias[o] : 0;
        b1 = bias != NULL ? bias[o + 1] : 0;
        b2 = bias != NULL ? bias[o + 2] : 0;
        b3 = bias != NULL ? bias[o + 3] : 0;
        for (i = 0; i < n; ++i) {
            int32_t a0 = b0, a1 = b1, a2 = b2, a3 = b3;
            const uint32_t *f = fw;
            for (k = 0; k < g4; ++k) {
                const uint32_t xw = ts_load4(x + 4 * k);
                const uint32_t xe = ts_even_off(xw, off2), xo = ts_odd_off(xw, off2);
                a0 = ts_smlad(xe, f[0], a0);
                a0 = ts_smlad(xo, f[1], a0);
                a1 = ts_smlad(xe, f[2], a1);
                a1 = ts_smlad(xo, f[3], a1);
                a2 = ts_smlad(xe, f[4], a2);
                a2 = ts_smlad(xo, f[5], a2);
                a3 = ts_smlad(xe, f[6], a3);
                a3 = ts_smlad(xo, f[7], a3);
                f += 8;
            }
            ts_rq4_store(dst, a0, a1, a2, a3, rq, lim);
            x += cin;
            dst += w;
        }
    }
}

#define ED_PX_WORDS 192 /* ed_expand_pixels's table: 768 bytes of stack (16 channels at in_c 16, 24 at 8) */

/* The expansion by the kernel's pixel-in-registers path (ts_conv2d_s8_pixel_table) on a table made
 * here as the generator makes it (ts_kernels.h, CONV_2D "pixel in registers"): per channel
 * (bias + input_offset * sum(w)) << l1, the filter widened to lanes << l1, m, base, rr (bit 9 on the
 * last channel). Where its conditions hold (in_c 8, 12 or 16, out_c * (4 + in_c / 2) <= ED_PX_WORDS, the
 * activation range all of int8, every channel ts_rq's steps with a right shift, so l1 = 1): 1, the
 * n rows computed; else 0, nothing done. */
static TS_NOINLINE int ed_expand_pixels(const ts_conv2d_s8_params *q, const int8_t *input, const int8_t *filter,
                                        const int32_t *bias, int8_t *out)
{
    int32_t table[ED_PX_WORDS];
    const int32_t cin = q->in_c, w = q->out_c;
    int32_t o, k, *t = table;
    if ((cin != 8 && cin != 12 && cin != 16) || w * (4 + cin / 2) > ED_PX_WORDS || q->act_min != -128 ||
        q->act_max != 127) {
        return 0;
    }
    for (o = 0; o < w; ++o) {
        const int8_t *f = filter + (size_t)o * cin;
        int32_t sum = 0;
        ts_rq r;
        if (q->shift[o] >= 0) { /* no right shift: not this path's */
            return 0;
        }
        ts_rq_prepare(q->multiplier[o], q->shift[o], q->output_offset, &r); /* l1 = 1 */
        int32_t *const acc0 = t++;
        for (k = 0; k < cin; k += 4) {
            /* [w_k | w_k+2] and [w_k+1 | w_k+3], each lane << 1 (bit 16 cleared: the low lane's sign) */
            const uint32_t v = ts_load4(f + k), e = ts_even(v), d = ts_odd(v);
            sum = ts_smlad(e, 0x00010001u, sum);
            sum = ts_smlad(d, 0x00010001u, sum);
            *t++ = (int32_t)((e << 1) & 0xFFFEFFFFu);
            *t++ = (int32_t)((d << 1) & 0xFFFEFFFFu);
        }
        *acc0 = (int32_t)((uint32_t)((bias != NULL ? bias[o] : 0) + q->input_offset * sum) << 1);
        *t++ = r.m;
        *t++ = r.base;
        *t++ = r.rr | (o == w - 1 ? 512 : 0);
    }
    return (int)ts_conv2d_s8_pixel_table(q, input, out, table);
}

#define ED_BLOCK_WORDS 80 /* ed_depthwise_blocks's table: 320 bytes of stack (8 channels of a 3x3) */

/* The group's depthwise by the kernel's "Blocks" path on blocks made here as the generator makes
 * them (ts_kernels.h, DEPTHWISE_CONV_2D "Blocks"): per four channels their biases, ts_rq fields and
 * the filter's taps widened to lanes ([w_c | w_c+2], [w_c+1 | w_c+3]). Where they hold (d's checks
 * with bit 1: every channel ts_rq's steps; in_c a multiple of 4, filter_w <= 3, dilation_w 1, the
 * blocks within ED_BLOCK_WORDS): 1 with *rc the call's status; else 0, nothing done. */
static TS_NOINLINE int ed_depthwise_blocks(ts_depthwise_conv2d_s8_params *d, const int8_t *rows, const int8_t *filter,
                                           const int32_t *bias, int8_t *out, int32_t checks, int *rc)
{
    int32_t table[ED_BLOCK_WORDS];
    const int32_t w = d->in_c, taps = d->filter_h * d->filter_w;
    int32_t c, t, j, *b = table;
    if ((checks & 3) != 3 || (w & 3) != 0 || d->filter_w > 3 || d->dilation_w != 1 || d->depth_multiplier != 1 ||
        (w / 4) * (20 + 2 * taps) > ED_BLOCK_WORDS) {
        return 0;
    }
    for (c = 0; c < w; c += 4) {
        for (j = 0; j < 4; ++j) {
            *b++ = bias != NULL ? bias[c + j] : 0;
        }
        for (j = 0; j < 4; ++j) {
            ts_rq r;
            ts_rq_prepare(d->multiplier[c + j], d->shift[c + j], d->output_offset, &r);
            *b++ = r.m;
            *b++ = r.l1;
            *b++ = r.base;
            *b++ = r.rr;
        }
        for (t = 0; t < taps; ++t) {
            const uint32_t v = ts_load4(filter + (size_t)t * w + c);
            *b++ = (int32_t)ts_even(v);
            *b++ = (int32_t)ts_odd(v);
        }
    }
    d->blocks = table;
    *rc = ts_depthwise_conv2d_s8_checked(d, rows, filter, bias, out, checks);
    d->blocks = NULL;
    return 1;
}

/* The group's depthwise row for W < 4 channels (which the kernel's fast paths leave to the formula
 * one channel at a time), straight to the output pixels (pixel stride c): per output pixel the
 * window's rectangle inside the rows (d: in_h rows, pad_top, one output row), per channel bias + the
 * sum of w * (x + input_offset) over it (the formula's accumulator), then ts_rq (every channel takes
 * its steps: d's checks with bit 1, which also means dilation_w 1) clamped to the activation range.
 * W and WORDS (W 2 only: each window row four bytes a step, two taps of the two channels by SMLAD)
 * constants where inlined. */
static TS_ALWAYS_INLINE void ed_narrow_body(const ts_depthwise_conv2d_s8_params *d, const int8_t *rows,
                                            const int8_t *filter, const int32_t *bias, int8_t *dst, int32_t c,
                                            const int32_t W, const int WORDS)
{
    const int32_t in_w = d->in_w, fw = d->filter_w, off = d->input_offset, stride_w = d->stride_w;
    const int32_t lo = d->act_min, hi = d->act_max, in_row = d->dilation_h * in_w * W, w_row = fw * W;
    const int32_t y0 = -d->pad_top, out_w = d->out_w;
    const uint32_t off2 = ts_pack2x16(off);
    ts_rq rq[3];
    int32_t b[3] = {0, 0, 0};
    int32_t x, j, ky0, ky1, th, k;
    for (j = 0; j < W; ++j) {
        ts_rq_prepare(d->multiplier[j], d->shift[j], d->output_offset, &rq[j]);
        b[j] = bias != NULL ? bias[j] : 0;
    }
    ts_tap_range(y0, d->dilation_h, d->filter_h, d->in_h, &ky0, &ky1);
    th = ky1 - ky0;
    rows += (size_t)(y0 + ky0 * d->dilation_h) * in_w * W; /* not read where th <= 0 */
    filter += (size_t)ky0 * fw * W;
    for (x = 0; x < out_w; ++x) {
        const int32_t x0 = x * stride_w - d->pad_left;
        const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = in_w - x0 < fw ? in_w - x0 : fw;
        int32_t a0 = b[0], a1 = b[1], a2 = b[2];
        if (th > 0 && kx1 > kx0) {
            const int8_t *in = rows + (size_t)(x0 + kx0) * W, *f = filter + (size_t)kx0 * W;
            const int32_t n = (kx1 - kx0) * W;
            int32_t ky;
            if (WORDS) {
                /* rows four bytes a step: two taps of two channels (even lanes
                 * channel 0, odd 1); the last bytes one tap at a time */
                for (ky = 0; ky < th; ++ky) {
                    for (k = 0; k + 4 <= n; k += 4) {
                        const uint32_t xw = ts_load4(in + k), fv = ts_load4(f + k);
                        a0 = ts_smlad(ts_even_off(xw, off2), ts_even(fv), a0);
                        a1 = ts_smlad(ts_odd_off(xw, off2), ts_odd(fv), a1);
                    }
                    for (; k < n; k += W) {
                        a0 += ((int32_t)in[k] + off) * (int32_t)f[k];
                        if (W > 1) {
                            a1 += ((int32_t)in[k + 1] + off) * (int32_t)f[k + 1];
                        }
                    }
                    in += in_row;
                    f += w_row;
                }
            } else {
                for (ky = 0; ky < th; ++ky) {
                    for (k = 0; k < n; k += W) {
                        a0 += ((int32_t)in[k] + off) * (int32_t)f[k];
                        if (W > 1) {
                            a1 += ((int32_t)in[k + 1] + off) * (int32_t)f[k + 1];
                        }
                        if (W > 2) {
                            a2 += ((int32_t)in[k + 2] + off) * (int32_t)f[k + 2];
                        }
                    }
                    in += in_row;
                    f += w_row;
                }
            }
        }
        dst[0] = ed_rq_clamp(a0, &rq[0], lo, hi);
        if (W > 1) {
            dst[1] = ed_rq_clamp(a1, &rq[1], lo, hi);
        }
        if (W > 2) {
            dst[2] = ed_rq_clamp(a2, &rq[2], lo, hi);
        }
        dst += c;
    }
}

/* ed_narrow_body for two channels four bytes a step, where a whole window row is 8 bytes or more
 * (on shorter ones the scalar loop costs less) */
static TS_NOINLINE void ed_narrow_words(const ts_depthwise_conv2d_s8_params *d, const int8_t *rows,
                                        const int8_t *filter, const int32_t *bias, int8_t *dst, int32_t c)
{
    ed_narrow_body(d, rows, filter, bias, dst, c, 2, 1);
}

static TS_NOINLINE void ed_depthwise_narrow(const ts_depthwise_conv2d_s8_params *d, const int8_t *rows,
                                            const int8_t *filter, const int32_t *bias, int8_t *dst, int32_t c)
{
    if (d->in_c == 2 && d->filter_w >= 4) {
        ed_narrow_words(d, rows, filter, bias, dst, c);
    } else if (d->in_c == 1) {
        ed_narrow_body(d, rows, filter, bias, dst, c, 1, 0);
    } else if (d->in_c == 2) {
        ed_narrow_body(d, rows, filter, bias, dst, c, 2, 0);
    } else {
        ed_narrow_body(d, rows, filter, bias, dst, c, 3, 0);
    }
}

#else
#define ED_RQ 0
#endif

/* A group's narrowed parameters and the checks its calls take (made once per group and call). */
typedef struct {
    ts_conv2d_s8_params e;
    ts_depthwise_conv2d_s8_params d;
    const int8_t *ef, *df;
    const int32_t *eb, *db;
    int32_t e_checks, d_checks;
} ed_group;

static void ed_group_set(const ts_expand_dw_s8_params *p, int32_t c0, int32_t w, ed_group *g)
{
    const int32_t cin = p->expand.in_c;
    g->e = p->expand;
    g->e.batches = 1;
    g->e.out_c = w;
    g->e.multiplier += c0;
    g->e.shift += c0;
    g->e.quads = NULL; /* the generator's tables are the whole layer's */
    g->e.stem = NULL;
    g->ef = p->expand_filter + (size_t)c0 * cin;
    g->eb = p->expand_bias != NULL ? p->expand_bias + c0 : NULL;
    g->d = p->depthwise;
    g->d.batches = 1;
    g->d.out_h = 1;
    g->d.in_c = g->d.out_c = w;
    g->d.multiplier += c0;
    g->d.shift += c0;
    g->d.blocks = NULL; /* the generator's blocks are the whole layer's */
    g->df = p->depthwise_filter + (size_t)g->d.filter_h * g->d.filter_w * c0;
    g->db = p->depthwise_bias != NULL ? p->depthwise_bias + c0 : NULL;
    /* the row fields (in_h, out_h, pad_top) do not enter the checks */
    g->e_checks = ts_conv2d_s8_checks(&g->e, g->eb);
    g->d_checks = ts_depthwise_conv2d_s8_checks(&g->d, g->db);
}

/* The group's expansion: expanded rows [lo, lo + n) into `out` ([n][in_w][w]). */
static int ed_expand(ed_group *g, const int8_t *input, int32_t lo, int32_t n, int8_t *out)
{
    const int8_t *in = input + (size_t)lo * g->e.in_w * g->e.in_c;
    const int32_t cin = g->e.in_c, w = g->e.out_c;
    g->e.in_h = g->e.out_h = n;
#if ED_RQ
    /* (stride 1 checked by the caller; a dilation below 1 left to the kernel's refusal) */
    if ((g->e_checks & 2) != 0 && g->e.dilation_h >= 1 && g->e.dilation_w >= 1) {
        if (ed_expand_pixels(&g->e, in, g->ef, g->eb, out)) {
            return TS_OK;
        }
        if ((w & 3) == 0 && w < 2 * cin && (cin & 3) == 0 && cin <= ED_RQ_CIN) {
            ed_expand_rq(&g->e, in, g->ef, g->eb, n * g->e.in_w, out);
            return TS_OK;
        }
    }
#else
    (void)cin;
    (void)w;
#endif
    return ts_conv2d_s8_checked(&g->e, in, g->ef, g->eb, out, g->e_checks);
}

/* Output row y's group channels [c0, c0 + w): the depthwise over the n expanded rows at `rows` (the
 * first of them expanded row `first`, window top `top`), into `tmp`, then copied to the output's
 * pixels (pixel stride c). */
static int ed_depthwise(ed_group *g, const int8_t *rows, int32_t first, int32_t n, int32_t top, int8_t *tmp,
                        int8_t *dst, int32_t c)
{
    const int32_t out_w = g->d.out_w, w = g->d.out_c;
    int32_t x;
    int rc;
    g->d.in_h = n;
    g->d.pad_top = first - top; /* rows outside [first, first + n) are padding, as in the whole call */
#if ED_RQ
    if (w < 4 && (g->d_checks & 3) == 3 && g->d.depth_multiplier == 1 && g->d.dilation_w == 1 &&
        g->d.dilation_h >= 1 && g->d.stride_w >= 1 && g->d.stride_h >= 1) { /* else the kernel's refusal */
        ed_depthwise_narrow(&g->d, rows, g->df, g->db, dst, c);
        return TS_OK;
    }
    if (!ed_depthwise_blocks(&g->d, rows, g->df, g->db, tmp, g->d_checks, &rc))
#endif
    {
        rc = ts_depthwise_conv2d_s8_checked(&g->d, rows, g->df, g->db, tmp, g->d_checks);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (w == 4) {
        for (x = 0; x < out_w; ++x) {
            memcpy(dst + (size_t)x * c, tmp + (size_t)x * 4, 4);
        }
    } else if (w == 8) {
        for (x = 0; x < out_w; ++x) {
            memcpy(dst + (size_t)x * c, tmp + (size_t)x * 8, 8);
        }
    } else if (w < 4) {
        for (x = 0; x < out_w; ++x) {
            int32_t i;
            for (i = 0; i < w; ++i) {
                dst[(size_t)x * c + i] = tmp[(size_t)x * w + i];
            }
        }
    } else {
        for (x = 0; x < out_w; ++x) {
            memcpy(dst + (size_t)x * c, tmp + (size_t)x * w, (size_t)w);
        }
    }
    return TS_OK;
}

int ts_expand_dw_s8(const ts_expand_dw_s8_params *p, const int8_t *input, int8_t *output, int8_t *scratch)
{
    const ts_depthwise_conv2d_s8_params *d = &p->depthwise;
    const int32_t c = d->out_c, in_w = p->expand.in_w, group = p->group;
    const int32_t span = (d->filter_h - 1) * d->dilation_h + 1;
    /* the depthwise's row of a group first, then the expanded rows: the rows reach the scratch's
     * end on every path (a narrow group's depthwise writes the output straight, leaving tmp unused) */
    int8_t *const tmp = scratch;
    int8_t *const ring = scratch + (size_t)d->out_w * group;
    ed_group g;
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
        ed_group_set(p, c0, w, &g);
        for (y = 0; y < p->out_h; ++y) {
            const int32_t top = y * p->stride_h - p->pad_top;
            const int32_t lo = top > 0 ? top : 0;
            int32_t hi = top + span < p->in_h ? top + span : p->in_h;
            if (hi < lo) {
                hi = lo; /* the whole window is padding */
            }
            if (p->by_rows) {
                /* the window's rows expanded again for every output row */
                if (hi > lo && (rc = ed_expand(&g, input, lo, hi - lo, ring)) != TS_OK) {
                    return rc;
                }
                first = lo;
            } else {
                /* drop rows no later output row reads (lo never decreases), keep the rest at the start */
                if (lo >= next) {
                    first = next = lo;
                } else if (lo > first) {
                    memmove(ring, ring + (size_t)(lo - first) * wrow, (size_t)(next - lo) * wrow);
                    first = lo;
                }
                if (hi > next) {
                    rc = ed_expand(&g, input, next, hi - next, ring + (size_t)(next - first) * wrow);
                    if (rc != TS_OK) {
                        return rc;
                    }
                    next = hi;
                }
            }
            rc = ed_depthwise(&g, ring, first, hi - first, top, tmp,
                              output + (size_t)y * d->out_w * c + c0, c);
            if (rc != TS_OK) {
                return rc;
            }
        }
    }
    return TS_OK;
}
