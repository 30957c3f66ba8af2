"""`measure` checks every step of the invoke, not only the model's outputs: the harness reports each
step's first output (its bytes and CRC-32, ts_step_done in the first painted run) and the host
compares it with TFLite's tensor of the same name (tinysched.device.reference.step_checks). A layer
whose error later layers hide (a saturating softmax, a two-class output) is still named."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import generate_for_measure, planned_model
from tiers import require

from tinysched.device import reference
from tinysched.device.link import RunResult
from tinysched.device.runner import compare_steps, measure_sources
from tinysched.model.modelgen import ModelBuilder


def _three_steps() -> bytes:
    """CONV_2D -> DEPTHWISE_CONV_2D -> AVERAGE_POOL_2D over 8x8x8: three steps, each one tensor."""
    b = ModelBuilder(seed=47)
    x = b.input("x", (1, 8, 8, 8), zero_point=3)
    t = b.conv2d(x, 8, (3, 3), (1, 1), "SAME", activation="RELU", name="conv")
    t = b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", name="dw")
    t = b.average_pool2d(t, (8, 8), (8, 8), "VALID", name="pool")
    b.output(t)
    return b.build()


def test_reference_step_checks_are_the_crc_of_tflites_tensor_of_that_name(tmp_path: Path) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(_three_steps())
    inputs = [list(s) for s in reference.random_inputs(model, 0, 1)]
    ref = reference.run_reference_many(model, inputs, preserve_all_tensors=True)[0]
    by_name = {d["name"]: d["index"] for d in ref.tensor_details}
    conv = np.ascontiguousarray(ref.tensors[by_name["conv"]]).tobytes()
    assert len(conv) == 8 * 8 * 8
    checks = reference.step_checks(ref, [("conv", 512), ("conv", 511), ("no such tensor", 512), None])
    # the size must agree, the name must exist; a step without an output is not compared
    assert checks == [(512, zlib.crc32(conv)), None, None, None]


def test_compare_steps_names_the_first_step_that_differs() -> None:
    def run(outputs):
        return RunResult(0, True, True, 10, 0, 0, 0, 0, 0, step_ticks=(1, 1, 1), step_outputs=outputs)

    want = [[(64, 1), (64, 2), None]]
    mismatches: list[str] = []
    # step 2 has no reference tensor; step 0's device output is the size of another tensor
    assert compare_steps([run(((32, 1), (64, 2), (8, 9)))], want, mismatches) == (1, [])
    assert mismatches == []
    assert compare_steps([run(((64, 1), (64, 3), (8, 9)))], want, mismatches) == (2, [1])
    assert mismatches == [
        "input 0 step 1: its output differs from TFLite's tensor (the first of 1 step(s) that differ)"
    ]


@pytest.mark.qemu
def test_a_corrupted_step_is_named_on_qemu(tmp_path: Path) -> None:
    """Every step of a generated module checked on the M7; then the same module with one byte of
    step 1's output flipped after its kernel ran: step 1 is the first step named, step 0 still agrees."""
    require("qemu")
    model = tmp_path / "m.tflite"
    model.write_bytes(_three_steps())
    assert [planned_model(model).graph.operators[v].opcode for v in planned_model(model).run_order] == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "AVERAGE_POOL_2D",
    ]
    gen = generate_for_measure(model, tmp_path / "gen", 1)

    def measure(work: Path):
        return measure_sources(
            gen.sources, "mps2-an500", gen.inputs, gen.expected, gen.arena_bytes_planned, work,
            arena_high_water_planned=gen.arena_high_water_planned, expected_steps=gen.expected_steps,
        )  # fmt: skip

    clean = measure(tmp_path / "clean")
    assert clean.ok and clean.steps_compared == 3 and clean.steps_differing == []
    module = next(p for p in gen.sources.c_files if p.name == "m.c")
    text = module.read_text()
    done = re.search(r"^    TS_STEP_DONE\(1u, \(const int8_t \*\)\((arena \+ \d+)\), (\d+)u\);$", text, re.M)
    assert done is not None and int(done.group(2)) == 8 * 8 * 8
    module.write_text(
        text.replace(done.group(0), f"    *(uint8_t *)({done.group(1)}) ^= 0x55u;\n" + done.group(0))
    )
    broken = measure(tmp_path / "broken")
    assert broken.steps_compared == 3 and broken.steps_differing[0] == 1 and not broken.ok
    assert "input 0 step 1: its output differs from TFLite's tensor (the first of 2 step(s) that differ)" in (
        broken.mismatches
    )
