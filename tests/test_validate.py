"""Hostile and broken models: every operator is validated before code generation (issue 13).

Each class of fault the issue found (an output shape its inputs do not give, an element count that
overflows, an option no kernel can take, an index past the tensor table, a non-finite scale, an
absurd input size) is made from a generated model with `tflite_edit` and must end in one line, exit
2, for every verb. Legal models (every generated test model, every shared model) must still pass.
A bounded structure-aware fuzz run builds the mutants `build` accepts and runs them under ASan/UBSan.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_model_params
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kernel_models import KERNEL_MODELS, hostile_names
from model_fuzz import mutate, run_cli, seed_models, verify_sanitized
from test_kernels_extra import EXTRA_MODELS
from test_lstm import generated_lstms
from test_sum import sum_axes
from tflite_edit import edited, first_op

from tinysched.codegen import SUPPORTED_OPS
from tinysched.device import reference
from tinysched.errors import TinyschedError
from tinysched.model.fold import fold_constants
from tinysched.model.graph import Graph
from tinysched.model.modelgen import random_branching_model, tiny_demo_model
from tinysched.model.reader import MAX_TENSOR_ELEMENTS, parse_model, read_model
from tinysched.model.shapes import INFER, Elements, check_graph, infer_output_shapes

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="host gcc not installed")


def padv2_model() -> bytes:
    """A PADV2 whose constant is not the zero point (kept by rewrite.py: run as PADV2)."""
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema

    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=5)
    x = b.input("x", (1, 5, 4, 3), zero_point=-3)
    paddings = b.constant(np.array([(0, 0), (1, 2), (0, 1), (0, 0)], dtype=np.int32), name="paddings")
    value = b.constant(np.array(7, dtype=np.int8), quant=x.quant, name="value")
    (y,) = b.op("PADV2", [x, paddings, value], [(1, 8, 5, 3)], schema.PadV2OptionsT(), 2, name="padv2")
    b.output(y)
    return b.build()


LEGAL_MODELS = {
    "padv2": padv2_model,
    **KERNEL_MODELS,
    **EXTRA_MODELS,
    "hostile_names": hostile_names,
    "lstms": generated_lstms,
    "sum_axes": sum_axes,
    "tiny_demo": tiny_demo_model,
    "random_branching": lambda: random_branching_model(seed=3),
}


def _refused(data: bytes, *expected: str) -> str:
    with pytest.raises(TinyschedError) as info:
        parse_model(data, source="m.tflite")
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, message
    return message


# ---- legal models pass -------------------------------------------------------------------------


def test_every_supported_operator_has_shape_inference() -> None:
    assert set(SUPPORTED_OPS) <= set(INFER)


@pytest.mark.parametrize("name", sorted(LEGAL_MODELS))
def test_generated_models_pass_before_and_after_folding(name: str) -> None:
    graph = parse_model(LEGAL_MODELS[name](), source=f"{name}.tflite")  # the reader runs check_graph
    check_graph(fold_constants(graph).graph)


@pytest.mark.parametrize("path", shared_model_params())
def test_shared_models_pass(path: Path) -> None:
    graph = read_model(path)
    check_graph(fold_constants(graph).graph)


# ---- 1. output shapes inconsistent with inputs and options -------------------------------------


def _with_shape(graph: Graph, tensor: int, shape: tuple[int, ...]) -> Graph:
    tensors = list(graph.tensors)
    t = tensors[tensor]
    tensors[tensor] = replace(
        t, shape=shape, nbytes=math.prod(shape) * t.nbytes // max(math.prod(t.shape), 1)
    )
    return Graph(tuple(tensors), graph.operators, graph.inputs, graph.outputs, source="m.tflite")


def test_every_operator_refuses_a_wrong_output_shape() -> None:
    """For every operator of every generated model: the output with its last dimension one larger
    (a different element count) is refused, naming operator, tensor and both shapes."""
    checked: set[str] = set()
    for name, build in sorted(LEGAL_MODELS.items()):
        graph = parse_model(build(), source=f"{name}.tflite")
        for op in graph.operators:
            expected = infer_output_shapes(graph, op)
            if not expected or expected[0] is None:
                continue
            y = graph.tensors[op.outputs[0]]
            wrong = (*y.shape[:-1], y.shape[-1] + 1) if y.shape else (2,)
            with pytest.raises(TinyschedError) as info:
                check_graph(_with_shape(graph, y.index, wrong))
            message = str(info.value)
            assert f"operator {op.index} ({op.opcode}) output 0 (tensor {y.index}" in message
            assert str(list(wrong)) in message
            shown = (
                f"{expected[0].count} elements" if isinstance(expected[0], Elements) else str(list(y.shape))
            )
            assert message.endswith(f"its inputs and options give {shown}"), message
            checked.add(op.opcode)
    assert checked >= set(SUPPORTED_OPS), sorted(set(SUPPORTED_OPS) - checked)


def _set_shape(op_name: str, role: str, shape_of) -> Callable:
    def edit(m) -> None:
        op = first_op(m, op_name)
        sub = m.subgraphs[0]
        t = sub.tensors[(op.outputs if role == "output" else op.inputs)[0]]
        t.shape = [int(d) for d in shape_of([int(d) for d in t.shape])]

    return edit


def test_depthwise_output_batch_65536_is_refused() -> None:
    data = edited(
        KERNEL_MODELS["depthwise_options"](),
        _set_shape("DEPTHWISE_CONV_2D", "output", lambda s: [65536, *s[1:]]),
    )
    _refused(
        data,
        "m.tflite: operator 0 (DEPTHWISE_CONV_2D) output 0 (tensor 3 'dm2') has shape [65536, 10, 12, 8],",
        "its inputs and options give [1, 10, 12, 8]",
    )


def test_max_pool_output_with_more_channels_than_its_input_is_refused() -> None:
    b = KERNEL_MODELS["pooling_options"]()
    data = edited(b, _set_shape("MAX_POOL_2D", "output", lambda s: [*s[:3], 8 * s[3]]))
    _refused(
        data,
        "operator 2 (MAX_POOL_2D) output 0 (tensor 3 'max_same') has shape [1, 5, 7, 40]",
        "[1, 5, 7, 5]",
    )


def test_element_count_overflowing_64_bits_is_refused() -> None:
    data = edited(KERNEL_MODELS["conv_options"](), _set_shape("CONV_2D", "output", lambda s: [65536] * 4))
    message = _refused(data, "shape [65536, 65536, 65536, 65536] int8 is 18,446,744,073,709,551,616 elements")
    assert f"{MAX_TENSOR_ELEMENTS:,}" in message


# ---- 2. option ranges --------------------------------------------------------------------------


def _option(op_name: str, **values) -> Callable:
    def edit(m) -> None:
        options = first_op(m, op_name).builtinOptions
        for key, value in values.items():
            setattr(options, key, value)

    return edit


@pytest.mark.parametrize(
    ("model", "op", "values", "expected"),
    [
        ("pooling_options", "AVERAGE_POOL_2D", {"filterWidth": -(2**31)}, "option filter_width = -2147483648"),
        ("pooling_options", "MAX_POOL_2D", {"strideH": 0}, "option stride_h = 0 is outside [1, 2147483647]"),
        ("pooling_options", "AVERAGE_POOL_2D", {"filterHeight": 2**31 - 1, "filterWidth": 2**31 - 1},
         "window"),
        ("conv_options", "CONV_2D", {"strideW": -1}, "option stride_w = -1"),
        ("conv_options", "CONV_2D", {"dilationHFactor": -2}, "option dilation_hfactor = -2"),
        ("conv_options", "CONV_2D", {"padding": 7}, "option padding = 7 is neither SAME nor VALID"),
        ("depthwise_options", "DEPTHWISE_CONV_2D", {"strideH": -(2**31)}, "option stride_h"),
        ("mean_logistic_softmax", "SOFTMAX", {"beta": math.nan}, "option beta = nan is not finite"),
        ("activations_elementwise", "LEAKY_RELU", {"alpha": math.inf}, "option alpha = inf is not finite"),
        ("data_movement", "SPACE_TO_DEPTH", {"blockSize": 0}, "option block_size = 0"),
        ("shapes_and_copies", "CONCATENATION", {"axis": 9}, "axis 9 is outside a rank of"),
    ],
)  # fmt: skip
def test_option_out_of_range_is_refused(model: str, op: str, values: dict, expected: str) -> None:
    builders = {**KERNEL_MODELS, **EXTRA_MODELS}
    _refused(edited(builders[model](), _option(op, **values)), f"({op})", expected)


def test_option_range_refusals_reach_every_verb(tmp_path: Path) -> None:
    model = tmp_path / "hostile.tflite"
    model.write_bytes(
        edited(KERNEL_MODELS["pooling_options"](), _option("AVERAGE_POOL_2D", filterWidth=-(2**31)))
    )
    for args in (
        ["analyze", str(model)],
        ["schedule", str(model), "--time-limit", "1"],
        ["plan", str(model)],
        ["build", str(model), "-o", str(tmp_path / "out"), "--no-compile"],
    ):
        outcome = run_cli(args)
        assert outcome.returncode == 2, outcome.summary()
        assert outcome.stderr.strip().splitlines() == [
            f"tinysched: error: {model}: operator 0 (AVERAGE_POOL_2D) option filter_width = -2147483648 "
            "is outside [1, 2147483647]"
        ]
    assert not (tmp_path / "out").exists()


# ---- 3. indices, scales and sizes: one line, never a traceback ----------------------------------


def test_intermediates_past_the_tensor_table_are_refused() -> None:
    def edit(m) -> None:
        m.subgraphs[0].operators[0].intermediates = [len(m.subgraphs[0].tensors) + 5]

    _refused(
        edited(KERNEL_MODELS["conv_options"](), edit),
        "operator 0 (CONV_2D) intermediate tensor index 18 out of range",
    )


def _quant(edit_quant) -> Callable:
    def edit(m) -> None:
        sub = m.subgraphs[0]
        edit_quant(sub.tensors[sub.operators[0].outputs[0]].quantization)

    return edit


@pytest.mark.parametrize("scale", [math.inf, -math.inf, math.nan, 0.0, -0.5])
def test_non_finite_or_non_positive_scales_are_refused(scale: float) -> None:
    def set_scale(q) -> None:
        q.scale = [scale]

    _refused(edited(KERNEL_MODELS["conv_options"](), _quant(set_scale)), "quantisation scale", "tensor 3")


def test_zero_point_outside_its_type_is_refused() -> None:
    def set_zero_point(q) -> None:
        q.zeroPoint = [128]

    _refused(
        edited(KERNEL_MODELS["conv_options"](), _quant(set_zero_point)),
        "zero point 128 is outside [-128, 127]",
    )


def test_per_channel_scales_must_match_the_channels() -> None:
    def edit(m) -> None:
        sub = m.subgraphs[0]
        q = sub.tensors[first_op(m, "CONV_2D").inputs[1]].quantization
        q.scale, q.zeroPoint = [0.01] * 3, [0] * 3  # 8 output channels

    _refused(edited(KERNEL_MODELS["conv_options"](), edit), "3 quantisation scales for 8 channels on axis 0")


def test_inf_scale_verify_is_one_line(tmp_path: Path) -> None:
    def set_scale(q) -> None:
        q.scale = [math.inf]

    model = tmp_path / "inf.tflite"
    model.write_bytes(edited(KERNEL_MODELS["conv_options"](), _quant(set_scale)))
    outcome = verify_sanitized(model)
    assert outcome.returncode == 2 and outcome.kind == "clean", outcome.summary()
    assert "quantisation scale inf is not a finite positive number" in outcome.stderr


def test_a_392_gib_graph_input_is_refused_by_the_reader_and_by_random_inputs() -> None:
    def edit(m) -> None:
        sub = m.subgraphs[0]
        sub.tensors[sub.inputs[0]].shape = [1, 7000, 7000, 8000]

    data = edited(KERNEL_MODELS["conv_options"](), edit)
    _refused(data, "shape [1, 7000, 7000, 8000] int8 is 392,000,000,000 elements", 'tensor 0 ("x")')
    with pytest.raises(TinyschedError, match=r"1 random input set\(s\) of 392,000,000,000 bytes each exceed"):
        reference.random_inputs(data, seed=0, count=1)


def test_rescale_beyond_the_kernels_fixed_point_is_refused() -> None:
    """Found by the fuzz test: an input scale of 1e30 gave FULLY_CONNECTED a requantisation shift of
    99 bits (UBSan: shift exponent -68 in ts_requantize_single)."""

    def edit(m) -> None:
        sub = m.subgraphs[0]
        sub.tensors[sub.inputs[0]].quantization.scale = [1e30]

    _refused(
        edited(KERNEL_MODELS["fully_connected_options"](), edit),
        "operator 0 (FULLY_CONNECTED) rescales by",
        "(input 0 scale 1.0000000150474662e+30 x input 1 scale",
        "at or over the 2^31",
    )


def test_bias_that_can_overflow_the_accumulator_is_refused() -> None:
    """Found by bench_fuzz: a bias of -2^31 overflowed ts_depthwise_conv2d_s8's int32 sum (UBSan)."""

    def edit(m) -> None:
        op = first_op(m, "DEPTHWISE_CONV_2D")
        bias = m.subgraphs[0].tensors[op.inputs[2]]
        data = np.frombuffer(
            bytes(np.asarray(m.buffers[bias.buffer].data, dtype=np.uint8)), dtype=np.int32
        ).copy()
        data[0] = -(2**31)
        m.buffers[bias.buffer].data = data.view(np.uint8)

    _refused(
        edited(KERNEL_MODELS["depthwise_options"](), edit),
        "operator 0 (DEPTHWISE_CONV_2D) bias (input 2) of up to 2,147,483,648 plus 9 products per output",
    )


