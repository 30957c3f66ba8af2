"""What a firmware engineer reads in the terminal: the headline, certificates in words, weights that
add up, the TFLM arena to configure, boards by a near name, no noise lines."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from tiers import require

from tinysched.cli import main
from tinysched.modelgen import tiny_demo_model


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "demo.tflite"
    path.write_bytes(tiny_demo_model())
    return path


def test_plan_prints_the_headline_and_the_certificate_in_words(model: Path, capsys) -> None:
    assert main(["plan", str(model)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1] == "arena 18,432 B (optimal: equals its lower bound)"
    cert = next(line for line in lines if line.startswith("certificate"))
    assert "optimal: no order can need less, because" in cert and "DEPTHWISE_CONV_2D" in cert
    assert "18,432 B" in cert and "witness" not in cert and "op_bytes" not in cert
    assert "-0 B" not in out and "no operators folded" not in out


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
    assert head.startswith("FITS nucleo-f767 · arena 18,432 B (optimal: equals its lower bound) · RAM ")
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
