/*
 * ts_kernels.h - tinysched's int8 kernels: what each one computes, bit for bit.
 *
 * Every kernel is one C99 function in firmware/kernels/<name>.c, takes its shape and quantisation
 * in a small const parameter struct (the code generator writes these as `static const` data, so
 * they live in flash) and plain data pointers, and returns TS_OK or TS_ERR_PARAMS. No kernel
 * allocates, keeps state, or touches memory other than its arguments. The default kernels need no
 * scratch memory (the fast paths below keep their partial sums in registers and on the stack, at
 * most 248 bytes of CONV_2D patches and 96 bytes of DEPTHWISE_CONV_2D chunk geometry plus its
 * 72-byte widened filter; CONV_2D's
 * widened path may use the part of its own output not written yet, see "CONV_2D wide"); the
 * variants that do take a `scratch` argument, which the planner places in the arena as a tensor
 * live during that operator's step only.
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
 *    Applying it to an int32 x: x * 2^max(shift, 0), then round(x * multiplier / 2^31) with ties
 *    rounded up (saturating), then a rounding right shift by max(-shift, 0) with ties away from zero.
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
#include <string.h>

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

/* Keeps a function out of its caller: a generated model's step functions stay the size they were
 * written (a compiler's time on one function grows faster than its length). */
#if defined(__GNUC__) || defined(__clang__)
#define TS_NOINLINE __attribute__((noinline))
#else
#define TS_NOINLINE
#endif

/* ---- CONV_2D ------------------------------------------------------------------------------------
 * out[b][y][x][o] = clamp(out_offset + requant_o(bias[o] + sum_{ky,kx,c} w[o][ky][kx][c] *
 *                        (in[b][iy][ix][c] + input_offset)), act_min, act_max)
 * with iy = y * stride_h - pad_top + ky * dilation_h (likewise x); taps outside the input are
 * skipped (zero padding in real terms). Per-output-channel multiplier/shift; bias may be NULL.
 *
 * Fast paths (same int32 accumulator as the formula: the same products, summed in another order;
 * the same requantisation). Taken when input_offset is in [-255, 255] and no multiplier is
 * INT32_MIN (always, for generated code); anything else runs the reference loop nest.
 *  - pointwise (1x1, stride 1, no padding, out_h/out_w == in_h/in_w): the input is a
 *    [batches*h*w][in_c] matrix; pixels go in pairs (i, i+1) of that flat order, across rows and
 *    batches; for each pair, output channels in pairs (o, o+1), each a dot product of in_c bytes.
 *  - otherwise: the taps of output pixel (y, x) inside the input are a rectangle [ky0, ky1) x
 *    [kx0, kx1); each filter row of it is one run of (kx1-kx0)*in_c contiguous bytes in input and
 *    filter (dilation_w == 1) or one run of in_c bytes per tap. Two horizontally adjacent output
 *    pixels of one row are done together when their rectangles are the same; else one pixel.
 *  - small receptive fields (fh * fw * in_c <= 124 bytes and in_c < 8, input zero point an int8:
 *    first layers such as KWS's 10x4x1 or RGB 3x3x3): the receptive fields of two horizontally
 *    adjacent output pixels are copied into two stack patches of K = fh*fw*in_c bytes (248 bytes
 *    with the word round-up), taps outside the input filled with the input zero point (such a tap
 *    adds w * 0, exactly what skipping it adds); every output channel pair is then one dot product
 *    of K bytes per pixel. On DSP cores K is rounded up to whole words (more zero-point bytes in the
 *    patch) wherever the extra filter bytes read are still inside the filter array (not for the
 *    last channel pair when that would pass its end). On DSP cores (GCC/Clang) with the SMMLAR
 *    requantisation below and K rounded up to at most 40 bytes, output pixels go in quads of four
 *    consecutive pixels of the flat order instead (rows and batches wrap as for pointwise): the
 *    quad's four patches are widened on the stack to int16 (input_offset added; the zero-point
 *    bytes become 0) in the "CONV_2D wide" block layout with four pixels a group, then each output
 *    channel is one pass over its filter, four bytes widened by SXTB16 per group serving the four
 *    pixels through LDRD + SMLAD (17 instructions per 16 products; the last channel's bytes past
 *    the last whole word one at a time), the four results requantised and stored. A window lying
 *    inside the input (dilation_w 1) is copied a word at a time, row by row. Where `quads` is set
 *    (the generator's table: per output channel its bias, its K bytes rounded up to whole words
 *    with zeros and widened to 16-bit lanes, [w_4g | w_4g+2] and [w_4g+1 | w_4g+3] per group g,
 *    then its ts_rq fields m, left + 1, base, rr, 5 + K4 / 2 words a channel; emitted only when
 *    every channel's accumulators lie within ts_rq's bound or make it a constant), each whole quad
 *    takes every channel in one asm loop against that table: 13 instructions per 16 products
 *    (one group, K <= 4: no group loop), then ts_rq, pack, the bytewise clamp and the four bytes
 *    stored (where the range is all of int8: each SSAT result's byte stored as it is, unpacked);
 *    same accumulators, same bytes.
 *    A last quad of one to three pixels (a call's pixels not a multiple of four: a streamed
 *    stage's rows of 5 pixels end in one) takes the table too, pixel by pixel, every channel in
 *    one asm loop: its bias, per group two LDRD and two SMLAD (two groups a pass where their
 *    count is even), ts_rq, the clamp (none where the range is all of int8) and its byte stored;
 *    same accumulators, same bytes. Its fields were read into the stack block, like every quad's,
 *    before the first of its outputs is written.
 *  - on DSP cores (__ARM_FEATURE_DSP) each run is reduced four bytes at a time: SXTAB16 widens
 *    two input bytes to 16-bit lanes and adds input_offset in the same step, SXTB16 widens the
 *    filter bytes, SMLAD adds both lane products; bytes past the last whole word one at a time.
 *    The portable build (host, M0, M3) does the same loops with one product per step.
 *  - pairs widened once (DSP cores, GCC/Clang, the SMMLAR requantisation below): a pixel pair of
 *    the run path whose runs are whole filter rows (every filter column inside the input,
 *    dilation_w 1) of a multiple of 4 bytes, K = rows * run <= 144, has both receptive fields
 *    widened once to int16 on the stack (input_offset added; 576 bytes at most), then each output
 *    channel pair is one pass over its K filter bytes: per four bytes, each filter word widened by
 *    SXTB16 serves both pixels' LDRD'd lanes (19 instructions per 16 products against 26), the four
 *    results requantised, clamped bytewise and stored as two halfwords. Same pairs, same order.
 *  - requantisation on DSP cores (GCC/Clang): when every multiplier is >= 0, every shift in
 *    [-22, 29] and the largest possible accumulator B = K * max|q + input_offset| * 128 + max|bias|
 *    satisfies B * 2^(max(shift, 0) + 1) < 2^31 (checked once per call), each output is
 *    requantised as SMMLAR(acc << (left + 1), multiplier, A) >> right with A = 2^(right-1) -
 *    [acc < 0] + output_offset * 2^right (A = output_offset when right == 0), then saturated and
 *    clamped: the same value as the formula (the derivation is in firmware/kernels/ts_simd.h, the
 *    equality is checked on millions of values by tests/test_kernels_fast.py). Otherwise the
 *    formula's own steps.
 *  - 1x1 without padding, any strides, on DSP cores with that requantisation: output pixels of a
 *    row (with stride 1 over the whole input: all pixels as one row) in chunks of up to 16; per
 *    chunk, output channel pairs in turn, then the chunk's pixels in pairs.
 *  - on Helium cores (TS_MVE, from __ARM_FEATURE_MVE: -mcpu=cortex-m55; chosen when the kernel is
 *    compiled, -DTS_MVE=0 turns it off; firmware/kernels/ts_mve.h), taking precedence over the DSP
 *    paths: 1x1 without padding (any strides) in the chunks above, per chunk its output channels
 *    in blocks of 16 (their bias, multiplier and shift tabled on the stack), each block across the
 *    chunk's pixels four at a time, each quad channel by channel in one asm loop (VMLADAV of the
 *    raw bytes, one filter load per 16 bytes serving the four pixels, plus input_offset * sum(w)
 *    from VADDV of the same filter bytes), requantised on four lanes and stored with a byte
 *    scatter (about 23 instructions a channel and quad plus 11 per 16 input channels: the first 16
 *    bytes with the non-accumulating VMLADAV / VADDV, no zeroing; where out_c <= 64 and the call
 *    has 12 output pixels or more, all channels are one block against a table made once per call
 *    (ts_mve_layer_table: bias + input_offset * sum(w) in place of the bias), the loop then
 *    without VADDV, and in_c 16, 32 or 64 written out without a loop; a chunk's lone last pixel
 *    instead channel by channel, VMLADAVA and VADDVA 16 bytes a step, its accumulators requantised
 *    four channels a vector with their own multipliers and shifts: the same accumulators, the
 *    same bytes); where dilation_w is 1,
 *    filter_w * in_c >= 16 and either the output shares no byte with the input (checked per call)
 *    or out_c <= 64 (the quad's outputs then go to a 256-byte stack block, copied to their bytes
 *    after its last channel: all four fields read before any of their outputs is written): four
 *    horizontally adjacent output pixels of a row whose windows have every tap column
 *    inside the input (and the same tap rows) as one quad, each filter row one run of
 *    filter_w * in_c bytes per pixel, output channels in blocks of 16 as for 1x1, each channel's
 *    four dot products in one asm loop over the rows (VMLADAV of the raw bytes, one filter load
 *    serving the four pixels, plus input_offset * sum(w) of the rows used), requantised on four
 *    lanes and stored with a byte scatter (where the output shares no byte with the input, three
 *    whole windows left at a row's end take a quad moved one pixel back, that pixel computed and
 *    its bytes written twice with the same values; the other pixels as below; where out_c <= 64 and about
 *    three quads or more use every filter row, those quads take all channels as one block against
 *    the call's table above, rows of 3, 6 or 12 whole vectors unrolled); the patch path with
 *    K <= 64 in quads of four consecutive pixels of the flat order (rows and batches wrap, as the
 *    DSP quads): the four receptive fields copied into stack patches first (zero-point bytes for
 *    taps outside the input; a window inside the input a vector per row, a row clipped at an edge
 *    pad bytes then its run inside), then the quad as a 1x1 quad over in_c = K (its table made once
 *    as above where out_c <= 64: the pad bytes add pad * w + input_offset * w = 0 to it too), so
 *    all four fields are read before any of their outputs is written (K > 64:
 *    the pairs of patches with the VMLADAV pair products); the run path's groups (one or two
 *    pixels) with each channel pair's runs reduced by VMLADAV (plus input_offset * sum(w) over the
 *    rectangle) and the group's outputs requantised four channels at a time (16 channels per
 *    chunk) once their accumulators are complete. Tails of fewer than 16 bytes (or 4 outputs) are
 *    predicated: nothing outside the
 *    portable kernel's reads and writes is touched. Requantisation there is the formula's own steps
 *    on four lanes (left shift, VQRDMULH = ts_srdhm, -1 on negative lanes then VRSHL = ts_rdivpot),
 *    with no accumulator bound needed.
 * Read/write order (for in-place planning): output pixels are written in row-major order (flat
 * order for pointwise) in groups of consecutive pixels: one or two pixels (the patch and run
 * paths, each group's bytes channel by channel in pairs; on Helium 16-channel chunk by chunk), or a
 * chunk of up to 16 pixels of one row for the 1x1
 * DSP and Helium paths (DSP: channel pair by channel pair, each across the chunk's pixels; Helium:
 * blocks of 16 channels (or one block of all) in turn, each across the chunk's pixel quads, each
 * quad channel by channel). While
 * a group is being written, the kernel reads only the receptive fields of that group's pixels
 * (plus filter, bias, params; the quads of the small-field DSP and Helium paths: four consecutive
 * flat pixels, all four fields read before any of their outputs is written, like a widened strip), so once a
 * byte of output pixel q is written, every input byte read
 * later lies in the receptive field of q's group or of a later pixel. The patch path reads each
 * receptive field once per pair, before writing the pair; the others read it once per channel
 * pair. The reference loop is the same with groups of one pixel. On DSP cores the leading output
 * rows may be done by the widened path ("CONV_2D wide": strips of consecutive flat pixels, each
 * strip's receptive fields all read before its first output is written), which allows every
 * overlap the groups above allow. The Helium quads of k x k windows (groups of four pixels) write
 * straight to their outputs only where the output and the input share no byte (no order matters
 * then); otherwise each quad's four fields are all read before any of its outputs is written, as
 * the small-field quads, which every overlap the groups of one or two pixels allow also allows. */
