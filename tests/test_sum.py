"""int8 SUM, bit for bit against ai-edge-litert's *optimised* kernel, not BUILTIN_REF.

Why not BUILTIN_REF, the reference of every other kernel: in ai-edge-litert 2.3 its int8 SUM reads
the int8 data as uint8 (and writes a uint8 result). Summing [-1, -3, 5, -7] and [2, 4, -6, 8] (scale
0.1, zero point 0 in and out) must give [-6, 8]; BUILTIN_REF gives [-1, -1] (762 and 264, the sums of
the bytes read as uint8, saturated to 255 and stored as the byte 0xFF), while
BUILTIN_WITHOUT_DEFAULT_DELEGATES gives [-6, 8]. With output scale 0.5 and zero points 3 -> -2 the
right answer is [-6, -3]; BUILTIN_REF gives [-108, 49] ((750 * 0.2) - 2 = 148 read back as int8).
`test_builtin_ref_sum_reads_int8_as_uint8` keeps that evidence: if a later ai-edge-litert fixes
BUILTIN_REF, it fails, and the reference choice should be revisited.

The optimised kernel is TFLite's default SUM (`Register_SUM()` is `Register_SUM_OPT()`). Its int8
path (reduce.cc EvalSum -> optimized_ops::QuantizedMeanOrSum, compute_sum) is not the integer
multiplier requantisation of MEAN: on the int32 sum of the raw values it computes, in float32,
round(sum * (in_scale / out_scale) + (-in_zp * scale * count)) + out_zp, then clamps.
`codegen.lower_reduce.sum_f32_requant` reproduces it and `sum_thresholds` turns it into integer
thresholds, so the device needs no floating point. The models below include sums where a fused multiply-add
would round differently (`test_fma_cases_discriminate`), so a match also pins the unfused order.

`tinysched verify` still compares with the default resolver order (BUILTIN_REF first), so it reports
SUM mismatches; this test runs the generated C itself and compares with the optimised resolver.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers import host_build
from tiers import needs_gcc

from tinysched.codegen import check_supported
from tinysched.codegen.lower_reduce import sum_f32_requant, sum_thresholds
from tinysched.device import reference
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model

OPTIMISED = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES",)

# (in scale, in zp, out scale, out zp, count, sums where a fused multiply-add rounds differently)
FMA_CASES = [
    (0.18310464918613434, 56, 1.0385935306549072, 54, 16, [1069]),
    (0.42848920822143555, 57, 0.6376153826713562, -59, 16, [1130]),
    (0.4342978596687317, 42, 0.8159542083740234, 70, 16, [641]),
    (0.3632989823818207, -96, 1.7083375453948975, -48, 16, [-1228]),
    (0.2224505990743637, 96, 1.14813232421875, -25, 16, [1456, 1616, 1776]),
]


def _i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def _sum(b: ModelBuilder, x, axes, keep: bool, quant, name: str):
    rank = len(x.shape)
    red = {a % rank for a in axes}
    shape = tuple(1 if d in red else s for d, s in enumerate(x.shape) if keep or d not in red)
    (y,) = b.op(
        "SUM", [x, b.constant(_i32(axes))], [shape], schema.ReducerOptionsT(keepDims=keep),
        output_quant=quant, name=name,
    )  # fmt: skip
    return y


def sum_axes() -> bytes:
    """keep_dims true and false, one / several / all axes, negative and repeated axes, the input's
    own quantisation (saturates), output scales above and below the input's."""
    b = ModelBuilder(seed=41)
    x = b.input("x", (2, 5, 6, 4), scale=1 / 20, zero_point=3)
    outs = [
        _sum(b, x, [1, 2], True, (0.5, -7), "sum_hw_keep"),
        _sum(b, x, [-1], False, (0.15, 10), "sum_c_negative"),
        _sum(b, x, [0, -3, 1, 2], False, (2.0, 0), "sum_nhw_repeated"),
        _sum(b, x, [2], True, (x.scale, x.zero_point), "sum_w_same_quant"),
        _sum(b, x, [0, 1, 2, 3], True, (4.0, -100), "sum_all_keep"),
        _sum(b, x, [-4, -2], True, (0.7, 20), "sum_nw_negative_keep"),
        _sum(b, x, [3], False, (1 / 100, -3), "sum_c_scale_up"),  # ratio 5: steps skip levels
    ]
    b.output(*outs)
    return b.build()


