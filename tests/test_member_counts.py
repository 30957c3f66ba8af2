"""Per-member counts inside streamed stages (issue 34, part 1): the generated loop calls TS_MEMBER_DONE
after each member's row kernel, the harness counts each member in a pass of its own before the timed
run (one hook call's measured ticks taken off per call), and measure's `per_operator` gives each
streamed row's members their count and count per MAC. On QEMU's mps2-an500 against the same sources
with the hooks removed: the timed run's steps outside the stage count the same, the stage differs by
the hooks that return at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generate_for_measure, measured_equal_on_qemu, model_c_text, residual_blocks, saved_model
from tiers import require

from tinysched.commands.device import with_member_counts
from tinysched.model.modelgen import ModelBuilder

# what the timed run pays per hook returning at once (the call, the flag's test; measured 7.5
# instructions a call on the M7) and after the last member's call (the loop's end; measured 64)
HOOK_OFF_MAX = 12
LOOP_TAIL_MAX = 200


def _residual_stage(b: ModelBuilder) -> None:
    """A head conv, a residual block and a downsampling block with a 1x1 projection (one stage), then
    a classifier outside it."""
    y = residual_blocks(b, b.input("x", (1, 12, 8, 3)))
    b.output(b.fully_connected(b.reshape(y, (1, 6 * 4 * 16)), 10, name="fc"))  # a step of its own


def test_member_counts_go_to_their_streamed_rows_in_slot_order():
    rows = [
        {"step": 0, "type": "CONV_2D", "count": 900},
        {"step": 1, "members": [{"opcode": "CONV_2D", "macs": 1000}, {"opcode": "ADD", "macs": 0}]},
        {"step": 2, "members": [{"opcode": "DEPTHWISE_CONV_2D", "macs": 400}]},
    ]
    counted = [
        {"step": 1, "count": 1300, "calls": 8},
        {"step": 1, "count": 50, "calls": 8},
        {"step": 2, "count": 1000, "calls": 4},
    ]
    out = with_member_counts(rows, counted)
    assert out[0] == rows[0]
    assert [(m["count"], m["calls"], m["instructions_per_mac"]) for m in out[1]["members"]] == [
        (1300, 8, 1.3),
        (50, 8, None),
    ]
    assert out[2]["members"][0]["instructions_per_mac"] == 2.5
    # slots that do not line up with the steps (another plan's image, an older harness): left out
    assert with_member_counts(rows, counted[:2]) == rows
    assert with_member_counts(rows, [{**c, "step": 0} for c in counted]) == rows


@pytest.mark.qemu
def test_each_member_of_a_stage_counted_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _residual_stage, seed=3)
    gen = generate_for_measure(path, tmp_path / "gen", 1)
    model_c = model_c_text(gen)
    hooks = model_c.count("TS_MEMBER_DONE(")
    assert hooks >= 8  # every member's call site (a head may be called from two)
    result = measured_equal_on_qemu(gen, tmp_path / "qemu")
    members = result.member_counts
    assert len(members) == 8 and {m["step"] for m in members} == {0} and len(result.step_counts) > 1
    assert all(m["count"] > 0 and m["calls"] > 0 for m in members), members
    assert members[-1]["calls"] == 6  # the sink: once per output row (6x4x16)
    assert 0 < result.member_hook_count < 100
    stage = result.step_counts[0]
    calls = sum(m["calls"] for m in members)
    gap = stage - sum(m["count"] for m in members)
    assert 0 <= gap <= HOOK_OFF_MAX * calls + LOOP_TAIL_MAX, (stage, gap, calls)

    # the same sources without the hooks: the members count nothing, the stage only the hooks less
    c_file = next(p for p in gen.sources.module_files if p.read_text().count("TS_MEMBER_DONE(") == hooks)
    c_file.write_text(
        "".join(line for line in c_file.read_text().splitlines(True) if "TS_MEMBER_DONE(" not in line)
    )
    bare = measured_equal_on_qemu(gen, tmp_path / "qemu-bare")
    assert all(m["calls"] == 0 for m in bare.member_counts)
    assert len(bare.step_counts) == len(result.step_counts)
    for k in range(1, len(result.step_counts)):  # outside the stage: the same (SysTick rounding: 1)
        assert abs(result.step_counts[k] - bare.step_counts[k]) <= 1
    assert 0 <= stage - bare.step_counts[0] <= HOOK_OFF_MAX * calls
    # the hook's calibrated cost taken off, the members add up to the stage without hooks but for the
    # loop's end after the last member's call (measured: 64 instructions)
    assert 0 <= bare.step_counts[0] - sum(m["count"] for m in members) <= LOOP_TAIL_MAX
    assert 0 <= result.instructions - bare.instructions <= HOOK_OFF_MAX * calls + len(result.step_counts)
