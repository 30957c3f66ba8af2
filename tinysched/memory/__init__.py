"""The memory models: what each step of an order costs in bytes, and what may share them.

Takes: a `Graph` (tinysched.model). Gives: lifetimes and per-step live bytes (`profile`), in the
tensor model (every tensor its own bytes, TFLM's model) or the refined one (`Refinement`: views
share their root, outputs overlap dying inputs as far as the kernels' read/write order allows), the
streamed chains (operators run row by row, the tensors between them held as windows) and the kernel
variants that trade scratch for bytes (in-place variants, the wide CONV_2D's strip). The order
search minimises these costs; the arena places them. docs/memory-model.md states the rules.

    tensor.py    the tensor model: lifetimes, step costs, sequences with recomputation
    overlap.py   the refined model: aliases and overlaps over the tensor model
    stream.py    streamed chains and their row windows
    variants.py  kernel variants on operators, and the scratch tensors they declare
    inplace.py   which in-place variants lower a step's bytes
"""

from tinysched.exports import lazy_api

_API = {
    "MODELS": "overlap",
    "PREFERENCES": "inplace",
    "KernelVariant": "variants",
    "Lifetime": "tensor",
    "MemoryProfile": "tensor",
    "Refinement": "overlap",
    "RowWindow": "stream",
    "StepModel": "tensor",
    "Stream": "stream",
    "alias_saving": "tensor",
    "lifetimes": "tensor",
    "memory_model": "overlap",
    "peak_bytes": "tensor",
    "profile": "tensor",
    "refine": "overlap",
    "select_variants": "inplace",
    "sequence_profile": "tensor",
    "stream_of": "stream",
    "with_scratch": "variants",
    "with_variants": "variants",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
