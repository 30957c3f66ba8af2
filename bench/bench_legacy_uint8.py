"""Legacy uint8 layers against their int8 twins on the Cortex-M7 (QEMU mps2-an500, instructions):
a 1x1 CONV_2D 64 -> 64 and a 3x3 DEPTHWISE_CONV_2D over 16x16x64 (docs/BENCHMARKS.md, stop 46),
written once as a legacy uint8 model (filter zero points away from 128: filter offsets) and once as
int8, then the fast-path models uint8_legacy_layers / _stream / _more_ops; per weighted layer its
instructions and instructions per MAC, every run bit-exact against TFLite with the measured arena
equal to the plan.

    PYTHONPATH=. python bench/bench_legacy_uint8.py [--board nucleo-f767]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fast_path_models import (  # noqa: E402
    uint8_legacy_layers,
    uint8_legacy_more_ops,
    uint8_legacy_stream,
)

from tinysched.model.modelgen import ModelBuilder  # noqa: E402

WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def pair(legacy: bool) -> bytes:
    """Stop 46's pair: 1x1 CONV_2D 64 -> 64 (RELU6) into a 3x3 SAME DEPTHWISE_CONV_2D (RELU6) over
    16x16x64; as a legacy uint8 model or as int8."""
    b = ModelBuilder(seed=46, legacy_uint8=legacy)
    x = b.input("x", (1, 16, 16, 64), scale=1 / 50, zero_point=9)
    t = b.conv2d(x, 64, (1, 1), activation="RELU6", name="pw_64_64")
    b.output(b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", activation="RELU6", name="dw_3x3_16x16"))
    return b.build()


def block(legacy: bool) -> bytes:
    """deeplabv3 mnv2 dm 0.5's layer shapes in small (16x16 maps): a 1x1 8 -> 48 expansion (RELU6),
    a 3x3 stride-2 depthwise, a 1x1 48 -> 12 projection, a 1x1 12 -> 72 expansion, a 3x3 depthwise
    dilated by 2, a 1x1 72 -> 16 projection, then a 1x1 16 -> 21 of class scores."""
    b = ModelBuilder(seed=47, legacy_uint8=legacy)
    x = b.input("x", (1, 16, 16, 8), scale=1 / 50, zero_point=-20)
    t = b.conv2d(x, 48, (1, 1), activation="RELU6", name="expand_8_48")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", activation="RELU6", name="dw_s2_48")
    t = b.conv2d(t, 12, (1, 1), name="project_48_12")
    t = b.conv2d(t, 72, (1, 1), activation="RELU6", name="expand_12_72")
    t = b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", dilation=(2, 2), activation="RELU6", name="dw_dil2_72")
    t = b.conv2d(t, 16, (1, 1), name="project_72_16")
    b.output(b.conv2d(t, 21, (1, 1), name="scores_16_21"))
    return b.build()


MODELS = {
    "pair_uint8": lambda: pair(True),
    "pair_int8": lambda: pair(False),
    "block_uint8": lambda: block(True),
    "block_int8": lambda: block(False),
    "uint8_legacy_layers": uint8_legacy_layers,
    "uint8_legacy_stream": uint8_legacy_stream,
    "uint8_legacy_more_ops": uint8_legacy_more_ops,
}


def measure(path: Path, board: str) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tinysched.cli",
            "measure",
            str(path),
            "--board",
            board,
            "--json",
            "--inputs",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if not out.stdout.strip():
        raise SystemExit(f"{path.name}: measure failed\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--board", default="nucleo-f767")
    args = parser.parse_args()
    print("| model | step | layer | kernel | MACs | instructions | per MAC |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
    failed = 0
    totals = []
    with tempfile.TemporaryDirectory(prefix="bench-legacy-uint8-") as tmp:
        for name, build in MODELS.items():
            path = Path(tmp) / f"{name}.tflite"
            path.write_bytes(build())
            r = measure(path, args.board)
            exact = r.get("outputs_match") is True and r.get("arena_matches_plan") is True
            failed += not exact
            totals.append((name, r.get("instructions") or 0, exact))
            for op in r.get("per_operator") or []:
                if op["type"] not in WEIGHTED and not op.get("members"):
                    continue
                kernel = op.get("kernel_function") or op.get("kernel") or ""
                per_mac = op.get("instructions_per_mac")
                if op.get("members"):  # a streamed stage: its members' counts
                    for k, m in enumerate(op["members"]):
                        print(
                            f"| {name} | {op['step']}.{k} | {m['type']} {m['input_shape'][1:]} -> "
                            f"{m['output_shape'][1:]} (stage member) | {kernel} | {m['macs']:,} | "
                            f"{m['count']:,} | {m.get('instructions_per_mac', '-')} |"
                        )
                    continue
                print(
                    f"| {name} | {op['step']} | {op['output_tensor']} ({op['type']}) | {kernel} | "
                    f"{op['macs']:,} | {op['count']:,} | {per_mac if per_mac is not None else '-'} |"
                )
    print("\n| model | instructions | bit-exact, arena = plan |\n| --- | ---: | --- |")
    for name, total, exact in totals:
        print(f"| {name} | {total:,} | {'yes' if exact else 'NO'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
