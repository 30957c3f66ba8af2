"""What a firmware engineer reads in the terminal: the headline, certificates in words, weights that
add up, the TFLM arena to configure, boards by a near name, no noise lines."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from tiers import require

from tinysched.cli import main
from tinysched.model.modelgen import tiny_demo_model


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "demo.tflite"
    path.write_bytes(tiny_demo_model())
    return path


def test_plan_prints_the_headline_and_the_certificate_in_words(model: Path, capsys) -> None:
    assert main(["plan", str(model), "--memory-model", "tensor"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1] == "arena 18,432 B (optimal: equals its lower bound)"
    cert = next(line for line in lines if line.startswith("certificate"))
    assert "optimal: no order can need less, because" in cert and "DEPTHWISE_CONV_2D" in cert
    assert "18,432 B" in cert and "witness" not in cert and "op_bytes" not in cert
    assert "-0 B" not in out and "no operators folded" not in out
    # the default, the refined model: its certificate, with the tensor model's optimum beside it
    assert main(["plan", str(model), "--json"]) == 0
    refined = json.loads(capsys.readouterr().out)
    assert main(["plan", str(model)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    arena, bound = refined["arena_bytes"], refined["arena_lower_bound_bytes"]
    above = (
        f"{arena - bound:,} B above its lower bound" if arena > bound else "optimal: equals its lower bound"
    )
    assert lines[1] == f"arena {arena:,} B ({above})"
    assert lines[2].startswith("memory model refined (")
    cert = next(line for line in lines if line.startswith("certificate"))
    assert refined["certified"] and refined["peak_bytes"] == refined["lower_bound_bytes"] < 18_432
    assert f"{refined['peak_bytes']:,} B" in cert and "in the refined memory model" in cert
    whole = next(line for line in lines if line.startswith("tensor-model optimum"))
    assert "18,432" in whole and refined["tensor_model_optimum_bytes"] == 18_432


def test_schedule_json_keeps_the_structured_witness(model: Path, capsys) -> None:
    assert main(["schedule", str(model), "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert cert["kind"] == "lower_bound" and cert["witness"]["bound"] in ("trivial", "op_cut", "pair_cut")


def test_an_unproven_order_says_how_far_from_optimal_it_can_be() -> None:
    from tinysched.report.format import certificate_sentence

    text = certificate_sentence(None, {}, peak_bytes=1053, lower_bound_bytes=1000)
    assert text.startswith("not proven optimal") and "within 5.3% of optimal" in text


def test_unknown_board_suggests_the_nearest(model: Path, tmp_path: Path, capsys) -> None:
    assert main(["build", str(model), "--board", "nucleo-f76", "-o", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did you mean nucleo-f767?" in err


@pytest.mark.qemu
def test_build_headline_and_weights_add_up_with_the_elf(model: Path, tmp_path: Path, capsys) -> None:
    require("qemu")
    assert main(["build", str(model), "--board", "nucleo-f767", "-o", str(tmp_path / "fw"), "--no-tflm"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    doc = json.loads((tmp_path / "fw" / "demo_metadata.json").read_text())
    arena, bound = doc["arena"]["arena_bytes"], doc["arena"]["lower_bound_bytes"]
    above = (
        f"{arena - bound:,} B above its lower bound" if arena > bound else "optimal: equals its lower bound"
    )
    assert head.startswith(f"FITS nucleo-f767 · arena {arena:,} B ({above}) · RAM ")
    # the refined certificate with the tensor model's optimum beside it
    assert f"tensor-model optimum {doc['schedule']['tensor_model_optimum']['peak_bytes']:,} B" in out
    assert " / 507,904 B · flash " in head  # the RAM it uses: DTCM (data, stack) + SRAM1 (the arena)
    weights = next(line for line in out.splitlines() if line.startswith("weights"))
    tensors = int(weights.split("in flash: ")[1].split(" B")[0].replace(",", ""))
    params = int(weights.split(" + ")[1].split(" B")[0].replace(",", ""))
    structs_line = next(line for line in out.splitlines() if "parameter structs" in line)
    elf = int(structs_line.split("the ELF's ")[1].split(" B")[0].replace(",", ""))
    structs = int(structs_line.split("also hold ")[1].split(" B")[0].replace(",", ""))
    assert tensors + params + structs == elf and structs > 0
    doc = json.loads((tmp_path / "fw" / "demo_metadata.json").read_text())
    assert doc["build"]["size_report"]["flash_weights"] == elf


@pytest.mark.skipif(importlib.util.find_spec("tflite_micro") is None, reason="tflite-micro not installed")
def test_plan_tflm_prints_and_writes_the_arena_for_the_micro_interpreter(model: Path, tmp_path: Path, capsys):
    header = tmp_path / "arena.h"
    argv = ["plan", str(model), "--tflm", "-o", str(tmp_path / "m.tflite"), "--tflm-header", str(header)]
    assert main([*argv, "--json"]) == 0
    arena = json.loads(capsys.readouterr().out)["tflm_arena"]
    assert arena["available"] and arena["head_bytes"] == 18_432
    assert arena["total_bytes"] == arena["head_bytes"] + arena["tail_bytes"] > 18_432
    assert f"#define DEMO_TFLM_ARENA_BYTES {arena['total_bytes']}u" in header.read_text()
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("TFLM arena"))
    assert f"give MicroInterpreter {arena['total_bytes']:,} B" in line and "64-bit host" in line
    assert main(["plan", str(model), "--tflm-header", str(header)]) == 2


@pytest.mark.qemu
def test_measure_counts_each_operator(model: Path, tmp_path: Path, capsys) -> None:
    require("qemu")
    out = tmp_path / "fw"
    assert main(["build", str(model), "--board", "nucleo-f767", "-o", str(out), "--no-report"]) == 0
    capsys.readouterr()
    assert main(["measure", str(out), "--inputs", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = result["per_operator"]
    doc = json.loads((out / "demo_metadata.json").read_text())
    assert [r["type"] for r in rows] == [s["type"] for s in doc["build"]["steps"]]
    assert len(rows) == len(doc["schedule"]["run_sequence"]) and all(r["count"] > 0 for r in rows)
    # the steps add up to the whole invoke, to within the input copy and the counter reads
    total = sum(r["count"] for r in rows)
    assert 0 <= result["instructions"] - total < 0.01 * result["instructions"]
    assert main(["measure", str(out), "--inputs", "1"]) == 0
    text = capsys.readouterr().out
    assert "per operator type" in text and "CONV_2D" in text and "latency     ~" in text
    # the demo streams expand -> depthwise -> project: named by its operators, never TS_STREAM
    chain = "CONV_2D+DEPTHWISE_CONV_2D+CONV_2D (streamed)"
    assert chain in [r["type"] for r in rows] and f" {chain} " in text
    # its members each with their own count (the harness's members' pass), adding up to the stage's
    stage = next(r for r in rows if r["type"] == chain)
    assert [m["type"] for m in stage["members"]] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"]
    for m in stage["members"]:
        assert (
            m["count"] > 0
            and m["calls"] > 0
            and m["instructions_per_mac"] == round(m["count"] / m["macs"], 3)
        )
    assert 0 <= stage["count"] - sum(m["count"] for m in stage["members"]) < 0.01 * stage["count"]
    assert "TS_STREAM" not in json.dumps(result) + text and "ts_stream" not in json.dumps(result) + text


def test_plan_tflm_plans_in_the_tensor_model_and_says_so_when_refined_was_asked(
    model: Path, tmp_path: Path, capsys
):
    """Stock TFLM's kernels do not follow tinysched's read/write order: `plan --tflm` plans in the
    tensor model whatever the default, with one line when the user asked for refined explicitly."""
    out = ["-o", str(tmp_path / "m.tflite"), "--json"]
    assert main(["plan", str(model), "--json"]) == 0
    refined = json.loads(capsys.readouterr().out)
    assert main(["plan", str(model), "--memory-model", "tensor", "--json"]) == 0
    tensor = json.loads(capsys.readouterr().out)
    assert refined["memory_model"] == "refined" and tensor["memory_model"] == "tensor"
    assert refined["arena_bytes"] < tensor["arena_bytes"] == refined["tensor_model_optimum_bytes"]
    assert main(["plan", str(model), "--tflm", *out]) == 0
    quiet = capsys.readouterr()
    assert main(["plan", str(model), "--tflm", "--memory-model", "refined", *out]) == 0
    told = capsys.readouterr()
    for run in (quiet, told):
        payload = json.loads(run.out)
        assert payload["memory_model"] == "tensor" and payload["arena_bytes"] == tensor["arena_bytes"]
    assert "--tflm plans in the tensor memory model" not in quiet.err
    note = [x for x in told.err.splitlines() if "--tflm plans in the tensor memory model, not refined" in x]
    assert len(note) == 1 and "read/write order" in note[0]


# ---- model strings on the terminal: every verb, one escaped line ----------------------------------

HOSTILE = "Evil\n</script>\x1b[2J\u202e"
HOSTILE_SHOWN = "Evil\\n</script>\\x1b[2J\\u202e"  # as text.printable escapes it


def _custom_model(path: Path) -> Path:
    """A CUSTOM operator whose code holds a newline, `</script>`, an escape and a bidi override,
    between two convolutions with names as hostile: it plans, and the code generator refuses it."""
    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=3)
    x = b.input(f"in {HOSTILE}", (1, 4, 4, 2))
    t = b.conv2d(x, 4, (1, 1), activation="RELU", name=f"conv {HOSTILE}")
    (t,) = b.custom(HOSTILE, [t], [(1, 4, 4, 4)], name=f"custom {HOSTILE}")
    b.output(b.conv2d(t, 2, (1, 1), name=f"out {HOSTILE}"))
    return b.save(path)


def _bad_shape_model(path: Path) -> Path:
    """An ADD whose output (named with the hostile string) has a shape its inputs cannot give: every
    verb refuses it, naming the tensor."""
    from ai_edge_litert import schema_py_generated as schema

    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=3)
    x = b.input("in", (1, 4, 4, 2))
    (y,) = b.op("ADD", [x, x], [(1, 3)], schema.AddOptionsT(), name=f"sum {HOSTILE}")
    b.output(y)
    return b.save(path)


def _verbs(model: Path, out: Path) -> list[list[str]]:
    return [
        ["analyze", str(model)],
        ["schedule", str(model)],
        ["plan", str(model)],
        ["build", str(model), "--board", "host", "-o", str(out / "host")],
        ["verify", str(model), "--inputs", "1"],
        ["measure", str(model), "--board", "host", "--inputs", "1"],
        ["report", str(model), "--board", "nucleo-f767", "-o", str(out / "report.html")],
    ]


def _assert_terminal_safe(argv: list[str], code: int, out: str, err: str) -> None:
    for text in (out, err):
        assert not {"\x1b", "\r", "\u202e"} & set(text), (argv, text)
        assert not any(line.startswith("</script>") for line in text.splitlines()), (argv, text)
    lines = err.splitlines()  # an error is one line, stderr's last
    errors = [line for line in lines if line.startswith("tinysched: error: ")]
    assert errors == ([lines[-1]] if code else []), (argv, code, err)


def test_every_verb_shows_a_custom_code_escaped_on_one_line(tmp_path: Path, capsys) -> None:
    model = _custom_model(tmp_path / "custom.tflite")
    refused = 0
    for argv in _verbs(model, tmp_path):
        code = main(argv)
        captured = capsys.readouterr()
        _assert_terminal_safe(argv, code, captured.out, captured.err)
        if code:
            assert code == 2 and f"operator 1 (CUSTOM:{HOSTILE_SHOWN}) is not supported" in captured.err, argv
            refused += 1
        elif argv[0] in ("schedule", "plan"):  # the certificate names the operator
            assert f"operator 1 (CUSTOM:{HOSTILE_SHOWN})" in captured.out, argv
    assert refused == 3  # build, verify, measure: the code generator refuses it


def test_every_verb_shows_a_tensor_name_escaped_on_one_line(tmp_path: Path, capsys) -> None:
    model = _bad_shape_model(tmp_path / "shape.tflite")
    for argv in _verbs(model, tmp_path):
        code = main(argv)
        captured = capsys.readouterr()
        _assert_terminal_safe(argv, code, captured.out, captured.err)
        assert code == 2 and f"(tensor 1 'sum {HOSTILE_SHOWN}') has shape [1, 3]" in captured.err, argv
