"""ts_expand_dw_s8, bit for bit: a 1x1 expansion and its depthwise by channel groups through a small
scratch give exactly the bytes of ts_conv2d_s8 on the whole 1x1 then ts_depthwise_conv2d_s8 on the
whole depthwise.

A C harness (host gcc, ASan and UBSan) runs every case of a table the test writes: pseudo-random
data from the case's seed, the whole call and the output in pieces of rows as a streamed stage
makes them (TS_ROWS: input from the first row read, pad_top relative to it), in both modes
(by_rows 1 and 0), and its refusals (group 0, depth multiplier 2, a called kernel's), the scratch exactly the documented size with guard bytes after it, the output
with guard bytes around it. The same harness runs on QEMU (Cortex-M4 and M7: the DSP paths of the
two kernels it calls; Cortex-M55: their Helium paths), bare metal with semihosting. The kernel file
also compiles warning-free for the Cortex-M cores.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import pytest
from tiers import needs_gcc, needs_qemu, require

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import bare_metal  # noqa: E402

KERNELS = REPO / "firmware" / "kernels"
INCLUDE = REPO / "firmware" / "include"
SOURCES = [KERNELS / f"{k}.c" for k in ("ts_expand_dw_s8", "ts_conv2d_s8", "ts_depthwise_conv2d_s8")]
WARNINGS = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_kernels.h"

#define GUARD 32
#define GUARD_BYTE 0x5a

static uint32_t rng;
static uint32_t next_u32(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng ^ (rng >> 16);
}
static int32_t in_range(int32_t lo, int32_t hi) /* [lo, hi] */
{
    return lo + (int32_t)(next_u32() % (uint32_t)(hi - lo + 1));
}
static void fill(int8_t *a, size_t n)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        a[i] = (int8_t)in_range(-128, 127);
    }
}
/* n bytes plus GUARD guard bytes before and after; returns the first of the n */
static int8_t *guarded(size_t n)
{
    int8_t *a = (int8_t *)malloc(n + 2 * GUARD);
    if (a == NULL) {
        exit(2);
    }
    memset(a, GUARD_BYTE, n + 2 * GUARD);
    return a + GUARD;
}
static int intact(const int8_t *a, size_t n)
{
    size_t i;
    for (i = 0; i < GUARD; ++i) {
        if ((uint8_t)a[-1 - (long)i] != GUARD_BYTE || (uint8_t)a[n + i] != GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}
static void release(int8_t *a)
{
    free(a - GUARD);
}

int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "r");
    long k[18];
    int n_case = 0, failed = 0;
    (void)argc;
    while (fscanf(f, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", &k[0], &k[1], &k[2],
                  &k[3], &k[4], &k[5], &k[6], &k[7], &k[8], &k[9], &k[10], &k[11], &k[12], &k[13], &k[14], &k[15],
                  &k[16], &k[17]) == 18) {
        const int32_t cin = (int32_t)k[0], c = (int32_t)k[1], group = (int32_t)k[2], fh = (int32_t)k[3];
        const int32_t fw = (int32_t)k[4], sh = (int32_t)k[5], sw = (int32_t)k[6], dil = (int32_t)k[7];
        const int32_t pad_top = (int32_t)k[8], pad_left = (int32_t)k[9], in_h = (int32_t)k[10];
        const int32_t in_w = (int32_t)k[11], out_h = (int32_t)k[12], out_w = (int32_t)k[13];
        const int32_t act_min = (int32_t)k[14], act_max = (int32_t)k[15], with_bias = (int32_t)k[16];
        const int32_t span = (fh - 1) * dil + 1;
        const size_t in_bytes = (size_t)in_h * in_w * cin, mid_bytes = (size_t)in_h * in_w * c;
        const size_t out_bytes = (size_t)out_h * out_w * c, row_bytes = (size_t)out_w * c;
        const size_t scratch_bytes = (size_t)(span < in_h ? span : in_h) * in_w * group + (size_t)out_w * group;
        int8_t *input = (int8_t *)malloc(in_bytes), *mid = (int8_t *)malloc(mid_bytes);
        int8_t *want = (int8_t *)malloc(out_bytes), *ef = (int8_t *)malloc((size_t)c * cin);
        int8_t *df = (int8_t *)malloc((size_t)fh * fw * c), *dg = (int8_t *)malloc((size_t)fh * fw * c);
        int32_t *em = (int32_t *)malloc(sizeof(int32_t) * c), *es = (int32_t *)malloc(sizeof(int32_t) * c);
        int32_t *dm = (int32_t *)malloc(sizeof(int32_t) * c), *ds = (int32_t *)malloc(sizeof(int32_t) * c);
        int32_t *eb = (int32_t *)malloc(sizeof(int32_t) * c), *db = (int32_t *)malloc(sizeof(int32_t) * c);
        ts_conv2d_s8_params ep;
        ts_depthwise_conv2d_s8_params dp;
        ts_expand_dw_s8_params xp;
        int32_t i, c0, t, by_rows;
        rng = (uint32_t)k[17];
        ++n_case;
        fill(input, in_bytes);
        fill(ef, (size_t)c * cin);
        fill(df, (size_t)fh * fw * c);
        for (i = 0; i < c; ++i) {
            em[i] = (int32_t)(0x40000000u + (next_u32() & 0x3fffffffu));
            dm[i] = (int32_t)(0x40000000u + (next_u32() & 0x3fffffffu));
            es[i] = in_range(-10, 0);
            ds[i] = in_range(-10, 0);
            eb[i] = in_range(-6000, 6000);
            db[i] = in_range(-6000, 6000);
        }
        /* the depthwise filter grouped: group g's [fh][fw][w] after the groups before it */
        for (c0 = 0; c0 < c; c0 += group) {
            const int32_t w = c - c0 < group ? c - c0 : group;
            for (t = 0; t < fh * fw; ++t) {
                for (i = 0; i < w; ++i) {
                    dg[fh * fw * c0 + t * w + i] = df[t * c + c0 + i];
                }
            }
        }
        memset(&ep, 0, sizeof ep);
        ep.batches = 1;
        ep.in_h = ep.out_h = in_h;
        ep.in_w = ep.out_w = in_w;
        ep.in_c = cin;
        ep.out_c = c;
        ep.filter_h = ep.filter_w = 1;
        ep.stride_h = ep.stride_w = ep.dilation_h = ep.dilation_w = 1;
        ep.input_offset = in_range(-127, 128);
        ep.output_offset = in_range(-128, 127);
        ep.act_min = -128;
        ep.act_max = 127;
        if (next_u32() % 2u) {
            ep.act_min = in_range(-128, -20);
            ep.act_max = in_range(20, 127);
        }
        ep.multiplier = em;
        ep.shift = es;
        memset(&dp, 0, sizeof dp);
        dp.batches = 1;
        dp.in_h = in_h;
        dp.in_w = in_w;
        dp.in_c = dp.out_c = c;
        dp.out_h = out_h;
        dp.out_w = out_w;
        dp.depth_multiplier = 1;
        dp.filter_h = fh;
        dp.filter_w = fw;
        dp.stride_h = sh;
        dp.stride_w = sw;
        dp.dilation_h = dil;
        dp.dilation_w = 1;
        dp.pad_top = pad_top;
        dp.pad_left = pad_left;
        dp.input_offset = -ep.output_offset;
        if (dp.input_offset == 0) {
            dp.input_offset = 5;
        }
        dp.output_offset = in_range(-128, 127);
        dp.act_min = act_min;
        dp.act_max = act_max;
        dp.multiplier = dm;
        dp.shift = ds;
        if (ts_conv2d_s8(&ep, input, ef, with_bias ? eb : NULL, mid) != TS_OK ||
            ts_depthwise_conv2d_s8(&dp, mid, df, with_bias ? db : NULL, want) != TS_OK) {
            printf("case %d: the reference kernels refused\n", n_case);
            return 1;
        }
        memset(&xp, 0, sizeof xp);
        xp.stride_h = sh;
        xp.expand = ep;
        xp.depthwise = dp;
        xp.expand_filter = ef;
        xp.expand_bias = with_bias ? eb : NULL;
        xp.depthwise_filter = dg;
        xp.depthwise_bias = with_bias ? db : NULL;
        xp.group = group;
        for (by_rows = 0; by_rows <= 1; ++by_rows) {
            int8_t *got = guarded(out_bytes), *scratch = guarded(scratch_bytes);
            int32_t r = 0, n, pieces = 0;
            xp.by_rows = by_rows;
            /* the whole call */
            xp.in_h = in_h;
            xp.out_h = out_h;
            xp.pad_top = pad_top;
            if (ts_expand_dw_s8(&xp, input, got, scratch) != TS_OK || memcmp(got, want, out_bytes) != 0 ||
                !intact(got, out_bytes) || !intact(scratch, scratch_bytes)) {
                printf("case %d by_rows %d: the whole call differs\n", n_case, (int)by_rows);
                ++failed;
            }
            /* the output in pieces of rows, as TS_ROWS sets a member's */
            memset(got, 0, out_bytes);
            for (r = 0; r < out_h; r += n) {
                const int32_t top = r * sh - pad_top, first = top < 0 ? 0 : top;
                int8_t *piece;
                n = in_range(1, 3);
                if (n > out_h - r) {
                    n = out_h - r;
                }
                piece = guarded((size_t)n * row_bytes);
                xp.in_h = in_h - first > 0 ? in_h - first : 0;
                xp.out_h = n;
                xp.pad_top = top < 0 ? -top : 0;
                if (ts_expand_dw_s8(&xp, input + (size_t)first * in_w * cin, piece, scratch) != TS_OK ||
                    !intact(piece, (size_t)n * row_bytes) || !intact(scratch, scratch_bytes)) {
                    printf("case %d by_rows %d: rows %d..%d failed or wrote outside\n", n_case, (int)by_rows,
                           (int)r, (int)(r + n));
                    ++failed;
                }
                memcpy(got + (size_t)r * row_bytes, piece, (size_t)n * row_bytes);
                release(piece);
                ++pieces;
            }
            if (memcmp(got, want, out_bytes) != 0) {
                printf("case %d by_rows %d: the rows in %d pieces differ\n", n_case, (int)by_rows, (int)pieces);
                ++failed;
            }
            release(got);
            release(scratch);
        }
        if (n_case == 1) {
            /* refusals: its own (group, depth multiplier) and a called kernel's, propagated */
            ts_expand_dw_s8_params bad = xp;
            int8_t *got = guarded(out_bytes), *scratch = guarded(scratch_bytes);
            bad.group = 0;
            failed += ts_expand_dw_s8(&bad, input, got, scratch) != TS_ERR_PARAMS;
            bad = xp;
            bad.depthwise.depth_multiplier = 2;
            bad.depthwise.out_c = 2 * c;
            failed += ts_expand_dw_s8(&bad, input, got, scratch) == TS_OK;
            bad = xp;
            bad.depthwise.dilation_w = 0;
            failed += ts_expand_dw_s8(&bad, input, got, scratch) != TS_ERR_PARAMS;
            if (failed) {
                printf("case 1: a refusal missing\n");
            }
            release(got);
            release(scratch);
        }
        free(input);
        free(mid);
        free(want);
        free(ef);
        free(df);
        free(dg);
        free(em);
        free(es);
        free(dm);
        free(ds);
        free(eb);
        free(db);
    }
    fclose(f);
    printf("cases %d failed %d\n", n_case, failed);
    return failed != 0;
}
"""


