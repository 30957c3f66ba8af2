"""bench/bench_cmsis_nn.py without a CMSIS-NN checkout: its command line answers --help, and the two
programs it derives from a generated module (every CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD,
AVERAGE_POOL_2D, SOFTMAX step and a streamed chain calling the CMSIS-NN wrappers; the per-layer check)
compile against the wrappers' header with the host compiler. Nothing is fetched; the measured side by
side is the bench's (docs/BENCHMARKS.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tiers import needs_gcc

from tinysched.build.sources import write_sources
from tinysched.memory.stream import stream_of
from tinysched.model.modelgen import ModelBuilder, tiny_demo_model
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import bench_cmsis_nn as bench  # noqa: E402


def _streamed() -> bytes:
    """An inverted residual whose expansion streams into its depthwise (tests/test_stream.py's)."""
    b = ModelBuilder(seed=7)
    x = b.input("x", (1, 12, 10, 4))
    t = b.conv2d(x, 24, (1, 1), activation="RELU6", name="expand")
    t = b.depthwise_conv2d(t, (3, 3), stride=(2, 2), activation="RELU6", name="dw")
    b.output(b.conv2d(t, 8, (1, 1), name="project"))
    return b.build()


def test_help_needs_no_checkout(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        bench.main(["--help"])
    assert done.value.code == 0
    assert "--cmsis-nn DIR" in capsys.readouterr().out


@needs_gcc
@pytest.mark.parametrize("model", [tiny_demo_model, _streamed], ids=["demo", "streamed"])
def test_rewritten_programs_compile(tmp_path: Path, model) -> None:
    # no column tiles (--mac-budget 0): the swap runs a stage's layers whole, which a tile is not
    planned = plan(
        parse_model(model(), source=model.__name__), PlanOptions(time_limit=2.0, stream_mac_budget=0)
    )
    module = generate(planned, "m")
    sources = write_sources(module, tmp_path)
    pieces, steps = bench.plan_swaps((tmp_path / "m.c").read_text())
    swapped = {s.type for s in steps if s.swapped is not None}
    members = {m for t in swapped for m in t.removesuffix(" (streamed)").split("+")}
    kept = [s for s in steps if s.type in bench.SWAPPED_TYPES and s.swapped is None]
    assert not kept, [(s.index, s.note) for s in kept]
    if model is _streamed:
        assert any(stream_of(op) for op in planned.graph.operators)
        assert any(t.endswith("(streamed)") for t in swapped)
    else:
        assert set(bench.SWAPPED_TYPES) <= members
    offsets = planned.arena.offsets
    outputs = {
        s.index: (offsets[t], planned.graph.tensors[t].nbytes)
        for s in steps
        if s.swapped is not None and (t := planned.graph.operators[s.op].outputs[0]) >= 0
    }
    texts = {
        "cmsis.c": bench.cmsis_source(pieces),
        "check.c": bench.check_source(pieces, module.arena_bytes, outputs),
    }
    includes = [f"-I{p}" for p in (*sources.include_dirs, bench.WRAPPER_DIR)]
    for name, text in texts.items():
        assert "tsb_" in text and text.count("TS_STEP_DONE(") == len(steps)
        (tmp_path / name).write_text(text)
        proc = subprocess.run(
            [
                "gcc",
                "-std=gnu11",
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                *includes,
                str(tmp_path / name),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
