"""Plan -> C: the model as plain C that runs in the planned order inside one static arena.

`generate(graph, plan)` lowers every operator to one call of a kernel in `firmware/kernels/`,
computing in Python everything TFLite computes in its `Prepare` step (requantisation multipliers and
shifts, activation clamps, padding, broadcast strides, lookup tables), so that the C does no
floating-point set-up and keeps no per-tensor metadata. The sources come from the Jinja2 templates in
`templates/`; the literals in them come from the small helpers at the top of this module, which are
what make names from the model safe in C. `docs/codegen.md` describes the generated module.

The arithmetic mirrors TFLite's reference kernels (`OpResolverType.BUILTIN_REF`) bit for bit; the
functions below say which TFLite computation each one reproduces.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tinysched import __version__
from tinysched.errors import TinyschedError
from tinysched.graph import Graph, Operator, Tensor

MAX_DIMS = 6
# |q - zero_point| * |w| <= 255 * 128: an int32 accumulator holds fewer than this many products.
MAX_ACCUMULATED_PRODUCTS = (2**31 - 1) // (255 * 128)

# ---- C literals ----------------------------------------------------------------------------------

_C_KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "_Complex",
        "_Imaginary",
    ]
)


def c_identifier(name: str, fallback: str = "model") -> str:
    """A valid C identifier from any text: other characters become `_`, never a leading digit."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name)
    ident = re.sub(r"_+", "_", ident).strip("_") or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    if ident in _C_KEYWORDS:
        ident = f"{ident}_"
    return ident


def check_prefix(prefix: str) -> str:
    """A user-given symbol prefix must already be a valid C identifier."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix or "") or prefix in _C_KEYWORDS:
        raise TinyschedError(f"prefix {prefix!r} is not a valid C identifier")
    return prefix


def c_comment(text: str, limit: int = 160) -> str:
    """Text that is safe inside a `/* ... */` comment: one line, ASCII, no `*/`, no trigraphs.

    Control and non-ASCII characters are written as escapes; long text is cut with `...`."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    safe = "".join(out)
    # `*/` would end the comment, `/*` nests badly in some tools, `??x` may be a trigraph.
    while "*/" in safe or "/*" in safe or "??" in safe:
        safe = safe.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    if len(safe) > limit:
        safe = safe[: limit - 3].rstrip("\\") + "..."
    return safe


def c_string(text: str) -> str:
    """A C string literal holding `text` as UTF-8: quotes, backslashes, `?` (trigraphs) and every byte
    outside printable ASCII escaped; octal escapes are always three digits, so none absorbs the next
    character."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def c_float(value: float) -> str:
    """A double literal that reads back as exactly `value` (shortest round-trip form)."""
    if not math.isfinite(value):
        raise TinyschedError(f"cannot write non-finite constant {value!r} into C")
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


_C_TYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",  # ARG_MAX/ARG_MIN outputs, GATHER indices
    "float32": "float",
}


def c_array_lines(values: Sequence[int] | np.ndarray, per_line: int = 16, indent: str = "    ") -> str:
    """Integer values as the body of a C initializer, `per_line` per line, each line comma-ended."""
    flat = np.asarray(values).reshape(-1)
    if flat.size == 0:
        return f"{indent}0,"
    if flat.dtype.kind == "f":
        raise TinyschedError("float arrays are not written by c_array_lines")
    text = flat.astype(np.int64).astype(str)
    lines = []
    for start in range(0, text.size, per_line):
        lines.append(indent + ", ".join(text[start : start + per_line].tolist()) + ",")
    return "\n".join(lines)


# ---- TFLite's quantisation arithmetic --------------------------------------------------------------


def round_half_away(x: float) -> float:
    """std::round / roundf: nearest integer, halves away from zero (exact for float32 inputs)."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(round_half_away(q * (1 << 31)))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if q_fixed > 2**31 - 1:
        raise TinyschedError(f"multiplier {real!r} cannot be represented")
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def _f32(x: float) -> np.float32:
    return np.float32(x)


def quantize_value(value: float, scale: float, zero_point: int) -> int:
    """TFLite's Quantize() for activation limits: zero_point + roundf(value / scale), in float32."""
    return zero_point + int(round_half_away(float(_f32(value) / _f32(scale))))


_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def activation_range(activation: str, scale: float, zero_point: int, dtype: str = "int8") -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the clamp a fused activation becomes on quantised values."""
    qmin, qmax = _QRANGE[dtype]
    if activation in ("NONE", None):
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize_value(0.0, scale, zero_point)), qmax
    if activation == "RELU6":
        return (
            max(qmin, quantize_value(0.0, scale, zero_point)),
            min(qmax, quantize_value(6.0, scale, zero_point)),
        )
    if activation == "RELU_N1_TO_1":
        return (
            max(qmin, quantize_value(-1.0, scale, zero_point)),
            min(qmax, quantize_value(1.0, scale, zero_point)),
        )
    raise _Unsupported(f"fused activation {activation}")


def window_padding(in_size: int, out_size: int, kernel: int, stride: int, dilation: int) -> int:
    """ComputePaddingWithOffset: padding before the first row/column (the smaller half)."""
    effective = (kernel - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


@cache
def _libm_expf() -> Callable[[float], float] | None:
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name) if name else ctypes.CDLL("libm.so.6")
    except OSError:
        return None
    fn = lib.expf
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


def _expf(x: np.float32) -> np.float32:
    fn = _libm_expf()
    if fn is None:  # pragma: no cover - every supported host has a C library
        return np.exp(np.float32(x))
    return np.float32(fn(float(x)))


def _logistic_f32(x: np.float32) -> np.float32:
    """The float32 function TFLite tabulates for int8 LOGISTIC: 1.0f / (1.0f + expf(-x))."""
    with np.errstate(over="ignore"):
        return np.float32(1.0) / (np.float32(1.0) + _expf(np.float32(-x)))


def lut_int8(
    in_scale: float, in_zero_point: int, out_scale: float, out_zero_point: int, fn: Callable
) -> np.ndarray:
    """TFLite's LUTPopulateInt8 for int8 -> int8: entry (uint8)q = quantised fn(dequantised q)."""
    table = np.zeros(256, dtype=np.int8)
    inverse_scale = np.float32(1.0) / np.float32(out_scale)
    for q in range(-128, 128):
        with np.errstate(over="ignore", invalid="ignore"):
            dequantized = np.float32(in_scale) * np.float32(q - in_zero_point)
            transformed = fn(dequantized)
            if not np.isfinite(transformed):
                quantized = -128
            else:
                rescaled = np.float32(round_half_away(float(np.float32(transformed * inverse_scale))))
                quantized = int(np.float32(rescaled + np.float32(out_zero_point)))
        table[q & 0xFF] = max(-128, min(127, quantized))
    return table


