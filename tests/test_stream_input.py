"""--stream-input (issue 33, part 1): the application hands the input's rows to
`<prefix>_invoke_streamed`, the input is the head of a streamed chain and never whole in the arena.

The plan's bytes by hand (the window of each streamed tensor plus the chain's output), the arena both
ways, the one-line notes when the input must stay whole (and the entry that then reads it whole),
the refusals, the rows asked for in order and each once (the host runner and the harness check it,
and fail a module that asks twice), bit-exact against TFLite on the host and on QEMU's mps2-an500
(nucleo-f767) with the painted high-water equal to the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import built_graph, saved_model, streamed_input_on_qemu
from stream_input_models import camera_head, float_input, input_read_twice, skipping_head
from tiers import needs_gcc, require

from tinysched.build.sources import write_sources
from tinysched.cli import main
from tinysched.device import reference
from tinysched.device.verify import verify
from tinysched.errors import TinyschedError
from tinysched.memory.stream import input_chains, stream_of, streamed_input
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan


def _plan(build, stream_input: bool = True, **kw):
    return plan(built_graph(build), PlanOptions(alignment=1, time_limit=2.0, stream_input=stream_input, **kw))


def test_the_input_heads_a_chain_and_its_window_is_all_the_arena_holds_of_it() -> None:
    planned = _plan(camera_head)
    s = planned.input_streaming
    assert s is not None and s.streamed and s.note is None
    (op,) = [op for op in planned.graph.operators if stream_of(op) is not None]
    chain = stream_of(op)
    x = planned.source.inputs[0]
    assert chain.source and chain.tensors[0] == x and streamed_input(planned.graph) == x
    assert x not in planned.graph.inputs and x not in planned.graph.activation_tensors  # no bytes of its own
    # windows: 3 input rows of 20x4 (the 3x3 conv), 3 rows of conv1's 10x8 (the 3x3 depthwise),
    # 1 row of the depthwise's 10x8 (the 1x1 projection): 240 + 240 + 80; then the projection's
    # whole 12x10x4 output (480 B), which the global pool reads: 1,040 B at step 0
    assert (chain.rows, chain.row_bytes, chain.window_bytes) == ((3, 3, 1), (80, 80, 80), 560)
    assert planned.arena.arena_bytes == planned.schedule.peak_bytes == 560 + 480
    assert planned.schedule.certified
    whole = _plan(camera_head, stream_input=False)
    assert whole.input_streaming is None
    assert (s.whole_input_arena_bytes, s.streamed_arena_bytes) == (whole.arena.arena_bytes, 1040)
    assert whole.arena.arena_bytes == 1944  # the whole 1,920 B input, the chain's windows over it
    assert (s.rows, s.row_bytes, s.window_rows) == (24, 80, 3)


def test_rows_no_output_reads_still_count_once_in_the_plan() -> None:
    planned = _plan(skipping_head)
    (chain,) = [c for op in planned.graph.operators if (c := stream_of(op)) is not None]
    # a 1x1 stride-2 reader: a window of one 27 B input row; 3 rows of the 5x6 output it feeds the
    # VALID 3x3; the 5x2x5 output: 27 + 90 + 50
    assert (chain.rows, chain.window_bytes, planned.arena.arena_bytes) == ((1, 3), 117, 167)
    assert planned.input_streaming.whole_input_arena_bytes == _plan(skipping_head, False).arena.arena_bytes


@pytest.mark.parametrize(
    ("build", "io", "why"),
    [
        (input_read_twice, "model", "input 0 is read by 2 operators (0 (CONV_2D), 1 (AVERAGE_POOL_2D))"),
        (
            float_input,
            "model",
            "input 0 is float32; the rows streamed are int8 (--io int8 removes its QUANTIZE",
        ),
    ],
    ids=["read_twice", "float"],
)
def test_an_input_that_cannot_stream_stays_whole_with_one_line_saying_why(build, io: str, why: str) -> None:
    planned = _plan(build, io=io)
    s = planned.input_streaming
    assert not s.streamed and s.note.startswith(why) and "\n" not in s.note
    assert (
        planned.arena.arena_bytes == s.whole_input_arena_bytes == _plan(build, False, io=io).arena.arena_bytes
    )
    assert streamed_input(planned.graph) is None
    header = next(t for n, t in generate(planned).files.items() if n.endswith(".h") and "weights" not in n)
    assert "_invoke_streamed(" in header and "stays whole in the arena" in header


def test_float_input_streams_with_io_int8() -> None:
    planned = _plan(float_input, io="int8", stream_mac_budget=0)  # whole rows (no column tiles)
    assert planned.input_streaming.streamed
    assert planned.arena.arena_bytes == 3 * 36 + 8 * 6 * 4  # 3 input rows of 12x3, the conv's output


def test_refusals_are_one_line() -> None:
    g = built_graph(camera_head)
    with pytest.raises(TinyschedError, match=r"^--stream-input streams .* not --memory-model tensor$"):
        PlanOptions(stream_input=True, memory_model="tensor")
    with pytest.raises(TinyschedError, match=r"not --prefer speed$"):
        PlanOptions(stream_input=True, prefer="speed")
    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=0)
    x, y = b.input("x", (1, 6, 6, 2)), b.input("y", (1, 6, 6, 2))
    b.output(b.add(b.conv2d(x, 2, (1, 1), name="c"), y, name="s"))
    with pytest.raises(TinyschedError, match=r"^--stream-input: the model has 2 inputs"):
        plan(parse_model(b.build()), PlanOptions(stream_input=True, time_limit=1.0))
    # the chains headed by the input: its reader alone, then one link more each (not the global mean,
    # which reads its input whole)
    assert input_chains(g)[1] is None and [len(c.operators) for c in input_chains(g)[0]] == [1, 2, 3]


def test_plan_json_and_text_give_the_arena_both_ways(tmp_path: Path, capsys) -> None:
    path = saved_model(tmp_path / "camera.tflite", camera_head)
    assert main(["plan", str(path), "--stream-input", "--alignment", "1", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)["input_streaming"]
    assert record == {
        "tensor": 0,
        "streamed": True,
        "rows": 24,
        "row_bytes": 80,
        "window_rows": 3,
        "arena_bytes_whole_input": 1944,
        "lower_bound_bytes_whole_input": 1944,
        "arena_bytes_streamed_input": 1040,
        "lower_bound_bytes_streamed_input": 1040,
        "note": None,
    }
    assert main(["plan", str(path), "--stream-input", "--alignment", "1"]) == 0
    text = capsys.readouterr().out
    assert "input        input streamed: 3 of its 24 rows of 80 B in the arena at once; arena 1,040 B" in text
    assert "  with whole input           1,944" in text
    assert main(["plan", str(path), "--stream-input", "--memory-model", "tensor"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stream-input streams" in err[0]


def _module_text(planned) -> tuple[str, str]:
    files = generate(planned, prefix="cam").files
    c = next(t for n, t in files.items() if n.endswith(".c") and "weights" not in n)
    h = next(t for n, t in files.items() if n.endswith(".h") and "weights" not in n)
    return c, h


def test_the_header_documents_the_row_order_and_has_no_input_offset() -> None:
    c, h = _module_text(_plan(camera_head))
    assert "rows ascending, each row exactly once" in h and "may block" in h
    assert "#define CAM_INPUT0_ROWS 24u" in h and "#define CAM_INPUT0_ROW_BYTES 80u" in h
    assert "#define CAM_INPUT0_WINDOW_ROWS 3u" in h and "#define CAM_INPUT0_OFFSET" not in h
    assert "int cam_invoke_streamed(cam_read_rows_fn read_rows, void *ctx, void *const *outputs);" in h
    assert "cam_rows_source(next0, hi0 - next0, w0 + (size_t)(next0 - first0) * 80u, cam_rows_context)" in c
    assert "return CAM_ERROR_INPUT_STREAMED;" in c  # _invoke_in_place: the input is never in the arena


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize(
    "build", [camera_head, skipping_head, input_read_twice], ids=["camera", "skip", "whole"]
)
def test_bit_exact_on_the_host_through_the_streamed_entry(build, tmp_path: Path) -> None:
    """The host runner drives <prefix>_invoke_streamed, failing unless the rows come in order, each
    once; under ASan and UBSan."""
    path = saved_model(tmp_path / "model.tflite", build, seed=3)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True))
    result = verify(path, planned, generate(planned), n_inputs=3, seed=1, opt="-O1", sanitize=True)
    assert result.mismatches == [] and result.outputs_match


@needs_gcc
@pytest.mark.host
def test_a_module_asking_for_a_row_twice_fails_the_host_run(tmp_path: Path) -> None:
    from tinysched.build.host import compile_runner, run_runner, write_runner

    path = saved_model(tmp_path / "model.tflite", camera_head)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True))
    module = generate(planned)
    sources = write_sources(module, tmp_path / "src")
    write_runner(module, sources, "model", "")
    model_c = next(p for p in sources.c_files if p.name == f"{module.prefix}.c")
    text = model_c.read_text()
    assert text.count("next0 = hi0;") == 1
    model_c.write_text(text.replace("next0 = hi0;", "next0 = hi0 - 1; /* asks the last row again */"))
    runner = compile_runner(sources)
    inputs = [list(s) for s in reference.random_inputs(path, 0, 1)]
    with pytest.raises(TinyschedError, match="not asked for in order, each once"):
        run_runner(runner, module, inputs)


@pytest.mark.qemu
def test_measured_on_qemu_through_the_streamed_entry(tmp_path: Path) -> None:
    """The harness feeds the rows from its own input buffer (outside the arena): bit-exact, the
    painted high-water the streamed plan's, the instructions of one invoke counted."""
    require("qemu")
    path = saved_model(tmp_path / "model.tflite", camera_head, seed=2)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True))
    result = streamed_input_on_qemu(path, planned, tmp_path)
    assert result.arena_bytes_measured == 1040
    assert any(line.startswith("input streamed  the harness fed") for line in result.lines())


