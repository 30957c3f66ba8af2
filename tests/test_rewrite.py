"""Exact graph rewrites (tinysched/model/rewrite.py): dilated convolutions as the TensorFlow converter writes
them (SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND) become one dilated convolution, PAD/PADV2 become
their reader's padding, and every rewritten and unrewritten model is bit-exact against TFLite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import REPO, shared_model
from tiers import needs_gcc

from tinysched.device.verify import verify
from tinysched.model.modelgen import ModelBuilder, TensorHandle
from tinysched.model.reader import parse_model, read_model
from tinysched.model.rewrite import EXPLICIT, fuse_pads, rewrite_dilated_convolutions, rewrite_graph
from tinysched.pipeline import PlanOptions, generate, plan

# ---- the converter's dilated convolution -------------------------------------------------------


def converter_paddings(
    size: int, kernel: int, rate: int, padding: str
) -> tuple[tuple[int, int], tuple[int, int]]:
    """TensorFlow's with_space_to_batch for one spatial axis: (paddings, crops).

    SAME pads the dilated window's total (eff - 1) split as the smaller half first; then both pad
    and crop the end by what makes the padded size a multiple of the rate
    (required_space_to_batch_paddings). VALID pads nothing but that."""
    eff = (kernel - 1) * rate + 1
    base = ((eff - 1) // 2, eff - 1 - (eff - 1) // 2) if padding == "SAME" else (0, 0)
    extra = -(size + base[0] + base[1]) % rate
    return (base[0], base[1] + extra), (0, extra)


def space_to_batch(
    b: ModelBuilder,
    x: TensorHandle,
    rates: tuple[int, int],
    pads: tuple[tuple[int, int], ...],
    name: str,
    stored_batch: int | None = None,
) -> TensorHandle:
    """`stored_batch`: the batch written in the file instead of the true one (a converter writes a
    dynamic batch as 1; TFLite derives the real shape when it prepares the operator)."""
    n, h, w, c = x.shape
    block = b.constant(np.array(rates, dtype=np.int32), name=f"{name}/block")
    paddings = b.constant(np.array(pads, dtype=np.int32), name=f"{name}/paddings")
    batch = n * rates[0] * rates[1] if stored_batch is None else stored_batch
    shape = (batch, (h + sum(pads[0])) // rates[0], (w + sum(pads[1])) // rates[1], c)
    (y,) = b.op(
        "SPACE_TO_BATCH_ND", [x, block, paddings], [shape], schema.SpaceToBatchNDOptionsT(), 2, name=name
    )
    return y


def batch_to_space(
    b: ModelBuilder,
    x: TensorHandle,
    rates: tuple[int, int],
    crops: tuple[tuple[int, int], ...],
    name: str,
    batch: int | None = None,
) -> TensorHandle:
    nb, h, w, c = x.shape
    block = b.constant(np.array(rates, dtype=np.int32), name=f"{name}/block")
    crop = b.constant(np.array(crops, dtype=np.int32), name=f"{name}/crops")
    batch = nb // (rates[0] * rates[1]) if batch is None else batch
    shape = (batch, h * rates[0] - sum(crops[0]), w * rates[1] - sum(crops[1]), c)
    (y,) = b.op("BATCH_TO_SPACE_ND", [x, block, crop], [shape], schema.BatchToSpaceNDOptionsT(), 2, name=name)
    return y


def converter_dilated(
    b: ModelBuilder,
    x: TensorHandle,
    rates: tuple[int, int],
    kernel: tuple[int, int],
    padding: str,
    depthwise: bool = False,
    filters: int = 4,
    name: str = "aspp",
    dynamic_batch: bool = False,
    **conv: object,
) -> TensorHandle:
    """Conv2D / DepthwiseConv2D(dilation_rate=rates) the way the converter writes it; with
    `dynamic_batch` the intermediate tensors' batch is stored as 1, as for a model whose batch is
    dynamic (shape_signature -1)."""
    _, h, w, _ = x.shape
    (ph, ch), (pw, cw) = (
        converter_paddings(s, k, r, padding) for s, k, r in zip((h, w), kernel, rates, strict=True)
    )
    t = space_to_batch(b, x, rates, (ph, pw), f"{name}/s2b", stored_batch=1 if dynamic_batch else None)
    if depthwise:
        t = b.depthwise_conv2d(t, kernel, (1, 1), "VALID", name=f"{name}/dw", **conv)  # type: ignore[arg-type]
    else:
        t = b.conv2d(t, filters, kernel, (1, 1), "VALID", name=f"{name}/conv", **conv)  # type: ignore[arg-type]
    return batch_to_space(b, t, rates, (ch, cw), f"{name}/b2s", batch=x.shape[0])


def aspp_model(size: tuple[int, int] = (13, 11), channels: int = 3, seed: int = 5) -> bytes:
    """An ASPP-like head: one input, dilated branches at rates 2..6, SAME and VALID, conv and
    depthwise, odd sizes; each branch a model output."""
    b = ModelBuilder(seed=seed)
    x = b.input("x", (1, *size, channels), zero_point=-7)
    outs = []
    for rate in range(2, 7):
        for padding in ("SAME", "VALID"):
            if padding == "VALID" and (size[0] - 1 < 2 * rate or size[1] - 1 < 2 * rate):
                continue
            outs.append(converter_dilated(b, x, (rate, rate), (3, 3), padding, name=f"r{rate}_{padding}"))
    outs.append(converter_dilated(b, x, (2, 3), (3, 2), "SAME", depthwise=True, name="dw_23"))
    outs.append(
        converter_dilated(b, x, (4, 4), (3, 3), "VALID", depthwise=True, activation="RELU", name="dw_4")
    )
    b.output(*outs)
    return b.build()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return path


def test_converter_paddings_match_tensorflow_examples() -> None:
    # 96 with a 3x3 at rate 2, SAME: window 5, pads 2+2, 100 is a multiple of 2: nothing extra.
    assert converter_paddings(96, 3, 2, "SAME") == ((2, 2), (0, 0))
    # 13 at rate 3, SAME: window 7, pads 3+3 -> 19, +2 to 21 (multiple of 3), cropped again.
    assert converter_paddings(13, 3, 3, "SAME") == ((3, 5), (0, 2))
    assert converter_paddings(13, 3, 4, "VALID") == ((0, 3), (0, 3))


def test_dilated_triples_become_one_convolution(tmp_path: Path) -> None:
    graph = parse_model(aspp_model(), "aspp")
    result = rewrite_dilated_convolutions(graph)
    triples = sum(op.opcode == "SPACE_TO_BATCH_ND" for op in graph.operators)
    assert triples == 11 and result.count == triples
    assert result.graph.op_types == {"CONV_2D": 9, "DEPTHWISE_CONV_2D": 2}
    by_name = {result.graph.tensors[op.outputs[0]].name: op for op in result.graph.operators}
    # SAME at rate 3 on 13x11: the converter's pads 3 (+2 extra, cropped) are the dilated SAME padding.
    r3 = by_name["r3_SAME/b2s"]
    assert r3.options["padding"] == "SAME" and r3.options["dilation_hfactor"] == 3
    assert r3.inputs[0] == graph.inputs[0] and r3.options["stride_h"] == 1
    assert by_name["r4_VALID/b2s"].options["padding"] == "VALID"
    dw = by_name["dw_23/b2s"]
    assert (dw.opcode, dw.options["dilation_hfactor"], dw.options["dilation_wfactor"]) == (
        "DEPTHWISE_CONV_2D",
        2,
        3,
    )
    # every rewritten operator stands for its three operators of the input model, the conv first
    for rewrite in result.rewrites:
        ops = [graph.operators[v].opcode for v in rewrite.sources]
        assert ops[0] in ("CONV_2D", "DEPTHWISE_CONV_2D")
        assert sorted(ops[1:]) == ["BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND"]
        assert len(rewrite.removed_tensors) == 2 and rewrite.removed_bytes > 0


def _verify(path: Path, rewrite: bool, n_inputs: int = 4) -> tuple[bool, int, int]:
    planned = plan(read_model(path), PlanOptions(time_limit=2.0, rewrite=rewrite))
    result = verify(path, planned, generate(planned), n_inputs=n_inputs)
    return result.outputs_match, planned.arena.peak_bytes, len(planned.graph.operators)


@needs_gcc
@pytest.mark.host
def test_dilated_rewrite_is_bit_exact_and_lowers_the_peak(tmp_path: Path) -> None:
    path = write(tmp_path, "aspp", aspp_model())
    ok, peak, ops = _verify(path, rewrite=True)
    ok_kept, peak_kept, ops_kept = _verify(path, rewrite=False)
    assert ok and ok_kept  # the one dilated conv and the converter's triple both match TFLite
    assert ops == 11 and ops_kept == 33
    assert peak < peak_kept


def aspp_96_model(dynamic_batch: bool = False) -> bytes:
    """The issue's shape: a 96x96 input, rates 2..6 SAME."""
    b = ModelBuilder(seed=9)
    x = b.input("x", (1, 96, 96, 2))
    feats = b.conv2d(x, 4, (1, 1), name="stem")
    b.output(
        *(
            converter_dilated(b, feats, (r, r), (3, 3), "SAME", name=f"rate{r}", dynamic_batch=dynamic_batch)
            for r in range(2, 7)
        )
    )
    return b.build()