def _cases() -> list[tuple[int, ...]]:
    """Every Cin, C, group, filter and stride together; the rest drawn from a fixed seed."""
    rnd = random.Random(20261207)
    cases = []
    for cin, c, group, f, stride in itertools.product(
        (3, 8, 16), (6, 16, 48), (1, 2, 3, 5, 8, None), (3, 5, 7), (1, 2)
    ):
        group = c if group is None else group
        dil = 2 if f == 3 and rnd.random() < 0.25 else 1
        span = (f - 1) * dil + 1
        fw = f if rnd.random() < 0.8 else rnd.choice((3, 5))
        pad_top, pad_bottom = rnd.randint(0, span // 2), rnd.randint(0, span // 2)
        pad_left, pad_right = rnd.randint(0, fw // 2), rnd.randint(0, fw // 2)
        in_h = rnd.randint(max(6, span - pad_top - pad_bottom), 20)
        in_w = rnd.randint(max(5, fw - pad_left - pad_right), 20)
        out_h = (in_h + pad_top + pad_bottom - span) // stride + 1
        out_w = (in_w + pad_left + pad_right - fw) // stride + 1
        act = (-128, 127) if rnd.random() < 0.5 else (rnd.randint(-128, -30), rnd.randint(30, 127))
        bias = int(rnd.random() < 0.7)
        cases.append((cin, c, group, f, fw, stride, stride, dil, pad_top, pad_left, in_h, in_w, out_h, out_w,
                      *act, bias, rnd.randrange(1, 2**31)))  # fmt: skip
    return cases


@needs_gcc
@pytest.mark.host
def test_expand_dw_equals_the_whole_1x1_then_the_whole_depthwise(tmp_path: Path) -> None:
    cases = _cases()
    assert len(cases) == 324 and {c[2] for c in cases} >= {1, 2, 3, 5, 6, 8, 16, 48}
    (tmp_path / "cases.txt").write_text("".join(" ".join(map(str, c)) + "\n" for c in cases))
    (tmp_path / "harness.c").write_text(HARNESS)
    exe = tmp_path / "harness"
    cmd = ["gcc", *WARNINGS, "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           f"-I{INCLUDE}", f"-I{KERNELS}", str(tmp_path / "harness.c"), *map(str, SOURCES), "-o", str(exe)]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0 and not built.stderr, built.stderr
    run = subprocess.run([str(exe), str(tmp_path / "cases.txt")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and not run.stderr, run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.splitlines()[-1] == f"cases {len(cases)} failed 0", run.stdout[-4000:]


CORES = {
    "m7": ["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"],
    "m4": ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
    "m33": ["-mcpu=cortex-m33"],
    "m55": ["-mcpu=cortex-m55", "-mfloat-abi=hard"],
    "m0plus": ["-mcpu=cortex-m0plus", "-mfloat-abi=soft"],
}


@pytest.mark.parametrize("core", sorted(CORES))
def test_expand_dw_compiles_warning_free_for_cortex_m(core: str, tmp_path: Path) -> None:
    require("qemu", ("arm-none-eabi-gcc",))
    for opt in ("-O0", "-Os", "-O2", "-O3"):
        cmd = ["arm-none-eabi-gcc", *CORES[core], "-mthumb", opt, *WARNINGS, f"-I{INCLUDE}", f"-I{KERNELS}",
               "-c", str(KERNELS / "ts_expand_dw_s8.c"), "-o", str(tmp_path / "ts_expand_dw_s8.o")]  # fmt: skip
        built = subprocess.run(cmd, capture_output=True, text=True)
        assert built.returncode == 0 and not built.stderr, f"{core} {opt}: {built.stderr}"


# QEMU machine, its code memory's top (the stack's start), the core's flags
QEMU_CORES = {
    "m4": ("mps2-an386", 0x00400000, ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]),
    "m7": ("mps2-an500", 0x00400000, ["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"]),
    "m55": ("mps3-an547", 0x00080000, ["-mcpu=cortex-m55", "-mfloat-abi=hard"]),  # ITCM, 512 KB
}


@needs_qemu
@pytest.mark.parametrize("core", sorted(QEMU_CORES))
def test_expand_dw_bit_exact_on_qemu(core: str, tmp_path: Path) -> None:
    machine, stack_top, flags = QEMU_CORES[core]
    cases = _cases()
    (tmp_path / "cases.txt").write_text("".join(" ".join(map(str, c)) + "\n" for c in cases))
    (tmp_path / "harness.c").write_text(HARNESS)
    elf = tmp_path / "harness.elf"
    flags = [*flags, "-mthumb", "-O2", "-std=c99", "-Wall", "-Wextra", f"-I{INCLUDE}", f"-I{KERNELS}"]
    built = bare_metal.build([tmp_path / "harness.c", *SOURCES], flags, stack_top, elf,
                             [f'CASES="{tmp_path / "cases.txt"}"'])  # fmt: skip
    assert built.returncode == 0, built.stderr
    run = bare_metal.run(machine, elf)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.splitlines()[-1] == f"cases {len(cases)} failed 0", run.stdout[-4000:]