/* CONV_2D stem (DSP cores without Helium, GCC/Clang): a 3x3 filter over 3 input channels (an RGB
 * first layer), dilation 1, any strides and padding, with `stem` set: the generator's table, per
 * group of four output channels (the last group's missing channels zero), its filter words and
 * biases doubled (every channel has a right shift, so ts_rq's s2 = acc << 1: the accumulator is s2
 * already): their biases plus input_offset * sum(w) (the input offset folded in, so the input
 * bytes are used as they are), the filter rows' ninth bytes (w[c][0][8] | w[c][1][8] as lanes,
 * then w[c][2][8] of two channels a word), per filter row its two words widened to lanes
 * ([w_4j | w_4j+2], [w_4j+1 | w_4j+3], two channels a quadword), the four channels' ts_rq fields
 * m, base, rr (a constant channel: filter, bias and m zero, base its value) and a word telling
 * whether another group follows. Each output pixel whose window lies inside the input is computed
 * straight from the input: its 27 bytes loaded as two words and a byte per filter row (LDR may be
 * unaligned) and widened by SXTB16 once into 16-bit lanes on the stack, then per group multiplied
 * against the table by SMLAD (the three ninth bytes by one SMLAD and one SMLABB), ts_rq with its
 * right-shift steps, the four bytes packed (clamped bytewise where the activation range is
 * narrower than int8) and stored. A window the input clips is first copied into a 3x12-byte stack
 * patch filled with the input zero point (such a tap adds zero_point * w, which the folded
 * input_offset * w cancels), then computed the same way. Same accumulators (doubled), same bytes.
 * Read/write order: pixel by pixel in the flat order, each pixel's window read before any of its
 * bytes is written. */
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
    const int32_t *quads;      /* the generator's table for the quads (see above; for a 1x1 layer the
                                  staged variant's, CONV_2D staged), or NULL */
    const int32_t *stem;       /* the generator's table for 3x3 filters over 3 input channels (CONV_2D
                                  stem, below), or NULL */
} ts_conv2d_s8_params;

int ts_conv2d_s8(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                 const int32_t *bias, int8_t *output);

/* CONV_2D pixel in registers: ts_conv2d_s8 with the generator's pixel table, for a whole 1x1 layer
 * without padding at any strides (every output pixel's input inside the input: (out_h - 1) *
 * stride_h < in_h, (out_w - 1) * stride_w < in_w) with in_c 8, 12 or 16 and out_c >= in_c,
 * whose activation range is all of int8 and whose every channel takes ts_rq's steps with a right
 * shift (r >= 1) and left + 1 <= 8, or is a constant (kernels/ts_simd.h). The table, per output
 * channel, 4 + in_c / 2 int32 words: (bias + input_offset * sum(w)) * 2^l1 wrapped to int32 (l1 =
 * left + 1; 1x1 has no padding, so every product carries input_offset), the in_c filter bytes
 * widened to 16-bit lanes, [w_4g | w_4g+2] then [w_4g+1 | w_4g+3] per group g, each times 2^l1 (still
 * int16 for l1 <= 8), then ts_rq's m, base, rr, with bit 9 of rr set on the last channel; a constant
 * channel: zeros, then 0, its value + output_offset, 0. On DSP cores (GCC/Clang, input word-aligned)
 * the layer goes pixel by pixel of the flat order: the pixel's in_c bytes loaded by one LDM and
 * widened by SXTB16 (no offset: it is in the first word) into registers, then every channel's words
 * by LDM; its SMLAD sum is ts_rq's s2 = acc << l1 (equal mod 2^32; ts_rq's bound makes it exact),
 * then ts_rq's steps without the shift (the negative correction base - (s2 < 0), r >= 1), SSAT and
 * one byte stored: 19 instructions per 16 products at in_c 16, 15 per 12, 12 per 8 (18, 14, 11 with
 * out_c even: two channels a pass), plus about 15 per pixel. Where the output pixels' inputs are not
 * consecutive (a stride, or rows narrower than the input's) the same output row by output row, each
 * from input row y * stride_h, its pixels stride_w * in_c bytes apart (2 more instructions a pixel
 * where stride_w > 1, about 25 a row). At a stride (any layer whose strides are not both 1) also
 * in_c 32 with out_c <= 64, whose pixel takes two halves of 16 bytes: the table then holds out_c * 4,
 * per channel from the last acc0 and the lane words of bytes 0-15, out_c * 4 again, then per channel
 * from the first the lane words of bytes 16-31, m, base, rr; the first half's partial sums go on the
 * stack (below the caller's sp only once made room for), the second half adds to them: 34
 * instructions per 32 products (32 with out_c even) plus about 35 a pixel (the strided layers by their own entry points,
 * ts_conv2d_s8_pixel_rows below). Same accumulators, same bytes. A call may also be given out_h
 * rows of an input of in_h rows present (one batch, (out_h - 1) * stride_h < in_h: a streamed
 * stage's member, whose rows the stage passes as ts_conv2d_s8_checked's:
 * ts_conv2d_s8_pixels_checked, ts_conv2d_s8_pixel_rows_checked).
 * Elsewhere (other shapes, other cores, a misaligned input) ts_conv2d_s8. Read/write order: every input byte of pixel i is read
 * before the first output byte of pixel i is written; pixels in increasing order, each pixel's
 * outputs channel by channel (strided: output pixel i reads its one input pixel, at any stride,
 * before writing its out_c bytes). With out_c >= in_c this allows every overlap ts_conv2d_s8's order
 * allows (for both the binding pixel is the last; one pixel at a time is one of the runs of at most
 * two that tinysched/memory/overlap.py `_conv` allows for, at any stride). */
int ts_conv2d_s8_pixels(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, const int32_t *pixel_table);
/* ts_conv2d_s8_pixels with `checks` = ts_conv2d_s8_checks(p, bias) made once (a streamed stage's
 * member, called row by row): where the pixel path does not take p, ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixels_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, const int32_t *pixel_table, int32_t checks);
/* The same for a layer whose output pixels' inputs are not consecutive (a stride, rows narrower
 * than the input's: output row by output row, as above), by entry points of their own so that the
 * flat layers' calls test nothing more; where the path does not take p, ts_conv2d_s8 /
 * ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixel_rows(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, const int32_t *pixel_table);
int ts_conv2d_s8_pixel_rows_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *pixel_table,
                                    int32_t checks);

/* CONV_2D own pixel loop: for a flat 1x1 layer with in_c 8 (stride 1, rows as wide as the input's,
 * out_c 8 to 64), the pixel path's shortest K, where the per-channel requantisation is most of the
 * work, the generator writes the layer's own loop (TS_PIXEL_OWN_LOOP below, in the model's C
 * file): every output channel unrolled with its own right shift r as the immediate of its SSAT
 * (SSAT #8 of x ASR #r is the pixel path's ASR then SSAT: the same bytes), so that a channel is 9
 * instructions for its 8 products (one LDM of its 7 words, 4 SMLAD, the negative correction,
 * SMMLAR, SSAT, STRB) and a pixel 9 more (one LDM, 4 SXTB16, the table rewound, the end tested).
 * Its table is the pixel table without rr: per channel acc0, the 4 lane words, m, base. The loop
 * runs where TS_PIXEL_OWN is 1 (DSP cores without Helium, GCC/Clang asm: where the pixel path
 * runs); elsewhere TS_PIXEL_OWN_LOOP makes a null `ts_pixel_loop` and the call is ts_conv2d_s8's
 * (the table unread). ts_conv2d_s8_pixels_own runs `own` over the layer's flat pixels where the
 * pixel path takes p (as ts_conv2d_s8_pixels: same read/write order, pixel by pixel, each pixel's
 * bytes read before its outputs are written); else, or with own NULL, ts_conv2d_s8 (_checked:
 * ts_conv2d_s8_checked with `checks`). */
typedef void (*ts_pixel_loop)(const int8_t *input, const int8_t *end, const int32_t *table, int8_t *output);
int ts_conv2d_s8_pixels_own(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, const int32_t *table, ts_pixel_loop own);
int ts_conv2d_s8_pixels_own_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                    const int32_t *bias, int8_t *output, const int32_t *table,
                                    ts_pixel_loop own, int32_t checks);
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && !(defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)) && \
    (defined(__GNUC__) || defined(__clang__))
#define TS_PIXEL_OWN 1
#if defined(__GNUC__) && !defined(__clang__)
#define TS_PIXEL_OWN_NOIPA __attribute__((noipa))
#else
#define TS_PIXEL_OWN_NOIPA
#endif
/* One output channel of the own loop: its 7 words by LDM (acc0 e0 o0 e1 o1 m base), the pixel's
 * lanes in r4-r7, its byte stored at lr; `shift` the SSAT's shift: "asr #r" (r >= 1), or "lsl #0"
 * for a constant channel (m 0: SMMLAR gives base, its value). */
#define TS_PIXEL_OWN_CHANNEL(shift)                                                                    \
    "ldm     r12!, {r0, r1, r2, r3, r8, r9, r10}\n\t"                                                   \
    "smlad   r0, r4, r1, r0\n\t"                                                                       \
    "smlad   r0, r5, r2, r0\n\t"                                                                       \
    "smlad   r0, r6, r3, r0\n\t"                                                                       \
    "smlad   r0, r7, r8, r0\n\t"                                                                       \
    "sub     r10, r10, r0, lsr #31\n\t"                                                                \
    "smmlar  r10, r0, r9, r10\n\t"                                                                     \
    "ssat    r10, #8, r10, " shift "\n\t"                                                              \
    "strb    r10, [lr], #1\n\t"
/* The loop `name` (a ts_pixel_loop) over pixels [input, end) (8 bytes each, word-aligned), its
 * channels `channels` (TS_PIXEL_OWN_CHANNEL each), `table_bytes` = 28 * out_c: the input pointer in
 * r11, the table in r12, the output in lr, the end on the stack. */
#define TS_PIXEL_OWN_LOOP(name, table_bytes, channels)                                                  \
    __attribute__((naked, noinline)) TS_PIXEL_OWN_NOIPA static void name(                               \
        __attribute__((unused)) const int8_t *input, __attribute__((unused)) const int8_t *end,        \
        __attribute__((unused)) const int32_t *table, __attribute__((unused)) int8_t *output)          \
    {                                                                                                   \
        __asm__ volatile("push    {r4-r11, lr}\n\t"                                                     \
                         "push    {r1, r2}\n\t" /* [sp] the end */                                     \
                         "mov     r11, r0\n\t"                                                          \
                         "mov     r12, r2\n\t"                                                          \
                         "mov     lr, r3\n\t"                                                           \
                         "1:\n\t"                                                                      \
                         "ldm     r11!, {r4, r6}\n\t"                                                   \
                         "sxtb16  r5, r4, ror #8\n\t"                                                   \
                         "sxtb16  r4, r4\n\t"                                                           \
                         "sxtb16  r7, r6, ror #8\n\t"                                                   \
                         "sxtb16  r6, r6\n\t" channels "subw    r12, r12, #" #table_bytes "\n\t"      \
                         "ldr     r0, [sp]\n\t"                                                         \
                         "cmp     r11, r0\n\t"                                                          \
                         "bne     1b\n\t"                                                               \
                         "add     sp, sp, #8\n\t"                                                       \
                         "pop     {r4-r11, pc}\n\t");                                                   \
    }
#else
#define TS_PIXEL_OWN 0
#define TS_PIXEL_OWN_CHANNEL(shift)
#define TS_PIXEL_OWN_LOOP(name, table_bytes, channels) static const ts_pixel_loop name = NULL;
#endif

/* ts_conv2d_s8 with its per-call checks made once (a streamed chain calls it row by row, the checks
 * hoisted out of its loop): `checks` = ts_conv2d_s8_checks(p, bias), for parameters that differ from
 * p's only in their row fields (in_h, out_h, pad_top) and, in a stage over column tiles, their
 * column fields (in_w, out_w, pad_left): the checks read neither. Arithmetic and read/write order:
 * ts_conv2d_s8's. */
int32_t ts_conv2d_s8_checks(const ts_conv2d_s8_params *p, const int32_t *bias);
int ts_conv2d_s8_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                         const int32_t *bias, int8_t *output, int32_t checks);
/* ts_conv2d_s8_checked with, for Helium cores, the generator's layer table (ts_mve_layer_table's
 * values: per output channel bias + input_offset * sum(w) over its K filter bytes, wrapped to int32,
 * multiplier, shift; out_c <= 64), which the small-field patch quads (in_c < 8, K <= 64, not 1x1)
 * of a streamed stage's head, called row by row, would otherwise make on every call. Other cores
 * and other shapes ignore it. Arithmetic and read/write order: ts_conv2d_s8_checked's. */
