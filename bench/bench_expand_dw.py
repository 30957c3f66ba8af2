"""ts_expand_dw_s8's instructions on the emulated Cortex-M7 (QEMU mps2-an500, -icount), per group
size, against the whole ts_conv2d_s8 then the whole ts_depthwise_conv2d_s8 of the same layers: two
shapes (mcunet_vww_int8's 1x1 40x40x8 -> 48 into a 3x3 stride-2 depthwise, called as a streamed
stage calls it, one output row of 3 input rows at a time, by_rows 1; a 1x1 20x20x16 -> 48 into a 7x7
stride-2 depthwise, one call, by_rows 0), each output checked against the unfused kernels' bytes. The
unfused layers twice: plain ts_conv2d_s8 + ts_depthwise_conv2d_s8, and as the generator emits them
(the 1x1 with its pixel table, ts_conv2d_s8_pixels; the depthwise with its blocks where filter_w <= 3).

    PYTHONPATH=. python bench/bench_expand_dw.py [--kernels DIR]   (DIR: a tree with firmware/, to compare)

The count is SysTick under -icount shift=6 (its interrupt counts the wraps), calibrated on a loop of
known length, so a figure is instructions within about a hundred.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import bare_metal  # bench/: the bare-metal start and QEMU run

REPO = Path(__file__).resolve().parents[1]
FLAGS = ["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16", "-mthumb", "-O2", "-std=c99"]
SHAPES = ("1x1 40x40x8->48, 3x3/2 dw, by_rows 1 x 20 rows", "1x1 20x20x16->48, 7x7/2 dw, by_rows 0")

BENCH = r"""
#include <stdio.h>
#include <string.h>
#include "ts_kernels.h"
#include "ts_simd.h"
#ifndef EXP_ACT_MAX
#define EXP_ACT_MAX 127
#endif
extern volatile uint32_t wraps;
#define CSR (*(volatile uint32_t *)0xE000E010u)
#define RVR (*(volatile uint32_t *)0xE000E014u)
#define CVR (*(volatile uint32_t *)0xE000E018u)
static void t_start(void) { CSR = 0; RVR = 0xFFFFFFu; CVR = 0; wraps = 0; CSR = 7; }
static uint64_t t_stop(void)
{
    uint32_t v = CVR, w = wraps;
    CSR = 0;
    return (uint64_t)w * 0x1000000u + (0xFFFFFFu - v);
}
static uint32_t rng = 12345;
static uint32_t nx(void) { rng = rng * 1664525u + 1013904223u; return rng ^ (rng >> 16); }
static int32_t rr(int32_t lo, int32_t hi) { return lo + (int32_t)(nx() % (uint32_t)(hi - lo + 1)); }
static void fill(int8_t *a, size_t n) { size_t i; for (i = 0; i < n; ++i) a[i] = (int8_t)rr(-128, 127); }

/* shapes */
typedef struct { int32_t cin, c, h, w, fh, fw, s, pt, pl, oh, ow, by_rows; } shape;
static const shape SH[2] = {
    {8, 48, 40, 40, 3, 3, 2, 0, 0, 20, 20, 1},
    {16, 48, 20, 20, 7, 7, 2, 2, 2, 10, 10, 0},
};
static int8_t input[40 * 40 * 16], mid[40 * 40 * 48], want[40 * 40 * 48], got[40 * 40 * 48];
static int8_t ef[48 * 16], df[49 * 48], dg[49 * 48], scratch[16384];
static int32_t em[48], es[48], dm[48], ds[48], eb[48], db[48];
static double ipt; /* instructions per tick */

static uint64_t spin(uint32_t n)
{
    uint64_t t;
    t_start();
    __asm volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n));
    t = t_stop();
    return t;
}