@needs_gcc
@pytest.mark.host
def test_aspp_96_plans_rewritten_and_as_converted(tmp_path: Path) -> None:
    path = write(tmp_path, "aspp96", aspp_96_model())
    ok, peak, ops = _verify(path, rewrite=True, n_inputs=2)
    ok_kept, peak_kept, _ = _verify(path, rewrite=False, n_inputs=2)
    assert ok and ok_kept and ops == 6
    assert peak < peak_kept


@needs_gcc
@pytest.mark.host
def test_dynamic_batch_triple_is_rewritten(tmp_path: Path) -> None:
    """Intermediates stored with batch 1 (the converter's dynamic batch): as written, their sizes
    are wrong and the code generator refuses SPACE_TO_BATCH_ND; rewritten, they are gone."""
    path = write(tmp_path, "aspp96_dyn", aspp_96_model(dynamic_batch=True))
    kept = plan(read_model(path), PlanOptions(time_limit=1.0, rewrite=False))
    assert kept.codegen_note is not None and "output shape does not match" in kept.codegen_note
    ok, _, ops = _verify(path, rewrite=True, n_inputs=2)
    assert ok and ops == 6


def not_rewritable_model() -> bytes:
    """Triples the rewrite must keep: a SPACE_TO_BATCH_ND output read twice, an inner stride 2, a
    crop at the start that the padding does not cover; each runs as written."""
    b = ModelBuilder(seed=3)
    x = b.input("x", (1, 9, 7, 2), zero_point=11)
    outs = []
    # read twice: the space-to-batch output is also a model output
    (ph, ch), (pw, cw) = converter_paddings(9, 3, 2, "SAME"), converter_paddings(7, 3, 2, "SAME")
    s = space_to_batch(b, x, (2, 2), (ph, pw), "shared/s2b")
    outs += [
        s,
        batch_to_space(
            b, b.conv2d(s, 3, (3, 3), (1, 1), "VALID", name="shared/conv"), (2, 2), (ch, cw), "shared/b2s"
        ),
    ]
    # inner stride 2
    s = space_to_batch(b, x, (2, 2), ((0, 1), (0, 1)), "strided/s2b")
    c = b.conv2d(s, 3, (2, 2), (2, 2), "VALID", name="strided/conv")
    outs.append(batch_to_space(b, c, (2, 2), ((0, 0), (0, 0)), "strided/b2s"))
    # crops at the start beyond the padding: the equivalent convolution would start inside the input
    s = space_to_batch(b, x, (3, 3), ((0, 3), (0, 2)), "crop/s2b")
    c = b.conv2d(s, 3, (2, 2), (1, 1), "VALID", name="crop/conv")
    outs.append(batch_to_space(b, c, (3, 3), ((2, 0), (1, 0)), "crop/b2s"))
    b.output(*outs)
    return b.build()


