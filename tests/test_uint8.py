"""Legacy uint8-quantised models computed as int8 (tinysched/model/uint8.py): the graph the pipeline
plans, the edges of both interfaces, the two roundings uint8 does its own way, bit-exact outputs and
the measured arena against TFLite, and coral_deeplabv3_mnv2_dm05_uint8 at full size. The fast-path
models uint8_legacy_layers and uint8_legacy_stream also run on M7, M55, M4 and M33
(tests/test_kernels_fast.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from fast_path_models import (
    uint8_legacy_conv_sums,
    uint8_legacy_depthwise_blocks,
    uint8_legacy_layers,
    uint8_legacy_more_ops,
    uint8_legacy_pixel_tables,
    uint8_legacy_stream,
)
from helpers import generate_for_measure, measured_equal_on_qemu
from tiers import needs_gcc, require

from tinysched.build.sources import write_sources
from tinysched.codegen import check_supported
from tinysched.codegen.lower_conv import acc_reach, filter_reach, pixel_table, rq_table
from tinysched.codegen.quant import quantize_multiplier
from tinysched.device.reference import interface_inputs, reference_io, run_reference
from tinysched.device.verify import verify
from tinysched.errors import TinyschedError
from tinysched.memory.stream import stream_of
from tinysched.model.interface import UINT8_EDGE, choose_interface
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model, read_model
from tinysched.model.resize import bilinear_map
from tinysched.model.uint8 import UINT8_ROUNDING
from tinysched.pipeline import PlanOptions, generate, plan
from tinysched.report.render import io_sentence


def _saved(tmp_path: Path, build) -> Path:
    path = tmp_path / f"{build.__name__}.tflite"
    path.write_bytes(build())
    return path


def test_every_uint8_tensor_is_int8_and_the_edges_stay_uint8_through_quantizes() -> None:
    model = parse_model(uint8_legacy_layers())
    planned = plan(model, PlanOptions(time_limit=2.0))
    graph, retyping = planned.graph, planned.interface.retyping
    assert retyping is not None and retyping.changed and retyping.refusal is None
    # the model's edges are its own uint8 tensors; inside, nothing computes on uint8
    assert [graph.tensors[t].dtype for t in graph.inputs] == ["uint8"]
    assert [graph.tensors[t].dtype for t in graph.outputs] == ["int64", "uint8", "uint8", "uint8"]
    for op in graph.operators:
        dtypes = {graph.tensors[t].dtype for t in (*op.input_tensors, *op.outputs)}
        assert "uint8" not in dtypes or op.opcode == "QUANTIZE", op
    quantizes = [op for op in graph.operators if op.opcode == "QUANTIZE" and op.index in retyping.inserted]
    assert len(quantizes) == 4 == len(retyping.inserted)
    (head,) = [op for op in quantizes if op.inputs[0] in graph.inputs]
    assert graph.tensors[head.outputs[0]].dtype == "int8"
    assert (graph.tensors[head.outputs[0]].quantization.zero_point[0]) == (  # type: ignore[union-attr]
        model.tensors[model.inputs[0]].quantization.zero_point[0] - 128  # type: ignore[union-attr]
    )
    # each filter: the uint8 bytes xor 0x80, its zero point - 128 (not 0: a filter offset, but for
    # the three of zero point 128, symmetric int8 filters the default kernels run)
    zero_points = []
    for op in graph.operators:
        if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            ours, theirs = graph.tensors[op.inputs[1]], model.tensors[op.inputs[1]]
            assert ours.dtype == "int8" and theirs.dtype == "uint8"
            assert np.array_equal(np.asarray(ours.data).view(np.uint8), np.asarray(theirs.data) ^ 0x80)
            zero_point = ours.quantization.zero_point[0]  # type: ignore[union-attr]
            assert zero_point == theirs.quantization.zero_point[0] - 128  # type: ignore[union-attr]
            zero_points.append(zero_point)
    assert len(zero_points) == 8 and zero_points.count(0) == 3 and -128 in np.asarray(ours.data)
    rounded = sorted(op.opcode for op in graph.operators if op.options.get(UINT8_ROUNDING))
    assert rounded == ["AVERAGE_POOL_2D"] * 2 + ["RESIZE_BILINEAR"] * 3
    module = generate(planned, "u8")
    assert {"ts_legacy_uint8", "ts_resize_bilinear_float_s8"} <= set(module.kernels)
    kernels = {k for _, k in module.op_kernels}
    assert {"ts_conv2d_filter_offset_s8", "ts_depthwise_conv2d_filter_offset_s8"} <= kernels
    assert {"ts_avg_pool2d_half_up_s8", "ts_resize_bilinear_float_s8"} <= kernels
    assert [k for op, k in module.op_kernels if op in retyping.inserted] == ["ts_flip_sign_8bit"] * 4
    assert {"ts_conv2d_s8", "ts_depthwise_conv2d_s8"} <= set(module.kernels)  # zero point 128 filters
    assert planned.interface.as_json()["uint8"] == {
        "retyped_tensors": len(retyping.retyped),
        "offset_filters": 5,
        "edge_quantizes": 4,
        "uint8_inputs": [0],
        "uint8_outputs": [1, 2, 3],
    }
    assert "legacy uint8 model computed as int8" in planned.interface.summary()
    assert io_sentence(planned.interface.as_json()) == (
        f"the model's own inputs and outputs; legacy uint8 model computed as int8 ({len(retyping.retyped)} "
        "uint8 tensors as int8, 5 filters with a filter offset)"
    )


def test_io_int8_gives_the_uint8_edges_as_the_int8_tensors() -> None:
    planned = plan(parse_model(uint8_legacy_layers()), PlanOptions(time_limit=2.0, io="int8"))
    graph, edges = planned.graph, planned.interface.edges
    assert [(e.role, e.position, e.opcode, e.removed_bytes) for e in edges] == [
        ("input", 0, UINT8_EDGE, 0),
        ("output", 1, UINT8_EDGE, 0),
        ("output", 2, UINT8_EDGE, 0),
        ("output", 3, UINT8_EDGE, 0),
    ]
    assert {graph.tensors[t].dtype for t in graph.inputs} == {"int8"}
    assert not any(op.opcode == "QUANTIZE" and op.inputs[0] in graph.inputs for op in graph.operators)
    header = generate(planned, "u8").files["u8.h"]
    assert "--io int8: the model's uint8 input as int8, q = uint8 q - 128 (xor 0x80)" in header
    assert f"#define U8_INPUT0_ZERO_POINT {edges[0].zero_point}\n" in header


def test_an_int8_model_with_uint8_edges_is_left_as_it_is() -> None:
    """An int8 model's uint8 edge QUANTIZEs are conversions, not uint8 arithmetic: no retyping."""
    b = ModelBuilder(seed=3)
    u = b.input("u", (1, 4, 4, 2), dtype="uint8", scale=1 / 50, zero_point=128)
    q = b.quantize(u, 1 / 40, -3, "int8")
    b.output(b.quantize(b.conv2d(q, 3, (1, 1)), 1 / 30, 120, "uint8"))
    graph = parse_model(b.build())
    chosen = choose_interface(graph, "model")
    assert chosen.graph is graph and chosen.retyping is None


