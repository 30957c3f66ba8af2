"""The tensor memory model: hand-checked lifetimes, and stored-order peaks of real models against a
computation made here from what the reference interpreter itself reports about the graph."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_model_params
from tflite_edit import diamond_model, pack

from tinysched.errors import TinyschedError
from tinysched.memory.tensor import profile
from tinysched.model.graph import make_graph
from tinysched.model.reader import parse_model, read_model


def test_lifetimes_follow_the_documented_rules() -> None:
    # t0 graph input read by ops 0 and 2; t1 = op0 output; t2 = op1 output, unread; t3 = op2 output (graph output)
    graph = make_graph([100, 10, 1000, 1], [([0], [1]), ([1], [2]), ([0, 1], [3])], inputs=[0], outputs=[3])
    prof = profile(graph)
    spans = {life.tensor: (life.first_step, life.last_step) for life in prof.lifetimes}
    assert spans == {0: (0, 2), 1: (0, 2), 2: (1, 1), 3: (2, 2)}
    assert [s.live_bytes for s in prof.steps] == [110, 1110, 111]
    assert prof.peak_bytes == 1110 and prof.peak_step == 1
    assert prof.peak_tensors == (0, 1, 2)
    # running the unread producer last moves its 1000 bytes next to the graph output
    assert profile(graph, [0, 2, 1]).peak_bytes == 1011
    assert [s.live_bytes for s in profile(graph, [0, 2, 1]).steps] == [110, 111, 1011]


def test_graph_input_that_is_also_an_output_lives_throughout() -> None:
    graph = make_graph([8, 4, 2], [([0], [1]), ([1], [2])], inputs=[0], outputs=[0, 2])
    assert [s.live_bytes for s in profile(graph).steps] == [12, 14]


def test_order_is_checked() -> None:
    graph = parse_model(pack(diamond_model()))
    with pytest.raises(TinyschedError, match="not topological: operator 2 .* reads the output of operator 1"):
        profile(graph, [0, 2, 1])
    with pytest.raises(TinyschedError, match="runs operator 0 twice"):
        profile(graph, [0, 0, 1])
    with pytest.raises(TinyschedError, match="names operator 7"):
        profile(graph, [0, 1, 7])


def _interpreter_peak(path: Path) -> int:
    """Stored-order peak from the reference interpreter's own view of the graph, in a child process.

    Activations are the graph inputs and every op output; sizes from the interpreter's tensor details.
    Shares no code with tinysched's reader or memory model.
    """
    script = r"""
import json, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path=sys.argv[1])
ops = it._get_ops_details()
details = {d["index"]: d for d in it.get_tensor_details()}
inputs = [d["index"] for d in it.get_input_details()]
outputs = [d["index"] for d in it.get_output_details()]
def nbytes(t):
    d = details[t]
    return int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
n = len(ops)
born = {t: 0 for t in inputs}
for s, op in enumerate(ops):
    for t in op["outputs"]:
        born[t] = s
dies = dict(born)
for s, op in enumerate(ops):
    for t in op["inputs"]:
        if t in born:
            dies[t] = max(dies[t], s)
for t in outputs:
    dies[t] = n - 1
print(json.dumps(max(sum(nbytes(t) for t in born if born[t] <= s <= dies[t]) for s in range(n))))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("path", shared_model_params())
def test_stored_order_peak_matches_interpreter_view(path: Path) -> None:
    assert profile(read_model(path)).peak_bytes == _interpreter_peak(path)


def test_analyze_json_and_order_file(tmp_path: Path) -> None:
    model = tmp_path / "diamond.tflite"
    model.write_bytes(pack(diamond_model()))
    run = subprocess.run(
        [sys.executable, "-m", "tinysched.cli", "analyze", "--json", str(model)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(run.stdout)
    assert report["ops"] == 3
    assert report["stored_order_peak_bytes"] == 48
    assert report["persistent_bytes"] == 0 and report["weights_bytes"] == 16
    assert [s["live_bytes"] for s in report["steps"]] == [32, 48, 48]
    assert [s["op"] for s in report["steps"]] == [0, 1, 2]

    order = tmp_path / "order.json"
    order.write_text(json.dumps([1, 0, 2]))
    run = subprocess.run(
        [sys.executable, "-m", "tinysched.cli", "analyze", "--json", "--order", str(order), str(model)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [s["op"] for s in json.loads(run.stdout)["steps"]] == [1, 0, 2]

    order.write_text(json.dumps([0, 2, 1]))
    bad = subprocess.run(
        [sys.executable, "-m", "tinysched.cli", "analyze", "--order", str(order), str(model)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not topological" in bad.stderr and "Traceback" not in bad.stderr