def test_inexact_triples_are_kept() -> None:
    graph = parse_model(not_rewritable_model(), "kept")
    assert rewrite_graph(graph).count == 0


@needs_gcc
@pytest.mark.host
def test_kept_triples_run_bit_exact(tmp_path: Path) -> None:
    """The standalone SPACE_TO_BATCH_ND (padded) and BATCH_TO_SPACE_ND (cropped) lowerings."""
    path = write(tmp_path, "kept", not_rewritable_model())
    ok, _, ops = _verify(path, rewrite=True)
    assert ok and ops == 9


# ---- PAD fusion ---------------------------------------------------------------------------------


def padv2(
    b: ModelBuilder, x: TensorHandle, pads: list[tuple[int, int]], value: int, name: str
) -> TensorHandle:
    paddings = b.constant(np.array(pads, dtype=np.int32), name=f"{name}/paddings")
    constant = b.constant(np.array(value, dtype=np.int8), quant=x.quant, name=f"{name}/value")
    shape = tuple(d + p + q for d, (p, q) in zip(x.shape, pads, strict=True))
    (y,) = b.op("PADV2", [x, paddings, constant], [shape], schema.PadV2OptionsT(), 2, name=name)
    return y


def pad_model() -> bytes:
    """PADs that fuse (zero point before convolutions, -128 or a RELU-bounded zero point before
    MAX_POOL_2D) and PADs that must stay (before AVERAGE_POOL_2D, a PADV2 value other than the zero
    point, a pad read twice, a max pool whose window can lie in the padding alone)."""
    b = ModelBuilder(seed=17)
    x = b.input("x", (1, 11, 9, 3), zero_point=-3)
    outs = []
    # fuse: asymmetric pad into a stride-2 VALID conv (as the converter writes PyTorch's padding)
    outs.append(
        b.conv2d(b.pad(x, [(0, 0), (1, 2), (2, 0), (0, 0)]), 4, (3, 3), (2, 2), "VALID", name="conv_s2")
    )
    # fuse: pad into a SAME depthwise (the pads add up)
    t = b.conv2d(x, 4, (1, 1), activation="RELU", name="relu_conv")
    outs.append(
        b.depthwise_conv2d(b.pad(t, [(0, 0), (1, 1), (1, 1), (0, 0)]), (3, 3), (1, 1), "SAME", name="dw_same")
    )
    # fuse: PADV2 with the zero point as its constant into a dilated conv
    outs.append(
        b.conv2d(
            padv2(b, x, [(0, 0), (2, 2), (2, 2), (0, 0)], -3, "pv2"),
            3,
            (3, 3),
            (1, 1),
            "VALID",
            dilation=(2, 2),
            name="conv_dil",
        )
    )
    # fuse: the RELU output's zero point (-20) is its minimum and every window covers a real element
    t = b.conv2d(x, 4, (1, 1), activation="RELU", output_quant=(0.05, -20), name="relu_zp")
    outs.append(b.max_pool2d(b.pad(t, [(0, 0), (1, 1), (1, 1), (0, 0)]), (3, 3), (2, 2), name="maxpool_relu"))
    # keep: a PADV2 of another value before a conv
    outs.append(
        b.conv2d(
            padv2(b, x, [(0, 0), (1, 1), (1, 1), (0, 0)], 40, "pv2_other"),
            3,
            (3, 3),
            (1, 1),
            "VALID",
            name="conv_other",
        )
    )
    # keep: average pooling counts padded elements
    outs.append(b.average_pool2d(b.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)]), (3, 3), (2, 2), name="avgpool"))
    # keep: zero point -3 is no lower bound of an unclamped tensor
    outs.append(b.max_pool2d(b.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)]), (2, 2), (2, 2), name="maxpool_raw"))
    # keep: a window of padding alone (pad 3 before a 2x2 stride-2 window) would give the pad value
    outs.append(
        b.max_pool2d(b.pad(t, [(0, 0), (3, 0), (0, 0), (0, 0)]), (2, 2), (2, 2), name="maxpool_empty")
    )
    # keep: a pad read twice
    shared = b.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], name="shared_pad")
    outs += [
        b.conv2d(shared, 2, (3, 3), (1, 1), "VALID", name="shared_a"),
        b.depthwise_conv2d(shared, (3, 3), (1, 1), "VALID", name="shared_b"),
    ]
    # fuse: pad of -128 before a max pool on any input
    y = b.input("y", (1, 6, 6, 2), zero_point=-128)
    outs.append(b.max_pool2d(b.pad(y, [(0, 0), (0, 1), (1, 0), (0, 0)]), (2, 2), (2, 2), name="maxpool_min"))
    b.output(*outs)
    return b.build()