def test_an_operator_without_an_exact_int8_form_refuses_the_model_in_one_line() -> None:
    b = ModelBuilder(seed=4)
    x = b.input("x", (1, 3, 3, 2), dtype="uint8", scale=1 / 50, zero_point=120)
    y = b.input("y", (1, 3, 3, 2), dtype="uint8", scale=1 / 30, zero_point=100)
    (z,) = b.op(
        "CONCATENATION",
        [x, y],
        [(1, 3, 3, 4)],
        schema.ConcatenationOptionsT(axis=3),
        output_quant=(1 / 40, 110),
    )
    b.output(z)
    graph = parse_model(b.build())
    planned = plan(graph, PlanOptions(time_limit=1.0))
    assert planned.interface.retyping is not None and not planned.interface.retyping.changed
    assert planned.codegen_note == (
        "operator 0 (CONCATENATION) computes on uint8 and cannot be computed exactly as int8: TFLite's "
        "uint8 CONCATENATION requantises differing inputs in float, not exact as int8 (legacy uint8 "
        "models are otherwise computed as int8)"
    )
    with pytest.raises(TinyschedError, match=r"^operator 0 \(CONCATENATION\) computes on uint8"):
        check_supported(graph)


@pytest.mark.parametrize("opcode", ["MEAN", "LOGISTIC"])
def test_uint8_mean_and_logistic_are_refused_in_one_line(opcode: str) -> None:
    """TFLite's uint8 MEAN and LOGISTIC are not the int8 arithmetic on shifted bytes (tinysched.model.uint8)."""
    b = ModelBuilder(seed=5, legacy_uint8=True)
    x = b.input("x", (1, 4, 4, 3), scale=1 / 50, zero_point=7)
    y = b.mean(x, [1, 2], keepdims=True) if opcode == "MEAN" else b.logistic(x)
    b.output(y)
    planned = plan(parse_model(b.build()), PlanOptions(time_limit=1.0))
    why = {
        "MEAN": "TFLite's uint8 MEAN sums the raw bytes and subtracts a truncated zero-point term, not exact "
        "as int8",
        "LOGISTIC": "TFLite's uint8 LOGISTIC reads a float-populated table, int8 a fixed-point formula",
    }[opcode]
    assert planned.codegen_note == (
        f"operator 0 ({opcode}) computes on uint8 and cannot be computed exactly as int8: {why} (legacy "
        "uint8 models are otherwise computed as int8)"
    )


