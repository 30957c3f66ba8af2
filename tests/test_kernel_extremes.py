"""Kernels at their parameter extremes (issue 14, item 5): what a kernel would refuse at run time is
refused when the code is generated, in one line naming the operator; the legal extremes build and
run bit-exact on the host runner under ASan/UBSan.

Tiers: the host builds need gcc.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import generate_for_measure, generate_module, host_verify
from tiers import needs_gcc, require

from tinysched.codegen.context import ConstArray, KernelCall
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.kernel_checks import KERNEL_CHECKS, check_call
from tinysched.codegen.quant import MAX_ACCUMULATED_PRODUCTS
from tinysched.device.runner import measure_sources
from tinysched.errors import TinyschedError
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "firmware" / "kernels"
# Checked in its lowering instead (constant indices); run-time indices TFLite also refuses at run time.
CHECKED_IN_LOWERING = {"ts_gather"}


def test_every_run_time_check_has_a_generation_time_check() -> None:
    refusing = set()
    for path in KERNELS.glob("*.c"):
        text = path.read_text()
        if "TS_ERR_PARAMS" in text:
            refusing |= set(re.findall(r"^int (ts_\w+)\(", text, re.M))
    assert refusing, "no kernel returns TS_ERR_PARAMS?"
    assert refusing - CHECKED_IN_LOWERING <= set(KERNEL_CHECKS), refusing - set(KERNEL_CHECKS)


# ---- the legal extremes, built and run --------------------------------------------------------


def _conv_model(ratio: float, out_scale: float | None = None) -> bytes:
    """A 3x3 CONV_2D whose requantisation multiplier is `ratio` (per-tensor weights)."""
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 6, 6, 2), scale=1.0)
    b.output(b.conv2d(x, 3, per_channel=False, output_quant=(out_scale or 1.0, 0), name="conv"))
    return b.build() if out_scale else _conv_model(ratio, _weight_scale(b.build(), "conv/filter") / ratio)


def _fc_model(ratio: float, out_scale: float | None = None) -> bytes:
    b = ModelBuilder(seed=2)
    x = b.input("x", (2, 16), scale=1.0)
    b.output(b.fully_connected(x, 3, output_quant=(out_scale or 1.0, 0), name="fc"))
    return b.build() if out_scale else _fc_model(ratio, _weight_scale(b.build(), "fc/weights") / ratio)


def _fc_outside_int32(zero_point: int, activation: str, out_scale: float | None = None) -> bytes:
    """FULLY_CONNECTED with scale ratio 2^20: nearly every requantised result leaves int32."""
    b = ModelBuilder(seed=2)
    x = b.input("x", (2, 16), scale=1.0)
    quant = (out_scale or 1.0, zero_point)
    b.output(b.fully_connected(x, 3, output_quant=quant, activation=activation, name="fc"))
    if out_scale:
        return b.build()
    return _fc_outside_int32(zero_point, activation, _weight_scale(b.build(), "fc/weights") / 2.0**20)


def _weight_scale(model: bytes, name: str) -> float:
    """The weights' scale modelgen drew (the same seed draws the same weights whatever the output)."""
    graph = parse_model(model)
    return float(next(t for t in graph.tensors if t.name == name).quantization.scale[0])


def _verify(model: bytes, tmp: Path) -> tuple[str, object]:
    path = tmp / "m.tflite"
    path.write_bytes(model)
    module = generate_module(path)[3]
    c_text = module.files[f"{module.prefix}.c"]
    return c_text, host_verify(path, n_inputs=4, sanitize=True)


def _shifts(c_text: str) -> list[int]:
    body = re.search(r"_shift\[\d+\] = \{[^\n]*\n([^}]*)\}", c_text)
    assert body, "no shift array in the generated code"
    return [int(v) for v in body.group(1).replace(",", " ").split()]