int ts_conv2d_s8_layer(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int32_t checks, const int32_t *layer);

/* CONV_2D staged (the in-place variant the refined memory model may choose; tinysched.variants):
 * pointwise only (1x1, stride 1, no padding, out_h/out_w == in_h/in_w; TS_ERR_PARAMS otherwise).
 * Arithmetic: exactly ts_conv2d_s8's (the same path, chosen once per call by the same conditions,
 * runs on each chunk). Read/write order: the flat pixels go in chunks of `chunk` (the last may be
 * shorter); chunk g (pixels [g*chunk, g*chunk + n)) is computed from its input pixels into
 * scratch[0 .. n*out_c) and only then copied to its output bytes, so no output byte is written
 * before every input byte of its own and earlier chunks has been read: the output may overlap the
 * input as long as output offset - input offset <= min_g (g+1)*chunk*(in_c - out_c) (0 when in_c ==
 * out_c: fully in place). scratch: chunk * out_c bytes, disjoint from input and output.
 * rq_table: [out_c][4] int32 = ts_rq's fields (m, left + 1, base, rr; kernels/ts_simd.h) for each
 * channel with this layer's output_offset, prepared at compile time so small chunks cost no extra
 * preparation on DSP cores (may be NULL). A channel whose accumulators, bias +- K * max|q +
 * input_offset| * 128, stay within ts_rq's bound has ts_rq_prepare's fields; one the formula maps
 * to a single value over that whole range (a pruned channel: tiny scale, shift down to -31, bias
 * near 2^30) has m = 0, left + 1 = 1, base = that value + output_offset, rr = 0; any other channel
 * l1 = 0 (zeros). Used only where every channel is of the first two kinds (ts_rq_ok).
 * Widened in place (DSP cores, GCC/Clang, ts_rq path, in_c a multiple of 4, in_c <= out_c, scratch
 * word-aligned and chunk * out_c >= 6 * in_c): the flat pixels go in threes instead; each three's
 * input bytes are widened into scratch (int16 + input_offset, laid out as "CONV_2D wide" lays a
 * block, three pixels per group) before any of its outputs is written, then each channel is one
 * SMLAD pass over them (14 instructions per 12 products) and its three outputs are written straight
 * to their bytes (a full three in one asm block, from the products to the stores). Where p->quads is
 * set (the generator's table of widened channels for such a layer, in the quads' format: per output
 * channel its bias, its in_c filter bytes widened to 16-bit lanes, [w_4g | w_4g+2] and
 * [w_4g+1 | w_4g+3] per group g, then its ts_rq fields m, left + 1, base, rr: 5 + in_c / 2 words a
 * channel; emitted for DSP cores only, and only when every channel takes ts_rq), a three (or a last
 * two) takes every channel in one asm loop against that table: per group one LDRD of the filter
 * words and per pixel LDRD + two SMLAD (82 instructions per 96 products with in_c a multiple of 32,
 * 42 per 48 of 16, 22 per 24 of 8, 12 per 12 otherwise; a last two with in_c a multiple of 32
 * only its two pixels: 58 per 64; a last two widened by one asm loop and requantised alone), then ts_rq, pack, the bytewise clamp
 * (none where [act_min, act_max] is all of int8 and in_c a multiple of 32) and the bytes stored,
 * channel after channel (about 196 instructions per channel of a three at in_c 64); a last single
 * pixel goes through the path without the table (the generator then leaves rq_table NULL where
 * every channel has ts_rq_prepare's fields: they are prepared at run time there). Same
 * arithmetic (the same int32 accumulators and ts_rq). The order is chunks of three, read first
 * (with the table as without it): with in_c <= out_c the bound above is set by the last pixel
 * whatever the chunk size, so every overlap `chunk` allows is allowed. Helium cores, in_c <=
 * out_c: the flat pixels go in groups of up to 16 (a multiple of four when the scratch holds four
 * pixels' input bytes, but a last five as one group where it holds five and the layer table is
 * given; as many as it holds otherwise, at least
 * `chunk` since in_c <= out_c); each group's input bytes are copied into scratch before any of its
 * outputs is written, then the 1x1 Helium path runs from the copy straight to the output bytes.
 * Same arithmetic; groups read first, so (as for the threes above) every overlap `chunk` allows is
 * allowed. Helium cores, in_c > out_c: each chunk through the 1x1 Helium path into scratch, then
 * copied.
 * Widened one pixel at a time (DSP cores, GCC/Clang, ts_rq path with rq_table, in_c a multiple of
 * 4, scratch word-aligned, chunk * out_c >= 2 * in_c but short of three pixels, and each output
 * pixel ending at or before the next input pixel starts, or the output apart from the input,
 * checked at run time): pixel k's input bytes are widened into scratch, then its outputs are
 * written straight to their bytes, four channels a pass over the widened pixel (22 instructions per
 * 16 products; ts_rq, clamp and one word stored per four channels). Same arithmetic. Order: pixel k
 * read whole, then written; the check keeps every later input byte unwritten. */
int ts_conv2d_s8_staged(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                        const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                        const int32_t *rq_table);
/* ts_conv2d_s8_staged with its per-call checks made once (a streamed stage's narrow 1x1 member,
 * called row by row with in_h = out_h = 1; tinysched/codegen/lower_stream.py): `checks` =
 * ts_conv2d_s8_staged_checks(p, bias, rq_table), the path its quantisation allows (0 the reference
 * loop, 1 pointwise, 2 pointwise with ts_rq), for parameters that differ from p's only in their row
 * fields. Arithmetic and read/write order: ts_conv2d_s8_staged's. */
int32_t ts_conv2d_s8_staged_checks(const ts_conv2d_s8_params *p, const int32_t *bias, const int32_t *rq_table);
int ts_conv2d_s8_staged_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                                const int32_t *rq_table, int32_t checks);
/* ts_conv2d_s8_staged_checked with the generator's Helium layer table `layer` (code generated for a
 * Helium core: a streamed stage's narrow 1x1 member, out_c <= 64), per output channel bias +
 * input_offset * sum(w) wrapped to int32, multiplier, shift: what ts_mve_layer_table makes on calls
 * of 12 pixels or more, here on every call (rows of 2, 3 or 5 pixels), so its quads take no filter
 * sums. Other cores do not read it. Arithmetic and read/write order: ts_conv2d_s8_staged's. */
int ts_conv2d_s8_staged_layer(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *scratch, int32_t chunk,
                              const int32_t *rq_table, int32_t checks, const int32_t *layer);

/* CONV_2D wide (the variant tinysched.kernel_scratch chooses after placement where its scratch fits
 * a gap of the arena at the operator's step; tinysched.variants "wide"): any shape ts_conv2d_s8
 * takes. Arithmetic: exactly the formula's int32 accumulators (the same products, summed in
 * another order) and ts_conv2d_s8's requantisation (ts_rq where its bound holds). On DSP cores
 * (GCC/Clang, not Helium) every batch's output pixels go in strips of up to `blocks` blocks of six
 * consecutive pixels of the flat order (blocks may span rows); a strip's receptive fields are first
 * widened into scratch as int16 (input + input_offset; taps outside the input 0, what skipping them
 * adds; zeros up to a multiple of four), laid out so that four filter bytes widened by SXTB16 meet
 * each pixel's matching lanes in one LDRD (words (x[4g], x[4g+2]) and (x[4g+1], x[4g+3]) of group g
 * of every pixel side by side); then output channel by channel, for each block of the strip one
 * SMLAD pair per pixel per four filter bytes (23 instructions per 24 products, against the pair
 * path's 26 per 16), the six results requantised (ts_rq, with rq_table's fields as the staged
 * variant's, channel by channel: a channel whose l1 is 0 by the formula's steps; without a table,
 * ts_rq where every channel's bound holds, else the formula's steps) and stored. The strip's full
 * blocks of every channel that takes ts_rq run in one asm routine (wide_channels): per channel its
 * bias and ts_rq fields read through pointers that advance a channel at a time (without a table,
 * fields prepared four channels at a time on the stack); per block the six accumulators start at
 * the bias with the first group's products, the remaining groups four a pass (21 instructions per
 * 24 products, 2 more per pass), the accumulators never leaving registers; then ts_rq's steps
 * (base - [s2 < 0] as base + (s2 ASR 31) where r >= 1, 5 instructions an output; 3 where r == 0:
 * no correction, no shift: the same values), the clamp (skipped when act_min/act_max are -128/127,
 * which SSAT already gives) and six byte stores, about 60 instructions a block besides the dot
 * products. A strip's last block of one to five pixels is the routine's too, channel by channel
 * after that channel's full blocks: four or five pixels computed as a full block, one to three by
 * a loop over the block's first three pixels (14 instructions per 12 products), its six results
 * stored into a small buffer and as many as the block has pixels copied to their output bytes. A
 * channel whose table entry has l1 0 and a last channel whose k4 filter bytes would pass the
 * filter's end (its tail) are then done in C (same arithmetic), as is a strip without a full block,
 * after the strip's routine has written the others (all of a strip's reads precede its first
 * write, so the order of its writes changes nothing below). A 1x1 filter at stride 1
 * without padding (out_w == in_w, in_c a multiple of 4) fills a strip from its consecutive input
 * pixels, two words a pass; other filters over a multiple of 4 channels with dilation_w 1 fill each
 * filter row's taps inside the input as one run of words (the taps outside zeros). Other cores,
 * shapes the fast paths refuse and
 * 1, 2, 3 or 7 output pixels per batch (blocks more than 1.6 times the pixels): ts_conv2d_s8,
 * scratch untouched.
 * Read/write order: strips in flat pixel order; all input bytes a strip reads (its pixels' receptive
 * fields) are read before the first of its outputs is written, and nothing else of the input is
 * read meanwhile. Every output overlap the default kernel allows is therefore allowed (its D is
 * the default's). scratch: blocks * 6 * roundup(fh * fw * in_c, 4) * 2 bytes, word-aligned,
 * disjoint from input and output.
 * The default kernel ts_conv2d_s8 takes the same widened path on DSP cores, without planned
 * scratch, for the leading output rows whose outputs end before a strip that fits in the part of
 * its own output that holds no input bytes (past the input's end or before its start; the whole
 * output when they do not overlap): there the strip is written before those bytes get their
 * outputs; the remaining rows take the other paths (a call on those rows: in_h, pad_top, out_h
 * adjusted). A 1x1 layer at stride 1 without padding over the whole input (in_c a multiple of 4:
 * output pixel i reads input pixel i) counts leading pixels instead of rows, then takes a second
 * pass with a one-block strip at the top of the same part for the pixels between the two strips'
 * starts; its remaining pixels are one row of the other paths (in_h = out_h = 1, in_w = out_w = the
 * pixels left), in the same flat order. */
int ts_conv2d_s8_wide(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                      const int32_t *bias, int8_t *output, int8_t *scratch, int32_t blocks,
                      const int32_t *rq_table);
/* A streamed stage's CONV_2D member on its rows, given `room` bytes of strip scratch (DSP cores): with
 * the generator's quads table (small K) ts_conv2d_s8_checked (its quads); else the wide path with as
 * many blocks a strip as the room holds (at most 8), where the call's n
 * pixels are 6 a + 4 or 6 a + 2 (n >= 8) its last 4 or 8 in quad blocks; else, where one six-pixel
 * block does not fit, quad blocks of 4 pixels (8 * K bytes each, up to 8 a strip; in_c a multiple
 * of 4, dilation_w 1, ts_rq by the table or every channel's steps): per block its fields widened
 * (input_offset added, 0 outside the input), then each channel's bias, dot products, ts_rq, clamp
 * and the 4 bytes stored; else the pair path with the two fields of a pixel pair widened into the
 * scratch (4 * roundup(fh * fw * in_c, 4) bytes) where they exceed its 576-byte stack block (a 1x1
 * filter over up to 144 channels, a multiple of 4: the pair path on the stack, not the pointwise
 * path), else ts_conv2d_s8_checked. Arithmetic: ts_conv2d_s8's. Read/write order: each strip's fields are all
 * read before any of its outputs is written (as the pair path's). scratch word-aligned, disjoint
 * from input and output. */
int ts_conv2d_s8_strip(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int8_t *scratch, int32_t room,
                       const int32_t *rq_table, int32_t checks);