def _lanes(low: int, high: int) -> int:
    word = (low & 0xFFFF) | ((high & 0xFFFF) << 16)
    return word - (1 << 32) if word >= 1 << 31 else word


def test_legacy_depthwise_layers_take_the_int8_blocks_of_the_offset_filter() -> None:
    """sum((x + xo) * (w + wo)) = sum((x + xo) * w') with w' = w + wo in [-255, 255], a 16-bit lane:
    a legacy uint8 depthwise layer keeps its own kernel (ts_depthwise_conv2d_filter_offset_s8, the
    loop on the host and Helium cores) with the int8 blocks of w' for DSP cores, where in_c is a
    multiple of 4; the blocks' ts_rq fields are checked for accumulators reaching max|w'| per
    product, not 128."""
    graph = parse_model(uint8_legacy_depthwise_blocks())
    planned = plan(graph, PlanOptions(time_limit=2.0))
    module = generate(planned, "u8")
    assert {"ts_legacy_uint8", "ts_depthwise_conv2d_s8"} <= set(module.kernels)  # the blocks path's file
    text = module.files["u8.c"]
    graph = planned.graph
    with_blocks, without = [], []
    for op in graph.operators:
        if op.opcode != "DEPTHWISE_CONV_2D":
            continue
        name = graph.tensors[op.outputs[0]].name.split("/")[0]  # an output edge's is "<name>/int8"
        (kernel,) = [k for o, k in module.op_kernels if o == op.index]
        assert kernel == "ts_depthwise_conv2d_filter_offset_s8", name
        (with_blocks if f"u8_op{op.index}_blocks" in text else without).append(name)
        w = graph.tensors[op.inputs[1]]
        offset = -int(w.quantization.zero_point[0])  # type: ignore[union-attr]
        reach = int(np.abs(np.asarray(w.data).astype(np.int64) + offset).max())
        assert filter_reach(graph, op, offset) == reach
        if name in ("u8b_dw_k3_far_low", "u8b_dw_k3_s2_far_high"):
            assert reach == 255  # uint8 filter zero points 255 and 0 against a byte at the far end
    assert without == ["u8b_dw_c6_own_loop"]  # 6 channels: the tail channels' formula reads raw bytes
    assert len(with_blocks) == 7
    # the first block's lanes hold w + filter_offset: tap 0, channels [0 | 2] and [1 | 3]
    (op,) = [
        o
        for o in graph.operators
        if o.opcode == "DEPTHWISE_CONV_2D"
        and graph.tensors[o.outputs[0]].name.startswith("u8b_dw_k3_far_low")
    ]
    w = graph.tensors[op.inputs[1]]
    wp = np.asarray(w.data).astype(np.int64).reshape(9, -1) - int(w.quantization.zero_point[0])  # type: ignore[union-attr]
    first = [_lanes(int(wp[0, 0]), int(wp[0, 2])), _lanes(int(wp[0, 1]), int(wp[0, 3]))]
    body = text.split(f"u8_op{op.index}_blocks[")[1].split("};")[0]
    body = re.sub(r"/\*.*?\*/", "", body.split("{", 1)[1], flags=re.S)
    words = [int(v) for v in body.split(",") if v.strip()]
    assert words[20:22] == first and min(wp.reshape(-1)) == -255
    assert acc_reach(9, 128, 255) == 9 * 255 * 255 and acc_reach(9, 128) == 9 * 255 * 128
    # a Helium core's plan: no blocks (its depthwise paths read the raw filter), the kernel's own loop
    helium = plan(
        parse_model(uint8_legacy_depthwise_blocks()), PlanOptions(time_limit=2.0, core="cortex-m55")
    )
    assert "_blocks" not in generate(helium, "u8").files["u8.c"]


