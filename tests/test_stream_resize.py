"""Streamed stages headed by a resize and ended by an ARG_MAX (tinysched.memory.stream.row_resize,
row_arg): the rows each resize output row reads (TFLite's source-coordinate formulas), the stage a
segmentation head becomes, its arena, its generated loop, and deeplab's head at full scale in int8
bit-exact on the host. The fast-path models stream_resize_* run the stages on M7, M55, M4, M33."""

from __future__ import annotations

from pathlib import Path

import pytest
from fast_path_models import _arg_max, _resize, resize_argmax_segmentation
from helpers import built_graph, host_verify, planned_c_text, saved_model
from tiers import needs_gcc

from tinysched.arena.check import check_plan
from tinysched.memory.stream import candidates, row_arg, row_window, stream_of
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, plan


def _resizes(b: ModelBuilder) -> None:
    x = b.input("x", (1, 5, 4, 3))
    y = b.input("y", (1, 6, 4, 3))
    b.output(
        _resize(b, x, (17, 4), "align", "bilinear_align"),
        _resize(b, y, (13, 4), "half", "bilinear_half"),
        _resize(b, y, (11, 4), "align", "nearest_align"),
        _arg_max(b, x, "int64", "classes"),
    )


def test_resize_output_rows_read_tflites_source_rows() -> None:
    g = built_graph(_resizes)
    ops = {op.outputs[0]: op for op in g.operators}
    align, half, nearest, arg = (ops[t] for t in g.outputs)
    # bilinear align_corners 5 -> 17: scale 4 * 1024 / 16 = 256, row v reads rows floor(v / 4) and
    # ceil(v / 4)
    bounds = row_window(g, align).bounds
    assert bounds == tuple((v // 4, -(-v // 4) + 1) for v in range(17))
    # bilinear half_pixel_centers 6 -> 13: scale (6 * 1024 + 6) // 13 = 473, source v * 473 + 236 - 512
    # (row 0 at -276: row 0 alone; row 1 at 197: rows 0 and 1; row 12 at 5,400: row 5 twice)
    bounds = row_window(g, half).bounds
    assert (bounds[0], bounds[1], bounds[-1]) == ((0, 1), (0, 2), (5, 6))
    # nearest align_corners 6 -> 11: round(v * 0.5), halves away from zero
    assert [lo for lo, _ in row_window(g, nearest).bounds] == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert {hi - lo for lo, hi in row_window(g, nearest).bounds} == {1}
    assert row_arg(g, arg) and row_window(g, arg).bounds == ()


def test_segmentation_head_streams_its_upsampled_scores() -> None:
    g = parse_model(resize_argmax_segmentation())
    planned = plan(g, PlanOptions(time_limit=2.0))
    (stage,) = [s for op in planned.graph.operators if (s := stream_of(op)) is not None]
    assert [op.opcode for op in stage.operators] == ["RESIZE_BILINEAR", "ARG_MAX"]
    # the 17x25x21 upsampled scores (8,925 B) are never whole: one row of 525 B; the step holds the
    # 5x7x21 scores (735 B, 736 aligned), the row (528) and the 17x25 int64 classes (3,400, 3,408)
    assert (stage.rows, stage.row_bytes, stage.tensor_bytes, stage.window_bytes) == (
        (1,),
        (525,),
        (8925,),
        525,
    )
    # whole, the map (8,928 B aligned) and the scores could share only their last source row's
    # 4 x 147 B (576 B at 16-byte offsets): 9,088 B
    assert (planned.arena.arena_bytes, planned.unstreamed_arena_bytes) == (736 + 528 + 3408, 736 + 8928 - 576)
    check_plan(planned.graph, planned.arena)
    c_source = planned_c_text(planned)
    assert "ts_resize_bilinear_s8_rows(&p0, x" in c_source
    assert "p1.outer = 25; /* one row's pixels per call */" in c_source
    assert (
        "ts_arg_minmax_s8(&p1, w0 + (size_t)(row - first0) * 525u, output + (size_t)row * 200u)" in c_source
    )


def _deeplab_head(b: ModelBuilder) -> None:
    """coral_deeplabv3_mnv2_dm05's last two operators in int8: its 33x33x21 class scores upsampled
    bilinearly (align_corners) to 513x513, ARG_MAX into int64."""
    x = b.input("scores", (1, 33, 33, 21), zero_point=-3)
    b.output(_arg_max(b, _resize(b, x, (513, 513), "align", "bilinear_513"), "int64", "classes"))


def test_deeplab_head_plans_without_its_upsampled_map() -> None:
    g = built_graph(_deeplab_head)
    planned = plan(g, PlanOptions(time_limit=5.0))
    (stage,) = [s for op in planned.graph.operators if (s := stream_of(op)) is not None]
    assert (stage.rows, stage.row_bytes) == ((1,), (513 * 21,))
    # 22,869 B of scores (22,880 aligned) + one row of 10,773 B (10,784) + 2,105,352 B of classes
    # (2,105,360): 2,139,024 B, against 5,527,264 B with the 5,526,549 B map whole (sharing its
    # last source row's 32 x 693 B with the scores)
    assert (planned.arena.arena_bytes, planned.unstreamed_arena_bytes) == (
        22_880 + 10_784 + 2_105_360,
        22_880 + 5_526_560 - 32 * 693,
    )
    check_plan(planned.graph, planned.arena)


@needs_gcc
@pytest.mark.host
def test_deeplab_head_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "deeplab_head.tflite", _deeplab_head, seed=3)
    result = host_verify(path, n_inputs=2, seed=5, opt="-O1")
    assert result.mismatches == [] and result.outputs_match and result.inputs == 2
    assert result.reference == "BUILTIN_REF", result.fallback_reason


def test_a_resize_heads_its_stage_and_an_arg_max_ends_it() -> None:
    """A resize reads its input whole, so its producer never joins its stage; an ARG_MAX's output
    is no image, so it is never a member other than the sink."""

    def head(b: ModelBuilder) -> None:
        x = b.input("x", (1, 6, 5, 4))
        t = b.depthwise_conv2d(x, (3, 3), name="dw")
        t = _resize(b, t, (23, 19), "align", "bilinear_up")
        b.output(_arg_max(b, b.conv2d(t, 21, (1, 1), name="scores"), "int32", "classes"))

    g = built_graph(head)
    stages = {tuple(op.opcode for op in s.operators) for s in candidates(g)}
    assert stages == {
        ("RESIZE_BILINEAR", "CONV_2D"),
        ("CONV_2D", "ARG_MAX"),
        ("RESIZE_BILINEAR", "CONV_2D", "ARG_MAX"),
    }
