"""Every fast-path test model (tests/test_kernels_fast.py) on the Cortex-M4 and M33 (QEMU mps2-an386,
mps2-an505), bit-exact against TFLite: the sweep the suite samples (each model on one of the two).

    PYTHONPATH=. python bench/bench_fast_paths.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_kernels_fast import DSP_ONLY_BOARDS, DSP_ONLY_MODELS, measure_fast_path_model  # noqa: E402


def main() -> int:
    print("| model | board | outputs | instructions (emulated) |\n| --- | --- | --- | ---: |")
    failed = 0
    for board in DSP_ONLY_BOARDS:
        for name in DSP_ONLY_MODELS:
            with tempfile.TemporaryDirectory(prefix="bench-fast-paths-") as tmp:
                result = measure_fast_path_model(name, board, Path(tmp))
            exact = result.outputs_match is True
            failed += not exact
            print(
                f"| {name} | {board} | {'bit-exact' if exact else 'DIFFER'} | {result.instructions or 0:,} |"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