def test_legacy_conv_layers_get_ts_rq_fields_for_the_offset_filter_reach() -> None:
    """ts_conv2d_filter_offset_s8 on DSP cores: the generator's ts_rq fields per output channel, made
    for accumulators reaching max|x + input_offset| * max|w + filter_offset| per product (up to 255,
    not int8's 128), and none where a channel's left shift leaves its accumulators outside ts_rq's
    bound (the kernel's formula); none for a Helium core's plan."""
    planned = plan(parse_model(uint8_legacy_conv_sums()), PlanOptions(time_limit=2.0))
    graph, module = planned.graph, generate(planned, "u8")
    text = module.files["u8.c"]
    with_rq, without = [], []
    for op in graph.operators:
        if op.opcode != "CONV_2D":
            continue
        name = graph.tensors[op.outputs[0]].name.split("/")[0]
        x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
        offset = -int(w.quantization.zero_point[0])  # type: ignore[union-attr]
        ratio = (
            float(x.quantization.scale[0]) * float(w.quantization.scale[0]) / float(y.quantization.scale[0])
        )  # type: ignore[union-attr]
        mult, shift = quantize_multiplier(ratio)
        out_c = w.shape[0]
        fields = rq_table(
            graph, op, [mult] * out_c, [shift] * out_c, int(y.quantization.zero_point[0]), offset
        )  # type: ignore[union-attr]
        assert fields is not None
        if f"u8_op{op.index}_rq" in text:
            with_rq.append(name)
            assert all(fields[4 * c + 1] != 0 for c in range(out_c))
        else:
            without.append(name)
            assert any(fields[4 * c + 1] == 0 for c in range(out_c))  # a channel the formula takes
    assert without == ["u8c_pw_10_no_rq"] and len(with_rq) == 7
    stems = re.findall(r"\.stem = (u8_op\d+_stem),", text)
    assert len(stems) == 2  # the 3x3 layers over 3 channels: the stem path's table
    helium = plan(parse_model(uint8_legacy_conv_sums()), PlanOptions(time_limit=2.0, core="cortex-m55"))
    helium_text = generate(helium, "u8").files["u8.c"]
    assert ".rq = " not in helium_text and ".stem = " not in helium_text


