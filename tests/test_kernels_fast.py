"""The kernels' fast paths, bit for bit: portable C on the host, the DSP path on emulated Cortex-M.

Every model in `fast_path_models.FAST_PATH_MODELS` runs (a) through the host build under ASan and
UBSan, (b) on QEMU mps2-an500 (Cortex-M7: __ARM_FEATURE_DSP, so SXTAB16/SMLAD) and (c) on QEMU
mps3-an547 (Cortex-M55: __ARM_FEATURE_MVE, so the Helium paths of firmware/kernels/ts_mve.h), with
every output byte compared to TFLite's reference kernels. The rewritten fixed-point step (branch-free srdhm, the
non-saturating requantisation the fast paths use) is checked against the reference formulas in C.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from fast_path_models import FAST_PATH_MODELS
from helpers import generate_for_measure, host_verify, planned_c_text
from tiers import needs_gcc, require

from tinysched.codegen.lower_conv import (
    RQ_CONST,
    RQ_STEPS,
    acc_reach,
    own_loop_code,
    own_path,
    own_pixel_loop,
    pixel_table,
    rq_fields,
    rq_form,
)
from tinysched.codegen.quant import activation_range, mbqm, quantize_multiplier
from tinysched.device.runner import measure_sources
from tinysched.memory.variants import variant_of
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, plan

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "firmware" / "kernels"


def _model(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(FAST_PATH_MODELS[name]())
    return path


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("name", sorted(FAST_PATH_MODELS))
def test_fast_path_model_bit_exact_on_host(name: str, tmp_path: Path) -> None:
    result = host_verify(_model(tmp_path, name), n_inputs=4, seed=17, opt="-O1", sanitize=True)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == []
    assert result.outputs_match and result.inputs == 4


FIXEDPOINT_CHECK = r"""
#include <stdio.h>
#include "ts_fixedpoint.h"
#include "ts_simd.h"