def test_options_of_another_operator_are_refused() -> None:
    """Found by bench_fuzz: an ADD carrying MulOptions; TFLite reads them as absent (no activation)
    while the generator applied their RELU6, so the outputs differed."""

    def edit(m) -> None:
        add, mul = first_op(m, "ADD"), first_op(m, "MUL")
        add.builtinOptionsType, add.builtinOptions = mul.builtinOptionsType, mul.builtinOptions

    _refused(
        edited(KERNEL_MODELS["add_mul_broadcast"](), edit), "ADD carries MulOptions, expected AddOptions"
    )


def test_random_inputs_refuses_many_large_sets_but_makes_small_ones() -> None:
    def edit(m) -> None:
        sub = m.subgraphs[0]
        sub.tensors[sub.inputs[0]].shape = [1, 1000, 1000, 300]  # 300 MB: legal, but not ten of them

    with pytest.raises(TinyschedError, match="10 random input set"):
        reference.random_inputs(edited(KERNEL_MODELS["conv_options"](), edit), seed=0, count=10)
    (arrays,) = reference.random_inputs(KERNEL_MODELS["conv_options"](), seed=0, count=1)
    assert arrays[0].shape == (1, 11, 9, 3) and arrays[0].dtype == np.int8


# ---- the fuzz test -----------------------------------------------------------------------------

_FUZZ_SEEDS = ("pooling_options", "conv_options", "depthwise_options", "add_mul_broadcast", "shapes_and_copies",
               "data_movement", "fully_connected_options", "mean_logistic_softmax")  # fmt: skip


@needs_gcc
@pytest.mark.host
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(model=st.sampled_from(_FUZZ_SEEDS), seed=st.integers(0, 2**31 - 1))
def test_fuzzed_models_build_and_run_clean_under_sanitizers(model: str, seed: int) -> None:
    """Mutants either are refused in one line (exit 2) or build, run under ASan/UBSan with no report
    and match the reference (exit 0). 20 runs of 0.5-2 s each here; bench/bench_fuzz.py runs as
    many as asked (docs/BENCHMARKS.md, "Hostile models")."""
    data, edits = mutate(seed_models()[model], seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.tflite"
        path.write_bytes(data)
        outcome = verify_sanitized(path)
    event("built and ran" if outcome.returncode == 0 else "refused")
    assert outcome.returncode in (0, 2) and outcome.kind == "clean", f"{edits}: {outcome.summary()}"
