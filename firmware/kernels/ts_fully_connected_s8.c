/* ts_fully_connected_s8.c - FULLY_CONNECTED, int8 in/out, int8 weights, int32 bias (see ts_kernels.h).
 *
 * fc_fast computes two outputs per pass over the input row (each input word loaded and widened once
 * for both weight rows): SXTAB16 adds the input offset and the filter offset to both 16-bit lanes
 * (each sum stays within int16) and SMLAD adds the two lane products where the DSP extension exists;
 * the bytes past the last whole word, and everything on other cores, go through the scalar loop.
 * The int32 accumulators equal fc_generic's (the same products, added in another order).
 */
#include "ts_fixedpoint.h"
#include "ts_kernels.h"
#include "ts_mve.h"
#include "ts_simd.h"

/* The four-unit path (fc_rows_quads, below): DSP cores without Helium, GNU asm (GCC, clang). */
#if TS_DSP && !TS_MVE && (defined(__GNUC__) || defined(__clang__))
#define FC_ROWS_QUADS 1
static int32_t fc_rows_quads(const int8_t *x, const int8_t *w, int32_t stride, int32_t n, int32_t units,
                             int32_t io, int first, int8_t *sums);
static int32_t fc_rows_quads16(const int8_t *x, const int8_t *w, int32_t stride, int32_t n, int32_t units,
                               int32_t io, int first, int8_t *sums);
#else
#define FC_ROWS_QUADS 0
#endif

/* acc[0..1] += sum_i (w0[i] + filter_offset) * (x[i] + input_offset), likewise w1: inlined into
 * ts_fully_connected_s8_rows's loop over the pairs (short rows: no call per pair), called as fc_dot2
 * by the whole kernel. */
static inline void fc_dot2_inline(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n,
                                  int32_t input_offset, int32_t filter_offset, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1];
#if TS_DSP
    const uint32_t ioff2 = ts_pack2x16(input_offset), foff2 = ts_pack2x16(filter_offset);
    const int8_t *const end4 = x + (n & ~3);
    while (x != end4) {
        const uint32_t xw = ts_load4(x), wa = ts_load4(w0), wb = ts_load4(w1);
        const uint32_t xe = ts_even_off(xw, ioff2), xo = ts_odd_off(xw, ioff2);
        a0 = ts_smlad(xe, ts_even_off(wa, foff2), a0);
        a0 = ts_smlad(xo, ts_odd_off(wa, foff2), a0);
        a1 = ts_smlad(xe, ts_even_off(wb, foff2), a1);
        a1 = ts_smlad(xo, ts_odd_off(wb, foff2), a1);
        x += 4;
        w0 += 4;
        w1 += 4;
    }
    n &= 3;
#endif
    for (; n > 0; --n) {
        const int32_t xv = (int32_t)*x++ + input_offset;
        a0 += ((int32_t)*w0++ + filter_offset) * xv;
        a1 += ((int32_t)*w1++ + filter_offset) * xv;
    }
    acc[0] = a0;
    acc[1] = a1;
}

static TS_NOINLINE void fc_dot2(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n,
                                int32_t input_offset, int32_t filter_offset, int32_t *acc)
{
    fc_dot2_inline(x, w0, w1, n, input_offset, filter_offset, acc);
}

static inline int8_t fc_out(const ts_fully_connected_s8_params *p, int32_t acc, int32_t o, const int32_t *bias)
{
    const int32_t q = p->per_channel ? o : 0;
    if (bias != NULL) {
        acc += bias[o];
    }
    acc = ts_wrap_add(ts_requantize_single(acc, p->multiplier[q], p->shift[q]), p->output_offset);
    return (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
}

static void fc_fast(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                    const int32_t *bias, int8_t *output)
{
    const int32_t in_depth = p->in_depth, out_depth = p->out_depth;
    int32_t b, o;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_depth;
        for (o = 0; o < out_depth; o += 2) {
            const int32_t o1 = o + 1 < out_depth ? o + 1 : o;
            int32_t acc[2] = {0, 0};
            fc_dot2(in_b, weights + (size_t)o * in_depth, weights + (size_t)o1 * in_depth, in_depth,
                    p->input_offset, p->filter_offset, acc);
            output[o] = fc_out(p, acc[0], o, bias);
            if (o1 != o) {
                output[o1] = fc_out(p, acc[1], o1, bias);
            }
        }
        output += out_depth;
    }
}

