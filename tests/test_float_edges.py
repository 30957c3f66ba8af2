"""Float edges (issue 30, item 8): a float input is quantised as TFLite's reference AffineQuantize
does it, roundf(x / scale) with the quotient in float32 and halves away from zero, and an int8 output
is dequantised to the float32 nearest scale * (q - zero_point). The inputs are built to sit next to
the half steps (k + 0.5) x scale where a double quotient rounds the other way; the grid of every
int8 code covers DEQUANTIZE exhaustively. Compared with the reference interpreter, in the generated C
and in the `--io int8` header's formula."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import host_verify
from tiers import needs_gcc, needs_qemu

from tinysched.build.firmware import firmware_dir
from tinysched.codegen.quant import round_half_away
from tinysched.device import reference
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan

# (scale, zero point) of each float input's QUANTIZE: none a power of two, so quotients round.
EDGES = ((0.023528477, -3), (0.003921569, -128), (0.1, 10))


def _quantized(x: np.ndarray, scale: float, zero_point: int, quotient: type) -> np.ndarray:
    """clamp(round_half_away(x / scale) + zero_point) with the quotient in `quotient` precision."""
    q = [round_half_away(float(quotient(v) / quotient(np.float32(scale)))) + zero_point for v in x]
    return np.clip(np.array(q, dtype=np.int64), -128, 127)


def half_step_inputs(scale: float, zero_point: int) -> np.ndarray:
    """float32 inputs within 6 ulps of (k + 0.5) x scale, for every half step inside the int8 range,
    that round otherwise with a double quotient than with a float32 one."""
    s = np.float32(scale)
    found: set[float] = set()
    for k in range(-128 - zero_point, 127 - zero_point):
        x = np.float32((k + 0.5) * float(s))
        around = [x]
        for direction in (np.float32(np.inf), np.float32(-np.inf)):
            y = x
            for _ in range(6):
                y = np.nextafter(y, direction)
                around.append(y)
        for y in around:
            if round_half_away(float(y / s)) != round_half_away(float(np.float64(y) / np.float64(s))):
                found.add(float(y))
    return np.array(sorted(found), dtype=np.float32)


def grid_inputs(scale: float, zero_point: int) -> np.ndarray:
    """(q - zero_point) x scale in float32 for every int8 code q: each quantises back to q."""
    return (np.arange(-128, 128, dtype=np.float32) - np.float32(zero_point)) * np.float32(scale)


def edge_inputs() -> list[np.ndarray]:
    return [np.concatenate([half_step_inputs(s, z), grid_inputs(s, z)]) for s, z in EDGES]


def float_edge_model(sizes: list[int]) -> bytes:
    """Per edge: a float32 [1, n] input -> QUANTIZE -> RESHAPE [n] -> DEQUANTIZE -> a float32 output."""
    b = ModelBuilder(seed=8)
    outs = []
    for k, ((scale, zero_point), n) in enumerate(zip(EDGES, sizes, strict=True)):
        x = b.input(f"x{k}", (1, n), dtype="float32")
        q = b.quantize(x, scale, zero_point, name=f"quantize{k}")
        outs.append(b.dequantize(b.reshape(q, (n,), name=f"flat{k}"), name=f"dequantize{k}"))
    b.output(*outs)
    return b.build()


@pytest.fixture(scope="module")
def edge_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The model file and an .npz of its half-step and grid inputs."""
    folder = tmp_path_factory.mktemp("float_edges")
    inputs = edge_inputs()
    model = folder / "float_edges.tflite"
    model.write_bytes(float_edge_model([len(x) for x in inputs]))
    npz = folder / "edges.npz"
    np.savez(npz, *[x.reshape(1, -1) for x in inputs])
    return model, npz


def _quantize_outputs(model: Path) -> tuple[reference.ReferenceResult, list[int]]:
    """TFLite's run on the edge inputs, all tensors kept, and the QUANTIZE output tensors."""
    inputs = [x.reshape(1, -1) for x in edge_inputs()]
    result = reference.run_reference(model, inputs, preserve_all_tensors=True)
    graph = parse_model(model.read_bytes())
    return result, [op.outputs[0] for op in graph.operators if op.opcode == "QUANTIZE"]


def test_tflite_quantizes_the_float32_quotient(edge_model: tuple[Path, Path]) -> None:
    """The reference rounds float32(x / scale) on every half-step input, where the double quotient
    rounds the other way, and maps every grid value back to its code."""
    model, _ = edge_model
    result, quantized = _quantize_outputs(model)
    assert result.resolver == "BUILTIN_REF" and result.tensors is not None
    for (scale, zero_point), t in zip(EDGES, quantized, strict=True):
        half = half_step_inputs(scale, zero_point)
        assert len(half) >= 100  # enough half steps where the two quotients disagree
        got = result.tensors[t].reshape(-1).astype(np.int64)
        assert np.array_equal(got[: len(half)], _quantized(half, scale, zero_point, np.float32))
        assert not np.any(got[: len(half)] == _quantized(half, scale, zero_point, np.float64))
        assert np.array_equal(got[len(half) :], np.arange(-128, 128))