/* A streamed stage's 1x1 CONV_2D member on rows a few pixels wide (rows one pixel wide: a [H, 1, C]
 * map), `checks` = ts_conv2d_s8_checks(p, bias) made once, `rq_table` the generator's ts_rq fields
 * per output channel (m, left + 1, base, rr; NULL: none), `channels` its widened table or NULL (the
 * quads' format: per output channel its bias, its in_c filter bytes as in_c / 2 words of int16
 * lanes, [w_4g | w_4g+2] then [w_4g+1 | w_4g+3] per group g of four, then its ts_rq fields; given
 * for in_c a multiple of 8). DSP cores, where rq_table is given, every channel takes ts_rq's steps
 * or is a constant (checks bit 2), in_c is a multiple of 4 up to 288, stride 1, no padding, batches
 * 1 and out_w == in_w (output pixel i reads input pixel i): pixel by pixel, its in_c bytes widened
 * once into a block on the stack (int16 lanes + input_offset, in the table's lane order); then, with
 * `channels` and in_c a multiple of 8, channel by channel its bias plus per four words one LDM of
 * the pixel, one LDM of the table and four SMLAD (8 instructions per 8 products), ts_rq's steps,
 * the clamp where [act_min, act_max] is narrower than int8, one byte stored; else its channels four
 * at a time, each bias + the SMLAD dot products over the widened pixel with the int8 filter
 * (22 instructions per 16 products), ts_rq from rq_table, clamped, one word stored per four channels
 * (the last out_c % 4 one at a time). Same int32 accumulators and ts_rq as ts_conv2d_s8.
 * Read/write order: pixel i read whole, then its outputs written, pixels in increasing order; taken
 * only where output pixel i ends at or before input pixel i + 1 starts (or the two lie apart),
 * checked at run time. Anything else: ts_conv2d_s8_checked. */
int ts_conv2d_s8_pixel_widened(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output, const int32_t *rq_table,
                               const int32_t *channels, int32_t checks);
/* ts_conv2d_s8_strip for a member whose rows are 6 a + 1 pixels wide (a >= 1; the generator calls it
 * only there, so the other members pay no test): a one-row call (out_h 1, batches 1) where the room
 * holds a block of six, the table is given, every channel takes ts_rq's steps or is a constant and
 * in_c is a multiple of 4 takes its first 6 a pixels in whole blocks of the widened path and its
 * last alone: that pixel's field (fh * fw taps of in_c bytes in the filter's order, 0 outside the
 * input) widened into the scratch (int16 lanes + input_offset), then its channels four at a time
 * (bias + SMLAD over the field with the int8 filter, 22 instructions per 16 products; ts_rq from
 * the table, clamped, one word stored; the last out_c % 4 one at a time), not a block of six
 * computing one. Otherwise ts_conv2d_s8_strip. Arithmetic: ts_conv2d_s8's. Read/write order: the
 * blocks' as ts_conv2d_s8_strip's, then the last pixel's field read whole before its outputs are
 * written. */
int ts_conv2d_s8_strip_lone(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int8_t *scratch, int32_t room,
                            const int32_t *rq_table, int32_t checks);
/* ts_conv2d_s8_wide with `checks` = ts_conv2d_s8_checks(p, bias) made once (a streamed stage's
 * member, called row by row; its fallback ts_conv2d_s8_checked). */
int ts_conv2d_s8_wide_checked(const ts_conv2d_s8_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *bias, int8_t *output, int8_t *scratch, int32_t blocks,
                              const int32_t *rq_table, int32_t checks);

/* ---- DEPTHWISE_CONV_2D --------------------------------------------------------------------------
 * Output channel o = c * depth_multiplier + m reads only input channel c:
 * out[b][y][x][o] = clamp(out_offset + requant_o(bias[o] + sum_{ky,kx} w[0][ky][kx][o] *
 *                        (in[b][iy][ix][c] + input_offset)), act_min, act_max).
 *
 * Fast path (same conditions and the same exactness as CONV_2D's): per output pixel, the tap
 * rectangle inside the input is found once, so the inner loops carry no bounds checks. With
 * depth_multiplier 1, channels go four at a time: per tap one word of input and one of filter; on
 * DSP cores SXTAB16 widens the input bytes (adding input_offset), SXTB16 the filter bytes and
 * SMLABB/SMLATT accumulate the four lane products into four int32 accumulators; the portable build
 * does four scalar products. The last in_c % 4 channels, and every other multiplier, go one output
 * channel at a time over the same rectangle.
 * DSP cores (GCC/Clang), depth_multiplier 1, dilation_w 1, accumulators within the CONV_2D
 * requantisation bound (K = fh * fw): each output row in chunks of up to 32 pixels; per chunk,
 * channels c..c+3 of every pixel of the chunk in turn (their SMMLAR requantisation constants
 * prepared once per chunk): a run of pixels whose whole 3x3 window lies inside the input goes
 * through one asm block of nine taps per pixel (3x3 filters; when the chunk holds 8 or more such
 * pixels, against the block's filter widened once per chunk to 16-bit lanes on the stack, 72
 * bytes, eight instructions a tap instead of ten: the same products), any other pixel through its
 * tap rectangle; the four results are saturated, packed and clamped bytewise (SSUB8/SEL) and stored
 * as one word. Then the in_c % 4 tail channels of each pixel of the chunk, one at a time.
 * Helium cores (TS_MVE, see CONV_2D), depth multiplier 1, any stride, dilation and padding: each
 * output row in chunks of up to 32 pixels; per chunk, channel blocks of eight in turn, the block's
 * constants gathered once per chunk (bias; bias + input_offset * the block's filter sum over all
 * taps; multipliers and shifts, split into even and odd channels); then the chunk's pixels in order:
 * VLDRB.S16 widens eight input and eight filter bytes per tap, VMULLB / VMULLT multiply the even /
 * odd lanes into two int32x4 accumulators; a pixel whose window lies inside the input starts from
 * bias + input_offset * sum(w) and multiplies the raw bytes (consecutive such pixels go two at a
 * time, each filter tap loaded once for both), any other pixel starts from the bias and adds
 * input_offset to each input lane over its tap rectangle; the block is requantised on four lanes
 * (the CONV_2D Helium steps), interleaved back (VMOVNB/VMOVNT) and stored as eight bytes right after
 * its taps; a last block of fewer than eight channels is predicated. With 32 channels or more,
 * Helium cores go one output pixel at a time instead, all its channels (the staged variant's
 * per-pixel arithmetic below, written straight to the output): pairs of blocks of eight through one
 * asm block from the taps to the stores (each tap inside the input: input_offset added to the
 * 16-bit input lanes, VMULLB / VMULLT; a window wholly inside the input with in_c <= 64 starts
 * instead from bias + input_offset * sum(w) over every tap, tabled once per call, and multiplies
 * the raw lanes; then the formula's requantisation steps with the shift
 * split as left = shift & ~(shift >> 31), right = shift - left), then a whole block and a
 * predicated tail. Other multipliers take the paths above.
 * Read/write order: output pixels in row-major order, in groups (one pixel; or, on the DSP and
 * Helium paths above, a chunk of up to 32 consecutive pixels of one row); within a group, output
 * channels ascending (in blocks of four with multiplier 1; on the DSP path block by block across
 * the group's pixels, then the tail channels pixel by pixel; on the Helium path blocks of eight,
 * block by block across the group's pixels; Helium with 32 channels or more: groups of one pixel,
 * blocks of sixteen, then eight, then the tail). Output channel o of pixel (y, x) is
 * written after reading input channel o / depth_multiplier over that pixel's receptive field;
 * while a group is being written only the receptive fields of its pixels are read, so after a
 * byte of pixel q is written, only receptive fields of q's group and of later pixels are read.
 * Every path reads each needed input byte once per output channel block.
 * Blocks (DSP cores, depth_multiplier 1, dilation_w 1, filter_w <= 3, when `blocks` is not NULL;
 * Helium cores keep their path): the generator's table, (20 + 2 * filter_h * filter_w) words per
 * block of four channels c = 0, 4, .. (in_c / 4 blocks): their biases (0 without a bias), their
 * ts_rq fields (m, left + 1, base, rr each; every channel's accumulators within its bound, or a
 * constant, see ts_simd.h; the generator emits no table otherwise), then per tap t = ky * filter_w
 * + kx the filter widened to 16-bit lanes, [w_c | w_c+2] and [w_c+1 | w_c+3]. Output pixels go one
 * at a time; per pixel each block in one asm block: biases, the taps of the window's rectangle
 * inside the input (SXTAB16 adds input_offset to the input, SMLABB/SMLATT against the widened
 * filter: eight instructions a tap for four channels; a 3x3 window whole or with one row or column
 * outside the input without a loop over its rows), ts_rq, packing, the bytewise clamp (none for a
 * whole window where [act_min, act_max] is all of int8: SSAT has bounded the values already) and
 * one word stored; then the in_c % 4 tail channels through the formula. The same int32 accumulators as
 * the formula, so the same bytes. Read/write order: a group of one pixel, as above. */
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
    const int32_t *blocks;     /* the generator's blocks (see "Blocks" above), or NULL */
} ts_depthwise_conv2d_s8_params;

int ts_depthwise_conv2d_s8(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                           const int8_t *filter, const int32_t *bias, int8_t *output);

/* ts_depthwise_conv2d_s8 with its per-call checks made once (a streamed stage calls it row by row,
 * the O(out_c) multiplier and ts_rq checks hoisted out of its loop): `checks` =
 * ts_depthwise_conv2d_s8_checks(p, bias), for parameters that differ from p's only in their row
 * fields (in_h, out_h, pad_top). Arithmetic and read/write order: ts_depthwise_conv2d_s8's. */
int32_t ts_depthwise_conv2d_s8_checks(const ts_depthwise_conv2d_s8_params *p, const int32_t *bias);
int ts_depthwise_conv2d_s8_checked(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output, int32_t checks);
/* The pixel-in-registers path alone (CONV_2D "pixel in registers", flat or by rows) on `table`,
 * reading neither the filter nor the bias (the table holds both): 1 where it ran (DSP cores without
 * Helium, the path's conditions; flat, also out_c < in_c where the output shares no byte with the
 * input, when no order matters: ts_expand_dw_s8's groups), 0 where it did not and the caller must
 * compute the layer itself.
 * For ts_legacy_uint8.c, whose table holds w + filter_offset (see "Legacy uint8"). Arithmetic and
 * read/write order: that path's. */
int32_t ts_conv2d_s8_pixel_table(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output,
                                 const int32_t *table);
/* The stem path alone (CONV_2D "stem") on p->stem, the generator's fields taken as checked (see
 * ts_conv2d_s8.c): 1 where it ran, 0 where the caller must compute the layer itself. For
 * ts_legacy_uint8.c (see "Legacy uint8"). Arithmetic and read/write order: that path's. */
int32_t ts_conv2d_s8_stem_table(const ts_conv2d_s8_params *p, const int8_t *input, int8_t *output);
/* The "Blocks" path alone on p->blocks, reading neither the filter nor the bias (the table holds
 * both): 1 where it ran (DSP cores, the blocks' conditions, in_c a multiple of 4, out_c == in_c),
 * 0 where it did not and the caller must compute the layer itself. For ts_legacy_uint8.c, whose
 * blocks hold w + filter_offset (see "Legacy uint8"). Arithmetic and read/write order: the blocks'. */
int32_t ts_depthwise_conv2d_s8_blocks(const ts_depthwise_conv2d_s8_params *p, const int8_t *input, int8_t *output);
/* ts_depthwise_conv2d_s8_checked with, for Helium cores, the generator's whole-window table of the
 * layer (a streamed stage's member of 32 to 64 channels, depth multiplier 1, called row by row):
 * `layer` holds ts_mve_dw_eff_table's values (per whole block pair of 16 channels c, the even then
 * the odd channels of c..c+7, then of c+8..c+15: bias + input_offset * the channel's filter summed
 * over every tap, wrapped to int32), which the kernel would otherwise make on every call. Other
 * cores ignore it. Arithmetic and read/write order: ts_depthwise_conv2d_s8_checked's. */
int ts_depthwise_conv2d_s8_layer(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                 const int8_t *filter, const int32_t *bias, int8_t *output, int32_t checks,
                                 const int32_t *layer);

