"""What every verb shares: byte formatting, JSON output, progress, stage timing, reading inputs."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tinysched.errors import TinyschedError
from tinysched.report.format import fmt_bytes
from tinysched.text import printable_path

format_bytes = fmt_bytes  # one format for sizes, in the terminal and in the report


def shown(path: Any) -> str:
    """A path as the terminal shows it: escaped (control characters, bytes that are not UTF-8) and
    shortened in the middle; JSON keeps the exact string."""
    return printable_path(path) if path is not None else "-"


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def read_bytes(path: str | Path, what: str = "model") -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read {what}: {err.strerror or err}") from None


def read_order_file(path: str | Path) -> list[int]:
    """A JSON list of operator indices, or an object with an `order` list (as `schedule --json` prints)."""
    try:
        payload = json.loads(Path(path).read_text())
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read order file: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise TinyschedError(f"{path}: not JSON: {err.msg} at line {err.lineno}") from None
    if isinstance(payload, dict):
        payload = payload.get("order")
    if not isinstance(payload, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in payload
    ):
        raise TinyschedError(f"{path}: an order is a JSON list of operator indices")
    return payload


class TerminalProgress:
    """Progress lines on stderr, only on a terminal and only once a solve has run for a second."""

    DELAY = 1.0

    def __init__(self) -> None:
        self._clock = time.perf_counter
        self._started = self._clock()
        self._latest: str | None = None
        self._printed: str | None = None
        self._timer = threading.Timer(self.DELAY, self._flush) if sys.stderr.isatty() else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, message: str) -> None:
        self._latest = message
        if self._timer is not None and self._clock() - self._started >= self.DELAY:
            self._flush()

    def _flush(self) -> None:
        message = self._latest
        if message is not None and message != self._printed:
            self._printed = message
            elapsed = self._clock() - self._started
            print(f"tinysched: [{elapsed:5.1f} s] {message}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


class StageClock:
    """`-v`: each stage's time on stderr as it ends; silent otherwise."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = round(now - self._last, 3)
        self._last = now
        if self.verbose:
            print(f"tinysched: {stage:<22} {self.seconds[stage]:8.3f} s", file=sys.stderr, flush=True)

    def report(self, stages: dict[str, float], prefix: str) -> None:
        """Sub-stage times measured elsewhere (e.g. the planner's own)."""
        for name, seconds in stages.items():
            self.seconds[f"{prefix}.{name}"] = round(seconds, 3)
            if self.verbose:
                label = f"{prefix}: {name}"
                print(f"tinysched:   {label:<20} {seconds:8.3f} s", file=sys.stderr, flush=True)


def add_output_arguments(parser: Any, *, required: bool = True) -> None:
    """`-o DIR` and `--force`, the same on every verb that writes a folder."""
    parser.add_argument(
        "-o",
        "--output",
        required=required,
        metavar="DIR",
        help="output folder: created, or replaced if tinysched wrote it (it appears only when complete)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace the output folder even if tinysched did not write it"
    )


def certificate_json(sched: Any) -> dict[str, Any] | None:
    cert = getattr(sched, "certificate", None)
    if cert is None:
        return None
    return {"kind": cert.kind, "lower_bound_bytes": cert.lower_bound_bytes, "witness": dict(cert.witness)}


def certificate_line(sched: Any, graph: Any, planned: Any = None) -> str:
    """The order's certificate in words (scheduler.Schedule over `graph`); with `planned` (a
    pipeline.Planned) operators are named by their index in the input model."""
    from tinysched.report.format import certificate_sentence

    text = certificate_sentence(
        certificate_json(sched),
        {
            op.index: op.opcode if planned is None else planned.operator_label(op.index)
            for op in graph.operators
        },
        peak_bytes=sched.peak_bytes,
        lower_bound_bytes=sched.lower_bound_bytes,
        model_ops=None
        if planned is None
        else {op.index: planned.source_operator(op.index) for op in graph.operators},
    )
    if getattr(sched, "memory_model", "tensor") != "tensor":
        text += (
            " (in the refined memory model: views and slices share their buffer, outputs overlap dying "
            "inputs as far as the kernels allow)"
        )
    return text


def read_checked_model(path: str | Path) -> Any:
    """The model as a Graph, after tinysched's reader and TFLite's own flatbuffer verifier agree
    that the file is sound (tinysched.model.tflite_verify)."""
    from tinysched.model.reader import parse_model, read_model_bytes
    from tinysched.model.tflite_verify import check_flatbuffer

    data = read_model_bytes(path)  # read once, for both
    graph = parse_model(data, source=str(path))
    check_flatbuffer(data, str(path))
    return graph