@needs_gcc
@pytest.mark.host
def test_generated_quantize_and_dequantize_are_bit_exact_on_half_steps(edge_model: tuple[Path, Path]) -> None:
    model, npz = edge_model
    result = host_verify(model, n_inputs=2, seed=5, input_files=(npz,))
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.outputs_match, result.mismatches


def _hex(x: np.float32) -> str:
    return float(x).hex() + "f"


@needs_gcc
@pytest.mark.host
def test_the_int8_header_formula_rounds_as_tflite(edge_model: tuple[Path, Path], tmp_path: Path) -> None:
    """With --io int8 the firmware quantises its floats itself: the header's SCALE is a float
    literal, so the formula it documents, written in C, is TFLite's QUANTIZE on every half step,
    and its DEQUANTIZE formula gives TFLite's float for every code."""
    model, _ = edge_model
    module = generate(plan(parse_model(model.read_bytes()), PlanOptions(time_limit=1.0, io="int8")), "edge")
    header = module.files["edge.h"]
    assert "x / SCALE in float32" in header
    (tmp_path / "edge.h").write_text(header)
    result, quantized = _quantize_outputs(model)
    assert result.tensors is not None
    inputs = edge_inputs()
    lines = ["#include <math.h>", "#include <stdio.h>", '#include "edge.h"', "int main(void) {", "    int k;"]
    for i, x in enumerate(inputs):
        values = ", ".join(_hex(v) for v in x)
        lines += [
            f"    static const float x{i}[] = {{{values}}};",
            f"    for (k = 0; k < {len(x)}; ++k) {{",
            # roundf or round: with a float SCALE both round the float32 quotient
            f"        double r = round(x{i}[k] / EDGE_INPUT{i}_SCALE);",
            f"        int q = r <= -128 - EDGE_INPUT{i}_ZERO_POINT ? -128",
            f"              : r >= 127 - EDGE_INPUT{i}_ZERO_POINT ? 127 : (int)r + EDGE_INPUT{i}_ZERO_POINT;",
            f"        if (roundf(x{i}[k] / EDGE_INPUT{i}_SCALE) != r) q = 1000;",
            '        printf("%d\\n", q);',
            "    }",
            "    for (k = -128; k < 128; ++k) {",
            f'        printf("%a\\n", (double)(EDGE_OUTPUT{i}_SCALE * (k - EDGE_OUTPUT{i}_ZERO_POINT)));',
            "    }",
        ]
    lines += ["    return 0;", "}"]
    (tmp_path / "edges.c").write_text("\n".join(lines) + "\n")
    exe = tmp_path / "edges"
    flags = ["-std=c99", "-O2", "-Wall", "-Werror", "-ffp-contract=off", f"-I{firmware_dir() / 'include'}"]
    subprocess.run(["gcc", *flags, "-o", str(exe), str(tmp_path / "edges.c"), "-lm"], check=True)
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    graph = parse_model(model.read_bytes())
    dequantized = [op.outputs[0] for op in graph.operators if op.opcode == "DEQUANTIZE"]
    at = 0
    for x, q_tensor, d_tensor in zip(inputs, quantized, dequantized, strict=True):
        ours_q = [int(v) for v in printed[at : at + len(x)]]
        at += len(x)
        assert ours_q == result.tensors[q_tensor].reshape(-1).tolist()
        ours_d = np.array([float.fromhex(v) for v in printed[at : at + 256]], dtype=np.float32)
        at += 256
        theirs_d = result.tensors[d_tensor].reshape(-1)[len(x) - 256 :]  # the grid: every code in order
        assert np.array_equal(ours_d.view(np.int32), theirs_d.view(np.int32))


@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500"])  # Cortex-M4 single-precision FPU, M7
def test_firmware_quantizes_half_steps_as_tflite(
    edge_model: tuple[Path, Path], tmp_path: Path, board: str
) -> None:
    from tinysched.boards import get_board
    from tinysched.build.firmware import build_firmware
    from tinysched.build.sources import write_sources
    from tinysched.device.runner import measure_image

    model, _ = edge_model
    planned = plan(parse_model(model.read_bytes()), PlanOptions(time_limit=1.0))
    target = get_board(board)
    image = build_firmware(write_sources(generate(planned), tmp_path / "src"), target, tmp_path / "fw")
    inputs = [x.reshape(1, -1) for x in edge_inputs()]
    expected = reference.run_reference(model, inputs)
    assert expected.resolver == "BUILTIN_REF"
    result = measure_image(
        image,
        target,
        [[x.tobytes() for x in inputs]],
        [[y.tobytes() for y in expected.outputs]],
        planned.arena.arena_bytes,
    )
    assert result.outputs_match is True, result


def test_float32_literals_read_back_exactly() -> None:
    from tinysched.codegen.cgen import c_float32
    from tinysched.errors import TinyschedError

    assert c_float32(np.float32(0.023528477)) == "0.023528477f"
    assert c_float32(1.0) == "1.0f" and c_float32(np.float32(1e-30)) == "1e-30f"
    with pytest.raises(TinyschedError):
        c_float32(0.1)  # not a float32 number: a float literal would change it