def test_pads_fuse_exactly_where_bit_identical() -> None:
    graph = parse_model(pad_model(), "pads")
    result = fuse_pads(graph)
    fused = {graph.tensors[graph.operators[r.sources[0]].outputs[0]].name for r in result.rewrites}
    assert fused == {"conv_s2", "dw_same", "conv_dil", "maxpool_relu", "maxpool_min"}
    ops = {result.graph.tensors[op.outputs[0]].name: op for op in result.graph.operators}
    # rows: pad 1 + VALID; columns: pad 2 + VALID -> explicit (SAME would be 1 top, 0 left)
    assert ops["conv_s2"].options["padding"] == EXPLICIT
    assert tuple(ops["conv_s2"].options["explicit_padding"][::2]) == (1, 2)
    assert ops["dw_same"].options["explicit_padding"][::2] == (2, 2)
    # pad 2 around a VALID 3x3 at dilation 2 is exactly SAME
    assert ops["conv_dil"].options["padding"] == "SAME"
    assert sum(op.opcode in ("PAD", "PADV2") for op in result.graph.operators) == 5
    assert result.graph.activation_tensors != graph.activation_tensors


@needs_gcc
@pytest.mark.host
def test_pad_fusion_is_bit_exact(tmp_path: Path) -> None:
    path = write(tmp_path, "pads", pad_model())
    ok, peak, ops = _verify(path, rewrite=True)
    ok_kept, peak_kept, ops_kept = _verify(path, rewrite=False)
    assert ok and ok_kept and ops_kept - ops == 5 and peak <= peak_kept