#if FC_ROWS_QUADS
/* DSP cores, filter_offset 0: units in chunks of up to 16 through the rows kernel's four-unit path
 * (the batch's input row as one row of in_depth bytes; fc_rows_quads16 when in_depth is a multiple
 * of 16), the chunk's int32 sums in a buffer on the stack, then each requantised (fc_out); the
 * units past the last multiple of four in a pair as fc_fast. The same int32 accumulators. */
static void fc_quads(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, int8_t *output)
{
    const int32_t in_depth = p->in_depth, out_depth = p->out_depth, io = p->input_offset;
    int32_t sums[16], b, o, k;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_depth;
        for (o = 0; o + 4 <= out_depth; o += k) {
            const int32_t chunk = out_depth - o >= 16 ? 16 : (out_depth - o) & ~3;
            const int8_t *const w_o = weights + (size_t)o * in_depth;
            if (in_depth % 16 == 0) {
                fc_rows_quads16(in_b, w_o, in_depth, in_depth, chunk, io, 0, (int8_t *)sums);
            } else {
                fc_rows_quads(in_b, w_o, in_depth, in_depth, chunk, io, 0, (int8_t *)sums);
            }
            for (k = 0; k < chunk; ++k) {
                output[o + k] = fc_out(p, sums[k], o + k, bias);
            }
        }
        for (; o < out_depth; o += 2) {
            const int32_t o1 = o + 1 < out_depth ? o + 1 : o;
            int32_t acc[2] = {0, 0};
            fc_dot2(in_b, weights + (size_t)o * in_depth, weights + (size_t)o1 * in_depth, in_depth, io,
                    0, acc);
            output[o] = fc_out(p, acc[0], o, bias);
            if (o1 != o) {
                output[o1] = fc_out(p, acc[1], o1, bias);
            }
        }
        output += out_depth;
    }
}
#endif

#if TS_MVE
/* Helium: outputs in pairs, each a VMLADAV dot product of the raw bytes (ts_mve_dot_1x2, which adds
 * io * sum(w)); the filter offset comes in as fo * sum(x) + n * io * fo, once per batch:
 * sum((w + fo)(x + io)) = sum(w x) + io sum(w) + fo sum(x) + n io fo (wrapping: the exact int32). */
static void fc_mve(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                   const int32_t *bias, int8_t *output)
{
    const int32_t n = p->in_depth, out_depth = p->out_depth, io = p->input_offset, fo = p->filter_offset;
    int32_t b, o;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *x = input + (size_t)b * n;
        const int32_t base = fo == 0 ? 0
                                     : (int32_t)((uint32_t)fo * (uint32_t)ts_mve_sum(x, n) +
                                                 (uint32_t)n * (uint32_t)io * (uint32_t)fo);
        for (o = 0; o < out_depth; o += 2) {
            const int32_t o1 = o + 1 < out_depth ? o + 1 : o;
            int32_t acc[2] = {base, base};
            ts_mve_dot_1x2(x, weights + (size_t)o * n, weights + (size_t)o1 * n, n, io, acc);
            output[o] = fc_out(p, acc[0], o, bias);
            if (o1 != o) {
                output[o1] = fc_out(p, acc[1], o1, bias);
            }
        }
        output += out_depth;
    }
}
#else
#define fc_mve fc_fast
#endif