def fma_cases() -> tuple[bytes, list[np.ndarray]]:
    """One SUM per FMA_CASES entry over rows of 16, the first rows summing to the listed sums."""
    b = ModelBuilder(seed=42)
    rng = np.random.default_rng(42)
    outs, inputs = [], []
    for k, (si, zi, so, zo, count, targets) in enumerate(FMA_CASES):
        x = b.input(f"x{k}", (32, count), scale=si, zero_point=zi)
        outs.append(_sum(b, x, [1], False, (so, zo), f"sum{k}"))
        data = rng.integers(-128, 128, (32, count))
        for j, t in enumerate(targets):
            row = np.full(count, t // count)
            row[: t - row.sum()] += 1
            data[j] = row
        inputs.append(data.astype(np.int8))
    b.output(*outs)
    return b.build(), inputs


def _fused(sums, si, zi, so, zo, count) -> np.ndarray:
    """What a fused multiply-add (one rounding of sum * scale + bias) would give."""
    f32 = np.float32
    scale = f32(f32(si) / f32(so))
    bias = f32(f32(f32(-zi) * scale) * f32(count))
    out = []
    for s in sums:
        exact = Fraction(float(f32(s))) * Fraction(float(scale)) + Fraction(float(bias))
        a = f32(float(exact))
        cands = (np.nextafter(a, f32(-np.inf)), a, np.nextafter(a, f32(np.inf)))
        v = min(cands, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c).view(np.int32)) & 1))
        r = int(np.sign(v) * np.floor(abs(float(v)) + 0.5))
        out.append(min(max(r + zo, -128), 127))
    return np.array(out)


def test_builtin_ref_sum_reads_int8_as_uint8() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 2, 2, 2), scale=0.1, zero_point=0)
    b.output(_sum(b, x, [1, 2], True, (0.1, 0), "sum"))
    data = np.array([-1, 2, -3, 4, 5, -6, -7, 8], dtype=np.int8).reshape(1, 2, 2, 2)
    ref = reference.run_reference(b.build(), [data], resolvers=("BUILTIN_REF",))
    opt = reference.run_reference(b.build(), [data], resolvers=OPTIMISED)
    assert ref.outputs[0].reshape(-1).tolist() == [-1, -1]  # wrong: uint8 sums 762, 264 -> 255
    assert opt.outputs[0].reshape(-1).tolist() == [-6, 8]  # right


def test_thresholds_reproduce_the_float_requantisation() -> None:
    rng = np.random.default_rng(5)
    cases = [(0.05, 3, 0.5, -7, 60), (0.05, 3, 0.05, 3, 6), (0.05, 3, 0.01, -3, 4), (0.05, 3, 4.0, -100, 240)]
    cases += [(float(np.float32(rng.uniform(0.001, 1))), int(rng.integers(-128, 128)),
               float(np.float32(rng.uniform(0.001, 1))), int(rng.integers(-128, 128)), int(n))
              for n in rng.integers(1, 300, 12)]  # fmt: skip
    for si, zi, so, zo, count in cases:
        sums = np.arange(-128 * count, 127 * count + 1)
        base, thresholds = sum_thresholds(si, zi, so, zo, count)
        got = base + np.searchsorted(np.asarray(thresholds), sums, side="right")
        assert np.array_equal(got, sum_f32_requant(sums, si, zi, so, zo, count)), (si, zi, so, zo, count)
        assert len(thresholds) <= 255 and thresholds == sorted(thresholds)


def test_fma_cases_discriminate() -> None:
    for si, zi, so, zo, count, targets in FMA_CASES:
        assert not np.array_equal(_fused(targets, si, zi, so, zo, count),
                                  sum_f32_requant(targets, si, zi, so, zo, count))  # fmt: skip


def test_int8_sum_is_lowered() -> None:
    check_supported(parse_model(sum_axes(), source="sum_axes.tflite"))


@needs_gcc
@pytest.mark.host
def test_sum_bit_exact_against_the_optimised_kernel(tmp_path: Path) -> None:
    from tinysched.build.host import run_runner

    rng = np.random.default_rng(9)
    model = sum_axes()
    x_sets = [rng.integers(-128, 128, (2, 5, 6, 4)).astype(np.int8) for _ in range(4)]
    x_sets += [np.full((2, 5, 6, 4), v, dtype=np.int8) for v in (-128, 127, 3)]
    fma_model, fma_inputs = fma_cases()
    for name, data, sets in (("sum_axes", model, [[x] for x in x_sets]), ("fma", fma_model, [fma_inputs])):
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        host = host_build(path, tmp_path / name, opt="-O1", sanitize=True)
        assert "ts_sum_s8" in host.module.kernels
        got = run_runner(host.runner, host.module, sets)
        for inputs, outs in zip(sets, got, strict=True):
            ref = reference.run_reference(data, inputs, resolvers=OPTIMISED)
            assert ref.resolver == OPTIMISED[0]
            for k, (a, e) in enumerate(zip(outs, ref.outputs, strict=True)):
                assert a.shape == e.shape and np.array_equal(a, e), (name, k, np.argwhere(a != e)[:5])


def test_verify_checks_int8_sum_against_the_optimised_kernel(tmp_path: Path) -> None:
    """`tinysched verify` on a SUM model: BUILTIN_REF is skipped for its known defect, and says so."""
    model = tmp_path / "sum_axes.tflite"
    model.write_bytes(sum_axes())
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tinysched.cli",
            "verify",
            str(model),
            "--board",
            "host",
            "--inputs",
            "4",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["outputs_match"] is True and report["inputs"] == 4
    assert report["reference"] == "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
    assert "int8 SUM reads its int8 input as uint8" in report["fallback_reason"]
