"""Recomputation benchmark: peak at k = 0, 1, 2, saving, extra MACs and solve time per model.

    PYTHONPATH=. python bench/bench_recompute.py [--time-limit SECONDS] [--markdown]

The arena column places the k = 2 sequence's execution instances (`arena.plan_arena`).

Every peak here is in the tensor memory model: recomputation sequences are planned in it (the
pipeline does the same under --recompute and says so). The *refined k=0* column is the refined
model's optimum (the default plan, no recomputation) for comparison.

Models: the public ones in ../shared/models (skipped when absent) and generated networks that keep a
cheap early value for a late use (`LATE_REUSE_MODELS`, also used by tests/test_recompute.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tinysched.arena.placement import plan_arena  # noqa: E402
from tinysched.memory.overlap import refine  # noqa: E402
from tinysched.model.graph import Graph  # noqa: E402
from tinysched.model.modelgen import ModelBuilder  # noqa: E402
from tinysched.model.reader import parse_model, read_model  # noqa: E402
from tinysched.order.recompute import plan_recompute  # noqa: E402
from tinysched.order.scheduler import schedule  # noqa: E402

SHARED_MODELS = Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models")


# ---- generated models with late reuse --------------------------------------------------------


def _classifier_head(b: ModelBuilder, t, classes: int = 4) -> None:
    pooled = b.mean(t, (1, 2), keepdims=False, name="head/mean")
    b.output(b.fully_connected(pooled, classes, name="head/fc"))


def gated_skip_model() -> bytes:
    """A cheap 1x1 expansion of a narrow input is gated at the very end by a context vector that a
    deep, wide branch computes from it (squeeze-excite over a long distance)."""
    b = ModelBuilder(seed=11, description="late reuse: long-range gating")
    x = b.input("input", (1, 16, 16, 2))
    a = b.conv2d(x, 16, (1, 1), activation="RELU", name="early")  # 4 KiB, read again at the end
    t = b.conv2d(a, 16, (3, 3), (2, 2), activation="RELU", name="down")
    t = b.conv2d(t, 64, (1, 1), activation="RELU", name="expand")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw")
    t = b.conv2d(t, 16, (1, 1), name="project")
    g = b.mean(t, (1, 2), keepdims=True, name="context")
    g = b.conv2d(g, 16, (1, 1), name="gate_conv")
    g = b.logistic(g, name="gate")
    _classifier_head(b, b.mul(a, g, name="gated"))
    return b.build()


def long_skip_model() -> bytes:
    """U-Net-like at one resolution: a narrow input, a cheap stem, a wide middle and an ADD of the
    stem's output at the end."""
    b = ModelBuilder(seed=12, description="late reuse: long skip connection")
    x = b.input("input", (1, 16, 16, 2))
    stem = b.conv2d(x, 8, (1, 1), activation="RELU", name="stem")  # 2 KiB, skip to the end
    t = b.conv2d(stem, 24, (3, 3), activation="RELU", name="wide1")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="wide_dw")
    t = b.conv2d(t, 8, (1, 1), name="narrow")
    _classifier_head(b, b.add(stem, t, activation="RELU", name="skip_add"))
    return b.build()


def nested_skip_model() -> bytes:
    """Two nested long skips (encoder levels reused by the decoder), each from a cheap 1x1 conv."""
    b = ModelBuilder(seed=13, description="late reuse: nested skips")
    x = b.input("input", (1, 16, 16, 2))
    s1 = b.conv2d(x, 8, (1, 1), activation="RELU", name="enc1")
    s2 = b.conv2d(s1, 8, (1, 1), activation="RELU", name="enc2")
    t = b.conv2d(s2, 32, (1, 1), activation="RELU", name="mid_expand")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="mid_dw")
    t = b.conv2d(t, 8, (1, 1), name="mid_project")
    t = b.add(s2, t, activation="RELU", name="dec2")
    t = b.conv2d(t, 24, (3, 3), activation="RELU", name="dec_wide")
    t = b.conv2d(t, 8, (1, 1), name="dec_project")
    _classifier_head(b, b.add(s1, t, activation="RELU", name="dec1"))
    return b.build()


