"""What a lowering works with: the kernel call it fills in and the context it reads the model from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tinysched.codegen.cgen import C_TYPES
from tinysched.codegen.errors import Unsupported
from tinysched.model.graph import Graph, Tensor


@dataclass(frozen=True)
class ConstArray:
    """A constant array in the generated sources."""

    name: str
    ctype: str
    values: np.ndarray
    comment: str
    is_float: bool = False


@dataclass
class KernelCall:
    """One step of the generated `invoke`: a kernel, its parameter struct and its arguments.

    Mutable because a lowering fills it in field by field (and SUB edits what ADD wrote)."""

    op: int
    step: int
    opcode: str
    kernel: str  # C function, also the kernel's file stem
    params_type: str
    params: list[tuple[str, str]]  # designated initializers, in struct order
    args: list[str]  # C expressions after the params pointer
    local_arrays: list[ConstArray] = field(default_factory=list)  # multipliers, tables, chunk sizes
    local_code: list[str] = field(default_factory=list)  # C definitions after them (a layer's own loop)
    comment: list[str] = field(default_factory=list)
    pre: list[str] = field(default_factory=list)  # C statements before the call (e.g. pointer lists)
    first_run: bool = True  # False for a recomputed operator's later runs (parameters emitted once)
    label: str = ""  # names its parameters and arrays (`<prefix>_<label>`); default `op<op>`
    # The calls a fused operator runs inside its `pre` block (tinysched.memory.stream): their parameters
    # and arrays are emitted; the operator itself has no kernel of its own.
    parts: list[KernelCall] = field(default_factory=list)
    # TS_STEP_DONE's output arguments (ts_model.h): the step's first output and its bytes
    output: str = "NULL, 0u"

    @property
    def symbol(self) -> str:
        return self.label or f"op{self.op}"

    @property
    def emitted(self) -> list[KernelCall]:
        """The calls whose parameter structs the module defines for this step."""
        return self.parts if self.parts else ([self] if self.kernel else [])


@dataclass(frozen=True)
class LoweringContext:
    """The graph, where its tensors are and how the sources name them, with the checks every lowering
    makes on its operands. One per step (`at_step`): a recomputed operator reads other instances."""

    graph: Graph
    prefix: str
    offsets: Mapping[int, int]  # activation tensor -> arena offset of the instance this step uses
    const_names: Mapping[int, str]  # constant tensor -> its array in the weights file
    state_offsets: Mapping[int, int] = field(default_factory=dict)  # variable tensor -> state offset
    # A split arena (tinysched.arena.pools): (C pointer name, first offset, bytes) of each region, in
    # offset order; offsets are the plan's, laid end to end. Empty: the one `arena`.
    regions: tuple[tuple[str, int, int], ...] = ()
    # whether the target core runs the DSP kernels that read compile-time tables only they use
    # (DEPTHWISE_CONV_2D blocks, CONV_2D quads); False leaves them out of the flash (Helium cores
    # take other paths)
    dsp_tables: bool = True
    # False inside a streamed stage (codegen.lower_stream): its members are called on rows, by kernels
    # it renames from ts_conv2d_s8 and the others, so no whole-layer-only kernel may be chosen
    whole_layers: bool = True
    # the slot (ts_model.h TS_MEMBER_DONE) of this step's first streamed member: the members of the
    # streamed steps before it
    first_member: int = 0

    def at_step(self, offsets: Mapping[int, int]) -> LoweringContext:
        return replace(self, offsets=offsets)

    def tensor(self, index: int) -> Tensor:
        return self.graph.tensors[index]

    def ptr(self, index: int, const: bool = True) -> str:
        """A C expression pointing at tensor `index`: arena + offset, or its constant array."""
        tensor = self.tensor(index)
        ctype = C_TYPES.get(tensor.dtype)
        if ctype is None:
            raise Unsupported(f"tensor type {tensor.dtype}")
        if tensor.is_constant:
            return self.const_names[index]
        qual = "const " if const else ""
        if tensor.is_variable:  # persistent state of a stateful operator, outside the arena
            if index not in self.state_offsets:
                raise Unsupported(f"tensor {index} is persistent state")
            return f"({qual}{ctype} *)(state + {self.state_offsets[index]})"
        return f"({qual}{ctype} *)({self.place(self.offsets[index])})"

    def place(self, offset: int, sep: str = " + ") -> str:
        """`arena + offset`, or in a split arena the region's pointer and the offset inside it."""
        for k, (name, base, nbytes) in enumerate(self.regions):
            if base <= offset < base + nbytes or k == len(self.regions) - 1:
                return f"{name}{sep}{offset - base}"
        return f"arena{sep}{offset}"

    def quant(self, index: int) -> tuple[float, int]:
        """The one (scale, zero point) of a per-tensor quantised tensor."""
        q = self.tensor(index).quantization
        if q is None:
            raise Unsupported(f"tensor {index} has no quantisation")
        if q.per_channel:
            raise Unsupported(f"tensor {index} is per-channel quantised where one scale is expected")
        return q.scale[0], q.zero_point[0]

    def expect(self, index: int, *dtypes: str) -> Tensor:
        tensor = self.tensor(index)
        if tensor.dtype not in dtypes:
            raise Unsupported(f"{tensor.dtype} tensor {index} (expects {'/'.join(dtypes)})")
        return tensor

    def constant(self, index: int) -> np.ndarray:
        tensor = self.tensor(index)
        if tensor.data is None:
            raise Unsupported(f"tensor {index} must be a constant")
        return np.asarray(tensor.data)

    def itemsize(self, index: int) -> int:
        """Bytes per element of tensor `index`, refusing types the kernels do not handle."""
        dtype = self.tensor(index).dtype
        if dtype not in C_TYPES:
            raise Unsupported(f"tensor type {dtype}")
        return int(np.dtype(dtype).itemsize)

    def nhwc(self, index: int) -> tuple[int, int, int, int]:
        shape = self.tensor(index).shape
        if len(shape) != 4:
            raise Unsupported(f"rank {len(shape)} (expects NHWC)")
        return tuple(int(d) for d in shape)  # type: ignore[return-value]

    def array(self, call: KernelCall, suffix: str, ctype: str, values: Any, comment: str) -> str:
        """Add a constant array local to `call` (emitted with its parameters) and return its name."""
        name = f"{self.prefix}_{call.symbol}_{suffix}"
        flat = np.asarray(values).reshape(-1)
        call.local_arrays.append(ConstArray(name, ctype, flat, comment, is_float=ctype == "float"))
        return name
