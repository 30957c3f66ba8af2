"""`--arena-budget BYTES` (issue 34, part 3): among the plans planning considers, the one that fits
with the fewest estimated instructions; the kernel cost table's estimate; below the least arena,
one line and exit 3; the report's trade-off chart; and one QEMU measurement of the choice.

The model is a KWS-like chain built here (a wide first layer into a strided depthwise, then
depthwise / pointwise pairs): its least-memory plan streams the first pair and runs the later
layers in place, while plans with more bytes run whole tensors and the widened CONV_2D kernel.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from test_report import _chromium, _require
from tiers import needs_qemu

from tinysched import report
from tinysched.arena import cost
from tinysched.arena.check import check_plan
from tinysched.cli import main
from tinysched.memory.stream import stream_of
from tinysched.model.reader import parse_model
from tinysched.pipeline import BUDGET_MIN_SAVING, BudgetTooSmall, PlanOptions, plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_arena_budget  # noqa: E402

LEAST_BYTES = 2_576  # the default plan's arena (one chain streamed, three operators in place)
# every plan a generous budget considers: (arena bytes, chains streamed, in place, CONV_2D wide)
CONSIDERED = {
    (2_576, 1, 3, 0),  # the default: the least memory
    (2_944, 1, 0, 2),  # the chain streamed, default kernels, wide where the arena has room
    (6_432, 0, 1, 2),  # no stream, the in-place variants that lower a step
    (7_392, 0, 1, 3),  # the same, its arena grown for the third CONV_2D's wide scratch
    (6_592, 0, 0, 2),  # --prefer speed
    (7_552, 0, 0, 3),  # --prefer speed, grown
}


kws_like_model = bench_arena_budget.kws_like_model  # the cost table's refresh measures it too


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("budget") / "kws_like.tflite"
    path.write_bytes(kws_like_model())
    return path


@pytest.fixture(scope="module")
def graph(model_path):
    return parse_model(model_path.read_bytes(), source=str(model_path))


@pytest.fixture(scope="module")
def generous(graph):
    return plan(graph, PlanOptions(arena_budget=1 << 20))


def _shape(c) -> tuple[int, int, int, int]:
    return (c.arena_bytes, c.streams, c.variants, c.wide)


def test_default_is_unchanged_least_memory(graph, generous):
    default = plan(graph)
    assert default.budget is None and default.arena.arena_bytes == LEAST_BYTES
    least = generous.budget.least_memory
    assert least.default and _shape(least) == (LEAST_BYTES, 1, 3, 0)
    assert least.instructions_estimate == default.instructions_estimate
    assert generous.budget.least_bytes == LEAST_BYTES


def test_generous_budget_takes_the_fewest_estimated_instructions(generous):
    choice = generous.budget
    assert {_shape(c) for c in choice.candidates} == CONSIDERED
    assert all(c.fits for c in choice.candidates) and sum(c.chosen for c in choice.candidates) == 1
    chosen = choice.chosen
    assert chosen.instructions_estimate == min(c.instructions_estimate for c in choice.candidates)
    # the plan is the chosen one: its arena, its estimate, its kernels, and a valid placement
    assert generous.arena.arena_bytes == chosen.arena_bytes
    assert generous.instructions_estimate == chosen.instructions_estimate
    assert len(generous.wide_variants) == chosen.wide and len(generous.variants) == chosen.variants
    assert len(generous.streams_json()) == chosen.streams
    check_plan(generous.graph, generous.arena)
    assert chosen.instructions_estimate < choice.least_memory.instructions_estimate


@pytest.mark.parametrize("budget", [2_576, 2_944, 3_000, 6_500, 7_400])
def test_budget_is_never_exceeded(graph, budget):
    planned = plan(graph, PlanOptions(arena_budget=budget))
    choice = planned.budget
    fitting = [c for c in choice.candidates if c.arena_bytes <= budget]
    assert [c.fits for c in choice.candidates] == [c.arena_bytes <= budget for c in choice.candidates]
    fastest = min(c.instructions_estimate for c in fitting)
    default = choice.least_memory.instructions_estimate
    # bytes over the least arena are spent only on a plan estimated 6% faster
    if fastest <= (1 - BUDGET_MIN_SAVING) * default:
        assert choice.chosen.instructions_estimate == fastest
    else:
        assert choice.chosen is choice.least_memory
    assert planned.arena.arena_bytes == choice.chosen.arena_bytes <= budget
    check_plan(planned.graph, planned.arena)
    # each plan's wide scratch grows the arena at most to the budget
    grown = {c.arena_bytes for c in choice.candidates if "grown" in c.label}
    assert all(b <= max(budget, 7_552) for b in grown)


def test_budget_below_the_least_arena(graph, model_path, capsys):
    with pytest.raises(BudgetTooSmall) as err:
        plan(graph, PlanOptions(arena_budget=LEAST_BYTES - 1))
    assert err.value.exit_code == 3
    assert main(["plan", str(model_path), "--arena-budget", str(LEAST_BYTES - 1)]) == 3
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "2,575 B" in lines[0] and "2,576 B" in lines[0], lines


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--arena-budget", "0"], "--arena-budget must be a positive number of bytes"),
        (["--arena-budget", "64K", "--recompute", "1"], "does not combine with --recompute"),
    ],
)
def test_bad_budget_is_one_line(model_path, capsys, flags, words):
    assert main(["plan", str(model_path), *flags]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], lines


def test_budget_not_a_byte_count(model_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["plan", str(model_path), "--arena-budget", "six"])
    assert done.value.code == 2
    assert "expected a byte count" in capsys.readouterr().err


def test_plan_prints_and_writes_the_choice(model_path, generous, capsys):
    assert main(["plan", str(model_path), "--arena-budget", "1M", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["arena_budget"] == generous.budget.as_json()
    assert payload["arena_bytes"] == generous.arena.arena_bytes
    assert payload["instructions_estimate"] == generous.instructions_estimate
    assert main(["plan", str(model_path), "--arena-budget", "1M"]) == 0
    text = capsys.readouterr().out
    assert f"budget       {generous.budget.summary()}" in text
    assert f"est. {generous.instructions_estimate:,} instructions per inference" in text


def test_estimate_reads_the_table(graph, generous):
    """The estimate is the table's lines over MACs, outputs and pixels; a streamed chain the sum of
    its members' lines (per_call per row call) and the stage loop's cost per member row call."""
    lines = cost._table()["families"]["dsp"]

    def by_line(key: str, f: dict, calls: int = 1) -> float:
        line = lines.get(key) or lines.get(key.split("/")[0] + "/default") or lines["*"]
        want = line.get("per_mac", 0) * f["macs"] + line.get("per_output", 0) * f["outputs"]
        return want + line.get("per_pixel", 0) * f["pixels"] + line.get("per_call", 0) * calls

    loop = lines["STREAM/streamed"]["per_call"]
    for planned in (generous, plan(graph, PlanOptions(prefer="speed"))):
        g, total, shares = planned.graph, 0, []
        for v in planned.run_order:
            f = cost.step_features(g, v, planned.arena, planned.own_path_layers)
            op = g.operators[v]
            if f["kernel"] == "streamed":  # each member by its line, per row call, then the loop's
                want = sum(
                    by_line(f"{m['opcode']}/{m['kernel']}", m, m["row_calls"]) + loop * m["row_calls"]
                    for m in f["members"]
                )
            else:
                want = by_line(f"{op.opcode}/{f['kernel']}", f)
            # a default CONV_2D's rows that widen in its own output: that share at the wide line
            want += f["own_strip"] * (by_line(f"{op.opcode}/wide", f) - want) if f["own_strip"] else 0
            shares.append(f["own_strip"])
            estimate = cost.operator_estimate(g, v, arena=planned.arena, own_path=planned.own_path_layers)
            assert estimate == round(want)
            total += round(want)
        assert planned.instructions_estimate == total
        assert all(0 <= s <= 1 for s in shares)


def test_chain_members_have_lines_of_their_own(graph):
    """The default plan's chain: the 5x4 first layer over one channel (the small receptive field
    path) called once per row its strided depthwise reader needs (it is the stage's head: two rows
    a call), the depthwise once per output row; each member has a measured line of its own."""
    default = plan(graph)
    [chain] = [
        v
        for v in default.run_order
        if cost.kernel_name(default.graph, default.graph.operators[v]) == "streamed"
    ]
    members = cost.step_features(default.graph, chain)["members"]
    lines = cost._table()["families"]["dsp"]
    assert [(m["opcode"], m["kernel"], m["row_calls"], m["halo"]) for m in members] == [
        ("CONV_2D", "member-small", 10, 1.0),
        ("DEPTHWISE_CONV_2D", "member", 10, 1.0),
    ]
    assert all(f"{m['opcode']}/{m['kernel']}" in lines for m in members)
    assert cost.operator_estimate(default.graph, chain) == round(cost.chain_estimate(members, lines)) > 0
    # without a member line (a family not refitted since): its fastest line unstreamed, called once
    bare = {k: v for k, v in lines.items() if "member" not in k}
    first = members[0]
    sizes = (first["macs"], first["outputs"], first["pixels"])
    assert cost.member_estimate(first, bare) == min(
        cost.KernelCost(**lines[f"CONV_2D/{k}"]).instructions(*sizes) for k in ("default", "wide")
    )


def test_own_paths_have_lines_of_their_own():
    """A 3x3 CONV_2D over 3 channels (the stem) and a 1x1 over 8 (the pixel in registers) take the
    ``stem`` and ``pixels`` lines where the code generator's own_path says so (DSP cores); a small
    receptive field over one channel is ``small``."""
    from tinysched import codegen
    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=7, description="a stem, a pointwise of 8 channels, a small field")
    x = b.input("image", (1, 16, 16, 3))
    t = b.conv2d(x, 8, (3, 3), stride=(2, 2), activation="RELU", name="stem")
    t = b.conv2d(t, 16, (1, 1), activation="RELU", name="pw")
    b.output(t)
    g = parse_model(b.build(), source="own_paths")
    ops = {op.index: op for op in g.operators if op.opcode == "CONV_2D"}
    assert [cost.kernel_name(g, op, codegen.own_path) for op in ops.values()] == ["stem", "pixels"]
    # without the code generator's paths (a Helium core): the stem's 3x3x3 field is a small one
    assert [cost.kernel_name(g, op) for op in ops.values()] == ["small", "default"]
    lines = cost._table()["families"]["dsp"]
    assert {"CONV_2D/stem", "CONV_2D/pixels", "CONV_2D/small"} <= set(lines)
    one = ModelBuilder(seed=8, description="a 3x3 field over one channel")
    y = one.conv2d(one.input("spectrogram", (1, 12, 8, 1)), 16, (3, 3), activation="RELU", name="first")
    one.output(y)
    g1 = parse_model(one.build(), source="small")
    [conv] = [op for op in g1.operators if op.opcode == "CONV_2D"]
    assert cost.kernel_name(g1, conv, codegen.own_path) == "small"


def test_cost_fit_recovers_a_line():
    zero = {"per_mac": 0.0, "per_output": 0.0, "per_pixel": 0.0, "per_call": 0.0}
    shapes = [(1000, 10, 5), (5000, 20, 1), (800, 300, 30), (40, 2, 2), (900, 90, 45)]
    rows = [(m, o, p, 1, 1.25 * m + 40 * o) for m, o, p in shapes]
    assert bench_arena_budget.fit_line(rows) == {**zero, "per_mac": 1.25, "per_output": 40.0}
    # no MACs (data movement, LUT activations): per output and per call
    rows = [(0, o, o, 1, 3 * o + 300) for o in (10, 200, 4000)]
    assert bench_arena_budget.fit_line(rows) == {**zero, "per_output": 3.0, "per_call": 300.0}
    # one operator: one feature, never a negative coefficient
    assert bench_arena_budget.fit_line([(0, 12, 0, 1, 120)]) == {**zero, "per_output": 10.0}
    # a negative coefficient drops that feature
    rows = [(m, o, 0, 1, 2 * m - 5 * o) for m, o in ((100, 1), (200, 10), (400, 4))]
    line = bench_arena_budget.fit_line(rows)
    assert line["per_output"] == 0.0 and line["per_mac"] > 0


def test_validated_fit_keeps_the_features_that_predict():
    """With more shapes than features, a line keeps the features that predict the shapes left out
    of its fit: a true per-pixel cost is found, a per-call constant the counts do not have is not."""
    shapes = [(1000, 100, 10), (5000, 200, 50), (800, 300, 30), (4000, 80, 20), (900, 90, 45), (3000, 60, 6)]
    rows = [(m, o, p, c, 1.25 * m + 40 * p) for (m, o, p), c in zip(shapes, (3, 5, 2, 7, 4, 6), strict=True)]
    line = bench_arena_budget.fit_line(rows, bench_arena_budget.FIT_ALL)
    assert (line["per_mac"], line["per_pixel"]) == (1.25, 40.0)
    assert line["per_output"] == line["per_call"] == 0.0
    # no more shapes than features: the default fit (per MAC and per output)
    few = rows[:3]
    assert bench_arena_budget.fit_line(few, bench_arena_budget.FIT_ALL) == bench_arena_budget.fit_line(few)


def test_report_draws_the_trade_off(model_path, generous, tmp_path):
    from helpers import metadata_for_model

    doc = metadata_for_model_with_budget(model_path, metadata_for_model)
    section = doc["arena_budget"]
    assert section["chosen"] == generous.budget.chosen.label and section["measured"] is None
    assert len(section["candidates"]) == len(CONSIDERED)
    md = report.render_markdown(doc)
    assert f"| {generous.budget.chosen.label} **chosen** | {generous.arena.arena_bytes:,} B |" in md.replace(
        "\\_", "_"
    )
    _require("chromium", "browser")
    page = tmp_path / "report.html"
    page.write_text(report.render_html(doc))
    dom = _chromium("--dump-dom", page.resolve().as_uri(), user_dir=tmp_path / "u").stdout
    figure = re.search(r'<figure id="arena-budget">(.*?)</figure>', dom, re.S).group(1)
    assert figure.count('class="plan"') == len(CONSIDERED) and figure.count('class="chosen"') == 1
    assert "budget 1,048,576 B" in figure
    chosen = generous.budget.chosen
    assert (
        f"<title>{chosen.label}: {chosen.arena_bytes:,} B, est. {chosen.instructions_estimate:,} instructions"
        in figure
    )


def metadata_for_model_with_budget(model_path: Path, helper) -> dict:
    """The report's document for --arena-budget 1M (the helper's options, with the budget)."""
    import tinysched.commands.report as command

    original = command.options_from_args

    def with_budget(args, **kwargs):
        from dataclasses import replace

        return replace(original(args, **kwargs), arena_budget=1 << 20)

    command.options_from_args = with_budget
    try:
        return helper(model_path, "mps2-an500", build_firmware=False, stock_tflm=False, recompute_ks=None)
    finally:
        command.options_from_args = original


@needs_qemu
def test_measured_on_qemu_fewer_instructions_within_the_budget(model_path, capsys):
    """The budget's plan runs on the emulated M7 bit-exact, in its arena to the byte, with fewer
    instructions than the least-memory plan; measure states the estimate against the count."""
    runs = {}
    for name, flags in (("default", []), ("budget", ["--arena-budget", "8K"])):
        code = main(["measure", str(model_path), "--board", "mps2-an500", "--inputs", "1", "--json", *flags])
        runs[name] = json.loads(capsys.readouterr().out)
        assert code == 0 and runs[name]["outputs_match"] and runs[name]["arena_matches_plan"]
    default, budget = runs["default"], runs["budget"]
    assert default["arena_bytes_planned"] == LEAST_BYTES and default["arena_budget"] is None
    assert budget["arena_bytes_measured"] <= budget["arena_bytes_planned"] <= 8192
    assert budget["arena_budget"]["chosen"] in {c["label"] for c in budget["arena_budget"]["candidates"]}
    assert budget["instructions"] < default["instructions"]
    for r in runs.values():
        assert r["instructions_estimate"] == sum(s["estimate"] for s in r["per_operator"])


def test_a_dear_stream_is_named(graph, model_path, capsys):
    """Issue 34, part 4: a chain estimated more than 3% over its operators as the plan without
    streams runs them says so in `plan`, with both estimates, and points at --arena-budget."""
    default = plan(graph)
    [row] = default.streams_json()
    chain = stream_of(default.graph.operators[row["operator"]])
    assert chain is not None and default.unstreamed_estimates is not None
    streamed, whole = cost.stream_overhead(default.graph, row["operator"], default.unstreamed_estimates)
    assert default.stream_overhead(row["operator"]) == (streamed, whole)
    assert streamed == cost.operator_estimate(default.graph, row["operator"])
    assert whole == sum(default.unstreamed_estimates[m.index] for m in chain.operators) > 0
    assert main(["plan", str(model_path), "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["streams"]
    assert (entry["instructions_estimate"], entry["unstreamed_estimate"]) == (streamed, whole)
    assert main(["plan", str(model_path)]) == 0
    text = capsys.readouterr().out
    named = f"chain 0 -> 1 est. {streamed:,} instructions, {100 * (streamed / whole - 1):.0f}% over"
    assert (named in text) == (streamed > 1.03 * whole)
    if streamed > 1.03 * whole:
        assert "`--arena-budget BYTES` chooses the fastest plan that fits" in text