/* DEPTHWISE_CONV_2D staged (the in-place variant the refined memory model may choose): any shape
 * ts_depthwise_conv2d_s8 takes. Arithmetic: exactly ts_depthwise_conv2d_s8's per pixel (its fast
 * path one pixel at a time; on DSP cores with depth_multiplier 1 and dilation_w 1 within the ts_rq
 * bound, its ts_rq arithmetic with the constants from rq_table instead of prepared per chunk).
 * Read/write order: output pixels k = 0, 1, ... of the flat order (batch, y, x) one at a time; pixel
 * k (reading only its receptive field) is computed into ring slot k % (lag + 1) of scratch, then
 * pixel k - lag (if k >= lag) is copied from its slot to its output bytes; after the last pixel the
 * remaining `lag` pixels are copied in order. So once output pixel j's bytes are written, every input
 * byte read later lies in the receptive field of pixel j + lag + 1 or later: the output may overlap
 * the input as long as output offset - input offset <= min_k (R(k+1) - (k - lag + 1) * out_c), with
 * R(k+1) the lowest input byte of pixels after k (tinysched.overlap picks the smallest lag for
 * which that is >= 0: fully in place). scratch: (lag + 1) * out_c bytes, disjoint from input and
 * output. rq_table: as CONV_2D staged's (may be NULL: then the fast path without ts_rq). Where
 * p->blocks is set (the conditions above), each pixel is the blocks arithmetic instead, one pixel
 * per step as here, and rq_table is not read.
 * On Helium cores (TS_MVE, see CONV_2D) with depth_multiplier 1 under the fast path's conditions,
 * each pixel (the same one per step, the same ring slot and copy-out order as above) is
 * ts_depthwise_conv2d_s8's Helium arithmetic for a clipped window: the bias, then for each tap inside
 * the input w * (x + input_offset) of 16-bit lanes widened to 32 bits (VMULLB / VMULLT), eight
 * channels per block (pairs of blocks, then a whole block, then a predicated tail; a pair of
 * blocks of a whole window with in_c <= 64 from bias + input_offset * sum(w), tabled once per
 * call, and the raw lanes: the same accumulator), then its
 * requantisation; the same int32 accumulator, so the same bytes. rq_table is not used there. Pixels
 * go a row at a time, still one per step: only the pixel's receptive field is read and only its ring
 * slot written before its lagged pixel is copied out. */
int ts_depthwise_conv2d_s8_staged(const ts_depthwise_conv2d_s8_params *p, const int8_t *input,
                                  const int8_t *filter, const int32_t *bias, int8_t *output, int8_t *scratch,
                                  int32_t lag, const int32_t *rq_table);

/* ---- Expansion then depthwise (CONV_2D 1x1 -> DEPTHWISE_CONV_2D) --------------------------------
 * A 1x1 CONV_2D at stride 1 without padding or dilation (p->expand: in_c = Cin, out_c = C) whose
 * output only a DEPTHWISE_CONV_2D with depth multiplier 1 reads (p->depthwise: in_c = out_c = C),
 * computed without the expanded tensor ever held whole. Arithmetic: exactly ts_conv2d_s8 on the
 * whole 1x1 followed by ts_depthwise_conv2d_s8 on the whole depthwise (the same bytes; a channel
 * of either depends only on its own filter, bias, multiplier and shift, and the expanded rows a
 * depthwise window leaves out are its padding, the input zero point): every piece is one of those
 * two kernels' arithmetic on a channel group [c0, c0 + w) (multiplier, shift, filters and biases
 * from c0) and a few rows: a call of ts_conv2d_s8_checked / ts_depthwise_conv2d_s8_checked on a
 * copy of the whole layer's parameters narrowed to the group (the expansion's quads and stem, the
 * depthwise's blocks NULL; the checks made once per group and call). On DSP cores without Helium,
 * where every channel of the group takes ts_rq's steps (the narrowed checks' bit 1), the same int32
 * accumulators and ts_rq by cheaper ways: the expansion by the pixel-in-registers path
 * (ts_conv2d_s8_pixel_table) on a table made per call as the generator makes it (in_c 8, 12 or 16,
 * the activation range all of int8, every channel with a right shift, the table within 192 words),
 * else (group a multiple of 4 below 2 * in_c, in_c a multiple of 4 up to 32) four channels a pass,
 * each pixel's SMLAD dot products then ts_rq, packed and clamped bytewise; the depthwise (groups of
 * 4k channels, filter_w <= 3, dilation_w 1, the blocks within 80 words) by its Blocks path on
 * blocks made per call, or (groups of one to three channels) per output pixel the window's
 * rectangle inside the rows, per channel bias + sum w * (x + input_offset), ts_rq, clamped.
 * Rows (as a streamed stage passes a depthwise member's, TS_ROWS): `input` is the first present
 * row of the 1x1's input, p->in_h rows of in_w * Cin bytes (batch 1); output row y < p->out_h reads
 * the expanded rows [y * stride_h - pad_top, + span) clipped to [0, p->in_h), span = (filter_h - 1)
 * * dilation_h + 1; the whole layer's in_h, out_h and pad_top in the two structs are not read.
 * Channel groups of p->group channels (the last takes the rest); the depthwise's filter grouped:
 * group g's [filter_h][filter_w][its width] after the groups before it.
 * Read/write order: for each group, for each output row y. by_rows 1: the window's clipped rows of
 * the input read and their expanded rows written to the scratch after its first out_w * group
 * bytes, then the depthwise of row y's group channels into those first bytes and copied to output
 * row y (pixel
 * stride C; groups of one to three channels on the DSP cores above: written straight to it); rows
 * shared by consecutive output rows are expanded again. by_rows 0: the ring of expanded rows in the
 * scratch (at most span rows) drops those below the row's window (moved down, memmove), the missing
 * rows are expanded in one call, then the depthwise and the output as above; each expanded row is
 * computed once per group. Either way the input is read again for every group, so the output
 * shares no byte with the input, and the scratch none with either.
 * scratch: out_w * group + min(span, in_h) * in_w * group bytes, the depthwise's row first (so the
 * expanded rows reach its end on every path: the high-water a plan states). Returns TS_ERR_PARAMS for group < 1, a depth
 * multiplier other than 1 or shapes that do not chain as above, else what a called kernel
 * returns if not TS_OK. */
typedef struct {
    /* the call's rows, as a streamed stage sets a depthwise member's (TS_ROWS): input rows present
     * (rows of the 1x1's input, which has the depthwise's geometry: a 1x1 at stride 1 keeps it),
     * output rows to compute, and the depthwise's pad_top relative to the first present row */
    int32_t in_h, out_h, pad_top;
    int32_t stride_h; /* = depthwise.stride_h (TS_ROWS reads it from the whole layer's params) */
    ts_conv2d_s8_params expand;             /* the whole 1x1: in_c = Cin, out_c = C, quads and stem NULL */
    ts_depthwise_conv2d_s8_params depthwise; /* the whole depthwise: in_c = out_c = C, depth_multiplier 1 */
    const int8_t *expand_filter;    /* [C][Cin] */
    const int32_t *expand_bias;     /* [C] or NULL */
    const int8_t *depthwise_filter; /* grouped: group g's [filter_h][filter_w][its width] after the groups before it */
    const int32_t *depthwise_bias;  /* [C] or NULL */
    int32_t group;   /* channels per group; the last group takes the rest (C - g * group) */
    int32_t by_rows; /* 1: per output row, per group (rows shared by consecutive output rows computed again);
                        0: per group, per output row, each expanded row computed once (a ring of span rows) */
} ts_expand_dw_s8_params;

/* scratch bytes: out_w * group + min(span, in_h) * in_w * group, span = (filter_h - 1) * dilation_h + 1 */
int ts_expand_dw_s8(const ts_expand_dw_s8_params *p, const int8_t *input, int8_t *output, int8_t *scratch);

/* ---- FULLY_CONNECTED ----------------------------------------------------------------------------
 * out[b][o] = clamp(out_offset + requant_o(bias[o] + sum_i (w[o][i] + filter_offset) *
 *                  (in[b][i] + input_offset)), act_min, act_max).
 * multiplier/shift have out_depth entries when per_channel, else one. Bias may be NULL.
 * Unlike the convolutions, requant_o here rounds once: (acc * multiplier + 2^(30 - shift)) >>
 * (31 - shift) in 64 bits, which is what TFLite's FULLY_CONNECTED computes (verified bit-exact
 * against ai-edge-litert's reference kernels; the two-step rounding differs by 1 in ~1% of outputs).
 *
 * Fast path (when input_offset and filter_offset are in [-128, 128], as int8 zero points give; the
 * same int32 accumulators as the formula): outputs in pairs (o, o+1), one pass over the batch's
 * input row for both; on DSP cores SXTAB16 widens four bytes at a time adding the input offset (and
 * the filter offset, for the weights) and SMLAD accumulates; the tail bytes one at a time. On DSP
 * cores without Helium with filter_offset 0 (TFLite's int8 weights) the units go four a pass
 * instead, in chunks of up to 16 (ts_fully_connected_s8_rows's four-unit path over the batch's row
 * as one row, the chunk's sums on the stack, then requantised), the units past the last multiple
 * of four in a pair; input row b is still read before any output of batch b is written.
 * On Helium cores (TS_MVE, see CONV_2D) the pairs' dot products are VMLADAV of the raw bytes, 16 per
 * step (a predicated tail), plus input_offset * sum(w) (VADDV) and, when filter_offset != 0,
 * filter_offset * sum(x) + in_depth * input_offset * filter_offset once per batch; the same int32.
 * Read/write order: batch by batch; output bytes of batch b are written, in pairs ascending, only
 * after reading input row b (it is read once per pair), and input row b is not read after the
 * last output of batch b is written. */
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

/* FULLY_CONNECTED by rows: a FULLY_CONNECTED of one batch reading a flattened NHWC map (in_depth =
 * rows * row_len, row_len = width * channels) as a streamed stage's sink (tinysched/memory/stream.py
 * `row_dense`). `rows` holds input rows [first, first + count), elements [first * row_len, (first +
 * count) * row_len) of the input row; for every output o their products (w[o][i] + filter_offset) *
 * (x[i] + input_offset) are added into sums[o] (4 * out_depth bytes at any alignment: int32 in the
 * core's byte order; set to this call's sums when first == 0). On DSP cores without Helium, with
 * filter_offset 0 (TFLite's int8 weights), units in groups of four (fc_rows_quads): the group's
 * four sums loaded once into registers, each input word of the rows loaded and widened once
 * (SXTAB16 with input_offset) and SMLADed with the four units' weight words (SXTB16), 16 bytes a
 * turn, then whole words, then the bytes past the last word, and the four sums stored once (rows
 * of whole 16-byte turns: the loop over the groups in asm too, fc_rows_quads16); the
 * units left (out_depth % 4), and every unit elsewhere, in pairs on the fast paths of
 * ts_fully_connected_s8 (fc_dot2 on DSP cores, VMLADAV on Helium, the scalar loop otherwise). After the input's last row output o = clamp(output_offset +
 * requant_o(bias[o] + sums[o])), ts_fully_connected_s8's single rounding: integer addition is exact
 * in any order (|partial sums| stay under the int32 bound above), so the same bytes. Order: every
 * byte of `rows` read before any output byte is written; the output only after the last row. */
int ts_fully_connected_s8_rows(const ts_fully_connected_s8_params *p, const int8_t *rows, int32_t first,
                               int32_t count, int32_t row_len, const int8_t *weights, const int32_t *bias,
                               int8_t *sums, int8_t *output);

/* ---- AVERAGE_POOL_2D / MAX_POOL_2D ---------------------------------------------------------------
 * Input and output share one quantisation. The window is clipped to the input (padding is never
 * counted). Average: sum / count rounded to nearest, ties away from zero; max: the largest value.
 * Then clamp to [act_min, act_max]. Order: one loop nest over batch, output row, output column
 * (each output pixel's bytes written right after its window is read: groups of one pixel; on DSP
 * cores byte c of a pixel right after every tap of its channel c).
 * Max on DSP cores (Helium ones too): four channels a word, the running bytewise signed max of the
 * window's words (SSUB8 sets a GE flag per byte, SEL picks), starting from act_min in every byte,
 * then the bytewise min with act_max; channels past the last multiple of four one at a time.
 * Average on DSP cores (not Helium) over at most 255 taps: four channels a word, SXTAB16 widening a
 * word's even and odd bytes and adding them to two pairs of 16-bit lanes, exact since |sum| <=
 * 128 * 255 < 2^15 (the channels past the last multiple of four, and larger windows, one at a time
 * in 32 bits). Average on Helium cores (TS_MVE, see CONV_2D) with filter_h * filter_w <= 256:
 * per output pixel eight channels at a time, the window's taps inside the input summed in 16-bit
 * lanes (exact: at
 * most 256 * 128), then per 32-bit lane the same rounded quotient: (|sum| + count / 2) times
 * ceil(2^32 / count), high word (VMULH; exact for these sums, see ts_mve.h ts_mve_avg_div), negated
 * back for negative sums; clamped, stored as bytes (the last block predicated). Same order. */
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

