"""Regenerate the golden generated sources in tests/golden/ (review the diff like code).

Each golden case is a folder holding a tiny model (`<name>.tflite`, written once from
`kernel_models.py` and then kept, so the goldens depend on the code generator only) and the four
files `tinysched build` generates for it. Usage, from the repository root:

    python tests/regenerate_golden.py            # rewrite the generated sources
    python tests/regenerate_golden.py --models   # also rewrite the models from kernel_models.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from helpers import generate_module  # noqa: E402
from kernel_models import hostile_names, mean_logistic_softmax, quantize_edges  # noqa: E402

GOLDEN_DIR = HERE / "golden"
GOLDEN_MODELS = {
    "hostile_names": hostile_names,
    "mean_logistic_softmax": mean_logistic_softmax,
    "quantize_edges": quantize_edges,
}


def golden_sources(name: str) -> dict[str, str]:
    """What the generator produces today for golden case `name`, in the tensor memory model (the
    goldens pin the code generator; tests/test_overlap.py covers what views and overlaps change)."""
    _, _, _, module = generate_module(GOLDEN_DIR / name / f"{name}.tflite", memory_model="tensor")
    return module.files


def main(argv: list[str]) -> int:
    rewrite_models = "--models" in argv
    for name, build in GOLDEN_MODELS.items():
        folder = GOLDEN_DIR / name
        folder.mkdir(parents=True, exist_ok=True)
        model = folder / f"{name}.tflite"
        if rewrite_models or not model.exists():
            model.write_bytes(build())
        for stale in folder.glob("*"):
            if stale.suffix in (".c", ".h"):
                stale.unlink()
        for file_name, text in golden_sources(name).items():
            (folder / file_name).write_text(text, encoding="ascii")
        print(f"wrote {folder.relative_to(HERE.parent)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