def test_legacy_pointwise_layers_take_the_pixel_table_of_the_offset_filter() -> None:
    """A legacy uint8 1x1 layer the pixel path would take keeps its own kernel with the pixel table
    of w' = w + filter_offset on DSP cores (whole layers and a stage's member): lanes w' << l1 (every
    one an int16, here with w' down to -255), the first word (bias + input_offset * sum(w')) << l1;
    none for a Helium core's plan."""
    planned = plan(parse_model(uint8_legacy_pixel_tables()), PlanOptions(time_limit=2.0))
    text = generate(planned, "u8").files["u8.c"]
    tables = re.findall(r"\.pixel_table = (u8_op\d+(?:_stage\d+)?_pixel_table),", text)
    assert len(tables) == 6  # every 1x1 layer but the projection (out_c < in_c)
    graph = planned.graph
    (op,) = [
        o
        for o in graph.operators
        if o.opcode == "CONV_2D" and graph.tensors[o.outputs[0]].name.startswith("u8p_8_13_far_low")
    ]
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    offset = -int(w.quantization.zero_point[0])  # type: ignore[union-attr]
    assert offset == -127 and filter_reach(graph, op, offset) == 255
    ratio = float(x.quantization.scale[0]) * float(w.quantization.scale[0]) / float(y.quantization.scale[0])  # type: ignore[union-attr]
    mult, shift = quantize_multiplier(ratio)
    zp = int(y.quantization.zero_point[0])  # type: ignore[union-attr]
    table = pixel_table(graph, op, [mult] * 13, [shift] * 13, zp, (-128, 127), offset)
    assert table is not None and f"u8_op{op.index}_pixel_table" in tables
    fields = rq_table(graph, op, [mult] * 13, [shift] * 13, zp, offset)
    assert fields is not None
    l1 = fields[1]
    wp = np.asarray(w.data).astype(np.int64).reshape(13, 8) + offset
    bias = int(np.asarray(graph.tensors[op.inputs[2]].data)[0])
    x_zp = int(x.quantization.zero_point[0])  # type: ignore[union-attr]
    assert table[0] == ((bias - x_zp * int(wp[0].sum())) << l1)
    assert table[1] == _lanes(int(wp[0, 0]) << l1, int(wp[0, 2]) << l1)
    assert int(wp.min()) == -255 and -255 << l1 >= -(1 << 15)
    helium = plan(parse_model(uint8_legacy_pixel_tables()), PlanOptions(time_limit=2.0, core="cortex-m55"))
    assert ".pixel_table = " not in generate(helium, "u8").files["u8.c"]


def _tensor(result, name: str) -> np.ndarray:
    (index,) = [d["index"] for d in result.tensor_details if d["name"] == name]
    return np.asarray(result.tensors[index])