/* AVERAGE_POOL_2D by rows: a global pool (one window over the whole input: out_h = out_w = 1,
 * filter = in_h x in_w, no padding, batches 1) as a streamed stage's sink (tinysched/memory/stream.py
 * `global_pool`). `rows` holds input rows [first, first + count); their elements are added, per
 * channel, into `sums` (4 * channels bytes at any alignment: int32 in the core's byte order; set to
 * the rows' sums when first == 0), and after the input's
 * last row output channel c = sums[c] / (in_h * in_w) rounded to nearest, ties away from zero,
 * clamped to [act_min, act_max]: the sum and the division of ts_avg_pool2d_s8 (integer addition is
 * exact in any order: |sum| <= 128 * in_h * in_w), so the same bytes. On DSP cores (Helium ones too) a
 * call of up to 255 taps (count * in_w) sums its rows four channels a word in 16-bit lanes (SXTAB16,
 * exact: |sum| <= 255 * 128 < 2^15), each lane then added to its channel's int32 sum. Order: every
 * byte of `rows` read before any output byte is written; the output only after the last row. */
int ts_avg_pool2d_s8_rows(const ts_pool2d_s8_params *p, const int8_t *rows, int32_t first, int32_t count,
                          int8_t *sums, int8_t *output);

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
 * |x + offset| <= 255, so (x + offset) << 20 stays below 2^28: no overflow.
 * Fast path: when neither input broadcasts (both strides row-major over dims) and no multiplier is
 * INT32_MIN, one flat loop over the elements with the same arithmetic; on Helium cores (TS_MVE, see
 * CONV_2D) that loop four elements at a time (the formula's steps on four lanes, VQRDMULH and VRSHL,
 * the last n % 4 predicated); with left_shift 20 and no positive shift (TFLite's int8 ADD), built
 * with optimisation, the whole vectors in one asm loop with every constant in a register (the tie
 * correction only for a nonzero right shift): the same steps. On the other DSP cores (GCC/Clang)
 * with TFLite's int8 parameters
 * (left_shift 20, input shifts in [-31, 0], output shift in [-22, -1], multipliers >= 0, offsets
 * within [-255, 255]) also four elements at a time: one word of each input read, each of the three
 * rescales as SMMLAR(v << (left + 1), m, t) >> r with t = 2^(r-1) - [v < 0] (+ output_offset * 2^r
 * for the output; SMMULR when r == 0), which is the formula's value (ts_simd.h's ts_rq derivation;
 * firmware/kernels/ts_add_s8.c has the bounds), then SSAT and, unless the activation range is all
 * of int8, the bytewise clamp; one word of output written; the last n % 4 one at a time. Read/write
 * order (all paths): element k of the output is written after reading element k (or its broadcast
 * source) of each input, in increasing k (Helium and DSP: elements k..k+3 written after reading
 * k..k+3 of both inputs, and nothing past k+3 read before); nothing else is read. */
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
 * Along the last axis, one row at a time, in one of two arithmetics (ts_softmax_s8.c says why):
 *  - TFLite's reference fixed point: d = x - max(row); entries with d < diff_min give -128; the others
 *    e = exp(d * beta * scale) in Q0.31 (gemmlowp's exp_on_negative_values on Q5.26 input
 *    d * input_multiplier << input_left_shift), summed in Q12.19, and the output is e / sum in Q0.8
 *    (reciprocal by Newton-Raphson in fixed point), minus 128, clamped;
 *  - LiteRT's builtin kernel, for a row where the former is undefined (its Q12.19 sum leaves 32 bits,
 *    or its final shift exceeds 31: a sum of 512 or more for int8 output) and for every row when
 *    `table_only` (input scale * beta <= 2^-26: no Q5.26 multiplier exists): float32
 *    e = exp_table[max - x], sum in float32 in order, out = round(e / (sum * output_scale)) - 128.
 * The generator gives exp_table whenever a row can need it (depth >= 512 for int8 output, 8192 for
 * int16, or table_only). */