@needs_gcc
@pytest.mark.parametrize(
    ("build", "ratio", "shift"),
    [
        (_conv_model, 2.0**30 * 1.2, 31),  # the largest shift ts_requantize covers
        (_conv_model, 2.0**-32 * 1.2, -31),  # the smallest
        (_conv_model, 2.0**-40, 0),  # below 2^-32 QuantizeMultiplier gives multiplier 0, shift 0
        # FULLY_CONNECTED's single rounding covers up to 30; most results leave int32 (INT32_MIN in TFLite)
        (_fc_model, 2.0**29 * 1.2, 30),
        (_fc_model, 2.0**10, 11),  # a large shift whose results stay inside int32
        (_fc_model, 2.0**-32 * 1.2, -31),
    ],
    ids=[
        "conv_shift_31",
        "conv_shift_-31",
        "conv_multiplier_0",
        "fc_shift_30",
        "fc_shift_11",
        "fc_shift_-31",
    ],
)
def test_requantisation_shift_extremes_run_bit_exact(build, ratio: float, shift: int, tmp_path: Path) -> None:
    c_text, result = _verify(build(ratio), tmp_path)
    assert set(_shifts(c_text)) == {shift}
    assert result.outputs_match, result.mismatches
    assert result.reference == "BUILTIN_REF"


@needs_gcc
@pytest.mark.parametrize(
    ("zero_point", "activation"), [(-100, "NONE"), (-1, "RELU"), (0, "NONE"), (90, "RELU")]
)
def test_fully_connected_results_outside_int32_run_bit_exact(
    zero_point: int, activation: str, tmp_path: Path
) -> None:
    """A requantised accumulator outside int32 is INT32_MIN in the reference, on either side; the output
    offset is then added wrapping (a negative zero point turns it into INT32_MAX) before the clamp.
    Scale ratio 2^20: nearly every output leaves int32, on both sides."""
    c_text, result = _verify(_fc_outside_int32(zero_point, activation), tmp_path)
    assert set(_shifts(c_text)) == {21}
    assert result.reference == "BUILTIN_REF"
    assert result.outputs_match, result.mismatches


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386"])
def test_fully_connected_results_outside_int32_bit_exact_on_cortex_m(board: str, tmp_path: Path) -> None:
    """The same on the DSP path (fc_dot2's SMLAD), Cortex-M7 and M4."""
    require("qemu")
    for zero_point, activation in ((-100, "NONE"), (90, "RELU")):
        path = tmp_path / f"fc_{zero_point}.tflite"
        path.write_bytes(_fc_outside_int32(zero_point, activation))
        gen = generate_for_measure(path, tmp_path / f"gen{zero_point}", 3)
        result = measure_sources(
            gen.sources, board, gen.inputs, gen.expected, gen.arena_bytes_planned,
            tmp_path / f"build{zero_point}", arena_high_water_planned=gen.arena_high_water_planned,
            expected_steps=gen.expected_steps,
        )  # fmt: skip
        assert result.outputs_match is True, (zero_point, result.mismatches)


@needs_gcc
@pytest.mark.parametrize("kind", ["conv", "fc"])
def test_largest_accumulation_runs_bit_exact(kind: str, tmp_path: Path) -> None:
    """The most products per output an int32 accumulator is guaranteed to hold (255 * 128 each)."""
    depth = MAX_ACCUMULATED_PRODUCTS - 1
    b = ModelBuilder(seed=3)
    x = b.input("x", (1, 1, 1, depth) if kind == "conv" else (1, depth))
    y = b.conv2d(x, 2, (1, 1), name="conv") if kind == "conv" else b.fully_connected(x, 2, name="fc")
    b.output(y)
    _, result = _verify(b.build(), tmp_path)
    assert result.outputs_match, result.mismatches
    assert result.reference == "BUILTIN_REF"


# ---- the illegal ones, refused in one line -----------------------------------------------------