def test_uint8_rounds_average_pool_ties_up_and_resizes_in_float(tmp_path: Path) -> None:
    """What the kernels' uint8 variants are for: on these inputs TFLite's uint8 AVERAGE_POOL_2D and
    RESIZE_BILINEAR give other bytes than its int8 kernels' arithmetic would on the xor'd bytes
    (half away from zero; the 10-bit integer resize), and exactly ts_avg_pool2d_half_up_s8's and
    ts_resize_bilinear_float_s8's formulas."""
    path = _saved(tmp_path, uint8_legacy_layers)
    rng = np.random.default_rng(9)
    x = rng.integers(0, 256, (1, 9, 11, 3), dtype=np.uint8)
    result = run_reference(path, [x], preserve_all_tensors=True)
    assert result.resolver == "BUILTIN_REF"
    # the 2x2 SAME pool (stride 1): windows of 4, 2 (last row or column) and 1 (the corner)
    pin = _tensor(result, "u8_dw").astype(np.int64) - 128
    pout = _tensor(result, "u8_avg_2x2").astype(np.int64) - 128
    padded = np.pad(pin[0], ((0, 1), (0, 1), (0, 0)))
    counts = np.pad(np.ones(pin.shape[1:3]), ((0, 1), (0, 1)))
    sums = sum(padded[i : i + pin.shape[1], j : j + pin.shape[2]] for i in (0, 1) for j in (0, 1))
    n = sum(counts[i : i + pin.shape[1], j : j + pin.shape[2]] for i in (0, 1) for j in (0, 1))
    n = n.astype(np.int64)[..., None]
    half_up = (sums + 128 * n + n // 2) // n - 128
    away = np.where(sums > 0, (sums + n // 2) // n, -((-sums + n // 2) // n))
    assert np.array_equal(half_up, pout[0])
    assert np.count_nonzero(away != pout[0]) > 0  # int8's rounding would differ
    # the align_corners resize 5x6 -> 9x11 of the ADD's output
    rin = _tensor(result, "u8_add").astype(np.int64)
    rout = _tensor(result, "bilinear_u8_align").astype(np.int64)
    lo_y, hi_y, w_y = bilinear_map(5, 9, True, False)
    lo_x, hi_x, w_x = bilinear_map(6, 11, True, False)
    q = rin[0] - 128
    wy, wx = np.array(w_y)[:, None, None], np.array(w_x)[None, :, None]
    acc = (
        q[lo_y][:, lo_x] * (1024 - wy) * (1024 - wx)
        + q[hi_y][:, lo_x] * wy * (1024 - wx)
        + q[lo_y][:, hi_x] * (1024 - wy) * wx
        + q[hi_y][:, hi_x] * wy * wx
    )
    integer = np.where(acc > 0, (acc + (1 << 19)) // (1 << 20), -((-acc + (1 << 19)) // (1 << 20)))
    assert np.count_nonzero(integer != rout[0] - 128) > 0  # the int8 kernel's arithmetic would differ


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("io", ["model", "int8"])
@pytest.mark.parametrize(
    "build",
    [
        uint8_legacy_layers,
        uint8_legacy_stream,
        uint8_legacy_more_ops,
        uint8_legacy_depthwise_blocks,
        uint8_legacy_conv_sums,
        uint8_legacy_pixel_tables,
    ],
    ids=lambda f: f.__name__,
)
def test_legacy_uint8_models_bit_exact_on_the_host(build, io: str, tmp_path: Path) -> None:
    path = _saved(tmp_path, build)
    planned = plan(read_model(path), PlanOptions(time_limit=2.0, io=io))
    result = verify(path, planned, generate(planned), n_inputs=4, seed=11, opt="-O1", sanitize=True)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == [] and result.outputs_match and result.inputs == 4


def test_the_stream_model_streams_its_filter_offset_convolutions_and_its_float_resize() -> None:
    planned = plan(parse_model(uint8_legacy_stream()), PlanOptions(time_limit=2.0))
    chains = [[m.opcode for m in s.operators] for op in planned.graph.operators if (s := stream_of(op))]
    assert chains == [
        ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"],
        ["RESIZE_BILINEAR", "ARG_MAX"],
    ]
    assert planned.arena.arena_bytes < (planned.unstreamed_arena_bytes or 0)


@pytest.mark.qemu
def test_legacy_uint8_stream_model_on_cortex_m7_both_interfaces(tmp_path: Path) -> None:
    """QEMU mps2-an500: outputs bit-identical to TFLite and the painted arena high-water the plan's,
    with the model's uint8 edges and with --io int8 (the application's int8 bytes)."""
    require("qemu")
    from tinysched.device.runner import measure_sources

    path = _saved(tmp_path, uint8_legacy_stream)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    measured_equal_on_qemu(gen, tmp_path / "qemu")
    planned = plan(read_model(path), PlanOptions(time_limit=2.0, io="int8"))
    sources = write_sources(generate(planned), tmp_path / "gen_int8")
    sets = interface_inputs(path, planned.interface.edges, seed=3, count=2)
    _, expected = reference_io(path, planned.interface.edges, sets)
    assert sets[0][0].dtype == np.int8
    result = measure_sources(
        sources, "mps2-an500", [[a.tobytes() for a in s] for s in sets],
        [[np.asarray(a).tobytes() for a in e] for e in expected], planned.arena.arena_bytes,
        tmp_path / "qemu_int8", arena_high_water_planned=planned.arena.high_water_bytes,
    )  # fmt: skip
    assert result.outputs_match is True, result.mismatches
    assert result.arena_bytes_measured == planned.arena.high_water_bytes and result.ok


def test_deeplab_plans_with_its_head_and_first_block_streamed() -> None:
    from conftest import shared_model

    graph = read_model(shared_model("coral_deeplabv3_mnv2_dm05_uint8"))
    planned = plan(graph, PlanOptions(time_limit=5.0))
    chains = [[m.opcode for m in s.operators] for op in planned.graph.operators if (s := stream_of(op))]
    assert ["RESIZE_BILINEAR", "ARG_MAX"] in chains
    assert ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"] in chains
    # the head's 22,869 B of scores, one 10,773 B row of the upsampled map and the 2,105,352 B of
    # classes (16-byte aligned): tests/test_stream_resize.py's head alone
    assert planned.arena.arena_bytes == 22_880 + 10_784 + 2_105_360


@needs_gcc
@pytest.mark.host
def test_deeplab_bit_exact_on_the_host_with_its_streamed_plan() -> None:
    from conftest import shared_model

    path = shared_model("coral_deeplabv3_mnv2_dm05_uint8")
    planned = plan(read_model(path), PlanOptions(time_limit=5.0))
    assert sum(1 for op in planned.graph.operators if stream_of(op) is not None) == 2
    result = verify(path, planned, generate(planned), n_inputs=1, seed=7)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == [] and result.outputs_match
