"""Device benchmark on the emulated Cortex-M7 (QEMU mps2-an500, the stand-in for nucleo-f767): per
shared model, instructions per inference and per multiply-accumulate, flash and RAM of the firmware
image, and the arena the plan promised against the arena high-water measured on the device.

    PYTHONPATH=. python bench/bench_device.py [--models DIR] [--board mps2-an500] [--write]

Every number is from `tinysched build` then `tinysched measure BUILD_DIR` on one seeded input:
the firmware is the generated model + the device harness, cross-compiled with the board's flags;
outputs are compared byte for byte with TFLite's reference kernels. QEMU has no cycle model: the
counts are *instructions* executed (QEMU -icount), labelled as emulated, not cycles of a real M7.
MACs are tinysched.order.recompute.total_macs of the model as read. `--write` replaces the
"## Device (emulated Cortex-M7)" section of docs/BENCHMARKS.md (and only that section).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.build.elfsize import DoesNotFit  # noqa: E402
from tinysched.commands.build import build_model  # noqa: E402
from tinysched.commands.device import measure_build  # noqa: E402
from tinysched.errors import TinyschedError  # noqa: E402
from tinysched.model.reader import read_model  # noqa: E402
from tinysched.order.recompute import total_macs  # noqa: E402

SECTION = "## Device (emulated Cortex-M7)"
COMMAND = "PYTHONPATH=. python bench/bench_device.py --write"


def one(path: Path, board: str, work: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"model": path.stem}
    try:
        macs = total_macs(read_model(path))
        build_model(path, work / "build", board, report=False)  # `tinysched build`, default flags
        r, _record = measure_build(work / "build", port=None, emulate=True, n_inputs=1)
    except DoesNotFit as err:
        return {**row, "skip": f"does not fit: {err.report.verdict()}"}
    except TinyschedError as err:
        text = str(err).splitlines()[0]
        if "not supported" in text:
            return {**row, "skip": text.split(";")[0]}
        raise
    size = r.size
    return {
        **row,
        "macs": macs,
        "instructions": r.instructions,
        "per_mac": r.instructions / macs if macs and r.instructions else None,
        "flash": size["flash_total"],
        "weights": size["flash_weights"],
        "code": size["flash_code"],
        "ram": size["ram_total"],
        "arena_alloc": r.arena_bytes_planned,
        "arena_plan_hw": r.arena_high_water_planned,
        "arena_measured": r.arena_bytes_measured,
        "stack": r.stack_bytes_measured,
        "outputs_match": r.outputs_match,
        "ok": r.ok,
    }


def table(rows: list[dict[str, Any]], board: str, seconds: float) -> str:
    out = [
        SECTION,
        "",
        f"`{COMMAND}` (board `{board}`, QEMU {qemu_version()}, {time.strftime('%Y-%m-%d')}, "
        f"{seconds:.0f} s on this machine). **Emulated**: QEMU `-icount` counts instructions "
        "executed, not cycles; a real Cortex-M7 takes a different number of cycles (dual issue, wait "
        "states, caches). One seeded input per model, outputs compared byte for byte with TFLite's "
        "reference kernels. Flash and RAM are the firmware image's (model + harness + startup), read "
        "from the ELF; arena: the plan's allocation (aligned), the plan's high-water (max offset + "
        "bytes) and the high-water measured on the device by painting.",
        "",
        "| model | MACs | instructions / inference (emulated) | instr. / MAC | flash (weights) | RAM | "
        "arena allocated | arena high-water planned | measured | stack | outputs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        if "skip" in r:
            out.append(f"| {r['model']} | | | | | | | | | | {r['skip']} |")
            continue
        eq = "=" if r["arena_measured"] == r["arena_plan_hw"] else "**≠**"
        match = "bit-exact" if r["outputs_match"] else "**differ**"
        per_mac = f"{r['per_mac']:.2f}" if r["per_mac"] else "-"
        out.append(
            f"| {r['model']} | {r['macs']:,} | {r['instructions']:,} | {per_mac} | "
            f"{r['flash']:,} ({r['weights']:,}) | {r['ram']:,} | {r['arena_alloc']:,} | "
            f"{r['arena_plan_hw']:,} | {eq} {r['arena_measured']:,} | {r['stack']:,} | {match} |"
        )
    return "\n".join(out) + "\n"


def qemu_version() -> str:
    import subprocess

    try:
        text = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout
        return text.split("version")[1].split()[0]
    except (OSError, IndexError):
        return "unknown"


def write_section(doc: Path, section: str, heading: str = SECTION) -> None:
    """Replace the section under `heading` (its `## ` line) in `doc` with `section`, or append it."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        doc.write_text(text.rstrip("\n") + "\n\n" + section)
        return
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    doc.write_text("".join(lines[:start]) + section + ("\n" + tail if tail else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default=str(Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models"))
    )
    parser.add_argument("--board", default="mps2-an500")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="replace the section in docs/BENCHMARKS.md")
    args = parser.parse_args()
    paths = sorted(Path(args.models).glob("*.tflite"), key=lambda p: -p.stat().st_size)
    if not paths:
        print(f"no models in {args.models}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="tinysched-bench-device-") as tmp,
        ThreadPoolExecutor(max_workers=args.jobs) as pool,
    ):
        rows = list(pool.map(lambda p: one(p, args.board, Path(tmp) / p.stem), paths))
    rows.sort(key=lambda r: r["model"])
    section = table(rows, args.board, time.monotonic() - t0)
    print(section)
    if args.write:
        write_section(REPO / "docs" / "BENCHMARKS.md", section)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
