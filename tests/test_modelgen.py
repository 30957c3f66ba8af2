"""The model builder: every op it offers yields a model TFLite's reference kernels run, with
unsaturated outputs, TFLite's tensor conventions, and exact results where numpy can say what they
must be (concatenation, reshape, pad, max and average pooling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

from tinysched.device.reference import random_inputs, run_reference, run_reference_many
from tinysched.model.modelgen import ModelBuilder, TensorHandle, random_branching_model, tiny_demo_model

REF_ONLY = ("BUILTIN_REF",)
OPCODE_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def _unpack(data: bytes) -> schema.ModelT:
    return schema.ModelT.InitFromPackedBuf(data, 0)


def _opcodes(model: schema.ModelT) -> list[tuple[str, int]]:
    """(builtin name, version) of each stored operator."""
    codes = model.operatorCodes
    sub = model.subgraphs[0]
    return [
        (OPCODE_NAMES[codes[op.opcodeIndex].builtinCode], codes[op.opcodeIndex].version)
        for op in sub.operators
    ]


def _every_op_model() -> tuple[bytes, list[str]]:
    b = ModelBuilder(seed=7, description="every builder op")
    x = b.input("x", (1, 12, 12, 8))
    y = b.input("y", (1, 12, 12, 8), scale=0.03, zero_point=-10)
    f = b.input("f", (1, 6, 6, 3), dtype="float32")
    outs: dict[str, TensorHandle] = {}
    outs["conv"] = b.conv2d(x, 8, (3, 3), activation="RELU")
    outs["conv_per_tensor_s2"] = b.conv2d(x, 6, (3, 3), (2, 2), per_channel=False)
    outs["conv_dilated_valid"] = b.conv2d(y, 4, (3, 3), padding="VALID", dilation=(2, 2), activation="RELU6")
    outs["dw"] = b.depthwise_conv2d(x, (3, 3), activation="RELU")
    outs["dw_m2_s2"] = b.depthwise_conv2d(y, (5, 5), (2, 2), depth_multiplier=2, per_channel=False)
    outs["dw_no_bias"] = b.depthwise_conv2d(x, (3, 3), use_bias=False)
    flat = b.reshape(outs["conv"], (1, -1))
    outs["fc"] = b.fully_connected(flat, 10)
    outs["fc_per_channel_relu"] = b.fully_connected(flat, 12, activation="RELU", per_channel=True)
    outs["fc_keep_dims"] = b.fully_connected(y, 5, keep_num_dims=True)
    outs["fc_no_bias"] = b.fully_connected(x, 3, use_bias=False)
    outs["add"] = b.add(x, y)
    outs["add_broadcast_relu"] = b.add(x, b.mean(y, (1, 2)), activation="RELU")
    outs["mul"] = b.mul(x, y)
    outs["mul_gate"] = b.mul(x, b.logistic(b.mean(x, (1, 2))))
    outs["concat_requantized"] = b.concatenation([x, y, outs["dw"]], axis=3)
    outs["avg_pool"] = b.average_pool2d(x, (3, 3), (1, 1), "SAME")
    outs["max_pool"] = b.max_pool2d(y, (2, 2), (2, 2), "VALID")
    outs["softmax"] = b.softmax(outs["fc"], beta=0.5)
    outs["softmax_4d"] = b.softmax(x)
    outs["logistic"] = b.logistic(y)
    outs["pad"] = b.pad(y, [(0, 0), (1, 2), (2, 1), (0, 0)])
    outs["mean_no_keep"] = b.mean(outs["conv"], (1, 2), keepdims=False)
    outs["requantize"] = b.quantize(x, 0.05, 7)
    outs["from_float"] = b.conv2d(b.quantize(f, 0.01, 3), 4, (3, 3))
    outs["relu_generic"] = b.op("RELU", [y], [y.shape], version=2)[0]
    outs["dequantize"] = b.dequantize(outs["add"])
    b.output(*outs.values())
    return b.build(), list(outs)


@pytest.fixture(scope="module")
def every_op() -> tuple[bytes, list[str], list[dict[str, np.ndarray]]]:
    data, names = _every_op_model()
    results = run_reference_many(data, random_inputs(data, seed=1, count=2), resolvers=REF_ONLY)
    return data, names, [dict(zip(names, r.outputs, strict=True)) for r in results]


def test_every_op_runs_with_reference_kernels_at_the_converter_versions(every_op) -> None:
    # (the fixture already ran the model with BUILTIN_REF only, which would have raised)
    data, _, _ = every_op
    assert set(_opcodes(_unpack(data))) == {
        ("CONV_2D", 3),
        ("DEPTHWISE_CONV_2D", 3),
        ("FULLY_CONNECTED", 4),
        ("FULLY_CONNECTED", 5),  # keep_num_dims
        ("ADD", 2),
        ("MUL", 2),
        ("CONCATENATION", 2),
        ("AVERAGE_POOL_2D", 2),
        ("MAX_POOL_2D", 2),
        ("RESHAPE", 1),
        ("SOFTMAX", 2),
        ("LOGISTIC", 2),
        ("PAD", 2),
        ("MEAN", 2),
        ("QUANTIZE", 1),
        ("DEQUANTIZE", 2),
        ("RELU", 2),
    }


def test_outputs_use_their_range_instead_of_saturating(every_op) -> None:
    _, names, runs = every_op
    for name in names:
        out = np.stack([outputs[name] for outputs in runs])
        if out.dtype != np.int8:
            continue
        assert not np.all((out == -128) | (out == 127)), name
        # (-128 is legitimately common: it is real 0 after a fused RELU)
        assert np.mean(out == 127) < 0.03, f"{name} saturates high"
        if out.size >= 16 and name != "softmax_4d":  # softmax over 8 values is mostly tiny
            assert len(np.unique(out)) >= 8, f"{name} uses only {np.unique(out)}"


def test_output_shapes_and_dtypes(every_op) -> None:
    _, _, runs = every_op
    out = runs[0]
    assert out["conv"].shape == (1, 12, 12, 8)
    assert out["conv_per_tensor_s2"].shape == (1, 6, 6, 6)
    assert out["conv_dilated_valid"].shape == (1, 8, 8, 4)
    assert out["dw_m2_s2"].shape == (1, 6, 6, 16)
    assert out["fc"].shape == (1, 10) and out["fc_keep_dims"].shape == (1, 12, 12, 5)
    assert out["fc_no_bias"].shape == (144, 3)
    assert out["concat_requantized"].shape == (1, 12, 12, 24)
    assert out["pad"].shape == (1, 15, 15, 8)
    assert out["mean_no_keep"].shape == (1, 8)
    assert out["dequantize"].dtype == np.float32
    assert out["relu_generic"].min() >= -10  # RELU clamps at y's zero point
    probabilities = (out["softmax"].astype(np.int32) + 128) / 256.0
    assert abs(probabilities.sum() - 1.0) < 0.05


def test_same_seed_same_bytes_and_outputs() -> None:
    assert random_branching_model(3, 4) == random_branching_model(3, 4)
    assert random_branching_model(3, 4) != random_branching_model(4, 4)
    data = random_branching_model(3, 4)
    inputs = random_inputs(data, seed=5, count=1)[0]
    first, second = run_reference_many(data, [inputs, inputs], resolvers=REF_ONLY)
    assert all(np.array_equal(a, b) for a, b in zip(first.outputs, second.outputs, strict=True))


def _exact_model() -> bytes:
    b = ModelBuilder(seed=0)
    x = b.input("x", (1, 6, 6, 3), scale=0.02, zero_point=4)
    y = b.input("y", (1, 6, 6, 2), scale=0.02, zero_point=4)
    c = b.concatenation([x, y], axis=3, requantize=False, name="concat")
    b.output(
        c,
        b.reshape(c, (1, -1), name="flat"),
        b.max_pool2d(x, (2, 2), (2, 2), "VALID", name="max"),
        b.average_pool2d(x, (3, 3), (3, 3), "VALID", name="avg"),
        b.pad(y, [(0, 0), (1, 0), (0, 2), (0, 0)], name="pad"),
    )
    return b.build()


def _avg_pool_int8(x: np.ndarray, k: int) -> np.ndarray:
    """TFLite's int8 average: sum, then divide rounding half away from zero."""
    n, h, w, c = x.shape
    sums = x.astype(np.int64).reshape(n, h // k, k, w // k, k, c).sum(axis=(2, 4))
    count = k * k
    return (np.sign(sums) * ((np.abs(sums) + count // 2) // count)).astype(np.int8)


def test_shape_ops_and_pooling_match_numpy_exactly() -> None:
    data = _exact_model()
    for inputs in random_inputs(data, seed=11, count=1):
        x, y = inputs
        result = run_reference(data, inputs, resolvers=REF_ONLY)
        concat, flat, pooled_max, pooled_avg, padded = result.outputs
        expected = np.concatenate([x, y], axis=3)
        assert np.array_equal(concat, expected)
        assert flat.tobytes() == expected.tobytes() and flat.shape == (1, 180)
        assert np.array_equal(pooled_max, x.reshape(1, 3, 2, 3, 2, 3).max(axis=(2, 4)))
        assert np.array_equal(pooled_avg, _avg_pool_int8(x, 3))
        assert np.array_equal(padded, np.pad(y, [(0, 0), (1, 0), (0, 2), (0, 0)], constant_values=4))


def test_weights_and_biases_follow_tflite_conventions() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 8, 8, 4), scale=0.05, zero_point=3)
    c = b.conv2d(x, 6, (3, 2), name="c")
    d = b.depthwise_conv2d(c, (3, 3), depth_multiplier=2, name="d")
    f = b.fully_connected(b.reshape(d, (1, -1)), 5, per_channel=False, name="f")
    b.output(f)
    data = b.build()
    assert data[4:8] == b"TFL3"
    model = _unpack(data)
    sub = model.subgraphs[0]
    tensors = {t.name.decode(): t for t in sub.tensors}
    assert not model.buffers[0].data  # the empty sentinel
    assert sorted(t.buffer for t in sub.tensors) == list(range(1, len(model.buffers)))

    def check(weight: str, shape: list[int], axis: int, channels: int, input_scale: float) -> None:
        w, bias = tensors[f"{weight}"], tensors[weight.rsplit("/", 1)[0] + "/bias"]
        assert w.shape.tolist() == shape and w.type == schema.TensorType.INT8
        values = np.frombuffer(bytes(model.buffers[w.buffer].data), np.int8)
        assert values.size == np.prod(shape) and values.min() >= -127  # symmetric weights
        assert len(w.quantization.scale) == channels and w.quantization.quantizedDimension == axis
        assert not np.any(w.quantization.zeroPoint)
        assert bias.type == schema.TensorType.INT32 and bias.shape.tolist() == [shape[axis]]
        assert not np.any(bias.quantization.zeroPoint)
        np.testing.assert_allclose(bias.quantization.scale, input_scale * w.quantization.scale, rtol=1e-6)

    check("c/filter", [6, 3, 2, 4], 0, 6, 0.05)
    check("d/filter", [1, 3, 3, 12], 3, 12, c.scale)
    check("f/weights", [5, 8 * 8 * 12], 0, 1, d.scale)
    # constant data is 16-byte aligned, as the converter does it
    root = schema.Model.GetRootAs(data, 0)
    for i in range(root.BuffersLength()):
        buffer = root.Buffers(i)
        if buffer.DataLength():
            assert buffer._tab.Vector(buffer._tab.Offset(4)) % 16 == 0


def _consumers(sub: schema.SubGraphT) -> dict[int, int]:
    counts: dict[int, int] = {}
    for op in sub.operators:
        for t in set(op.inputs.tolist()):
            counts[t] = counts.get(t, 0) + 1
    return counts


def test_random_branching_model_has_the_advertised_branches() -> None:
    for seed in range(3):
        data = random_branching_model(seed, n_blocks=5)
        model = _unpack(data)
        sub = model.subgraphs[0]
        names = [name for name, _ in _opcodes(model)]
        constant = {i for i, t in enumerate(sub.tensors) if model.buffers[t.buffer].data is not None}
        assert {"CONCATENATION", "LOGISTIC", "MUL", "PAD", "MEAN"} <= set(names)
        assert max(n for t, n in _consumers(sub).items() if t not in constant) >= 3
        produced = {t for op in sub.operators for t in op.outputs}
        adds = [
            op
            for op in sub.operators
            if OPCODE_NAMES[model.operatorCodes[op.opcodeIndex].builtinCode] == "ADD"
        ]
        assert any(all(t in produced for t in op.inputs) for op in adds)  # a residual join
        result = run_reference(data, random_inputs(data, seed, 1)[0], resolvers=REF_ONLY)
        assert result.outputs[0].shape == (1, 10)
        assert len(np.unique(result.outputs[0])) >= 4  # the softmax is not near-uniform


def test_shuffled_order_is_valid_and_differs_from_creation_order() -> None:
    shuffled = _unpack(random_branching_model(5, 5, shuffle_order=True)).subgraphs[0]
    plain = _unpack(random_branching_model(5, 5, shuffle_order=False)).subgraphs[0]
    key = [[op.outputs.tolist() for op in sub.operators] for sub in (shuffled, plain)]
    assert sorted(key[0]) == sorted(key[1]) and key[0] != key[1]


def _peak(sub: schema.SubGraphT, constant: set[int], order: list[int]) -> int:
    """Stored-order activation peak: tensors live from production (inputs: step 0) to last read."""
    size = {i: int(np.prod(t.shape)) for i, t in enumerate(sub.tensors)}
    born = {int(t): 0 for t in sub.inputs}
    for step, i in enumerate(order):
        born.update({int(t): step for t in sub.operators[i].outputs})
    dies = dict(born)
    for step, i in enumerate(order):
        for t in sub.operators[i].inputs:
            if t >= 0 and t not in constant:
                dies[int(t)] = max(dies[int(t)], step)
    for t in sub.outputs:
        dies[int(t)] = len(order) - 1
    return max(sum(size[t] for t in born if born[t] <= s <= dies[t]) for s in range(len(order)))


def test_tiny_demo_model_stores_a_wasteful_but_valid_order() -> None:
    data = tiny_demo_model()
    assert data == tiny_demo_model()
    model = _unpack(data)
    sub = model.subgraphs[0]
    weights = sum(len(b.data) for b in model.buffers if b.data is not None)
    assert 2048 <= weights <= 8192 and 10 <= len(sub.operators) <= 16
    assert "QUANTIZE" not in [name for name, _ in _opcodes(model)]
    constant = {i for i, t in enumerate(sub.tensors) if model.buffers[t.buffer].data is not None}
    producer = {int(t): i for i, op in enumerate(sub.operators) for t in op.outputs}
    deps = [{producer[t] for t in op.inputs if t in producer} for op in sub.operators]

    def best(order: list[int], done: frozenset[int]) -> int:
        if len(order) == len(deps):
            return _peak(sub, constant, order)
        ready = [i for i in range(len(deps)) if i not in done and deps[i] <= done]
        return min(best([*order, i], done | {i}) for i in ready)

    stored = _peak(sub, constant, list(range(len(deps))))
    assert (stored, best([], frozenset())) == (22528, 18432)
    result = run_reference(data, random_inputs(data, 0, 1)[0], resolvers=REF_ONLY)
    assert len(np.unique(result.outputs[0])) > 3


def test_build_checks_order_and_outputs(tmp_path: Path) -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 2))
    y = b.conv2d(x, 2, (1, 1))
    with pytest.raises(ValueError, match="at least one output"):
        b.build()
    b.output(b.add(y, x))
    with pytest.raises(ValueError, match="before its inputs exist: conv2d"):
        b.build(op_order=[1, 0])
    with pytest.raises(ValueError, match="permutation"):
        b.build(op_order=[0])
    path = b.save(tmp_path / "m.tflite")
    assert path.read_bytes() == b.build() and [p.name for p in tmp_path.iterdir()] == ["m.tflite"]


def test_generic_op_writes_the_options_table() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 4, 6, 2))
    perm = b.constant(np.array([0, 2, 1, 3], dtype=np.int32), name="perm")
    (t,) = b.op("TRANSPOSE", [x, perm], [(1, 6, 4, 2)], options=schema.TransposeOptionsT(), version=2)
    b.output(t)
    data = b.build()
    op = _unpack(data).subgraphs[0].operators[0]
    assert op.builtinOptionsType == schema.BuiltinOptions.TransposeOptions
    x_in = random_inputs(data, 2, 1)[0]
    result = run_reference(data, x_in, resolvers=REF_ONLY)
    assert np.array_equal(result.outputs[0], x_in[0].transpose(0, 2, 1, 3))
    with pytest.raises(ValueError, match="unknown builtin"):
        b.op("NOT_AN_OP", [x], [(1,)])