static void fc_generic(const ts_fully_connected_s8_params *p, const int8_t *input, const int8_t *weights,
                       const int32_t *bias, int8_t *output)
{
    /* Local copies: stores through the int8 output may alias *p, which would force reloads. */
    const int32_t in_depth = p->in_depth;
    const int32_t out_depth = p->out_depth;
    const int32_t input_offset = p->input_offset;
    const int32_t filter_offset = p->filter_offset;
    int32_t b, o, i;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_b = input + (size_t)b * in_depth;
        for (o = 0; o < out_depth; ++o) {
            const int8_t *w_o = weights + (size_t)o * in_depth;
            const int32_t q = p->per_channel ? o : 0;
            int32_t acc = 0;
            for (i = 0; i < in_depth; ++i) {
                acc += ((int32_t)w_o[i] + filter_offset) * ((int32_t)in_b[i] + input_offset);
            }
            if (bias != NULL) {
                acc += bias[o];
            }
            acc = ts_wrap_add(ts_requantize_single(acc, p->multiplier[q], p->shift[q]), p->output_offset);
            *output++ = (int8_t)ts_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
}

/* Set (e.g. -DTS_FC_GENERIC_ONLY=1) to run the reference loop for every shape. */
#ifndef TS_FC_GENERIC_ONLY
#define TS_FC_GENERIC_ONLY 0
#endif

int ts_fully_connected_s8(const ts_fully_connected_s8_params *p, const int8_t *input,
                          const int8_t *weights, const int32_t *bias, int8_t *output)
{
    /* The 16-bit lanes need both offsets within [-255, 255] - 127, which int8 zero points give. */
    if (TS_FC_GENERIC_ONLY || p->input_offset < -128 || p->input_offset > 128 || p->filter_offset < -128 ||
        p->filter_offset > 128) {
        fc_generic(p, input, weights, bias, output);
    } else {
#if FC_ROWS_QUADS
        if (p->filter_offset == 0 && p->in_depth > 0) {
            fc_quads(p, input, weights, bias, output);
            return TS_OK;
        }
#endif
        (TS_MVE ? fc_mve : fc_fast)(p, input, weights, bias, output);
    }
    return TS_OK;
}

/* pair[0..1] = the dot products sum_{i < n} (w[i] + fo) * (x[i] + io) of x with w0 and w1: the
 * whole kernel's paths on part of the input row (`fast`: io and fo in [-128, 128]; Helium VMLADAV
 * pairs, the DSP pairs of fc_dot2, else the scalar loop). */
static inline void fc_rows_pair(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t io,
                                int32_t fo, int fast, int32_t *pair)
{
    int32_t i;
    pair[0] = pair[1] = 0;
    if (!fast) {
        for (i = 0; i < n; ++i) {
            pair[0] += ((int32_t)w0[i] + fo) * ((int32_t)x[i] + io);
            pair[1] += ((int32_t)w1[i] + fo) * ((int32_t)x[i] + io);
        }
        return;
    }
#if TS_MVE
    if (fo != 0) { /* sum((w + fo)(x + io)) = sum(w (x + io)) + fo sum(x) + n io fo, as fc_mve */
        pair[0] = pair[1] =
            (int32_t)((uint32_t)fo * (uint32_t)ts_mve_sum(x, n) + (uint32_t)n * (uint32_t)io * (uint32_t)fo);
    }
    ts_mve_dot_1x2(x, w0, w1, n, io, pair);
#else
    fc_dot2_inline(x, w0, w1, n, io, fo, pair);
#endif
}


#if FC_ROWS_QUADS
/* One input word for four units, the asm of fc_rows_quads: x's word widened once (SXTAB16: the
 * even and odd bytes plus input_offset, two 16-bit lanes each), then for units 1, 0, 3, 2 (w0 + s,
 * w0, w2 + s, w2) the weight word widened (SXTB16, filter_offset 0) and two SMLADs into its sum;
 * x, w0 and w2 step past the word. */
#define FCQ_UNIT(a, w_addr)                                                                             \
    "ldr     %[w], " w_addr "\n\t"                                                                       \
    "sxtb16  %[t], %[w]\n\t"                                                                             \
    "sxtb16  %[w], %[w], ror #8\n\t"                                                                     \
    "smlad   %[" a "], %[xe], %[t], %[" a "]\n\t"                                                        \
    "smlad   %[" a "], %[xo], %[w], %[" a "]\n\t"
#define FCQ_WORD                                                                                        \
    "ldr     %[xo], [%[x]], #4\n\t"                                                                      \
    "sxtab16 %[xe], %[off2], %[xo]\n\t"                                                                  \
    "sxtab16 %[xo], %[off2], %[xo], ror #8\n\t" FCQ_UNIT("a1", "[%[w0], %[s]]")                          \
        FCQ_UNIT("a0", "[%[w0]], #4") FCQ_UNIT("a3", "[%[w2], %[s]]") FCQ_UNIT("a2", "[%[w2]], #4")
/* words ... then: loop until x reaches the end held in memory (t is free there) */
#define FCQ_LOOP(words)                                                                                 \
    __asm__ volatile("1:\n\t" words "ldr     %[t], %[end]\n\t"                                          \
                     "cmp     %[x], %[t]\n\t"                                                            \
                     "bne     1b\n\t"                                                                    \
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(xp),         \
                       [w0] "+r"(wp0), [w2] "+r"(wp2), [xe] "=&r"(xe), [xo] "=&r"(xo), [w] "=&r"(wv),    \
                       [t] "=&r"(tv)                                                                     \
                     : [s] "r"(sr), [off2] "r"(off2r), [end] "m"(end_m)                                    \
                     : "cc", "memory")

/* A sum's four bytes (any alignment: LDR/STR, as ts_load4's memcpy compiles to) by asm, so GCC's
 * vectoriser does not merge a group's four into one MVE access on a Helium core built with
 * -DTS_MVE=0 (its DSP path: no vector instruction there). */
static inline int32_t fcq_load_sum(const int8_t *p)
{
    int32_t v;
    __asm__("ldr     %0, %1" : "=r"(v) : "m"(*(const int32_t *)(const void *)p));
    return v;
}
static inline void fcq_store_sum(int8_t *p, int32_t v)
{
    __asm__("str     %1, %0" : "=m"(*(int32_t *)(void *)p) : "r"(v));
}

/* Every group of four units in one asm block, for rows of whole 16-byte turns: the group's sums
 * loaded from `sums` (or 0: `start`), the row's turns, the four sums stored and `sums` advanced,
 * then x back to the row's start (`row`), w0 and w2 on to the next group (`next`: 4 * stride - n),
 * until w0 reaches `stop` (the first weight row past the last group). What the loop needs besides
 * its 13 registers lives in memory operands. */
#define FCQ_GROUPS(start)                                                                               \
    __asm__ volatile("0:\n\t" start "1:\n\t" FCQ_WORD FCQ_WORD FCQ_WORD FCQ_WORD                         \
                     "ldr     %[t], %[end]\n\t"                                                          \
                     "cmp     %[x], %[t]\n\t"                                                            \
                     "bne     1b\n\t"                                                                    \
                     "ldr     %[w], %[sums]\n\t"                                                         \
                     "str     %[a0], [%[w]], #4\n\t"                                                     \
                     "str     %[a1], [%[w]], #4\n\t"                                                     \
                     "str     %[a2], [%[w]], #4\n\t"                                                     \
                     "str     %[a3], [%[w]], #4\n\t"                                                     \
                     "str     %[w], %[sums]\n\t"                                                         \
                     "ldr     %[x], %[row]\n\t"                                                          \
                     "ldr     %[t], %[next]\n\t"                                                         \
                     "add     %[w0], %[w0], %[t]\n\t"                                                    \
                     "add     %[w2], %[w2], %[t]\n\t"                                                    \
                     "ldr     %[t], %[stop]\n\t"                                                         \
                     "cmp     %[w0], %[t]\n\t"                                                           \
                     "bne     0b\n\t"                                                                    \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [x] "+r"(xp),     \
                       [w0] "+r"(wp0), [w2] "+r"(wp2), [xe] "=&r"(xe), [xo] "=&r"(xo), [w] "=&r"(wv),    \
                       [t] "=&r"(tv), [sums] "+m"(sums_at)                                               \
                     : [s] "r"(sr), [off2] "r"(off2r), [end] "m"(end_m), [row] "m"(x), [next] "m"(next_m), \
                       [stop] "m"(stop_m)                                                                \
                     : "cc", "memory")
#define FCQ_LOAD_SUMS                                                                                   \
    "ldr     %[w], %[sums]\n\t"                                                                          \
    "ldr     %[a0], [%[w]]\n\t"                                                                          \
    "ldr     %[a1], [%[w], #4]\n\t"                                                                      \
    "ldr     %[a2], [%[w], #8]\n\t"                                                                      \
    "ldr     %[a3], [%[w], #12]\n\t"
#define FCQ_ZERO_SUMS                                                                                   \
    "mov     %[a0], #0\n\t"                                                                              \
    "mov     %[a1], #0\n\t"                                                                              \
    "mov     %[a2], #0\n\t"                                                                              \
    "mov     %[a3], #0\n\t"

/* fc_rows_quads for rows of whole 16-byte turns (n a positive multiple of 16, units >= 4): the
 * group loop in asm (FCQ_GROUPS), no per-group work in C. Returns the units done. */
static TS_NOINLINE int32_t fc_rows_quads16(const int8_t *x, const int8_t *w, int32_t stride, int32_t n,
                                           int32_t units, int32_t io, int first, int8_t *sums)
{
    int8_t *sums_at = sums;
    const int8_t *const end_m = x + n, *const stop_m = w + (size_t)(units / 4) * 4 * stride;
    const int32_t next_m = 4 * stride - n;
    /* the block's 13 register operands in registers named here, as fc_rows_quads */
    register int32_t a0 __asm__("r0"), a1 __asm__("r1"), a2 __asm__("r2"), a3 __asm__("r3");
    register const int8_t *xp __asm__("r4") = x, *wp0 __asm__("r5") = w;
    register const int8_t *wp2 __asm__("r6") = w + 2 * (size_t)stride;
    register const int32_t sr __asm__("r8") = stride;
    register const uint32_t off2r __asm__("r9") = ts_pack2x16(io);
    register uint32_t xe __asm__("r10"), xo __asm__("r11"), wv __asm__("r12"), tv __asm__("lr");
    if (first) {
        FCQ_GROUPS(FCQ_LOAD_SUMS);
    } else {
        FCQ_GROUPS(FCQ_ZERO_SUMS);
    }
    return units & ~3;
}

/* Four output units a pass over this call's rows (DSP cores, filter_offset 0, as TFLite's int8
 * weights): for each group of four units u..u+3 their sums are loaded once (0 when `first` is 0)
 * and kept in registers while the asm loops run over the row, 16 bytes a turn (FCQ_WORD four
 * times: each input word loaded and widened once for the four weight rows), then the words left
 * one a turn, then the bytes past the last whole word one at a time in C; the four sums are stored
 * once. The weight rows are reached from two pointers (units u and u + 2) and the stride in_depth
 * as a register offset, so the loop's 13 values fit the core registers (r7 left to the frame
 * pointer of unoptimised builds). Returns the units done (a multiple of four); the same int32 sums
 * as fc_rows_pair's (the same products, added in another order). */
static TS_NOINLINE int32_t fc_rows_quads(const int8_t *x, const int8_t *w, int32_t stride, int32_t n,
                                         int32_t units, int32_t io, int first, int8_t *sums)
{
    const uint32_t off2 = ts_pack2x16(io);
    const int32_t n16 = n & ~15, n4 = n & ~3;
    int32_t u;
    for (u = 0; u + 4 <= units; u += 4) {
        const int8_t *const w_u = w + (size_t)u * stride;
        int8_t *const s_u = sums + (size_t)4 * u;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, i;
        if (first) {
            s0 = fcq_load_sum(s_u);
            s1 = fcq_load_sum(s_u + 4);
            s2 = fcq_load_sum(s_u + 8);
            s3 = fcq_load_sum(s_u + 12);
        }
        if (n4 > 0) {
            /* the blocks' 13 register operands in registers named here at every optimisation level
             * (GCC 12 -O2 finds no allocation for them by itself; see TS_REG, ts_simd.h); nothing
             * below calls a function */
            register int32_t a0 __asm__("r0") = s0, a1 __asm__("r1") = s1;
            register int32_t a2 __asm__("r2") = s2, a3 __asm__("r3") = s3;
            register const int8_t *xp __asm__("r4") = x, *wp0 __asm__("r5") = w_u;
            register const int8_t *wp2 __asm__("r6") = w_u + 2 * (size_t)stride;
            register const int32_t sr __asm__("r8") = stride;
            register const uint32_t off2r __asm__("r9") = off2;
            register uint32_t xe __asm__("r10"), xo __asm__("r11"), wv __asm__("r12"), tv __asm__("lr");
            const int8_t *end_m;
            if (n16 > 0) {
                end_m = x + n16;
                FCQ_LOOP(FCQ_WORD FCQ_WORD FCQ_WORD FCQ_WORD);
            }
            if (n4 > n16) {
                end_m = x + n4;
                FCQ_LOOP(FCQ_WORD);
            }
            s0 = a0;
            s1 = a1;
            s2 = a2;
            s3 = a3;
        }
        for (i = n4; i < n; ++i) {
            const int32_t xv = (int32_t)x[i] + io;
            const int8_t *const wi = w_u + i;
            s0 += (int32_t)wi[0] * xv;
            s1 += (int32_t)wi[stride] * xv;
            s2 += (int32_t)wi[2 * (size_t)stride] * xv;
            s3 += (int32_t)wi[3 * (size_t)stride] * xv;
        }
        fcq_store_sum(s_u, s0);
        fcq_store_sum(s_u + 4, s1);
        fcq_store_sum(s_u + 8, s2);
        fcq_store_sum(s_u + 12, s3);
    }
    return u;
}
#undef FCQ_LOOP
#undef FCQ_GROUPS
#undef FCQ_LOAD_SUMS
#undef FCQ_ZERO_SUMS
#undef FCQ_WORD
#undef FCQ_UNIT
#endif

/* FULLY_CONNECTED by rows (ts_kernels.h): the int32 sums live in `sums` (any alignment: memcpy)
 * between calls; each pair of outputs adds its two dot products of this call's rows to them. The
 * parameters are read into locals once (stores through the int8 sums may alias *p). */
int ts_fully_connected_s8_rows(const ts_fully_connected_s8_params *p, const int8_t *rows, int32_t first,
                               int32_t count, int32_t row_len, const int8_t *weights, const int32_t *bias,
                               int8_t *sums, int8_t *output)
{
    const int32_t in_depth = p->in_depth, out_depth = p->out_depth, n = count * row_len;
    const int32_t io = p->input_offset, fo = p->filter_offset;
    const int fast = !TS_FC_GENERIC_ONLY && io >= -128 && io <= 128 && fo >= -128 && fo <= 128;
    const int8_t *const w = weights + (size_t)first * row_len;
    int32_t o = 0, acc;
    if (p->batches != 1 || out_depth < 1 || row_len < 1 || in_depth % row_len != 0 || first < 0 || count < 1 ||
        first + count > in_depth / row_len) {
        return TS_ERR_PARAMS; /* not rows of one flattened input (tinysched.memory.stream.row_dense) */
    }
#if FC_ROWS_QUADS
    if (fast && fo == 0) {
        o = (n & 15) == 0 && out_depth >= 4 ? fc_rows_quads16(rows, w, in_depth, n, out_depth, io, first != 0, sums)
                                            : fc_rows_quads(rows, w, in_depth, n, out_depth, io, first != 0, sums);
    }
#endif
    for (; o < out_depth; o += 2) {
        const int32_t o1 = o + 1 < out_depth ? o + 1 : o;
        int32_t pair[2];
        fc_rows_pair(rows, w + (size_t)o * in_depth, w + (size_t)o1 * in_depth, n, io, fo, fast, pair);
        if (first != 0) {
            memcpy(&acc, sums + (size_t)4 * o, sizeof acc);
            pair[0] = (int32_t)((uint32_t)pair[0] + (uint32_t)acc);
            memcpy(&acc, sums + (size_t)4 * o1, sizeof acc);
            pair[1] = (int32_t)((uint32_t)pair[1] + (uint32_t)acc);
        }
        memcpy(sums + (size_t)4 * o, &pair[0], sizeof acc);
        memcpy(sums + (size_t)4 * o1, &pair[1], sizeof acc); /* o1 == o: the same sum stored again */
    }
    if (first + count == in_depth / row_len) {
        for (o = 0; o < out_depth; ++o) {
            memcpy(&acc, sums + (size_t)4 * o, sizeof acc);
            output[o] = fc_out(p, acc, o, bias);
        }
    }
    return TS_OK;
}