/* The reference's srdhm, written as TFLite/gemmlowp write it. */
static int32_t ref_srdhm(int32_t a, int32_t b)
{
    int64_t ab, nudge;
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    ab = (int64_t)a * (int64_t)b;
    nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

static uint32_t state = 2463534242u;
static uint32_t next(void) { state ^= state << 13; state ^= state >> 17; state ^= state << 5; return state; }

int main(void)
{
    static const int32_t edges[] = {0, 1, -1, 2, -2, 3, INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MAX - 1,
                                    1 << 30, -(1 << 30), (1 << 30) + 1, -(1 << 30) - 1, 1 << 15, -(1 << 15),
                                    12345, -12345, 1073741823, -1073741823};
    const int n_edges = (int)(sizeof edges / sizeof edges[0]);
    long checked = 0, bad = 0, steps = 0, constants = 0, neither = 0;
    int i, j, s;
    for (i = 0; i < n_edges; ++i) {
        for (j = 0; j < n_edges; ++j) {
            bad += ts_srdhm(edges[i], edges[j]) != ref_srdhm(edges[i], edges[j]);
            ++checked;
        }
    }
    for (i = 0; i < 2000000; ++i) {
        /* products landing exactly on a half (ties) are the delicate case: make many of them. */
        int32_t a = (int32_t)next(), b = (int32_t)next();
        if (i % 4 == 1) b = (int32_t)(1u << (next() % 31));
        if (i % 4 == 2) a = (int32_t)(next() % 65536) - 32768;
        bad += ts_srdhm(a, b) != ref_srdhm(a, b);
        ++checked;
    }
    for (s = -31; s <= 31; ++s) {
        for (i = 0; i < 20000; ++i) {
            int32_t m = (int32_t)((1u << 30) | (next() >> 2));
            int32_t x = (int32_t)next();
            if (i % 3 == 0) x = (int32_t)(next() % 2000001) - 1000000;
            if (s > 0) x >>= s; /* keep x * 2^s in range, as the accumulator bound does */
            bad += ts_requantize_nonsat(x, m, s) != ts_requantize(x, m, s);
            bad += ts_requantize_nonsat(x, 0, s) != ts_requantize(x, 0, s);
            checked += 2;
        }
    }
    /* ts_rq (the DSP fast paths' requantisation) equals ts_requantize + out_off wherever ts_rq_ok
     * admits it: |x| * 2^(left + 1) < 2^31, -22 <= shift <= 29, multiplier >= 0. */
    for (s = -22; s <= 29; ++s) {
        const int left = s > 0 ? s : 0;
        const int32_t xmax = (int32_t)((((int64_t)1 << 31) >> (left + 1)) - 1);
        for (i = 0; i < 40000; ++i) {
            int32_t m = (int32_t)((1u << 30) | (next() >> 2));
            int32_t off = (int32_t)(next() % 256) - 128;
            int32_t x = (int32_t)(next() % ((uint32_t)xmax * 2u + 1u)) - xmax;
            ts_rq q;
            if (i % 5 == 1) x = ((int32_t)(next() % 4001) - 2000) % (xmax + 1);
            if (i % 7 == 2) m = 1 << 30;
            if (i % 11 == 3) m = 0;
            if (i % 13 == 4) x = (i & 1) ? xmax : -xmax;
            if (i % 17 == 5) x = -1;
            ts_rq_prepare(m, s, off, &q);
            bad += ts_rq_emulated(x, &q) != ts_requantize(x, m, s) + off;
            ++checked;
        }
    }
    /* Per channel forms (ts_rq_form): accumulators in [bias - reach, bias + reach]. A channel of
     * TS_RQ_STEPS equals the formula through ts_rq_prepare; one of TS_RQ_CONST (a pruned channel:
     * a tiny scale, a bias near 2^30) gives the formula's value everywhere in the range as the
     * constant compile-time tables hold (m 0, l1 1, base the value + out_off, rr 0). */
    for (i = 0; i < 60000; ++i) {
        const int32_t s2 = -(int32_t)(next() % 32), off = (int32_t)(next() % 256) - 128;
        const int64_t reach = (int64_t)(next() % (1u << (i % 3 ? 23 : 16)));
        int32_t m = (int32_t)((1u << 30) | (next() >> 2)), bias = (int32_t)(next() >> (1 + next() % 8)), j, form;
        ts_rq q;
        if (i & 1) bias = -bias;
        if (i % 5 == 0) m >>= next() % 24;
        form = ts_rq_form(m, s2, bias, reach);
        if (form == TS_RQ_STEPS) {
            ts_rq_prepare(m, s2, off, &q);
            ++steps;
        } else if (form == TS_RQ_CONST) {
            q.m = 0;
            q.l1 = 1;
            q.base = ts_requantize(bias, m, s2) + off;
            q.rr = 0;
            ++constants;
        } else {
            ++neither;
            continue;
        }
        for (j = 0; j < 24; ++j) {
            int32_t x = (int32_t)(bias + (int64_t)(next() % (2u * (uint32_t)reach + 1u)) - reach);
            if (j < 2) x = (int32_t)(j == 0 ? bias - reach : bias + reach);
            bad += ts_rq_emulated(x, &q) != ts_requantize(x, m, s2) + off;
            ++checked;
        }
    }
    printf("forms: steps %ld constant %ld neither %ld\n", steps, constants, neither);
    bad += steps < 1000 || constants < 1000 || neither < 1000;
    printf("checked %ld bad %ld\n", checked, bad);
    return bad != 0;
}
"""


@needs_gcc
@pytest.mark.host
def test_branch_free_requantisation_equals_the_reference_formula(tmp_path: Path) -> None:
    src = tmp_path / "check.c"
    src.write_text(FIXEDPOINT_CHECK)
    exe = tmp_path / "check"
    cmd = ["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
           "-fno-sanitize-recover=all", f"-I{KERNELS}", f"-I{REPO / 'firmware' / 'include'}", str(src),
           "-o", str(exe)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    last = out.stdout.splitlines()[-1].split()
    assert last[0] == "checked" and last[-1] == "0", out.stdout + out.stderr
    assert int(last[1]) > 5_000_000


@needs_gcc
@pytest.mark.host
def test_compile_time_rq_fields_agree_with_the_kernels_check(tmp_path: Path) -> None:
    """The code generator's rq_form/rq_fields (the tables the kernels read) and ts_simd.h's
    ts_rq_form decide every channel the same way, pruned channels (shift down to -31, a bias near
    2^30) included."""
    rng = random.Random(5)
    cases = []
    for i in range(3000):
        m = rng.randrange(1 << 30, 1 << 31) >> (rng.randrange(24) if i % 5 == 0 else 0)
        shift = rng.randrange(-31, 30) if i % 4 else rng.randrange(-31, -22)
        bias = rng.randrange(-(1 << 30) - 200, (1 << 30) + 200) >> rng.randrange(8)
        reach = acc_reach(rng.choice([9, 27, 64, 128, 256, 1152]), rng.choice([128, 0, -5, 37]))
        cases.append((m, shift, bias, reach))
    rows = ",\n".join(f"{{{m}, {sh}, {b}, {r}LL}}" for m, sh, b, r in cases)
    src = tmp_path / "forms.c"
    src.write_text(
        '#include <stdio.h>\n#include "ts_fixedpoint.h"\n#include "ts_simd.h"\n'
        f"static const struct {{ int32_t m, s, b; long long r; }} c[] = {{\n{rows}\n}};\n"
        "int main(void) { unsigned i; for (i = 0; i < sizeof c / sizeof c[0]; ++i) "
        'printf("%d\\n", ts_rq_form(c[i].m, c[i].s, c[i].b, c[i].r)); return 0; }\n'
    )
    exe = tmp_path / "forms"
    subprocess.run(["gcc", "-std=c99", "-O2", f"-I{KERNELS}", str(src), "-o", str(exe)], check=True)
    forms = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True).stdout.split()]
    assert forms == [rq_form(*c) for c in cases]
    assert {RQ_STEPS, RQ_CONST, 0} <= set(forms)
    for (m, shift, bias, reach), form in zip(cases, forms, strict=True):
        if form == RQ_CONST:  # the table's constant is the formula's value at both ends
            assert rq_fields(m, shift, 3, bias, reach) == (0, 1, mbqm(bias - reach, m, shift) + 3, 0)


def _conv_quantisation(graph, op):
    """(multipliers, shifts, output zero point, activation range) of a CONV_2D as the generator makes them."""
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    in_scale, out_scale = float(x.quantization.scale[0]), float(y.quantization.scale[0])
    out_zp = int(y.quantization.zero_point[0])
    scales = list(w.quantization.scale) * (w.shape[0] if len(w.quantization.scale) == 1 else 1)
    mults, shifts = zip(*(quantize_multiplier(in_scale * float(s) / out_scale) for s in scales), strict=True)
    act = activation_range(op.options.get("fused_activation_function", "NONE"), out_scale, out_zp)
    return list(mults), list(shifts), out_zp, act


def _pixel_tables(name: str) -> dict[str, list[int] | None]:
    """Each CONV_2D of fast-path model `name` (by output name) -> its pixel table or None."""
    graph = parse_model(FAST_PATH_MODELS[name]())
    tables = {}
    for op in (op for op in graph.operators if op.opcode == "CONV_2D"):
        mults, shifts, out_zp, act = _conv_quantisation(graph, op)
        tables[graph.tensors[op.outputs[0]].name] = pixel_table(graph, op, mults, shifts, out_zp, act)
    return tables


def test_pixel_table_gives_ts_rq_of_the_accumulator() -> None:
    """The pixel path's arithmetic (ts_kernels.h, CONV_2D "pixel in registers") over the generator's
    table, in Python: acc0 plus the SMLAD sums of the pre-shifted lanes with the raw int8 bytes (int32
    wrap), then SUB of the sign, SMMLAR, ASR by rr's low byte and SSAT give TFLite's outputs for
    random pixels, for every channel (constants included) of the fast-path models' tables; the last
    channel alone carries bit 9."""
    rng = random.Random(11)
    checked = 0
    for name in ("pixel_regs_k16", "pixel_regs_k8_k12", "pixel_regs_strided"):
        graph = parse_model(FAST_PATH_MODELS[name]())
        for op in graph.operators:
            mults, shifts, out_zp, act = _conv_quantisation(graph, op)
            table = pixel_table(graph, op, mults, shifts, out_zp, act)
            if table is None:
                continue
            x, w, b = (graph.tensors[t] for t in op.inputs[:3])
            in_zp, out_c, in_c = int(x.quantization.zero_point[0]), w.shape[0], w.shape[3]
            rows, bias = w.data.reshape(out_c, in_c).astype(int), [int(v) for v in b.data]
            words = 4 + in_c // 2
            assert len(table) == out_c * words
            assert [table[o * words + words - 1] >> 9 & 1 for o in range(out_c)] == [0] * (out_c - 1) + [1]
            for _ in range(40):
                px = [rng.randrange(-128, 128) for _ in range(in_c)]
                lanes = [
                    (px[g], px[g + 2]) if e == 0 else (px[g + 1], px[g + 3])
                    for g in range(0, in_c, 4)
                    for e in (0, 1)
                ]
                for o in range(out_c):
                    acc0, *ws = table[o * words : o * words + 1 + in_c // 2]
                    m, base, rr = table[o * words + words - 3 : o * words + words]
                    s2 = acc0
                    for (lo, hi), word in zip(lanes, ws, strict=True):
                        s2 += lo * _int16(word) + hi * _int16(word >> 16)
                    s2 = (s2 + (1 << 31)) % (1 << 32) - (1 << 31)
                    a = base - (1 if s2 < 0 else 0)
                    h = (s2 * m + (a << 32) + (1 << 31)) >> 32
                    got = max(-128, min(127, h >> (rr & 255)))
                    acc = bias[o] + sum((v - in_zp) * int(f) for v, f in zip(px, rows[o], strict=True))
                    want = max(act[0], min(act[1], mbqm(acc, mults[o], shifts[o]) + out_zp))
                    assert got == want, (name, o, px)
                    checked += 1
    assert checked > 5000


def _int16(word: int) -> int:
    low = word & 0xFFFF
    return low - 0x10000 if low >= 0x8000 else low


def test_pixel_table_only_where_its_path_holds() -> None:
    """The generator emits the pixel table (and calls ts_conv2d_s8_pixels) for flat 1x1 layers with
    in_c 8, 12 or 16, out_c >= in_c, a range all of int8 and every channel r >= 1 or a constant, and
    for those alone; pruned channels become constants; never for a Helium core."""
    k16, k8_k12 = _pixel_tables("pixel_regs_k16"), _pixel_tables("pixel_regs_k8_k12")
    assert {n for n, t in k16.items() if t is not None} == {"pw16_21px_constants", "pw16_37px", "pw16_to_16"}
    assert {n for n, t in k8_k12.items() if t is not None} == {
        "pw12_to_20",
        "pw8_to_27",
        "pw8_to_11",
        "pw12_to_45",
    }
    constants = k16["pw16_21px_constants"]
    assert [o for o in range(45) if constants[o * 12 + 9] == 0 and constants[o * 12 + 11] & 255 == 0] == [
        3,
        30,
    ]
    graph = parse_model(FAST_PATH_MODELS["pixel_regs_k16"]())
    texts = {
        core: planned_c_text(plan(graph, PlanOptions(core=core, time_limit=2.0)))
        for core in ("cortex-m7", "cortex-m55")
    }
    assert texts["cortex-m7"].count("ts_conv2d_s8_pixels(&") == 3
    assert "pixel_table" not in texts["cortex-m55"]
    # a streamed stage's 1x1 member on its rows (K = 16), the 8 -> 16 layer after it whole
    stage = planned_c_text(
        plan(parse_model(FAST_PATH_MODELS["pixel_regs_stage"]()), PlanOptions(time_limit=2.0))
    )
    assert "ts_conv2d_s8_pixels_checked(&p0, rows," in stage and "_stage0_pixel_table, checks0)" in stage
    assert stage.count("ts_conv2d_s8_pixels_own(&") == 1  # K = 8: its own loop (below)


def test_own_pixel_loops_only_for_flat_k8_layers() -> None:
    """Flat 1x1 layers with in_c 8 and 8 to 64 output channels get their own loop (ts_kernels.h,
    CONV_2D "own pixel loop"): its table is the pixel table without rr (7 words a channel), every
    channel's SSAT shifts by that rr's low byte (none for a constant channel), the loop rewinds the
    table by 28 * out_c bytes; 65 channels, strided layers and in_c 12 or 16 keep the shared loops."""
    graph = parse_model(FAST_PATH_MODELS["pixel_own_loops"]())
    loops = {}
    for op in (op for op in graph.operators if op.opcode == "CONV_2D"):
        mults, shifts, out_zp, act = _conv_quantisation(graph, op)
        table = pixel_table(graph, op, mults, shifts, out_zp, act)
        assert table is not None
        loops[graph.tensors[op.outputs[0]].name] = (table, own_pixel_loop(graph, op, table))
    assert {n for n, (_, own) in loops.items() if own is not None} == {
        "pw8_to_64_constants",
        "pw8_to_8",
        "pw8_to_13",
    }
    table, (own_table, own_shifts) = loops["pw8_to_64_constants"]
    assert own_table == [w for o in range(64) for w in table[8 * o : 8 * o + 7]]
    assert own_shifts == [table[8 * o + 7] & 255 for o in range(64)]
    assert [o for o, r in enumerate(own_shifts) if r == 0] == [0, 41] and min(own_shifts[1:41]) >= 1
    code = own_loop_code("m_loop", own_shifts)
    assert "TS_PIXEL_OWN_LOOP(m_loop, 1792," in code
    assert code.count("TS_PIXEL_OWN_CHANNEL(") == 64 and code.count('TS_PIXEL_OWN_CHANNEL("lsl #0")') == 2
    assert f'TS_PIXEL_OWN_CHANNEL("asr #{own_shifts[1]}") /* channel 1 */' in code
    for name in ("pixel_regs_strided", "pixel_regs_k16"):
        other = parse_model(FAST_PATH_MODELS[name]())
        for op in (op for op in other.operators if op.opcode == "CONV_2D"):
            mults, shifts, out_zp, act = _conv_quantisation(other, op)
            table = pixel_table(other, op, mults, shifts, out_zp, act)
            assert table is None or own_pixel_loop(other, op, table) is None
    texts = {
        core: planned_c_text(plan(graph, PlanOptions(core=core, time_limit=2.0)))
        for core in ("cortex-m7", "cortex-m55")
    }
    assert texts["cortex-m7"].count("ts_conv2d_s8_pixels_own(&") == 3
    assert texts["cortex-m7"].count("ts_conv2d_s8_pixels(&") == 1  # 8 -> 65
    assert "pixel_loop" not in texts["cortex-m55"]


def test_own_path_layers_get_no_wide_strip() -> None:
    """Layers that take the stem or the pixel path get no ``wide`` strip, even where --arena-budget
    lets the arena grow for one: those paths would never touch it, and the measured high-water would
    sit below the plan (VWW under `--arena-budget 1M` did, by 1,008 B, its stem layer's strip)."""
    for name in ("conv_stem_shapes", "pixel_regs_k16"):
        graph = parse_model(FAST_PATH_MODELS[name]())
        own = {op.index for op in graph.operators if own_path(graph, op)}
        assert own, name
        planned = plan(graph, PlanOptions(arena_budget=1 << 20, time_limit=2.0))
        wide = {
            v
            for v, op in enumerate(planned.graph.operators)
            if (k := variant_of(planned.graph, op)) and k.name == "wide"
        }
        assert not {planned.source_operator(v) for v in wide} & own, name


def test_pixel_table_for_strided_layers_and_stage_rows() -> None:
    """The pixel table (ts_conv2d_s8_pixel_rows: pixel_rows) for 1x1 layers at any strides without padding,
    whole (stride 2, (1, 2), (2, 1), 3 VALID, two batches, odd out_c) and as a stage's stride-2
    projection shortcut on its rows, not where out_c < in_c or the range is narrower than int8; its
    words are the flat layers' (the stride is the kernel's, not the table's)."""
    tables = _pixel_tables("pixel_regs_strided")
    assert {n for n, t in tables.items() if t is not None} == {
        "pw16_s2_to_32",
        "pw16_s2_odd_to_17",
        "pw8_s1x2_to_16",
        "pw12_s2x1_to_20",
        "pw12_s2_batches",
        "pw8_s3_to_8",
    }
    assert {n for n, t in _pixel_tables("pixel_regs_strided_in_place").items() if t is not None} == {
        "pw12_s2x1_in_place",
        "pw16_s2_to_32_in_place",
    }
    graph = parse_model(FAST_PATH_MODELS["pixel_regs_strided"]())
    m7 = planned_c_text(plan(graph, PlanOptions(core="cortex-m7", time_limit=2.0)))
    assert m7.count("ts_conv2d_s8_pixel_rows(&") == 6 and "ts_conv2d_s8_pixels(&" not in m7
    assert "pixel_table" not in planned_c_text(plan(graph, PlanOptions(core="cortex-m55", time_limit=2.0)))
    # the first block's stride-2 shortcut 16 -> 32 on the stage's rows, the second's 32 -> 48 (K = 32,
    # in two halves) whole
    stage = planned_c_text(
        plan(parse_model(FAST_PATH_MODELS["pixel_regs_stage_strided"]()), PlanOptions(time_limit=2.0))
    )
    assert stage.count("ts_conv2d_s8_pixel_rows_checked(&") == 1 and "rows = TS_ROWS(" in stage
    assert stage.count("ts_conv2d_s8_pixel_rows(&") == 1


def test_pixel_table_k32_halves() -> None:
    """in_c 32 (ts_conv2d_s8.c pixel_steps32) only at a stride and out_c <= 64: the table is the
    one-pass words of each channel split in two, out_c * 4 before each half, the first half's
    channels from the last (acc0 and bytes 0-15's lanes), the second's from the first (bytes
    16-31's lanes, m, base, rr with bit 9 on the last channel alone)."""
    tables = _pixel_tables("pixel_regs_strided_k32")
    assert {n for n, t in tables.items() if t is not None} == {
        "pw32_s2_to_64_constant",
        "pw32_s2x1_to_33",
        "pw32_s1x2_batches",
    }
    table = tables["pw32_s2_to_64_constant"]
    out_c = 64
    assert len(table) == 2 + 20 * out_c and table[0] == table[1 + 9 * out_c] == 4 * out_c
    first, second = table[1 : 1 + 9 * out_c], table[2 + 9 * out_c :]
    assert [second[11 * o + 10] >> 9 & 1 for o in range(out_c)] == [0] * (out_c - 1) + [1]
    # the pruned channel 17: a constant (acc0 and every lane 0, m 0), its first half 17th from the end
    assert first[9 * (out_c - 1 - 17) : 9 * (out_c - 17)] == [0] * 9
    assert second[11 * 17 : 11 * 17 + 9] == [0] * 9 and second[11 * 17 + 10] & 255 == 0


def _qemu_ready() -> None:
    require("qemu")


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps3-an547"], ids=["cortex_m7", "cortex_m55_helium"])
@pytest.mark.parametrize("name", sorted(FAST_PATH_MODELS))
def test_fast_path_model_bit_exact_on_qemu(name: str, board: str, tmp_path: Path) -> None:
    """Every fast-path model against TFLite on QEMU's Cortex-M7 (the DSP paths) and Cortex-M55 (the
    MVE paths: VMLADAV dot products, VQRDMULH/VRSHL requantisation, predicated tails), which the
    board flags (-mcpu) select at build time."""
    _qemu_ready()
    gen = generate_for_measure(_model(tmp_path, name), tmp_path / "gen", 2)
    result = measure_sources(
        gen.sources, board, gen.inputs, gen.expected,
        gen.arena_bytes_planned, tmp_path / "build", arena_high_water_planned=gen.arena_high_water_planned,
        expected_steps=gen.expected_steps,
    )  # fmt: skip
    assert result.outputs_match is True, result.mismatches
    assert result.steps_compared > 0 and result.steps_differing == [], result.mismatches  # every layer
    assert result.outputs_agree_on_device and result.ok


# The M4 and M33 compile the DSP paths the M7 runs (test_fast_path_model_bit_exact_on_qemu: every
# model): the suite samples them, each model on one of the two; bench/bench_fast_paths.py runs every
# model on both.
DSP_ONLY_MODELS = (
    "flat_rest_in_place",
    "pixel_regs_k16",
    "pixel_regs_k8_k12",
    "pixel_regs_stage",
    "pixel_own_loops",
    "pixel_regs_strided",
    "pixel_regs_strided_k32",
    "pixel_regs_stage_strided",
    "pixel_regs_strided_in_place",
    "conv_kxk_shapes",
    "depthwise_shapes",
    "pointwise_shapes",
    "conv_patch_shapes",
    "depthwise_channel_counts",
    "pointwise_strided",
    "conv_widened",
    "add_scales",
    "conv_pairs_widened",
    "depthwise_wide_runs",
    "conv_pruned_channels",
    "depthwise_blocks",
    "conv_quads_tables",
    "avg_pool_lanes",
    "conv_wide_rq_forms",
    "depthwise_blocks_clamped",
    "depthwise_blocks_runs",
    "conv_quads_rows",
    "conv_stem_shapes",
    "stream_pool_rows",
    "stream_pool_narrow",
    "stream_pad_rows",
    "max_pool_words",
    "conv_quads_few",
    "conv_quads_one_group",
    "stream_rows_checked",
    "stream_stem_rows",
    "stream_fc_rows",
    "stream_fc_blocks",
    "stream_fc_single",
    "stream_fc_view",
    "stream_fc_quads",
    "stream_fc_quads16",
    "stream_column_tiles",
    "stream_column_tiles_conv",
    "stream_resize_depthwise",
    "stream_resize_pointwise",
    "stream_resize_bilinear_rows_down",
    "resize_argmax_segmentation",
    "resize_over_input",
    "uint8_legacy_layers",
    "uint8_legacy_stream",
    "uint8_legacy_more_ops",
    "uint8_legacy_depthwise_blocks",
    "uint8_legacy_conv_sums",
    "uint8_legacy_pixel_tables",
    "stream_one_pixel_rows",
    "stream_one_pixel_rows_narrowing",
    "stream_one_pixel_rows_full_range",
    "stream_rows_six_plus_one",
)
DSP_ONLY_BOARDS = ("mps2-an386", "mps2-an505")


def measure_fast_path_model(name: str, board: str, tmp_path: Path):
    gen = generate_for_measure(_model(tmp_path, name), tmp_path / name / "gen", 1)
    return measure_sources(
        gen.sources, board, gen.inputs, gen.expected,
        gen.arena_bytes_planned, tmp_path / name / "build",
        arena_high_water_planned=gen.arena_high_water_planned,
        expected_steps=gen.expected_steps,
    )  # fmt: skip


@pytest.mark.qemu
@pytest.mark.parametrize("board", DSP_ONLY_BOARDS)
def test_fast_paths_bit_exact_on_cortex_m4_and_m33(board: str, tmp_path: Path) -> None:
    _qemu_ready()
    for name in DSP_ONLY_MODELS[DSP_ONLY_BOARDS.index(board) :: len(DSP_ONLY_BOARDS)]:
        result = measure_fast_path_model(name, board, tmp_path)
        assert result.outputs_match is True, (name, result.mismatches)


@pytest.mark.qemu
@pytest.mark.parametrize(
    ("cpu", "has_dsp"), [("cortex-m7", True), ("cortex-m33", True), ("cortex-m0", False)]
)
def test_dsp_instructions_only_where_the_core_has_them(cpu: str, has_dsp: bool, tmp_path: Path) -> None:
    """The SIMD32 path is compiled in for DSP cores and the portable C for the others."""
    _qemu_ready()
    found = []
    for kernel in ("ts_conv2d_s8", "ts_depthwise_conv2d_s8", "ts_fully_connected_s8"):
        obj = tmp_path / f"{kernel}-{cpu}.o"
        cmd = ["arm-none-eabi-gcc", f"-mcpu={cpu}", "-mthumb", "-mfloat-abi=soft", "-O2", "-std=gnu11",
               "-Wall", "-Wextra", "-Werror", f"-I{KERNELS}", f"-I{REPO / 'firmware' / 'include'}", "-c",
               str(KERNELS / f"{kernel}.c"), "-o", str(obj)]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        dis = subprocess.run(["arm-none-eabi-objdump", "-d", str(obj)], capture_output=True, text=True).stdout
        found.append(any(op in dis for op in ("\tsmlad", "\tsmlabb", "\tsxtab16")))
    assert found == [has_dsp] * 3


@pytest.mark.qemu
@pytest.mark.parametrize(
    "cflags", [["-mcpu=cortex-m7"], ["-mcpu=cortex-m55", "-mfloat-abi=hard"]], ids=["m7", "m55"]
)
def test_functions_whose_asm_takes_an_adr_are_word_aligned_at_os(cflags: list[str], tmp_path: Path) -> None:
    """An ADR to a label of its own function is resolved by the assembler against the section's
    start, and ADR adds Align(PC, 4): the section must be word-aligned. At -Os GCC aligns functions to
    halfwords only, so a function whose asm takes a label's address (wide_channels' computed entry)
    asks for aligned(4); without it, a user's -Os link that put it at 2 mod 4 faulted."""
    require("qemu", ("arm-none-eabi-gcc",))
    unaligned = []
    for source in sorted(KERNELS.glob("*.c")):
        asm = tmp_path / f"{source.stem}.s"
        cmd = ["arm-none-eabi-gcc", *cflags, "-mthumb", "-Os", "-ffunction-sections", "-std=gnu11",
               f"-I{KERNELS}", f"-I{REPO / 'firmware' / 'include'}", "-S", str(source), "-o", str(asm)]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        section, align = "", 0
        for line in asm.read_text().splitlines():
            words = line.split()
            if words[:1] == [".section"]:
                section, align = words[1].rstrip(","), 0
            elif words[:1] == [".align"]:
                align = int(words[1])
            elif words and words[0] in ("adr", "adr.w") and align < 2:
                unaligned.append(f"{source.name}: {section}")
    assert not unaligned, sorted(set(unaligned))


def _vector_ops(kernel: str, cflags: list[str], tmp_path: Path) -> set[str]:
    """The MVE mnemonics in a kernel compiled with cflags (gcc -S: binutils' objdump does not decode
    MVE without being told the architecture)."""
    asm = tmp_path / f"{kernel}-{abs(hash(tuple(cflags)))}.s"
    cmd = ["arm-none-eabi-gcc", *cflags, "-mthumb", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
           f"-I{KERNELS}", f"-I{REPO / 'firmware' / 'include'}", "-S", str(KERNELS / f"{kernel}.c"),
           "-o", str(asm)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    ops = {line.split()[0] for line in asm.read_text().splitlines() if line.startswith("\t") and line.split()}
    return {op for op in ops if op.startswith(("vmladava", "vaddva", "vqrdmulh", "vrshl", "vctp", "vldrb."))}


@pytest.mark.qemu
def test_helium_paths_only_where_the_core_has_mve(tmp_path: Path) -> None:
    """-mcpu=cortex-m55 (the mps3-an547 board's flags) compiles the MVE paths in; -DTS_MVE=0 on the
    same core and a Cortex-M7 (DSP, no MVE) do not."""
    _qemu_ready()
    m55 = ["-mcpu=cortex-m55", "-mfloat-abi=hard"]
    expect = {
        "ts_conv2d_s8": {"vmladava.s8", "vqrdmulh.s32", "vctp.8"},
        "ts_depthwise_conv2d_s8": {"vqrdmulh.s32", "vrshl.s32", "vctp.32"},
        "ts_fully_connected_s8": {"vmladava.s8", "vaddva.s8"},
        "ts_add_s8": {"vqrdmulh.s32", "vrshl.s32"},
        "ts_avg_pool2d_s8": {"vctp.16"},
    }
    for kernel, ops in expect.items():
        assert ops <= _vector_ops(kernel, m55, tmp_path), kernel
        assert _vector_ops(kernel, [*m55, "-DTS_MVE=0"], tmp_path) == set(), kernel
        assert _vector_ops(kernel, ["-mcpu=cortex-m7", "-mfloat-abi=soft"], tmp_path) == set(), kernel
