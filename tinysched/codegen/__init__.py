"""Plan -> C: the model as plain C that runs in the planned order inside one static arena.

`generate(graph, plan)` lowers every operator to one call of a kernel in `firmware/kernels/`,
computing in Python everything TFLite computes in its `Prepare` step (requantisation multipliers and
shifts, activation clamps, padding, broadcast strides, lookup tables), so that the C does no
floating-point set-up and keeps no per-tensor metadata. The arithmetic mirrors TFLite's reference
kernels (`OpResolverType.BUILTIN_REF`) bit for bit. `docs/codegen.md` describes the generated module.

The package:

- `errors`: `Unsupported`, what a lowering raises for a variant its kernel does not cover;
- `cgen`: C literals (identifiers, comments, strings, numbers, initializer bodies);
- `quant`: TFLite's quantised arithmetic and the int8 lookup tables;
- `shapes`: strides and padding to the kernels' fixed rank;
- `context`: `KernelCall`, `ConstArray` and `LoweringContext` (what a lowering reads and fills in);
- `table`: the one opcode -> lowering table and the `lowering` decorator;
- `lower_conv`, `lower_elementwise`, `lower_pointwise`, `lower_data`, `lower_reduce`, `lower_state`,
  `lower_stream`: the lowerings, registered into the table when imported below;
- `module`: checks, state layout, step offsets, template rendering and `generate`.
"""

from __future__ import annotations

# Imported for their registrations into `table` (each module's `@lowering` decorators).
from tinysched.codegen import (  # noqa: F401
    lower_conv,
    lower_data,
    lower_elementwise,
    lower_expand,
    lower_pointwise,
    lower_reduce,
    lower_state,
    lower_stream,
)
from tinysched.codegen.cgen import (
    C_TYPES,
    c_array_lines,
    c_comment,
    c_float,
    c_identifier,
    c_list,
    c_string,
    check_prefix,
    float_lines,
)
from tinysched.codegen.context import ConstArray, KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.lower_conv import own_path
from tinysched.codegen.module import (
    KERNEL_SOURCE,
    SCRATCH_BYTES,
    GeneratedModule,
    check_supported,
    default_prefix,
    generate,
    kernels_by_op,
    model_name,
    refuse_known_gaps,
    render,
    scratch_needs,
    state_init,
    state_layout,
    step_offsets,
)
from tinysched.codegen.quant import (
    MAX_ACCUMULATED_PRODUCTS,
    activation_range,
    lut_int8,
    quantize_multiplier,
    quantize_value,
    round_half_away,
)
from tinysched.codegen.shapes import MAX_DIMS
from tinysched.codegen.table import (
    Lowering,
    lower,
    lowering,
    registered_lowerings,
    stateful_ops,
    supported_ops,
)
from tinysched.memory.variants import with_scratch  # the scratch tensors this module's kernels declare
from tinysched.model.shapes import window_padding

SUPPORTED_OPS: tuple[str, ...] = supported_ops()
STATEFUL_OPS: tuple[str, ...] = stateful_ops()

__all__ = [
    "C_TYPES",
    "KERNEL_SOURCE",
    "MAX_ACCUMULATED_PRODUCTS",
    "MAX_DIMS",
    "SCRATCH_BYTES",
    "STATEFUL_OPS",
    "SUPPORTED_OPS",
    "ConstArray",
    "GeneratedModule",
    "KernelCall",
    "Lowering",
    "LoweringContext",
    "Unsupported",
    "activation_range",
    "c_array_lines",
    "c_comment",
    "c_float",
    "c_identifier",
    "c_list",
    "c_string",
    "check_prefix",
    "check_supported",
    "default_prefix",
    "float_lines",
    "generate",
    "kernels_by_op",
    "lower",
    "lowering",
    "lut_int8",
    "model_name",
    "own_path",
    "quantize_multiplier",
    "quantize_value",
    "refuse_known_gaps",
    "registered_lowerings",
    "render",
    "round_half_away",
    "scratch_needs",
    "stateful_ops",
    "state_init",
    "state_layout",
    "step_offsets",
    "supported_ops",
    "window_padding",
    "with_scratch",
]