# ---- lowering: one kernel call per operator ----------------------------------------------------------


# Kernel functions that live in another function's file (variants sharing one implementation);
# every other kernel `ts_x` is in `firmware/kernels/ts_x.c`.
KERNEL_SOURCE = {"ts_softmax_s8_s16": "ts_softmax_s8"}


class _Unsupported(Exception):
    """Raised inside a lowering for a variant the kernels do not cover; becomes a TinyschedError."""


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
    op: int
    step: int
    opcode: str
    kernel: str  # C function, also the kernel's file stem
    params_type: str
    params: list[tuple[str, str]]  # designated initializers, in struct order
    args: list[str]  # C expressions after the params pointer
    local_arrays: list[ConstArray] = field(default_factory=list)  # multipliers, tables, chunk sizes
    comment: list[str] = field(default_factory=list)
    pre: list[str] = field(default_factory=list)  # C statements before the call (e.g. pointer lists)
    first_run: bool = True  # False for a recomputed operator's later runs (parameters emitted once)


@dataclass(frozen=True)
class GeneratedModule:
    """The generated sources of one model, ready to write."""

    prefix: str
    files: dict[str, str]  # file name -> text
    kernels: tuple[str, ...]  # kernel file stems used, sorted
    arena_bytes: int
    alignment: int
    order: tuple[int, ...]
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    weights_bytes: int
    op_kernels: tuple[tuple[int, str], ...] = ()  # (operator, C kernel function) in run order


def _dims_strides(shape: Sequence[int]) -> list[int]:
    strides, stride = [], 1
    for d in reversed(shape):
        strides.append(stride)
        stride *= d
    return strides[::-1]


def _pad_left(values: Sequence[int], fill: int) -> list[int]:
    values = list(values)
    if len(values) > MAX_DIMS:
        raise _Unsupported(f"rank {len(values)} (the kernels handle up to {MAX_DIMS})")
    return [fill] * (MAX_DIMS - len(values)) + values


def _c_list(values: Sequence[int]) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