typedef struct {
    int32_t outer;
    int32_t depth;
    int32_t input_multiplier;
    int32_t input_left_shift;
    int32_t diff_min;
    const float *exp_table; /* [256] or NULL: exp_table[k] = expf(-input_scale * beta * k), float32 */
    float output_scale;     /* the output's float32 scale, used with exp_table */
    int32_t table_only;     /* 1: every row from exp_table */
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

/* ---- QUANTIZE float32 -> int8: out = clamp(roundf(x / scale) + zero_point, -128, 127), as TFLite's
 * reference AffineQuantize: the quotient is one float32 division (not double, not x * (1 / scale)),
 * rounded half away from zero; NaN becomes the zero point. A quotient within a float32 rounding of
 * k + 0.5 rounds as the reference's only in float32. */
typedef struct {
    int32_t count;
    float scale;
    int32_t zero_point;
} ts_quantize_f32_s8_params;

int ts_quantize_f32_s8(const ts_quantize_f32_s8_params *p, const float *input, int8_t *output);

/* ---- DEQUANTIZE int8 -> float32: out = scale * (float)(x - zero_point), one float32 product of
 * exact operands, which is the reference's (float)((double)scale * (x - zero_point)): that double
 * product is exact (24 + 9 bits), so both round the same real number once. */
typedef struct {
    int32_t count;
    float scale;
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
 * else pad_value (the output zero point: real 0).
 * Read/write order (for in-place planning): one loop over the output elements k = 0, 1, ... in flat
 * order; element k is written right after reading its one input element (none for a pad element),
 * and the input elements read are in increasing flat order. */
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

/* ---- operators added for issue 6 ------------------------------------------------------------------
 * Pointwise int8 operators (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH, TANH) run on ts_lut_s8
 * with a table the generator computes with TFLite's integer arithmetic for all 256 input bytes. SUB
 * runs on ts_add_s8 with input2_multiplier negated. Strided views (SLICE, STRIDED_SLICE, TILE,
 * SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND without padding or crops)
 * run on ts_transpose with a pre-offset input pointer; PACK runs on ts_concatenation. */

/* SPLIT / SPLIT_V / UNPACK: for each of `outer` slices, output k receives the next chunk_bytes[k]
 * bytes of the input in turn (the inverse of ts_concatenation). */
typedef struct {
    int32_t num_outputs;
    int32_t outer;
    const int32_t *chunk_bytes; /* [num_outputs] */
} ts_split_params;

int ts_split(const ts_split_params *p, const void *input, void *const *outputs);

/* MAXIMUM / MINIMUM (int8): TFLite compares the raw values (both inputs and the output share one
 * quantisation), with broadcasting as for ADD. */
typedef struct {
    ts_broadcast_shape shape;
    int32_t is_max;
} ts_minmax_s8_params;

int ts_minmax_s8(const ts_minmax_s8_params *p, const int8_t *input1, const int8_t *input2,
                 int8_t *output);

/* REDUCE_MAX (int8, input and output sharing one quantisation): the largest raw value over the
 * reduced axes; shapes walked as for MEAN. */
typedef struct {
    int32_t out_dims[TS_MAX_DIMS];
    int32_t out_strides[TS_MAX_DIMS];
    int32_t red_dims[TS_MAX_DIMS];
    int32_t red_strides[TS_MAX_DIMS];
} ts_reduce_max_s8_params;

int ts_reduce_max_s8(const ts_reduce_max_s8_params *p, const int8_t *input, int8_t *output);

/* SUM (int8): s = sum of the raw int8 values over the reduced axes (count of them, shapes walked as
 * for MEAN; s fits int32 for count < 2^23), out = base + (number of thresholds[k] <= s). The
 * generator derives base and the ascending thresholds from ai-edge-litert's optimised float32
 * requantisation (round(s * scale + bias) + output zero point, clamped), a non-decreasing function of
 * s, so the kernel reproduces it exactly with integers only; n_thresholds <= 255. */
typedef struct {
    int32_t out_dims[TS_MAX_DIMS];
    int32_t out_strides[TS_MAX_DIMS];
    int32_t red_dims[TS_MAX_DIMS];
    int32_t red_strides[TS_MAX_DIMS];
    int32_t count;
    int32_t base, n_thresholds;
    const int32_t *thresholds; /* [n_thresholds], ascending */
} ts_sum_s8_params;

int ts_sum_s8(const ts_sum_s8_params *p, const int8_t *input, int8_t *output);

/* ARG_MAX / ARG_MIN (int8 input viewed as [outer][axis_size][inner]): the index along the axis of
 * the largest (smallest) raw value, the first one on ties; int32 or int64 output.
 * Read/write order: output elements (o, i) in flat order; element (o, i) is written once, after
 * all its axis_size inputs (o, a, i) are read, and before any input of a later element is read.
 * So over the last axis (inner 1) element p reads bytes [p * axis_size, (p + 1) * axis_size) and
 * then writes its 4 or 8 bytes ending at (p + 1) * 4 or 8: the output may start at the input's
 * start when its element is no wider than axis_size (tinysched.memory.overlap). */
typedef struct {
    int32_t outer, axis_size, inner;
    int32_t is_max;
    int32_t output_is_int64;
} ts_arg_minmax_s8_params;

int ts_arg_minmax_s8(const ts_arg_minmax_s8_params *p, const int8_t *input, void *output);

/* GATHER (input viewed as [outer][axis_size][inner_bytes]): for each outer slice, the slices named
 * by the int32 or int64 indices in turn. Returns TS_ERR_PARAMS for an index outside [0, axis_size). */
typedef struct {
    int32_t outer, axis_size, inner_bytes;
    int32_t num_indices;
    int32_t indices_are_int64;
} ts_gather_params;

int ts_gather(const ts_gather_params *p, const void *input, const void *indices, void *output);

/* RESIZE_NEAREST_NEIGHBOR (NHWC, any element type): out[b][y][x] = in[b][y_map[y]][x_map[x]], whole
 * pixels of pixel_bytes; the generator fills the maps with TFLite's GetNearestNeighbor (float32
 * scale, align_corners rounds, otherwise floor, half_pixel_centers offsets by 0.5). */
typedef struct {
    int32_t batches, in_h, in_w, out_h, out_w;
    int32_t pixel_bytes;
    const int32_t *y_map; /* [out_h] */
    const int32_t *x_map; /* [out_w] */
} ts_resize_nearest_params;

int ts_resize_nearest(const ts_resize_nearest_params *p, const void *input, void *output);
/* Output rows [row, row + count) of one batch (input: that batch, whole; output: row `row`), rows in
 * increasing order, pixels of a row left to right; the whole kernel calls it per batch on every row.
 * A streamed stage's resize head (ts_kernels.h "Streamed pairs").
 * Read/write order (both resize kernels): batches, then output rows, in increasing order; output row
 * y of a batch reads only input rows y0[y], y1[y] (nearest: y_map[y]) of that batch, non-decreasing
 * in y, and its pixels are written left to right as they are computed, each pixel's bytes after its
 * reads. So the output may overlap the input as long as every output row ends below the first byte
 * of the lowest source row of it and of every later row (tinysched.memory.overlap `_resize`). */
int ts_resize_nearest_rows(const ts_resize_nearest_params *p, const void *input, int32_t row, int32_t count,
                           void *output);

/* RESIZE_BILINEAR (int8, input and output sharing one quantisation): TFLite's integer version.
 * For output row y the generator gives the two source rows y0[y], y1[y] and the weight wy[y] of y1
 * in units of 1/1024 (likewise for columns); out = round_half_away(sum of the four raw values times
 * their 20-bit weight products / 2^20), truncated to int8. */
typedef struct {
    int32_t batches, in_h, in_w, channels, out_h, out_w;
    const int32_t *y0, *y1, *wy; /* [out_h] */
    const int32_t *x0, *x1, *wx; /* [out_w] */
} ts_resize_bilinear_s8_params;

int ts_resize_bilinear_s8(const ts_resize_bilinear_s8_params *p, const int8_t *input,
                          int8_t *output);
/* Output rows [row, row + count) of one batch (input: that batch, whole; output: row `row`), rows in
 * increasing order, the arithmetic above; output row y reads input rows y0[y] and y1[y] only. The
 * whole kernel calls it per batch on every row; a streamed stage's resize head calls it on the rows
 * its window still lacks (ts_kernels.h "Streamed pairs"). */
int ts_resize_bilinear_s8_rows(const ts_resize_bilinear_s8_params *p, const int8_t *input, int32_t row,
                               int32_t count, int8_t *output);

/* PRELU (int8): x = in + input_offset; out = clamp(output_offset + (x >= 0 ? requant(x, pos) :
 * requant(x * (alpha + alpha_offset), neg))), alpha broadcast against the input (in1 = input,
 * in2 = alpha). Multipliers: input_scale / output_scale and input_scale * alpha_scale / output_scale. */
typedef struct {
    ts_broadcast_shape shape;
    int32_t input_offset, alpha_offset, output_offset;
    int32_t multiplier_pos, shift_pos;
    int32_t multiplier_neg, shift_neg;
} ts_prelu_s8_params;

int ts_prelu_s8(const ts_prelu_s8_params *p, const int8_t *input, const int8_t *alpha,
                int8_t *output);

/* SQUARED_DIFFERENCE (int8): like ADD's rescaling with left_shift 7, then
 * out = clamp(output_offset + requant((a - b)^2, output_multiplier, output_shift)). */
typedef struct {
    ts_broadcast_shape shape;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
} ts_squared_difference_s8_params;

int ts_squared_difference_s8(const ts_squared_difference_s8_params *p, const int8_t *input1,
                             const int8_t *input2, int8_t *output);

/* L2_NORMALIZATION (int8 in, int8 out with scale 1/128 and zero point 0) along the last axis:
 * acc = sum (q - zp)^2 per row; (m, s) = TFLite's fixed-point 1/sqrt(acc) (Newton-Raphson, gemmlowp);
 * out = clamp(requant(q - zp, m, s + 7)). Rows of fewer than 33,000 elements keep acc in int32. */
typedef struct {
    int32_t outer, depth;
    int32_t input_zero_point;
} ts_l2_normalization_s8_params;

int ts_l2_normalization_s8(const ts_l2_normalization_s8_params *p, const int8_t *input,
                           int8_t *output);

/* TRANSPOSE_CONV (int8, filter [out_c][fh][fw][in_c], per-channel or per-tensor):
 * out[b][y][x][o] = clamp(output_offset + requant_o(bias[o] + sum over taps with
 * y + pad_top - ky = iy * stride_h (likewise x) of w[o][ky][kx][c] * (in[b][iy][ix][c] +
 * input_offset))). The same int32 sums as TFLite's scatter formulation, gathered per output. */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t input_offset, output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* [out_c] */
    const int32_t *shift;      /* [out_c] */
} ts_transpose_conv_s8_params;

int ts_transpose_conv_s8(const ts_transpose_conv_s8_params *p, const int8_t *input,
                         const int8_t *filter, const int32_t *bias, int8_t *output);

/* SOFTMAX, int8 in, int16 out (scale 1/65536, zero point -32768): ts_softmax_s8's algorithms and
 * parameters, the final rescale to 16 bits (out = round(e / sum * 2^16) - 32768, clamped); the
 * fixed point is undefined only where the Q12.19 sum leaves 32 bits (depth >= 8192). */
int ts_softmax_s8_s16(const ts_softmax_s8_params *p, const int8_t *input, int16_t *output);

/* QUANTIZE between integer types: out = clamp(requant(x - input_zero_point, multiplier, shift) +
 * output_zero_point) to the output type's range; types are TS_TYPE_*. */
#define TS_TYPE_INT8 0
#define TS_TYPE_UINT8 1
#define TS_TYPE_INT16 2
#define TS_TYPE_INT32 3
typedef struct {
    int32_t count;
    int32_t input_type, output_type;
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;
} ts_requantize_int_params;

int ts_requantize_int(const ts_requantize_int_params *p, const void *input, void *output);

/* SVDF (int8 input/output, int8 feature weights [num_filters][input_size], int16 time weights
 * [num_filters][memory_size], int32 bias [num_filters / rank] or NULL, int16 state
 * [batches][num_filters][memory_size] that persists across invokes, outside the arena):
 * 1. the state moves one element towards the front (the oldest entry of each filter drops out);
 * 2. state[b][f][memory_size - 1] = clamp16(requant(sum_c wf[f][c] * (in[b][c] - input_zero_point),
 *    multiplier_1, shift_1));
 * 3. out[b][u] = clamp(requant(bias[u] + sum_{r < rank} sum_m wt[u*rank+r][m] * state[b][u*rank+r][m],
 *    multiplier_2, shift_2) + output_zero_point, act_min, act_max), sums in wrapping int32. */
typedef struct {
    int32_t batches, input_size, num_filters, rank, memory_size;
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier_1, shift_1; /* input * feature weight -> state scale */
    int32_t multiplier_2, shift_2; /* state * time weight -> output scale */
    int32_t act_min, act_max;
} ts_svdf_s8_params;

int ts_svdf_s8(const ts_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,
               const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output);

/* SPACE_TO_BATCH_ND with padding (to_batch = 1; offset_* = the padding before, pad_value = the
 * output zero point's byte) and BATCH_TO_SPACE_ND with crops (to_batch = 0; offset_* = the crop
 * before), NHWC with 2 spatial block dimensions, whole pixels of pixel_bytes. Batch index of block
 * position (i, j) and image n: (i * block_w + j) * images + n, as in TFLite. */
typedef struct {
    int32_t to_batch;
    int32_t in_batches, in_h, in_w;
    int32_t out_batches, out_h, out_w;
    int32_t block_h, block_w;
    int32_t offset_top, offset_left;
    int32_t pixel_bytes;
    int32_t pad_value;
} ts_space_batch_nd_params;

int ts_space_batch_nd(const ts_space_batch_nd_params *p, const void *input, void *output);

/* UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's integer 8x8_16 path without CIFG, peephole, layer norm or
 * projection (so the output size is cell_size): int8 input [batches][time_steps][input_size] (or
 * [time_steps][batches][input_size] if time_major) and output (..., cell_size); int8 weights, gates
 * in the order input, forget, cell, output; int8 output state and int16 cell state [batches][cell_size]
 * that persist across invokes, outside the arena. Per step and cell r:
 *   gate = sat16(requant(input_bias[g][r] + sum_c W[g][r][c] * x[c], input_*[g])
 *                + sat16(requant(recurrent_bias[g][r] + sum_c U[g][r][c] * h[c], recurrent_*[g]))),
 *   a Q3.12 value; the effective biases fold in the gate bias and the zero points (bias + row sum *
 *   -zero point). i, f, o = sigmoid(gate), g = tanh(gate), in Q0.15 (gemmlowp's int16 fixed point);
 *   c = sat16(wrap16(rdivpot(f * c, 15)) + wrap16(rdivpot(i * g, 30 + cell_scale_log2))), clipped to
 *   [-cell_clip, cell_clip] if cell_clip > 0 (the cell state's scale is 2^cell_scale_log2);
 *   h = clamp8(requant(o * tanh(c), hidden_*) + hidden_offset), tanh(c) reading c with
 *   15 + cell_scale_log2 (0..6) integer bits. h is the step's output row and the new output state.
 * No scratch: each cell's gates are computed in turn (the new h goes to the output row, then is
 * copied into the output state once the step is done). */
typedef struct {
    int32_t batches, time_steps, input_size, cell_size;
    int32_t time_major;
    const int8_t *input_weights[4];     /* [cell_size][input_size] per gate */
    const int8_t *recurrent_weights[4]; /* [cell_size][cell_size] per gate */
    const int32_t *input_bias[4];       /* [cell_size]: gate bias + row sum * -input zero point */
    const int32_t *recurrent_bias[4];   /* [cell_size]: row sum * -output state zero point */
    int32_t input_multiplier[4], input_shift[4];         /* input * W -> Q3.12 */
    int32_t recurrent_multiplier[4], recurrent_shift[4]; /* output state * U -> Q3.12 */
    int32_t cell_scale_log2;
    int32_t cell_clip;
    int32_t hidden_multiplier, hidden_shift, hidden_offset; /* o * tanh(c) (2^-30) -> output */
} ts_lstm_s8_params;

int ts_lstm_s8(const ts_lstm_s8_params *p, const int8_t *input, int8_t *output_state, int16_t *cell_state,
               int8_t *output);

/* ---- Legacy uint8 (tinysched/model/uint8.py; ts_legacy_uint8.c, ts_resize_bilinear_float_s8.c) ---------
 * A legacy uint8-quantised model runs on its int8 form: every uint8 byte q as q - 128 (xor 0x80),
 * every zero point minus 128, so TFLite's uint8 arithmetic on (q - zero_point) is unchanged. Its
 * weights keep a non-zero zero point, and two operators round differently for uint8; these kernels
 * compute what TFLite's uint8 reference kernels do, plain loops (below: the DSP sums).
 *
 * ts_conv2d_filter_offset_s8 / ts_depthwise_conv2d_filter_offset_s8: ts_conv2d_s8 /
 * ts_depthwise_conv2d_s8's parameters (same names: a streamed stage sets in_h, out_h, pad_top for
 * its rows, a column tile in_w, out_w, pad_left; tables only as below) and the filter offset
 * (minus the filter's zero point): out = clamp(output_offset + requant_o(bias[o] + sum over the
 * window's taps inside the input of (x + input_offset) * (w + filter_offset))), requant_o =
 * ts_requantize (TFLite's MultiplyByQuantizedMultiplier). On DSP cores the sums take four bytes a
 * word, each widened into 16-bit lanes (SXTAB16 / SXTB16: |q + offset| <= 255) and multiplied.
 * CONV_2D, four output channels a pass over the window (the out_c % 4 last ones one at a time as
 * below): since sum((x + input_offset) * (w + filter_offset)) = sum((x + input_offset) * w) +
 * filter_offset * sum(x + input_offset), the pixel's sum(x) over the window's taps inside the
 * input is taken once (USADA8 of x xor 0x80, four bytes a word, less 128 a byte) and each pass
 * multiplies the input (widened with input_offset) by the raw filter (SXTB16), a window row's taps
 * as one run of bytes where dilation_w is 1; each part is bounded as the whole sum is. Where `rq`
 * is given (the generator's ts_rq fields per output channel, m, left + 1, base, rr as
 * ts_conv2d_s8_staged's rq_table, checked for accumulators reaching products * max|x +
 * input_offset| * max|w + filter_offset|), the four accumulators are requantised by ts_rq, clamped
 * bytewise and stored as one word (ts_rq4_store); without it, or without the DSP asm,
 * ts_requantize. A 1x1 CONV_2D with `pixel_table` (the generator's, DSP cores only: CONV_2D "pixel
 * in registers"'s table built from w' = w + filter_offset, in [-255, 255], each lane w' << l1
 * still an int16, and (bias + input_offset * sum(w')) << l1, its ts_rq fields checked for
 * accumulators reaching products * max|x + input_offset| * max|w'|) is that path's arithmetic:
 * ts_conv2d_s8_pixel_table runs it where it takes the layer (or the stage's rows), reading the
 * input bytes and writing each pixel's outputs after reading it, a group of one pixel; elsewhere
 * (other cores, the host) the loops here. Likewise a 3x3 CONV_2D over 3 channels with `stem`
 * (CONV_2D "stem"'s table of w', doubled: lanes 2 w' in [-510, 510], biases 2 (bias +
 * input_offset * sum(w'))): ts_conv2d_s8_stem_table, that path's order (pixel by pixel in the flat
 * order, each pixel's window read before any of its bytes is written). DEPTHWISE_CONV_2D with depth
 * multiplier 1: SMLABB / SMLATT on both offsets, four channels a pass (requantised by ts_rq4_store
 * where `rq` is given, as CONV_2D's); the rest one at a time; the same int32 sums. Read/write order: output pixels in flat order, one at a time; a pixel's output
 * channels are written in order, each after its window is read (a group of one pixel, as
 * ts_conv2d_s8's reference loop: tinysched.memory.overlap `_conv`, `_depthwise`).
 * DEPTHWISE_CONV_2D with `blocks` (the generator's, DSP cores only): since sum((x + input_offset) *
 * (w + filter_offset)) is sum((x + input_offset) * w') with w' = w + filter_offset in [-255, 255],
 * still a 16-bit lane, the layer is ts_depthwise_conv2d_s8's "Blocks" arithmetic on a table built
 * from w' (its ts_rq fields checked by the generator for accumulators reaching
 * products * max|x + input_offset| * max|w'|, not |w| <= 128): ts_depthwise_conv2d_s8_blocks runs
 * it where the blocks take the layer (depth multiplier 1, dilation_w 1, filter_w <= 3) and in_c is
 * a multiple of 4 (no tail channel through the formula, which reads the raw filter); elsewhere
 * (other cores, the host) the loop above, which ignores `blocks`. The same int32 sums, so the same
 * bytes; read/write order: the blocks' group of one pixel (channels in blocks of four, ascending,
 * each written after its window is read), the same claim as above.
 *
 * ts_avg_pool2d_half_up_s8: ts_avg_pool2d_s8's parameters and loop order, but the sum of a window's
 * n taps inside the input is rounded as TFLite's uint8 kernel does: (sum + 128 n + n / 2) / n - 128
 * (the uint8 sum is non-negative: ties round up), then clamped.
 *
 * ts_resize_bilinear_float_s8: TFLite's generic (float) ResizeBilinear, which uint8 runs: the
 * generator gives per output row the source rows y0 = max(floor(v), 0), y1 = min(ceil(v), in_h - 1)
 * of v = y * scale (or (y + 0.5) * scale - 0.5) and dy = v - y0, in float32 (likewise columns);
 * out = (int32)(u00 * (1 - dy) * (1 - dx) + u10 * dy * (1 - dx) + u01 * (1 - dy) * dx + u11 * dy *
 * dx + 0.5) - 128 with u = q + 128, float32 in that order (no contraction: the sources are compiled
 * with -ffp-contract=off), truncated toward zero (the reference's rounding_offset for integer T). Read/write order and rows: as ts_resize_bilinear_s8's
 * (RESIZE "Read/write order"), output row y reading input rows y0[y] and y1[y] only. */
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
    int32_t filter_offset;
    const int32_t *rq; /* [out_c][4] ts_rq fields for accumulators of w + filter_offset, or NULL */
    const int32_t *pixel_table; /* the pixel path's table of w + filter_offset, or NULL */
    const int32_t *stem;        /* the stem path's table of w + filter_offset, or NULL */
} ts_conv2d_offset_s8_params;

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
    int32_t filter_offset;
    const int32_t *blocks; /* the generator's blocks of w + filter_offset ("Blocks" above), or NULL */
    const int32_t *rq;     /* [out_c][4] ts_rq fields for accumulators of w + filter_offset, or NULL */
} ts_depthwise_conv2d_offset_s8_params;