def _refusal(model: bytes, tmp: Path) -> str:
    path = tmp / "m.tflite"
    path.write_bytes(model)
    with pytest.raises(TinyschedError) as info:
        generate_module(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_conv_shift_32_is_refused_at_generation(tmp_path: Path) -> None:
    message = _refusal(_conv_model(2.0**31 * 1.2), tmp_path)
    # refused when the model is read (shapes.py: no valid multiplier), before any lowering
    assert "operator 0 (CONV_2D) rescales by" in message and "at or over the 2^31" in message


def test_fc_shift_31_is_refused_at_generation(tmp_path: Path) -> None:
    message = _refusal(_fc_model(2.0**30 * 1.2), tmp_path)
    assert message.startswith("operator 0 (FULLY_CONNECTED) is not supported by the code generator: ")
    assert "requantisation shift of 31" in message


def test_gather_constant_index_outside_the_axis_is_refused(tmp_path: Path) -> None:
    b = ModelBuilder(seed=4)
    x = b.input("x", (5, 3))
    idx = b.constant(np.array([0, 5], dtype=np.int32), name="indices")
    b.output(*b.op("GATHER", [x, idx], [(2, 3)], None, name="gather"))
    message = _refusal(b.build(), tmp_path)
    # refused when the model is read (shapes.py checks constant indices), before any lowering
    assert "operator 0 (GATHER) indices outside [0, 5) for axis 0 of [5, 3]" in message


def _call(kernel: str, params: dict[str, object], arrays: dict[str, list[int]] | None = None) -> KernelCall:
    call = KernelCall(0, 0, "OP", kernel, f"{kernel}_params", [(k, str(v)) for k, v in params.items()], [])
    for name, values in (arrays or {}).items():
        call.local_arrays.append(ConstArray(name, "int32_t", np.asarray(values), ""))
    return call


# Each kernel's run-time refusal, at the first value past its legal range (the last legal value is
# accepted). The C condition is quoted beside each in tinysched/codegen/kernel_checks.py.
_EDGES = [
    ("ts_add_s8", {"left_shift": 21}, {"left_shift": 20}, "left_shift 21"),
    ("ts_squared_difference_s8", {"left_shift": 8}, {"left_shift": 7}, "left_shift 8"),
    ("ts_arg_minmax_s8", {"axis_size": 0}, {"axis_size": 1}, "axis_size 0"),
    ("ts_conv2d_s8", {"stride_h": 0}, {"stride_h": 1}, "stride_h 0"),
    ("ts_conv2d_s8", {"dilation_w": 0}, {"dilation_w": 1}, "dilation_w 0"),
    ("ts_transpose_conv_s8", {"stride_w": 0}, {"stride_w": 1}, "stride_w 0"),
    ("ts_depthwise_conv2d_s8", {"out_c": 7}, {"out_c": 6}, "7 output channels"),
    ("ts_mean_s8", {"count": 1 << 23, "red_dims": "{1, 1, 1, 1, 1, 8388608}"},
     {"count": (1 << 23) - 1, "red_dims": "{1, 1, 1, 1, 1, 8388607}"}, "8388608 elements"),
    ("ts_mean_s8", {"count": 6}, {"count": 8}, "6 elements"),
    ("ts_sum_s8", {"base": 120, "n_thresholds": 8}, {"base": 120, "n_thresholds": 7}, "8 output thresholds"),
    ("ts_reduce_max_s8", {"red_dims": "{1, 1, 1, 1, 1, 0}"}, {"red_dims": "{1, 1, 1, 1, 1, 1}"}, "no elements"),
    ("ts_quantize_f32_s8", {"scale": "0.0"}, {"scale": "1e-30"}, "output scale 0.0"),
    ("ts_requantize_int", {"output_type": "7"}, {"output_type": "TS_TYPE_INT32"}, "output type 7"),
    ("ts_space_batch_nd", {"block_h": 0}, {"block_h": 1}, "block_h 0"),
    ("ts_space_batch_nd", {"offset_top": 3}, {"offset_top": 2}, "crops that read outside"),
    ("ts_svdf_s8", {"rank": 3}, {"rank": 2}, "8 filters for rank 3"),
    ("ts_lstm_s8", {"cell_scale_log2": -8}, {"cell_scale_log2": -9}, "7 integer bits"),
    ("ts_lstm_s8", {"cell_scale_log2": -16}, {"cell_scale_log2": -15}, "-1 integer bits"),
    ("ts_softmax_s8", {"input_left_shift": 32}, {"input_left_shift": 31}, "input_left_shift 32"),
    ("ts_softmax_s8", {"table_only": 1, "exp_table": "NULL"}, {"table_only": 1, "exp_table": "t"}, "no exp table"),
    ("ts_avg_pool2d_s8", {"pad_top": 2}, {"pad_top": 1}, "window outside the input"),
    ("ts_fully_connected_s8", {"shift": "s31"}, {"shift": "s30"}, "shift of 31"),
    ("ts_mul_s8", {"output_shift": -32}, {"output_shift": -31}, "shift of -32"),
]  # fmt: skip

_BASE = {
    "ts_add_s8": {"left_shift": 20, **{f"{n}_{k}": 0 for n in ("input1", "input2", "output") for k in ("multiplier", "shift")}},
    "ts_squared_difference_s8": {"left_shift": 7, **{f"{n}_{k}": 0 for n in ("input1", "input2", "output") for k in ("multiplier", "shift")}},
    "ts_arg_minmax_s8": {"axis_size": 1},
    "ts_conv2d_s8": {"stride_h": 1, "stride_w": 1, "dilation_h": 1, "dilation_w": 1, "multiplier": "m", "shift": "s0"},
    "ts_transpose_conv_s8": {"stride_h": 1, "stride_w": 1, "multiplier": "m", "shift": "s0"},
    "ts_depthwise_conv2d_s8": {"stride_h": 1, "stride_w": 1, "dilation_h": 1, "dilation_w": 1, "in_c": 3,
                               "out_c": 6, "depth_multiplier": 2, "multiplier": "m", "shift": "s0"},
    "ts_mean_s8": {"count": 8, "red_dims": "{1, 1, 1, 1, 2, 4}", "multiplier": 1 << 30, "shift": 0},
    "ts_sum_s8": {"count": 8, "red_dims": "{1, 1, 1, 1, 2, 4}", "base": 0, "n_thresholds": 0, "thresholds": "t"},
    "ts_reduce_max_s8": {"red_dims": "{1, 1, 1, 1, 1, 1}"},
    "ts_quantize_f32_s8": {"scale": "1.0"},
    "ts_requantize_int": {"output_type": "TS_TYPE_INT8", "multiplier": 1 << 30, "shift": 0},
    "ts_space_batch_nd": {"to_batch": 0, "in_batches": 4, "in_h": 2, "in_w": 2, "out_batches": 1, "out_h": 2,
                          "out_w": 2, "block_h": 2, "block_w": 2, "offset_top": 0, "offset_left": 0},
    "ts_svdf_s8": {"rank": 1, "num_filters": 8, "memory_size": 1, "multiplier_1": 1, "shift_1": 0,
                   "multiplier_2": 1, "shift_2": 0},
    "ts_lstm_s8": {"cell_size": 1, "input_size": 1, "cell_scale_log2": -11, "input_multiplier": "{1, 1, 1, 1}",
                   "input_shift": "{0, 0, 0, 0}", "recurrent_multiplier": "{1, 1, 1, 1}",
                   "recurrent_shift": "{0, 0, 0, 0}", "hidden_multiplier": 1, "hidden_shift": 0},
    "ts_softmax_s8": {"depth": 10, "input_multiplier": 1 << 30, "input_left_shift": 20, "diff_min": -10},
    "ts_avg_pool2d_s8": {"in_h": 4, "in_w": 4, "out_h": 1, "out_w": 1, "filter_h": 2, "filter_w": 2,
                         "stride_h": 1, "stride_w": 1, "pad_top": 0, "pad_left": 0},
    "ts_fully_connected_s8": {"multiplier": "m", "shift": "s0"},
    "ts_mul_s8": {"output_multiplier": 1 << 30, "output_shift": 0},
}  # fmt: skip
# space_batch: offset_top 3 reads row (1 + 3) // 2 = 2 of a 2-row input; 2 reads row 1.
_ARRAYS = {"m": [1 << 30], "s0": [0], "s30": [30], "s31": [31]}


@pytest.mark.parametrize(("kernel", "bad", "good", "reason"), _EDGES, ids=[f"{e[0]}:{e[3]}" for e in _EDGES])
def test_each_run_time_check_refuses_past_the_edge(kernel: str, bad: dict, good: dict, reason: str) -> None:
    check_call(_call(kernel, {**_BASE[kernel], **good}, _ARRAYS))
    with pytest.raises(Unsupported, match=re.escape(reason)):
        check_call(_call(kernel, {**_BASE[kernel], **bad}, _ARRAYS))