class _Lowering:
    """Per-operator lowering with access to the graph, the placement and the naming scheme."""

    state_offsets: dict[int, int] = {}  # variable tensor -> offset in the state buffer (set per use)

    def __init__(self, graph: Graph, prefix: str, offsets: dict[int, int], const_names: dict[int, str]):
        self.graph = graph
        self.prefix = prefix
        self.offsets = offsets
        self.const_names = const_names

    # -- tensors

    def t(self, index: int) -> Tensor:
        return self.graph.tensors[index]

    def ptr(self, index: int, const: bool = True) -> str:
        """A C expression pointing at tensor `index`: arena + offset, or its constant array."""
        tensor = self.t(index)
        ctype = _C_TYPES.get(tensor.dtype)
        if ctype is None:
            raise _Unsupported(f"tensor type {tensor.dtype}")
        if tensor.is_constant:
            return self.const_names[index]
        qual = "const " if const else ""
        if tensor.is_variable:  # persistent state (lower_extra.STATEFUL_OPS), outside the arena
            if index not in self.state_offsets:
                raise _Unsupported(f"tensor {index} is persistent state")
            return f"({qual}{ctype} *)(state + {self.state_offsets[index]})"
        return f"({qual}{ctype} *)(arena + {self.offsets[index]})"

    def quant(self, index: int) -> tuple[float, int]:
        q = self.t(index).quantization
        if q is None:
            raise _Unsupported(f"tensor {index} has no quantisation")
        if q.per_channel:
            raise _Unsupported(f"tensor {index} is per-channel quantised where one scale is expected")
        return q.scale[0], q.zero_point[0]

    def expect(self, index: int, *dtypes: str) -> Tensor:
        tensor = self.t(index)
        if tensor.dtype not in dtypes:
            raise _Unsupported(f"{tensor.dtype} tensor {index} (expects {'/'.join(dtypes)})")
        return tensor

    def constant(self, index: int) -> np.ndarray:
        tensor = self.t(index)
        if tensor.data is None:
            raise _Unsupported(f"tensor {index} must be a constant")
        return np.asarray(tensor.data)

    def array(self, call: KernelCall, suffix: str, ctype: str, values: Any, comment: str) -> str:
        name = f"{self.prefix}_op{call.op}_{suffix}"
        call.local_arrays.append(ConstArray(name, ctype, np.asarray(values).reshape(-1), comment))
        return name

    # -- operators

    def conv_like(self, op: Operator, call: KernelCall, depthwise: bool) -> None:
        x, w = op.inputs[0], op.inputs[1]
        b = op.inputs[2] if len(op.inputs) > 2 else -1
        y = op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        self.expect(w, "int8")
        if not self.t(w).is_constant:
            raise _Unsupported("non-constant filter")
        if b >= 0:
            self.expect(b, "int32")
        in_scale, in_zp = self.quant(x)
        out_scale, out_zp = self.quant(y)
        wq = self.t(w).quantization
        if wq is None or any(z != 0 for z in wq.zero_point):
            raise _Unsupported("filter must be symmetric int8 (zero point 0)")
        n, ih, iw, ic = self.t(x).shape
        _, oh, ow, oc = self.t(y).shape
        fshape = self.t(w).shape
        fh, fw = fshape[1], fshape[2]
        if len(wq.scale) not in (1, oc):
            raise _Unsupported(f"{len(wq.scale)} filter scales for {oc} output channels")
        scales = wq.scale if len(wq.scale) == oc else wq.scale * oc
        mults, shifts = zip(
            *(quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in scales),
            strict=True,
        )
        opts = op.options
        sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
        dh, dw = int(opts.get("dilation_hfactor", 1) or 1), int(opts.get("dilation_wfactor", 1) or 1)
        if depthwise:
            dm = oc // ic if ic else 0
            if fshape[0] != 1 or fshape[3] != oc or dm * ic != oc:
                raise _Unsupported(f"depthwise filter shape {list(fshape)} for {ic} -> {oc} channels")
            products = fh * fw
        else:
            if fshape[0] != oc or fshape[3] != ic:
                raise _Unsupported(f"filter shape {list(fshape)} for {ic} -> {oc} channels (grouped conv)")
            products = fh * fw * ic
        if products >= MAX_ACCUMULATED_PRODUCTS:
            raise _Unsupported(f"{products} products per output could overflow an int32 accumulator")
        act_min, act_max = activation_range(opts.get("fused_activation_function", "NONE"), out_scale, out_zp)
        params = [
            ("batches", n),
            ("in_h", ih),
            ("in_w", iw),
            ("in_c", ic),
            ("out_h", oh),
            ("out_w", ow),
            ("out_c", oc),
        ]
        if depthwise:
            params.append(("depth_multiplier", oc // ic))
        params += [
            ("filter_h", fh),
            ("filter_w", fw),
            ("stride_h", sh),
            ("stride_w", sw),
            ("dilation_h", dh),
            ("dilation_w", dw),
            ("pad_top", window_padding(ih, oh, fh, sh, dh)),
            ("pad_left", window_padding(iw, ow, fw, sw, dw)),
            ("input_offset", -in_zp),
            ("output_offset", out_zp),
            ("act_min", act_min),
            ("act_max", act_max),
        ]
        mult_name = self.array(call, "multiplier", "int32_t", mults, "per output channel")
        shift_name = self.array(call, "shift", "int32_t", shifts, "per output channel")
        call.params = [(k, str(v)) for k, v in params] + [("multiplier", mult_name), ("shift", shift_name)]
        call.args = [self.ptr(x), self.ptr(w), self.ptr(b) if b >= 0 else "NULL", self.ptr(y, const=False)]

    def lower_conv_2d(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_conv2d_s8", "ts_conv2d_s8_params"
        self.conv_like(op, call, depthwise=False)

    def lower_depthwise_conv_2d(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_depthwise_conv2d_s8", "ts_depthwise_conv2d_s8_params"
        self.conv_like(op, call, depthwise=True)

    def lower_fully_connected(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_fully_connected_s8", "ts_fully_connected_s8_params"
        x, w = op.inputs[0], op.inputs[1]
        b = op.inputs[2] if len(op.inputs) > 2 else -1
        y = op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        self.expect(w, "int8")
        if not self.t(w).is_constant:
            raise _Unsupported("non-constant weights")
        if b >= 0:
            self.expect(b, "int32")
        if op.options.get("weights_format", 0) not in (0, "DEFAULT"):
            raise _Unsupported("shuffled weights format")
        in_scale, in_zp = self.quant(x)
        out_scale, out_zp = self.quant(y)
        wq = self.t(w).quantization
        if wq is None:
            raise _Unsupported("unquantised weights")
        out_depth, in_depth = self.t(w).shape
        if in_depth >= MAX_ACCUMULATED_PRODUCTS:
            raise _Unsupported(f"{in_depth} products per output could overflow an int32 accumulator")
        size = math.prod(self.t(x).shape)
        if size % in_depth:
            raise _Unsupported(f"input of {size} elements is not a multiple of depth {in_depth}")
        per_channel = len(wq.scale) > 1
        if per_channel and (len(wq.scale) != out_depth or any(z != 0 for z in wq.zero_point)):
            raise _Unsupported("per-channel weights need one scale per output and zero points 0")
        mults, shifts = zip(
            *(quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in wq.scale),
            strict=True,
        )
        act_min, act_max = activation_range(
            op.options.get("fused_activation_function", "NONE"), out_scale, out_zp
        )
        call.params = [
            ("batches", str(size // in_depth)),
            ("in_depth", str(in_depth)),
            ("out_depth", str(out_depth)),
            ("input_offset", str(-in_zp)),
            ("filter_offset", str(-wq.zero_point[0])),
            ("output_offset", str(out_zp)),
            ("act_min", str(act_min)),
            ("act_max", str(act_max)),
            ("per_channel", "1" if per_channel else "0"),
            (
                "multiplier",
                self.array(
                    call,
                    "multiplier",
                    "int32_t",
                    mults,
                    "per output" if per_channel else "one for all outputs",
                ),
            ),
            (
                "shift",
                self.array(
                    call, "shift", "int32_t", shifts, "per output" if per_channel else "one for all outputs"
                ),
            ),
        ]
        call.args = [self.ptr(x), self.ptr(w), self.ptr(b) if b >= 0 else "NULL", self.ptr(y, const=False)]

    def pool(self, op: Operator, call: KernelCall) -> None:
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        if self.quant(x) != self.quant(y):
            raise _Unsupported("input and output quantisation differ")
        out_scale, out_zp = self.quant(y)
        n, ih, iw, c = self.t(x).shape
        _, oh, ow, _ = self.t(y).shape
        opts = op.options
        fh, fw = int(opts["filter_height"]), int(opts["filter_width"])
        sh, sw = int(opts["stride_h"]), int(opts["stride_w"])
        act_min, act_max = activation_range(opts.get("fused_activation_function", "NONE"), out_scale, out_zp)
        call.params_type = "ts_pool2d_s8_params"
        call.params = [
            (k, str(v))
            for k, v in (
                ("batches", n),
                ("in_h", ih),
                ("in_w", iw),
                ("channels", c),
                ("out_h", oh),
                ("out_w", ow),
                ("filter_h", fh),
                ("filter_w", fw),
                ("stride_h", sh),
                ("stride_w", sw),
                ("pad_top", window_padding(ih, oh, fh, sh, 1)),
                ("pad_left", window_padding(iw, ow, fw, sw, 1)),
                ("act_min", act_min),
                ("act_max", act_max),
            )
        ]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_average_pool_2d(self, op: Operator, call: KernelCall) -> None:
        call.kernel = "ts_avg_pool2d_s8"
        self.pool(op, call)

    def lower_max_pool_2d(self, op: Operator, call: KernelCall) -> None:
        call.kernel = "ts_max_pool2d_s8"
        self.pool(op, call)

    def broadcast(self, a: int, b: int, y: int) -> str:
        sa, sb, sy = self.t(a).shape, self.t(b).shape, self.t(y).shape
        try:
            shape = np.broadcast_shapes(tuple(sa), tuple(sb))
        except ValueError:
            raise _Unsupported(f"shapes {list(sa)} and {list(sb)} do not broadcast") from None
        if tuple(shape) != tuple(sy) and math.prod(shape) != math.prod(sy):
            raise _Unsupported(f"output shape {list(sy)} is not the broadcast shape {list(shape)}")
        dims = _pad_left(shape, 1)

        def strides(s: Sequence[int]) -> list[int]:
            padded = _pad_left(s, 1)
            return [
                0 if padded[d] == 1 and dims[d] != 1 else st for d, st in enumerate(_dims_strides(padded))
            ]

        return (
            "{ .dims = "
            + _c_list(dims)
            + ", .in1_strides = "
            + _c_list(strides(sa))
            + ", .in2_strides = "
            + _c_list(strides(sb))
            + " }"
        )

    def lower_add(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_add_s8", "ts_add_s8_params"
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        for t in (a, b, y):
            self.expect(t, "int8")
        (s1, z1), (s2, z2), (so, zo) = self.quant(a), self.quant(b), self.quant(y)
        left_shift = 20
        twice_max = 2 * float(max(_f32(s1), _f32(s2)))
        m1, sh1 = quantize_multiplier(float(s1) / twice_max)
        m2, sh2 = quantize_multiplier(float(s2) / twice_max)
        mo, sho = quantize_multiplier(twice_max / ((1 << left_shift) * float(so)))
        if sh1 > 0 or sh2 > 0 or sho > 0:
            raise _Unsupported("an ADD rescale of 1 or more")
        act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
        call.params = [
            ("shape", self.broadcast(a, b, y)),
            ("input1_offset", str(-z1)),
            ("input2_offset", str(-z2)),
            ("output_offset", str(zo)),
            ("left_shift", str(left_shift)),
            ("input1_multiplier", str(m1)),
            ("input1_shift", str(sh1)),
            ("input2_multiplier", str(m2)),
            ("input2_shift", str(sh2)),
            ("output_multiplier", str(mo)),
            ("output_shift", str(sho)),
            ("act_min", str(act_min)),
            ("act_max", str(act_max)),
        ]
        call.args = [self.ptr(a), self.ptr(b), self.ptr(y, const=False)]

    def lower_mul(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_mul_s8", "ts_mul_s8_params"
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        for t in (a, b, y):
            self.expect(t, "int8")
        (s1, z1), (s2, z2), (so, zo) = self.quant(a), self.quant(b), self.quant(y)
        mult, shift = quantize_multiplier(float(s1) * float(s2) / float(so))
        act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
        call.params = [
            ("shape", self.broadcast(a, b, y)),
            ("input1_offset", str(-z1)),
            ("input2_offset", str(-z2)),
            ("output_offset", str(zo)),
            ("output_multiplier", str(mult)),
            ("output_shift", str(shift)),
            ("act_min", str(act_min)),
            ("act_max", str(act_max)),
        ]
        call.args = [self.ptr(a), self.ptr(b), self.ptr(y, const=False)]

    def lower_mean(self, op: Operator, call: KernelCall) -> None:
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        shape = list(self.t(x).shape)
        rank = len(shape)
        axes = sorted(
            {int(a) + rank if int(a) < 0 else int(a) for a in self.constant(op.inputs[1]).reshape(-1)}
        )
        if any(not 0 <= a < rank for a in axes):
            raise _Unsupported(f"axes {axes} for rank {rank}")
        if not axes:
            self.lower_copy(op, call)
            return
        call.kernel, call.params_type = "ts_mean_s8", "ts_mean_s8_params"
        (si, zi), (so, zo) = self.quant(x), self.quant(y)
        strides = _dims_strides(shape)
        kept = [d for d in range(rank) if d not in axes]
        count = math.prod(shape[a] for a in axes)
        if count >= 1 << 23:
            raise _Unsupported(f"a mean over {count} elements")
        # reduce.cc: QuantizeMultiplier(input_scale / output_scale), then reference QuantizedMeanOrSum
        # folds 1/count in: multiplier << floor(log2(count)) / count, shift lowered to match.
        mult, shift = quantize_multiplier(float(si) / float(so))
        bits = min(count.bit_length() - 1, 32, 31 + shift)
        mult = (mult << bits) // count
        shift -= bits
        call.params = [
            ("out_dims", _c_list(_pad_left([shape[d] for d in kept], 1))),
            ("out_strides", _c_list(_pad_left([strides[d] for d in kept], 0))),
            ("red_dims", _c_list(_pad_left([shape[d] for d in axes], 1))),
            ("red_strides", _c_list(_pad_left([strides[d] for d in axes], 0))),
            ("count", str(count)),
            ("input_zero_point", str(zi)),
            ("output_zero_point", str(zo)),
            ("multiplier", str(mult)),
            ("shift", str(shift)),
        ]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_softmax(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_softmax_s8", "ts_softmax_s8_params"
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        si, _ = self.quant(x)
        so, zo = self.quant(y)
        if self.t(y).dtype == "int16":  # int8 in, int16 out: same parameters, ts_softmax_s8_s16
            call.kernel = "ts_softmax_s8_s16"
            if zo != -32768 or abs(so - 1.0 / 65536) > 0.001 / 65536:
                raise _Unsupported("int16 output quantisation other than (1/65536, -32768)")
        elif self.expect(y, "int8") and (zo != -128 or abs(so - 1.0 / 256) > 0.001 / 256):
            raise _Unsupported("int8 output quantisation other than (1/256, -128)")
        beta = float(op.options.get("beta", 1.0))
        # activations.cc SoftmaxPrepare (kReference) -> PreprocessSoftmaxScaling, CalculateInputRadius.
        real = min(beta * float(si) * float(1 << 26), float(2**31 - 1))
        mult, left_shift = quantize_multiplier(real)
        if left_shift < 0:
            raise _Unsupported("softmax input scale times beta below 2^-26")
        radius = math.floor(1.0 * ((1 << 5) - 1) * (1 << 26) / (1 << left_shift))
        shape = self.t(x).shape
        depth = shape[-1] if shape else 1
        call.params = [
            ("outer", str(math.prod(shape) // depth)),
            ("depth", str(depth)),
            ("input_multiplier", str(mult)),
            ("input_left_shift", str(left_shift)),
            ("diff_min", str(-radius)),
        ]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_logistic(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_lut_s8", "ts_lut_s8_params"
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        (si, zi), (so, zo) = self.quant(x), self.quant(y)
        if so != 1.0 / 256:
            raise _Unsupported("int8 output scale other than 1/256")
        table = lut_int8(si, zi, so, zo, _logistic_f32)
        name = self.array(call, "table", "int8_t", table, "logistic of each input byte, by (uint8_t)q")
        call.params = [("count", str(math.prod(self.t(x).shape))), ("table", name)]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_quantize(self, op: Operator, call: KernelCall) -> None:
        x, y = op.inputs[0], op.outputs[0]
        src, dst = self.t(x), self.t(y)
        count = str(math.prod(src.shape))
        if src.dtype == "float32" and dst.dtype == "int8":
            so, zo = self.quant(y)
            call.kernel, call.params_type = "ts_quantize_f32_s8", "ts_quantize_f32_s8_params"
            call.params = [("count", count), ("scale", c_float(so)), ("zero_point", str(zo))]
        elif src.dtype in ("int8", "uint8") and dst.dtype in ("int8", "uint8"):
            (si, zi), (so, zo) = self.quant(x), self.quant(y)
            mult, shift = quantize_multiplier(float(si) / float(so))
            call.kernel, call.params_type = "ts_requantize_8bit", "ts_requantize_8bit_params"
            call.params = [
                ("count", count),
                ("input_is_uint8", "1" if src.dtype == "uint8" else "0"),
                ("output_is_uint8", "1" if dst.dtype == "uint8" else "0"),
                ("input_zero_point", str(zi)),
                ("output_zero_point", str(zo)),
                ("multiplier", str(mult)),
                ("shift", str(shift)),
            ]
        else:
            _lower_extra.lower_quantize_integer(self, op, call)  # int16/int32 (lower_extra.py)
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_dequantize(self, op: Operator, call: KernelCall) -> None:
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "float32")
        si, zi = self.quant(x)
        call.kernel, call.params_type = "ts_dequantize_s8_f32", "ts_dequantize_s8_f32_params"
        call.params = [
            ("count", str(math.prod(self.t(x).shape))),
            ("scale", c_float(si)),
            ("zero_point", str(zi)),
        ]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_copy(self, op: Operator, call: KernelCall) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if self.t(x).nbytes != self.t(y).nbytes or self.t(x).dtype != self.t(y).dtype:
            raise _Unsupported("input and output differ in type or size")
        call.kernel, call.params_type = "ts_copy", "ts_copy_params"
        call.params = [("bytes", str(self.t(x).nbytes))]
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    lower_reshape = lower_copy
    lower_squeeze = lower_copy
    lower_expand_dims = lower_copy

    def lower_concatenation(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_concatenation", "ts_concatenation_params"
        y = op.outputs[0]
        ins = [t for t in op.inputs if t >= 0]
        out = self.t(y)
        if op.options.get("fused_activation_function", "NONE") != "NONE":
            raise _Unsupported("a fused activation")
        for t in ins:
            if self.t(t).dtype != out.dtype:
                raise _Unsupported("inputs of different types")
            if out.dtype in ("int8", "uint8") and self.quant(t) != self.quant(y):
                raise _Unsupported("inputs quantised differently from the output")
        rank = len(out.shape)
        axis = int(op.options.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        itemsize = np.dtype(out.dtype).itemsize
        chunks = [math.prod(self.t(t).shape[axis:]) * itemsize for t in ins]
        name = self.array(call, "chunk_bytes", "int32_t", chunks, "bytes of each input per outer slice")
        call.params = [
            ("num_inputs", str(len(ins))),
            ("outer", str(math.prod(out.shape[:axis]))),
            ("chunk_bytes", name),
        ]
        inputs_name = f"op{call.op}_inputs"
        call.pre = [
            f"const void *const {inputs_name}[{len(ins)}] = {{" + ", ".join(self.ptr(t) for t in ins) + "};"
        ]
        call.args = [inputs_name, self.ptr(y, const=False)]

    def lower_pad(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_pad_s8", "ts_pad_s8_params"
        x, y = op.inputs[0], op.outputs[0]
        self.expect(x, "int8")
        self.expect(y, "int8")
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            raise _Unsupported("explicit constant values")
        pads = self.constant(op.inputs[1]).reshape(-1, 2).astype(np.int64)
        in_shape = self.t(x).shape
        _, zo = self.quant(y)
        call.params = [
            ("in_dims", _c_list(_pad_left(in_shape, 1))),
            ("out_dims", _c_list(_pad_left(self.t(y).shape, 1))),
            ("pad_before", _c_list(_pad_left(pads[:, 0].tolist(), 0))),
            ("pad_value", str(zo)),
        ]
        if any(p < 0 for p in pads.reshape(-1).tolist()):
            raise _Unsupported("negative padding")
        call.args = [self.ptr(x), self.ptr(y, const=False)]

    def lower_transpose(self, op: Operator, call: KernelCall) -> None:
        call.kernel, call.params_type = "ts_transpose", "ts_transpose_params"
        x, y = op.inputs[0], op.outputs[0]
        src = self.t(x)
        perm = [int(p) for p in self.constant(op.inputs[1]).reshape(-1)]
        rank = len(src.shape)
        perm = [p + rank if p < 0 else p for p in perm]
        if sorted(perm) != list(range(rank)):
            raise _Unsupported(f"permutation {perm}")
        strides = _dims_strides(src.shape)
        call.params = [
            ("out_dims", _c_list(_pad_left([src.shape[p] for p in perm], 1))),
            ("in_strides", _c_list(_pad_left([strides[p] for p in perm], 0))),
            ("element_bytes", str(np.dtype(src.dtype).itemsize if src.dtype in _C_TYPES else 0)),
        ]
        self.ptr(x)  # checks the type
        call.args = [self.ptr(x), self.ptr(y, const=False)]


# Issue 6's operators (activations, elementwise, data movement, reductions) live in lower_extra.py.
from tinysched import lower_extra as _lower_extra  # noqa: E402

_lower_extra.install(_Lowering)

SUPPORTED_OPS: tuple[str, ...] = tuple(
    sorted(
        name.removeprefix("lower_").upper()
        for name in vars(_Lowering)
        if name.startswith("lower_") and name != "lower_copy"
    )
)

# Kernels that need scratch memory declare it here: opcode -> bytes needed for one operator. The
# generator adds the scratch as an extra (unread) output tensor of that operator before planning,
# which the memory model keeps live during that step only, so the arena stays exact. No kernel
# needs scratch today.
SCRATCH_BYTES: dict[str, Callable[[Graph, Operator], int]] = {}


def with_scratch(graph: Graph, scratch: dict[int, int]) -> Graph:
    """`graph` plus one unread int8 output tensor of `scratch[op]` bytes on each listed operator."""
    if not scratch:
        return graph
    from tinysched.graph import Tensor as _Tensor

    tensors = list(graph.tensors)
    operators = list(graph.operators)
    for op_index, nbytes in sorted(scratch.items()):
        if nbytes <= 0:
            continue
        op = operators[op_index]
        t = _Tensor(
            len(tensors), f"{op.opcode.lower()}_{op_index}/scratch", "int8", (int(nbytes),), int(nbytes)
        )
        tensors.append(t)
        operators[op_index] = replace(op, outputs=(*op.outputs, t.index))
    return Graph(
        tuple(tensors),
        tuple(operators),
        graph.inputs,
        graph.outputs,
        graph.name,
        graph.description,
        graph.metadata,
        graph.source,
        graph.sha256,
    )


def scratch_needs(graph: Graph) -> dict[int, int]:
    return {
        op.index: SCRATCH_BYTES[op.opcode](graph, op) for op in graph.operators if op.opcode in SCRATCH_BYTES
    }


def check_supported(graph: Graph) -> None:
    """Refuse, in one line naming the operator, anything the generator cannot lower."""
    _lower_extra.refuse_known_gaps(graph)  # legacy uint8 models: one clear line
    for op in graph.operators:
        if op.opcode not in SUPPORTED_OPS:
            raise TinyschedError(
                f"operator {op.index} ({op.opcode}) is not supported by the code generator; "
                f"supported: {', '.join(SUPPORTED_OPS)}"
            )
    for t in graph.tensors:
        readers = [graph.operators[v].opcode for v in graph.consumers.get(t.index, ())]
        if t.is_variable and any(r not in _lower_extra.STATEFUL_OPS for r in readers):
            raise TinyschedError(
                f"tensor {t.index} ({c_comment(t.name, 60)}) is persistent state; "
                f"only {', '.join(_lower_extra.STATEFUL_OPS)} keep state in the code generator"
            )
    lowering = _Lowering(
        graph,
        "check",
        {t: 0 for t in graph.activation_tensors},
        {t.index: "c" for t in graph.tensors if t.is_constant},
    )
    lowering.state_offsets = _lower_extra.state_layout(graph, 16)[0]
    for op in graph.operators:
        _lower(lowering, op, 0)
    for t in (*graph.inputs, *graph.outputs):
        tensor = graph.tensors[t]
        if tensor.dtype not in _C_TYPES or not tensor.is_activation:
            raise TinyschedError(
                f"graph input/output tensor {t} ({tensor.dtype}) is not supported by the code generator"
            )


def _lower(lowering: _Lowering, op: Operator, step: int) -> KernelCall:
    call = KernelCall(op.index, step, op.opcode, "", "", [], [])
    try:
        getattr(lowering, f"lower_{op.opcode.lower()}")(op, call)
    except _Unsupported as why:
        raise TinyschedError(
            f"operator {op.index} ({op.opcode}) is not supported by the code generator: {why}"
        ) from None
    except (KeyError, IndexError, ValueError) as why:
        raise TinyschedError(
            f"operator {op.index} ({op.opcode}) is not supported by the code generator: "
            f"unexpected operands or options ({type(why).__name__}: {why})"
        ) from None
    return call


# ---- the module ----------------------------------------------------------------------------------


def _tensor_note(graph: Graph, index: int, offsets: dict[int, int]) -> str:
    t = graph.tensors[index]
    where = f"arena+{offsets[index]}" if index in offsets else ("const" if t.is_constant else "?")
    return f"t{index} {c_comment(t.name, 80)!s} {t.dtype}{list(t.shape)} @{where}"


def _quant_note(t: Tensor) -> str:
    q = t.quantization
    if q is None:
        return ""
    if q.per_channel:
        return f", per-channel scales on axis {q.axis}"
    return f", scale {c_float(q.scale[0])}, zero point {q.zero_point[0]}"


@cache
def _environment() -> Any:
    import jinja2

    from tinysched.resources import resource

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["c_comment"] = c_comment
    env.filters["c_string"] = c_string
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def model_name(graph: Graph) -> str:
    return Path(graph.source).stem if graph.source else (graph.name or "model")


def default_prefix(graph: Graph) -> str:
    return c_identifier(model_name(graph))


def step_offsets(graph: Graph, plan: Any) -> tuple[list[dict[int, int]], dict[int, int], dict[int, int]]:
    """Where each step's tensors are: (per step, tensor -> offset of the instance that step reads or
    writes; tensor -> offset of instance 0; tensor -> offset of its final instance).

    In a plain order every tensor has the one instance 0. In a recomputation sequence a step reads
    the instances `memory.instance_lifetimes` says it reads and writes new ones (docs/recomputation.md),
    and the graph outputs are copied out of their final instance."""
    from tinysched.memory import instance_lifetimes

    by_key = {(p.index, getattr(p, "instance", 0)): p.offset for p in plan.buffers}
    base = {t: offset for (t, i), offset in by_key.items() if i == 0}
    order = list(plan.order)
    if len(set(order)) == len(order):
        return [base] * len(order), base, base
    _, reads = instance_lifetimes(graph, order)
    activation = set(graph.activation_tensors)
    written: dict[int, int] = {}
    final = dict(base)
    per_step = []

    def where(t: int, i: int) -> int:
        if (t, i) not in by_key:
            raise TinyschedError(f"the arena plan places no offset for tensor {t} instance {i}")
        return by_key[(t, i)]

    for step, v in enumerate(order):
        here = dict(base)
        for t, i in reads[step]:
            here[t] = where(t, i)
        for t in dict.fromkeys(graph.operators[v].outputs):
            if t in activation:
                i = written.get(t, 0)
                written[t] = i + 1
                here[t] = final[t] = where(t, i)
        per_step.append(here)
    return per_step, base, final


def generate(graph: Graph, plan: Any, prefix: str | None = None, schedule: Any = None) -> GeneratedModule:
    """C sources for `graph` run in `plan.order` with tensors at `plan`'s offsets.

    `graph` must already hold any scratch tensors the plan was made with (see `with_scratch`)."""
    check_supported(graph)
    prefix = check_prefix(prefix) if prefix is not None else default_prefix(graph)
    name = model_name(graph)
    per_step, offsets, final_offsets = step_offsets(graph, plan)
    missing = [t for t in graph.activation_tensors if t not in offsets]
    if missing:
        raise TinyschedError(f"the arena plan places no offset for tensors {missing[:8]}")

    # Constants: one array per model buffer (tensors may share a buffer), named by first tensor.
    const_names: dict[int, str] = {}
    const_arrays: list[ConstArray] = []
    by_buffer: dict[int, str] = {}
    for t in graph.tensors:
        if not t.is_constant:
            continue
        used = any(t.index in op.inputs for op in graph.operators)
        if t.dtype not in _C_TYPES or not used:
            continue
        key = t.buffer or -t.index - 1
        if key not in by_buffer:
            by_buffer[key] = f"{prefix}_t{t.index}"
            ctype = _C_TYPES[t.dtype]
            const_arrays.append(
                ConstArray(
                    by_buffer[key],
                    ctype,
                    np.asarray(t.data),
                    f"t{t.index} {c_comment(t.name, 100)} {t.dtype}{list(t.shape)}{_quant_note(t)}",
                    is_float=t.dtype == "float32",
                )
            )
        const_names[t.index] = by_buffer[key]

    lowering = _Lowering(graph, prefix, offsets, const_names)
    lowering.state_offsets, state_bytes = _lower_extra.state_layout(graph, plan.alignment)
    calls = []
    runs: dict[int, int] = {}
    for step, op_index in enumerate(plan.order):
        op = graph.operators[op_index]
        here = lowering.offsets = per_step[step]  # the instances this step reads and writes
        call = _lower(lowering, op, step)
        call.first_run = op_index not in runs
        runs[op_index] = runs.get(op_index, 0) + 1
        again = "" if call.first_run else f" (recomputed, run {runs[op_index]})"
        call.comment = [f"step {step}: operator {op.index} {op.opcode}{again}"]
        ins = [t for t in op.inputs if t >= 0]
        call.comment += [f"  in  {_tensor_note(graph, t, here)}" for t in ins]
        call.comment += [f"  out {_tensor_note(graph, t, here)}" for t in op.outputs]
        calls.append(call)
    lowering.offsets = offsets

    def edge(role: str, tensors: Sequence[int], offsets: dict[int, int] = offsets) -> list[dict[str, Any]]:
        rows = []
        for k, t in enumerate(tensors):
            tensor = graph.tensors[t]
            q = tensor.quantization
            rows.append(
                {
                    "role": role,
                    "position": k,
                    "tensor": t,
                    "name": c_comment(tensor.name, 100),
                    "ctype": _C_TYPES[tensor.dtype],
                    "dtype": tensor.dtype,
                    "shape": list(tensor.shape),
                    "rank": len(tensor.shape),
                    "bytes": tensor.nbytes,
                    "offset": offsets[t],
                    "scale": c_float(q.scale[0]) if q is not None and not q.per_channel else None,
                    "zero_point": q.zero_point[0] if q is not None and not q.per_channel else None,
                }
            )
        return rows

    inputs = edge("input", graph.inputs)
    outputs = edge("output", graph.outputs, final_offsets)  # the final instance of each
    kernels = tuple(sorted({KERNEL_SOURCE.get(c.kernel, c.kernel) for c in calls}))
    header_guard = c_identifier(prefix).upper() + "_H"
    context = {
        "version": __version__,
        "model": c_comment(name, 100),
        "model_string": c_string(name),
        "sha256": graph.sha256 or "unknown",
        "build_id": c_string(f"{__version__}-{(graph.sha256 or '0' * 16)[:16]}"),
        "prefix": prefix,
        "PREFIX": prefix.upper(),
        "guard": header_guard,
        "arena_bytes": plan.arena_bytes,
        "alignment": plan.alignment,
        "lower_bound_bytes": getattr(plan, "lower_bound_bytes", plan.arena_bytes),
        "peak_bytes": getattr(plan, "peak_bytes", plan.arena_bytes),
        "certified": bool(getattr(schedule, "certified", False)) if schedule is not None else None,
        "order": list(plan.order),
        "inputs": inputs,
        "outputs": outputs,
        "calls": calls,
        "kernels": kernels,
        "const_arrays": const_arrays,
        "array_lines": c_array_lines,
        "float_lines": _float_lines,
        "n_ops": len(graph.operators),
        "weights_bytes": sum(a.values.nbytes for a in const_arrays),
        # Persistent state (variable tensors of stateful operators), outside the arena; 0 if none.
        "state_bytes": state_bytes,
        "state_tensors": _lower_extra.state_init(graph, lowering.state_offsets),
    }
    files = {
        f"{prefix}.h": render("model.h.j2", **context),
        f"{prefix}.c": render("model.c.j2", **context),
        f"{prefix}_weights.h": render("weights.h.j2", **context),
        f"{prefix}_weights.c": render("weights.c.j2", **context),
    }
    return GeneratedModule(
        prefix=prefix,
        files=files,
        kernels=kernels,
        arena_bytes=plan.arena_bytes,
        alignment=plan.alignment,
        order=tuple(plan.order),
        input_bytes=tuple(r["bytes"] for r in inputs),
        output_bytes=tuple(r["bytes"] for r in outputs),
        input_dtypes=tuple(r["dtype"] for r in inputs),
        output_dtypes=tuple(r["dtype"] for r in outputs),
        input_shapes=tuple(tuple(r["shape"]) for r in inputs),
        output_shapes=tuple(tuple(r["shape"]) for r in outputs),
        weights_bytes=context["weights_bytes"],
        op_kernels=tuple((c.op, c.kernel) for c in calls if c.first_run),
    )


def _float_lines(values: np.ndarray, per_line: int = 6, indent: str = "    ") -> str:
    flat = np.asarray(values, dtype=np.float32).reshape(-1)
    items = []
    for v in flat.tolist():
        text = repr(float(np.float32(v)))
        if not math.isfinite(v):
            text = "(1.0f / 0.0f)" if v > 0 else ("(-1.0f / 0.0f)" if v < 0 else "(0.0f / 0.0f)")
        else:
            # Shortest float32 round-trip form.
            text = np.format_float_positional(np.float32(v), unique=True, trim="0") + "f"
            if text.startswith(".") or text.startswith("-."):
                text = text.replace(".", "0.", 1)
        items.append(text)
    lines = [indent + ", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)]
    return "\n".join(lines) or f"{indent}0.0f,"