int main(int argc, char **argv)
{
    static const int32_t groups[] = {1, 2, 4, 8, 16};
    int si, gi;
    (void)argc; (void)argv;
    {
        uint64_t a = spin(1000000), b = spin(3000000);
        ipt = 4000000.0 / (double)(b - a);
        printf("calib: %.4f instr/tick\n", ipt);
    }
    for (si = 0; si < 2; ++si) {
        const shape *s = &SH[si];
        ts_conv2d_s8_params ep;
        ts_depthwise_conv2d_s8_params dp;
        ts_expand_dw_s8_params xp;
        int32_t i;
        uint64_t t;
        fill(input, (size_t)s->h * s->w * s->cin);
        fill(ef, (size_t)s->c * s->cin);
        fill(df, (size_t)s->fh * s->fw * s->c);
        for (i = 0; i < s->c; ++i) {
            em[i] = (int32_t)(0x40000000u + (nx() & 0x3fffffffu));
            dm[i] = (int32_t)(0x40000000u + (nx() & 0x3fffffffu));
            es[i] = rr(-10, -7);
            ds[i] = rr(-9, -6);
            eb[i] = rr(-6000, 6000);
            db[i] = rr(-6000, 6000);
        }
        memset(&ep, 0, sizeof ep);
        ep.batches = 1; ep.in_h = ep.out_h = s->h; ep.in_w = ep.out_w = s->w; ep.in_c = s->cin; ep.out_c = s->c;
        ep.filter_h = ep.filter_w = 1; ep.stride_h = ep.stride_w = ep.dilation_h = ep.dilation_w = 1;
        ep.input_offset = 3; ep.output_offset = -128; ep.act_min = -128; ep.act_max = EXP_ACT_MAX;
        ep.multiplier = em; ep.shift = es;
        memset(&dp, 0, sizeof dp);
        dp.batches = 1; dp.in_h = s->h; dp.in_w = s->w; dp.in_c = dp.out_c = s->c; dp.out_h = s->oh; dp.out_w = s->ow;
        dp.depth_multiplier = 1; dp.filter_h = s->fh; dp.filter_w = s->fw; dp.stride_h = dp.stride_w = s->s;
        dp.dilation_h = dp.dilation_w = 1; dp.pad_top = s->pt; dp.pad_left = s->pl;
        dp.input_offset = 128; dp.output_offset = 5; dp.act_min = -128; dp.act_max = 127;
        dp.multiplier = dm; dp.shift = ds;
        t_start();
        ts_conv2d_s8(&ep, input, ef, eb, mid);
        t = t_stop();
        printf("shape %d ref conv %.0f\n", si, (double)t * ipt);
        t_start();
        ts_depthwise_conv2d_s8(&dp, mid, df, db, want);
        t = t_stop();
        printf("shape %d ref dw %.0f\n", si, (double)t * ipt);
        {
            /* the unfused layers as the generator would emit them: the 1x1 with its pixel table
             * (ts_conv2d_s8_pixels), the depthwise with its blocks where filter_w <= 3 */
            static int32_t table[48 * 12], blocks[12 * 38];
            static int8_t mid2[40 * 40 * 48], got2[40 * 40 * 48];
            ts_depthwise_conv2d_s8_params dq = dp;
            int32_t o, k, j, tt, *q = table;
            for (o = 0; o < s->c; ++o) {
                const int8_t *f = ef + o * s->cin;
                int32_t sum = 0;
                ts_rq r;
                ts_rq_prepare(em[o], es[o], ep.output_offset, &r);
                for (k = 0; k < s->cin; ++k) sum += f[k];
                *q++ = (int32_t)((uint32_t)(eb[o] + ep.input_offset * sum) << 1);
                for (k = 0; k < s->cin; k += 4) {
                    *q++ = (int32_t)((((uint32_t)f[k] << 1) & 0xFFFFu) | ((uint32_t)f[k + 2] << 17));
                    *q++ = (int32_t)((((uint32_t)f[k + 1] << 1) & 0xFFFFu) | ((uint32_t)f[k + 3] << 17));
                }
                *q++ = r.m;
                *q++ = r.base;
                *q++ = r.rr | (o == s->c - 1 ? 512 : 0);
            }
            t_start();
            ts_conv2d_s8_pixels(&ep, input, ef, eb, mid2, table);
            t = t_stop();
            printf("shape %d tab conv %.0f %s\n", si, (double)t * ipt,
                   memcmp(mid, mid2, (size_t)s->h * s->w * s->c) ? "MISMATCH" : "ok");
            if (s->fw <= 3) {
                q = blocks;
                for (o = 0; o < s->c; o += 4) {
                    for (j = 0; j < 4; ++j) *q++ = db[o + j];
                    for (j = 0; j < 4; ++j) {
                        ts_rq r;
                        ts_rq_prepare(dm[o + j], ds[o + j], dp.output_offset, &r);
                        *q++ = r.m; *q++ = r.l1; *q++ = r.base; *q++ = r.rr;
                    }
                    for (tt = 0; tt < s->fh * s->fw; ++tt) {
                        const int8_t *f = df + tt * s->c + o;
                        *q++ = (int32_t)(((uint32_t)f[0] & 0xFFFFu) | ((uint32_t)f[2] << 16));
                        *q++ = (int32_t)(((uint32_t)f[1] & 0xFFFFu) | ((uint32_t)f[3] << 16));
                    }
                }
                dq.blocks = blocks;
            }
            t_start();
            ts_depthwise_conv2d_s8(&dq, mid, df, db, got2);
            t = t_stop();
            printf("shape %d tab dw %.0f %s\n", si, (double)t * ipt,
                   memcmp(want, got2, (size_t)s->oh * s->ow * s->c) ? "MISMATCH" : "ok");
        }
        for (gi = 0; gi < 5; ++gi) {
            const int32_t group = groups[gi];
            int32_t c0, tt, r;
            for (c0 = 0; c0 < s->c; c0 += group) {
                const int32_t w = s->c - c0 < group ? s->c - c0 : group;
                for (tt = 0; tt < s->fh * s->fw; ++tt)
                    for (i = 0; i < w; ++i) dg[s->fh * s->fw * c0 + tt * w + i] = df[tt * s->c + c0 + i];
            }
            memset(&xp, 0, sizeof xp);
            xp.stride_h = s->s; xp.expand = ep; xp.depthwise = dp; xp.expand_filter = ef; xp.expand_bias = eb;
            xp.depthwise_filter = dg; xp.depthwise_bias = db; xp.group = group; xp.by_rows = s->by_rows;
            memset(got, 0, sizeof got);
            if (s->by_rows) {
                const size_t row_bytes = (size_t)s->ow * s->c;
                uint64_t tot = 0;
                for (r = 0; r < s->oh; ++r) {
                    const int32_t top = r * s->s - s->pt, first = top < 0 ? 0 : top;
                    int rc;
                    xp.in_h = s->h - first < s->fh ? s->h - first : s->fh;
                    xp.out_h = 1;
                    xp.pad_top = top < 0 ? -top : 0;
                    t_start();
                    rc = ts_expand_dw_s8(&xp, input + (size_t)first * s->w * s->cin, got + r * row_bytes, scratch);
                    tot += t_stop();
                    if (rc) printf("rc %d\n", rc);
                }
                t = tot;
            } else {
                xp.in_h = s->h; xp.out_h = s->oh; xp.pad_top = s->pt;
                t_start();
                ts_expand_dw_s8(&xp, input, got, scratch);
                t = t_stop();
            }
            printf("shape %d group %2d fused %.0f %s\n", si, (int)group, (double)t * ipt,
                   memcmp(got, want, (size_t)s->oh * s->ow * s->c) ? "MISMATCH" : "ok");
        }
    }
    return 0;
}
"""


def run(root: Path) -> str:
    kernels, include = root / "firmware" / "kernels", root / "firmware" / "include"
    with tempfile.TemporaryDirectory(prefix="bench-expand-dw-") as tmp:
        t = Path(tmp)
        (t / "bench.c").write_text(BENCH)
        elf = t / "bench.elf"
        sources = [kernels / f"{k}.c" for k in ("ts_expand_dw_s8", "ts_conv2d_s8", "ts_depthwise_conv2d_s8")]
        flags = [*FLAGS, f"-I{include}", f"-I{kernels}"]
        built = bare_metal.build([t / "bench.c", *sources], flags, 0x00400000, elf)
        if built.returncode != 0:
            raise SystemExit(built.stderr)
        ran = bare_metal.run("mps2-an500", elf, icount=True)
        if ran.returncode != 0:
            raise SystemExit(ran.stdout[-4000:] + ran.stderr[-4000:])
        return ran.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kernels", type=Path, default=REPO, help="a tree with firmware/ (default: this one)"
    )
    out = run(parser.parse_args().kernels)
    failed = 0
    ref: dict[int, list[int]] = {}
    tab: dict[int, list[int]] = {}
    rows: dict[int, list[tuple[int, int, str]]] = {}
    for line in out.splitlines():
        if m := re.match(r"shape (\d) ref \w+ (\d+)", line):
            ref.setdefault(int(m[1]), []).append(int(m[2]))
        elif m := re.match(r"shape (\d) tab \w+ (\d+) (\w+)", line):
            tab.setdefault(int(m[1]), []).append(int(m[2]))
            failed += m[3] != "ok"
        elif m := re.match(r"shape (\d) group +(\d+) fused (\d+) (\w+)", line):
            rows.setdefault(int(m[1]), []).append((int(m[2]), int(m[3]), m[4]))
    for s, name in enumerate(SHAPES):
        conv, dw = ref[s]
        tconv, tdw = tab[s]
        print(
            f"{name}: unfused {conv + dw:,} (1x1 {conv:,} + depthwise {dw:,}); with the generator's tables "
            f"{tconv + tdw:,} (pixel table {tconv:,} + {'blocks' if s == 0 else 'depthwise'} {tdw:,})"
        )
        print(
            "| group | instructions | vs unfused | vs tables | bytes |\n| ---: | ---: | ---: | ---: | --- |"
        )
        for group, count, ok in rows[s]:
            failed += ok != "ok"
            print(
                f"| {group} | {count:,} | {count / (conv + dw):.2f}x | {count / (tconv + tdw):.2f}x | "
                f"{'same' if ok == 'ok' else 'DIFFER'} |"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