def test_the_report_gives_the_arena_both_ways() -> None:
    from tinysched.report import CompareOptions, collect_metadata, run_comparisons
    from tinysched.report.render import render

    planned = _plan(camera_head)
    comparisons = run_comparisons(planned, None, CompareOptions(stock_tflm=False, recompute_ks=()))
    doc = collect_metadata(
        planned, board=None, kernels=dict(generate(planned).op_kernels), comparisons=comparisons
    )
    record = doc["summary"]["input_streaming"]
    assert (record["arena_bytes_whole_input"], record["arena_bytes_streamed_input"]) == (1944, 1040)
    # the copying invoke takes the whole input from the application, though the arena never holds it
    assert doc["summary"]["application_ram"]["input_bytes"] == 1920
    md = render(doc, "md")
    assert "| arena with the whole input (--stream-input) | 1,944 B" in md
    assert "| arena with the input streamed | 1,040 B" in md
    whole = _plan(input_read_twice)
    doc = collect_metadata(
        whole,
        board=None,
        kernels=None,
        comparisons=run_comparisons(whole, None, CompareOptions(stock_tflm=False, recompute_ks=())),
    )
    assert "| arena with the input streamed | input whole: input 0 is read by 2 operators" in render(
        doc, "md"
    )


@needs_gcc
def test_build_prints_and_records_the_arena_both_ways(tmp_path: Path, capsys) -> None:
    path = saved_model(tmp_path / "camera.tflite", camera_head)
    out = tmp_path / "out"
    argv = ["build", str(path), "--board", "host", "-o", str(out), "--no-report", "--stream-input"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "input       input streamed: 3 of its 24 rows of 80 B in the arena at once" in printed
    assert "model operators input rows -> 0 -> 1 -> 2 (3,840 B as windows of 560 B)" in printed
    record = json.loads((out / "camera_metadata.json").read_text())["build"]
    assert record["plan_options"]["stream_input"] is True
    assert record["input_streaming"]["arena_bytes_streamed_input"] == record["arena_bytes"]
    assert record["streams"][0]["input_rows"] is True and record["streams"][0]["tensors"][0] == 0


def test_an_arena_budget_chooses_among_plans_that_stream_the_input_too() -> None:
    """With --stream-input and --arena-budget the budget ranks only plans whose input is streamed (the
    application's entry is the streamed one either way), and the chosen plan still streams it."""
    least = _plan(camera_head)
    planned = _plan(camera_head, arena_budget=1 << 20)
    assert planned.budget is not None and planned.budget.least_bytes == least.arena.arena_bytes == 1040
    assert planned.input_streaming is not None and planned.input_streaming.streamed
    x = planned.source.inputs[0]
    assert streamed_input(planned.graph) == x and x not in planned.graph.activation_tensors
    assert all(c.streams >= 1 for c in planned.budget.candidates)  # the input's chain in every one
    assert planned.arena.arena_bytes <= 1 << 20


def test_the_certificate_says_what_it_covers_and_the_report_what_each_stream_saved() -> None:
    """Issue 33, part 3: the certificate covers orders with the chosen chains fixed, and the report
    gives the arena with no chain streamed beside each chain's bytes."""
    from tinysched.report import CompareOptions, collect_metadata, run_comparisons
    from tinysched.report.render import render

    planned = _plan(camera_head)
    (op,) = [op for op in planned.graph.operators if stream_of(op) is not None]
    chain = stream_of(op)
    scope = planned.certificate_scope()
    ops = " -> ".join(map(str, planned.streams_json()[0]["model_ops"]))
    # nothing in the fused graph overlaps, so its schedule is stated in the tensor model
    assert scope.startswith(f"orders of the operators in the {planned.memory_model} memory model")
    assert f"with the streamed chains fixed, each run as one operator: model operators {ops}" in scope
    assert "headed by the input's rows" in scope and scope.endswith("another choice of chains is not covered")
    comparisons = run_comparisons(planned, None, CompareOptions(stock_tflm=False, recompute_ks=()))
    doc = collect_metadata(
        planned, board=None, kernels=dict(generate(planned).op_kernels), comparisons=comparisons
    )
    assert doc["schedule"]["certificate_scope"] == scope
    streams = doc["summary"]["streams"]
    # the same plan with no chain streamed keeps the whole input: 1,944 B (see the first test)
    assert (streams["arena_without_streams_bytes"], streams["arena_bytes"], streams["saved_bytes"]) == (
        1944,
        1040,
        904,
    )
    (row,) = streams["chains"]
    assert row["input_rows"] and row["window_bytes"] == 560
    assert row["bytes_saved_at_its_steps"] == sum(chain.tensor_bytes) - 560 == row["tensor_bytes"] - 560
    md = render(doc, "md")
    assert "| arena with no chain streamed | 1,944 B" in md
    assert f"B) less at its steps ({row['tensor_bytes']:,} B" in md and "560 B as windows)" in md
    assert (
        "(it covers orders of the operators in the" in md and "another choice of chains is not covered)" in md
    )
    whole = plan(built_graph(camera_head), PlanOptions(alignment=1, time_limit=2.0, memory_model="tensor"))
    assert whole.certificate_scope().startswith("orders of the operators in the tensor memory model")


def test_plan_prints_what_the_certificate_covers_and_what_the_streams_save(tmp_path: Path, capsys) -> None:
    path = tmp_path / "camera.tflite"
    saved_model(path, camera_head, seed=0)
    assert main(["plan", str(path), "--stream-input", "--alignment", "1"]) == 0
    text = capsys.readouterr().out
    assert "    it covers orders of the operators in the" in text and "with the streamed chains fixed" in text
    assert "    the streams save 904 B" in text and "1,944 B (1.9 KiB) with no chain streamed" in text
    assert main(["plan", str(path), "--stream-input", "--alignment", "1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["arena_without_streams_bytes"] == 1944 and payload["arena_bytes"] == 1040
    assert payload["certificate_scope"].endswith("another choice of chains is not covered")