def pad_into_dilated_model() -> bytes:
    """PAD -> SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND: both rewrites on one operator."""
    b = ModelBuilder(seed=29)
    x = b.input("x", (1, 10, 10, 2), zero_point=5)
    p = b.pad(x, [(0, 0), (1, 0), (0, 1), (0, 0)])
    b.output(converter_dilated(b, p, (2, 2), (3, 3), "SAME", name="d"))
    return b.build()


@needs_gcc
@pytest.mark.host
def test_pad_before_dilated_triple(tmp_path: Path) -> None:
    graph = parse_model(pad_into_dilated_model(), "pd")
    result = rewrite_graph(graph)
    assert [r.kind for r in result.rewrites] == ["dilated_conv", "pad_fusion"]
    assert len(result.graph.operators) == 1 and sorted(result.operator_map[0]) == [0, 1, 2, 3]
    assert result.operator_map[0][0] == 2  # the conv, as the model stores it
    path = write(tmp_path, "pd", pad_into_dilated_model())
    assert _verify(path, rewrite=True)[0]


# ---- operator indices of the input model --------------------------------------------------------


def test_plan_json_reports_input_model_indices(tmp_path: Path) -> None:
    path = write(tmp_path, "aspp", aspp_model())
    run = subprocess.run(
        [sys.executable, "-m", "tinysched.cli", "plan", str(path), "--json", "--time-limit", "1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    payload = json.loads(run.stdout)
    graph = read_model(path)
    model_order = payload["model_order"]
    assert len(model_order) == len(payload["order"]) == 11
    assert {graph.operators[v].opcode for v in model_order} == {"CONV_2D", "DEPTHWISE_CONV_2D"}
    covered = sorted(v for ops in payload["operator_model_ops"] for v in ops)
    assert covered == list(range(len(graph.operators)))
    assert sorted(payload["rewritten_operator_indices"]) == sorted(
        v for v, op in enumerate(graph.operators) if op.opcode in ("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND")
    )
    assert len(payload["rewrites"]) == 11 and payload["rewrites"][0]["kind"] == "dilated_conv"


def test_mcunet_vww_peak_pad_is_fused() -> None:
    """Issue 15: the peak step of mcunet_vww is PAD 40x40x48 -> 42x42x48; fused, no padded tensor."""
    graph = read_model(shared_model("mcunet_vww_int8"))
    # the fusion's own saving, in the tensor model (whole tensors)
    baseline = plan(graph, PlanOptions(time_limit=2.0, rewrite=False, memory_model="tensor"))
    planned = plan(graph, PlanOptions(time_limit=2.0, memory_model="tensor"))
    assert baseline.arena.peak_bytes == 161_472
    assert planned.arena.peak_bytes == 96_000  # 40x40x48 in + 20x20x48 out of the depthwise conv
    # the default (refined) goes below it: the certified refined peak, the fusion applied alike
    refined = plan(graph, PlanOptions(time_limit=2.0))
    kinds = [r.kind for r in refined.rewriting.rewrites]
    assert kinds.count("pad_fusion") == 4 and refined.schedule.certified
    assert refined.arena.peak_bytes == refined.schedule.peak_bytes < 96_000
    assert planned.rewriting.count == 4 and len(planned.rewritten_operators) == 4
    assert all(graph.operators[v].opcode == "PAD" for v in planned.rewritten_operators)
    # every planned operator names operators of the input model; together they are all of them
    assert sorted(v for ops in planned.operator_sources for v in ops) == list(range(len(graph.operators)))


def test_metadata_names_input_model_operators() -> None:
    from tinysched.report.metadata import collect_metadata

    graph = parse_model(pad_model(), "pads")
    planned = plan(graph, PlanOptions(time_limit=1.0))
    doc = collect_metadata(planned)
    sched = doc["schedule"]
    assert sched["model_order"] == [planned.source_operator(v) for v in sched["order"]]
    assert sorted(sched["model_order"] + sched["rewritten_model_ops"]) == list(range(len(graph.operators)))
    assert all(graph.operators[v].opcode in ("PAD", "PADV2") for v in sched["rewritten_model_ops"])
    for entry in doc["operators"]:
        model_op = graph.operators[entry["model_op"]]
        assert model_op.opcode == entry["type"] and entry["model_op"] in entry["model_ops"]
        # a fused operator also names its PAD, which precedes it in the file
        assert all(
            graph.operators[v].opcode in ("PAD", "PADV2")
            for v in entry["model_ops"]
            if v != entry["model_op"]
        )
    assert len(sched["rewrites"]) == 5 and {r["kind"] for r in sched["rewrites"]} == {"pad_fusion"}
    # the per-operator table credits each fused PAD's removed tensor to the operator it went into
    fused = {r["operator"]: r["removed_bytes"] for r in sched["rewrites"]}
    credited = {
        e["op"]: x["bytes"] for e in doc["operators"] for x in e["saved"] if x["technique"] == "pad_fusion"
    }
    assert credited == fused and all(b > 0 for b in fused.values())