typedef struct {
    int32_t batches, in_h, in_w, channels, out_h, out_w;
    const int32_t *y0, *y1; /* [out_h] */
    const float *dy;        /* [out_h] */
    const int32_t *x0, *x1; /* [out_w] */
    const float *dx;        /* [out_w] */
} ts_resize_bilinear_float_s8_params;

int ts_conv2d_filter_offset_s8(const ts_conv2d_offset_s8_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output);
int ts_depthwise_conv2d_filter_offset_s8(const ts_depthwise_conv2d_offset_s8_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output);
int ts_avg_pool2d_half_up_s8(const ts_pool2d_s8_params *p, const int8_t *input, int8_t *output);
int ts_resize_bilinear_float_s8(const ts_resize_bilinear_float_s8_params *p, const int8_t *input,
                                int8_t *output);

/* ts_flip_sign_8bit: the QUANTIZE at a legacy uint8 model's edge, uint8 <-> int8 of one scale and
 * zero points 128 apart, which is exactly each byte xor 0x80 (TFLite's Requantize with the
 * multiplier of 1 gives q - zi + zo). Four bytes a word, then the rest; each word (byte) written
 * after it is read, so the output may start at the input or below it (the elementwise order). */
typedef struct {
    int32_t count;
} ts_flip_sign_8bit_params;

int ts_flip_sign_8bit(const ts_flip_sign_8bit_params *p, const void *input, void *output);
/* Output rows [row, row + count) of one batch, as ts_resize_bilinear_s8_rows (a streamed stage's
 * resize head). */
int ts_resize_bilinear_float_s8_rows(const ts_resize_bilinear_float_s8_params *p, const int8_t *input,
                                     int32_t row, int32_t count, int8_t *output);

/* ---- Streamed pairs (tinysched/memory/stream.py) -------------------------------------------------------
 * A windowed producer (CONV_2D, DEPTHWISE_CONV_2D, AVERAGE/MAX_POOL_2D) and its only consumer (one
 * of those, reading the producer's output as its first input, or ADD/SUB/MUL on equal shapes) run as
 * one loop over the consumer's output rows r = 0, 1, ...: the rows [lo, hi) of the streamed tensor T
 * that row r reads are made present in a window (rows below lo dropped and the rest moved down,
 * `ts_window_slide`; rows [next, hi) computed by one producer call on those rows), then the consumer
 * computes row r alone. Both are the kernels above called on row ranges, with the arithmetic
 * unchanged: `ts_rows_at` narrows a copy of a windowed kernel's parameters (in_h, out_h, pad_top)
 * so that output row 0 of the call is row `first` of the whole and the input it is given starts at
 * a later row; the elementwise consumer gets dims[3] (the rows of [1, H, W, C]) = 1 and its operands'
 * row pointers.
 * A chain (expand -> depthwise -> project) runs the same way with a window per inner tensor: a row
 * of one is computed, one row per call, when the next operator first needs it, and only an operator
 * reading whole tensors alone computes several rows per call.
 * A stage (a residual block: conv -> conv -> ADD with the block input on the skip path, perhaps a
 * 1x1 stride-2 projection there) is the same loop over a small DAG: a tensor read by two members
 * keeps its window from the lowest row either still reads (`ts_row_low` of each reader's next
 * output row) to the highest asked for, so the skip path holds the rows the ADD still needs while
 * the main path runs ahead; each row is computed once, when first needed (no MACs are added), and
 * dropped when its last reader has passed it. tinysched/memory/stream.py `row_schedule` is the
 * loop's twin that sizes the windows.
 * A stage may end in a row-summing sink, a global AVERAGE_POOL_2D or a FULLY_CONNECTED reading the
 * flattened map: the loop then runs over the sink's input rows, each added into the sink's int32
 * sums as it arrives (ts_avg_pool2d_s8_rows: per channel; ts_fully_connected_s8_rows: per output
 * unit), its output written after the last. A 1x1 CONV_2D member on rows of 2, 3 or 5 pixels runs ts_conv2d_s8_staged_checked on its
 * one row (in_h = out_h = 1), its scratch after the sums; another 1x1 member with the generator's
 * pixel table (on DSP cores) runs ts_conv2d_s8_pixels_checked (strided: ts_conv2d_s8_pixel_rows_checked) on the rows of each call;
 * a 1x1 member at stride 1 on rows one pixel wide (in_c a multiple of 4, on DSP cores) runs
 * ts_conv2d_s8_pixel_widened (its pixel widened once on the stack, no scratch), and a member whose
 * rows are 6 a + 1 pixels wide (in_c a multiple of 4) ts_conv2d_s8_strip_lone (the last pixel alone). A PAD member runs ts_pad_s8 on the rows
 * of a call, its rows axis (dims[3]: out_dims, in_dims, pad_before) set from the input rows present.
 * A RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR heads a stage only (it reads its input whole): its
 * rows [next, hi) come from one ts_resize_*_rows call, output row y reading the input rows its
 * source-coordinate tables name (tinysched/model/resize.py gives the planner the same rows). An
 * ARG_MAX / ARG_MIN over the channels ends a stage: ts_arg_minmax_s8 on one row per call (outer =
 * the row's pixels), its int32 / int64 output row r written from input row r.
 * A chain may be headed by the model's input (tinysched --stream-input): its rows [next, hi) then
 * come from the application's read_rows callback (ts_model.h, ts_read_rows_fn) into the input's
 * window, rows ascending, each once (rows no output reads are asked for and dropped), and the input
 * is never whole.
 * A stage may run over column tiles of its sink's output (tinysched/memory/stream.py column_tiles):
 * the loop above runs once per tile with every window emptied first, each member's parameters a
 * copy with in_w, out_w and pad_left narrowed to the tile's columns (its window holds the columns
 * [lo, hi) of the whole tensor, so pad_left = the whole's pad_left + lo - stride_w times its first
 * output column; the kernel clips at in_w exactly where the whole tensor ends or where no window of
 * the tile reaches), the halo columns computed again by the next tile; the sink writes each output
 * row's tile columns (one row per call, so contiguous). A 1x1 head reading a whole input is called
 * one row at a time at its tile's first byte of that row. Headed by the input, the stage asks
 * read_rows for every row once per tile, one row per call, each whole into the window's room for
 * one row after its tile rows, then moves the tile's columns down (memmove). Arithmetic: the
 * kernels', unchanged. Read/write order: each tile writes every output row again, so the output
 * shares no byte with any input the stage reads.
 * A CONV_2D member whose output row fills a block of six pixels runs ts_conv2d_s8_strip (the wide
 * path, a row's short end in quad blocks; quad blocks where a six-pixel block does not fit; else the
 * pair path with its fields in the strip) with its strip in the bytes iteration r
 * (of the sink's rows) may use: the planned strip tensor of the
 * stage (a gap of the arena at its step), or the stage's own output past row r below the lowest row
 * of any outer input that an iteration from r on reads (an outer input overlaps the output only
 * where it dies there), or, for a member called in iteration r after every reader of some streamed
 * tensors has made its last call, the windows of those tensors (never slid, filled or read again:
 * the member's own table), whichever is largest (tinysched/codegen/lower_stream.py `output_room`,
 * `unread_room`, one (offset, bytes) pair per row); those bytes are written again before anything
 * reads them, or never read again, so the order below is unchanged. Its ts_conv2d_s8 checks (ts_conv2d_s8_checks) are made once before the loop.
 * Read/write order: consumer row r is written after the producer has read the input rows every T
 * row below hi(r) needs (hi composed down a chain) and before it reads any row from hi(r)'s window
 * top on; the consumer's other operand is read row by row as its output is written
 * (tinysched/memory/overlap.py `_streamed`, tinysched/memory/stream.py `chain_shift`). */

/* Point a windowed kernel's row fields at output rows [first, first + count): the input is held
 * from row `base` on (`avail` rows of `row_bytes`) at `buf`, and output row `first` reads from input
 * row `top` = first * stride_h - pad_top (the whole operator's). Returns the pointer to pass. */
static inline const int8_t *ts_rows_at(const int8_t *buf, int32_t base, int32_t avail, size_t row_bytes,
                                       int32_t top, int32_t count, int32_t *in_h, int32_t *out_h,
                                       int32_t *pad_top)
{
    const int32_t skip = top > base ? top - base : 0;
    *in_h = avail - skip;
    *out_h = count;
    *pad_top = base + skip - top;
    return buf + (size_t)skip * row_bytes;
}

/* `p`, a copy of windowed parameters `whole`, set to compute output rows [first, first + count). */
#define TS_ROWS(p, whole, buf, base, avail, row_bytes, first, count)                                         \
    ts_rows_at((buf), (base), (avail), (row_bytes), (first) * (whole).stride_h - (whole).pad_top, (count), \
               &(p).in_h, &(p).out_h, &(p).pad_top)

/* The lowest row of a tensor that a reader (stride, pad_top over it) still reads when its next
 * output row is `row` of `out_h`: `height` (nothing) once it has written them all. */
static inline int32_t ts_row_low(int32_t row, int32_t out_h, int32_t stride, int32_t pad_top, int32_t height)
{
    const int32_t top = row * stride - pad_top;
    return row >= out_h ? height : top > 0 ? top : 0;
}

/* The smaller of two rows (the lowest row any of a tensor's readers still reads). */
static inline int32_t ts_rows_min(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* n bytes from src down to dst (dst <= src; they may overlap): rows kept when a window slides.
 * With both pointers and n word-aligned on Armv7-M / Armv8-M Mainline, 32 bytes per LDM/STM pair
 * (each block read before it is written, and dst never passes src); newlib's memmove moves 16 bytes
 * per 12 instructions. The rest by memmove. */
static inline void ts_move_down(int8_t *dst, const int8_t *src, size_t n)
{
#if (defined(__GNUC__) || defined(__clang__)) && defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB == 2
    if ((((uintptr_t)dst | (uintptr_t)src | n) & 3u) == 0) {
        const int8_t *const end = src + (n & ~(size_t)31);
        while (src != end) {
            __asm__ volatile("ldm     %[s]!, {r3, r4, r5, r6, r8, r10, r11, r12}\n\t"
                             "stm     %[d]!, {r3, r4, r5, r6, r8, r10, r11, r12}"
                             : [s] "+r"(src), [d] "+r"(dst)
                             :
                             : "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "memory");
        }
        n &= 31;
    }
#endif
    if (n > 0) {
        memmove(dst, src, n);
    }
}

/* Drop the rows below `lo` from a window of `rows` rows holding rows [*first, *next) (at most
 * `rows` of them): the rows kept move down to its start (ts_move_down: they may overlap). A window of
 * one row keeps nothing when it slides (lo > first, so lo >= next), and the code says so: without
 * `rows > 1` the compiler, inlining a one-row window that ends the arena, sees the move of a row
 * from past the window's only one and refuses it (-Warray-bounds; the path never runs). A move in a
 * window of two rows or more reads at least two rows of it, which it has. */
static inline void ts_window_slide(int8_t *window, size_t row_bytes, int32_t rows, int32_t *first, int32_t *next,
                                   int32_t lo)
{
    if (lo <= *first) {
        return;
    }
    if (rows > 1 && *next > lo) {
        ts_move_down(window, window + (size_t)(lo - *first) * row_bytes, (size_t)(*next - lo) * row_bytes);
    } else {
        *next = lo;
    }
    *first = lo;
}

#ifdef __cplusplus
}
#endif

#endif /* TS_KERNELS_H */