def deep_nested_skip_model(levels: int = 6) -> bytes:
    """A deeper U-Net-like stack: `levels` cheap encoder convs, a wide middle, and a decoder that
    adds the encoder outputs back in reverse order, each after a wide conv (about 40 operators)."""
    b = ModelBuilder(seed=15, description="late reuse: deep nested skips")
    x = b.input("input", (1, 12, 12, 2))
    skips, t = [], x
    for i in range(levels):
        t = b.conv2d(t, 8, (1, 1), activation="RELU", name=f"enc{i}")
        skips.append(t)
    for i in range(2):
        t = b.conv2d(t, 32, (1, 1), activation="RELU", name=f"mid{i}_expand")
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"mid{i}_dw")
        t = b.conv2d(t, 8, (1, 1), name=f"mid{i}_project")
    for i, skip in enumerate(reversed(skips)):
        t = b.add(skip, t, activation="RELU", name=f"dec{i}_add")
        t = b.conv2d(t, 24, (3, 3), activation="RELU", name=f"dec{i}_wide")
        t = b.conv2d(t, 8, (1, 1), name=f"dec{i}_project")
    _classifier_head(b, t)
    return b.build()


def pyramid_head_model() -> bytes:
    """Feature-pyramid-like head: early high-resolution features are pooled and concatenated with
    the deep features only at the end."""
    b = ModelBuilder(seed=14, description="late reuse: pyramid head")
    x = b.input("input", (1, 16, 16, 2))
    p1 = b.conv2d(x, 16, (1, 1), activation="RELU", name="p1")  # 4 KiB at full resolution
    t = b.max_pool2d(p1, (2, 2), (2, 2), name="pool1")
    t = b.conv2d(t, 64, (1, 1), activation="RELU", name="p2_expand")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="p2_dw")
    p2 = b.conv2d(t, 16, (1, 1), name="p2")
    late = b.average_pool2d(p1, (2, 2), (2, 2), name="p1_late_pool")
    merged = b.concatenation([late, p2], axis=3, name="pyramid_concat")
    _classifier_head(b, merged)
    return b.build()


LATE_REUSE_MODELS: dict[str, Callable[[], bytes]] = {
    "gen_gated_skip": gated_skip_model,
    "gen_long_skip": long_skip_model,
    "gen_nested_skip": nested_skip_model,
    "gen_pyramid_head": pyramid_head_model,
    "gen_deep_nested_skip": deep_nested_skip_model,
}


def late_reuse_graph(name: str) -> Graph:
    return parse_model(LATE_REUSE_MODELS[name](), source=name)


# ---- the table ---------------------------------------------------------------------------------


def models() -> list[tuple[str, Callable[[], Graph]]]:
    shared = sorted(SHARED_MODELS.glob("*.tflite")) if SHARED_MODELS.is_dir() else []
    rows: list[tuple[str, Callable[[], Graph]]] = [(p.stem, lambda p=p: read_model(p)) for p in shared]
    rows += [(name, lambda name=name: late_reuse_graph(name)) for name in LATE_REUSE_MODELS]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--time-limit", type=float, default=5.0, help="seconds per plan (default 5)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    header = [
        "model",
        "ops",
        "peak k=0",
        "peak k=1",
        "peak k=2",
        "arena k=2",
        "refined k=0",
        "saving % (k=2)",
        "extra MACs % (k=2)",
        "proven (k=1, 2)",
        "seconds (3 plans)",
    ]
    print("memory model: tensor (recomputation sequences are planned in it); refined k=0 for comparison")
    rows = []
    for name, load in models():
        graph = load()
        started = time.perf_counter()
        plans = [plan_recompute(graph, k, time_limit=args.time_limit) for k in (0, 1, 2)]
        seconds = time.perf_counter() - started
        best = plans[2]
        arena = plan_arena(graph, best.sequence).arena_bytes  # instances placed, 16-byte alignment
        refined = schedule(graph, time_limit=args.time_limit, model=refine(graph))
        rows.append(
            [
                name,
                str(len(graph.operators)),
                f"{plans[0].peak_bytes:,}",
                f"{plans[1].peak_bytes:,}",
                f"{plans[2].peak_bytes:,}",
                f"{arena:,}",
                f"{refined.peak_bytes:,}" + ("" if refined.certified else " (not proven)"),
                f"{best.saving_percent:.1f}",
                f"{best.extra_macs_percent:.2f}",
                "yes" if plans[1].optimal and plans[2].optimal else "no",
                f"{seconds:.2f}",
            ]
        )
        if not args.markdown:
            print("  ".join(rows[-1]), flush=True)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(header))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
