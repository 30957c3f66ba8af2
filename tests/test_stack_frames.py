"""The stack reservation counts the generated module's own frames (GCC -fstack-usage of its steps
file) on top of the measured kernels: a streamed chain's step keeps every stage's parameters in its
frame, which the per-kernel table's models did not have."""

from __future__ import annotations

import pytest
from helpers import built_graph
from stream_input_models import camera_head
from tiers import require

from tinysched.boards import get_board
from tinysched.build.firmware import module_stack_bytes
from tinysched.build.stack import kernel_stack_table, module_frame_bytes, stack_reservation, with_margin
from tinysched.pipeline import PlanOptions, generate, plan

SU = """m.c:200:5:m_invoke\t16\tstatic
m.c:131:22:m_steps_0\t344\tstatic
m.c:140:22:m_steps_1\t96\tstatic
m.c:150:12:m_steps\t24\tstatic
m.c:20:13:m_copy_in\t8\tstatic
"""


def test_the_step_functions_count_once_the_rest_all() -> None:
    assert module_frame_bytes(SU) == 16 + 24 + 8 + 344
    assert module_frame_bytes("") == 0


def test_a_streamed_input_step_reserves_its_frames() -> None:
    require("qemu")  # the cross compiler's tier
    board = get_board("nucleo-f767")
    whole = generate(plan(built_graph(camera_head), PlanOptions(time_limit=2.0)))
    streamed = generate(plan(built_graph(camera_head), PlanOptions(time_limit=2.0, stream_input=True)))
    assert 0 < module_stack_bytes(whole, board) < module_stack_bytes(streamed, board)
    table = kernel_stack_table()
    for module in (whole, streamed):
        own = module_stack_bytes(module, board)
        reservation = stack_reservation(board, module.kernels, module_bytes=own)
        deepest = max(table.kernel_bytes(k, board.core) for k in module.kernels)
        assert reservation.measured_bytes == deepest + table.harness_bytes + own
        assert reservation.bytes == with_margin(reservation.measured_bytes)
        assert f"the model's own frames {own:,} B" in reservation.basis


@pytest.mark.parametrize("su", ["garbage", "a:b\tnot-a-number\tstatic"])
def test_lines_that_are_not_stack_usage_are_ignored(su: str) -> None:
    assert module_frame_bytes(su) == 0
