"""The kernels, bit for bit: generated models through the host build, ASan and UBSan, against TFLite.

Every model in `kernel_models.KERNEL_MODELS` is compiled once with AddressSanitizer and
UndefinedBehaviorSanitizer (any report aborts the runner, which fails the test), run on seeded random
inputs, and every output byte compared with TFLite's reference kernels. The Python helpers that
reproduce TFLite's Prepare-time arithmetic are checked against known values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import host_verify
from kernel_models import KERNEL_MODELS
from tiers import needs_gcc

from tinysched.codegen import (
    activation_range,
    lut_int8,
    quantize_multiplier,
    quantize_value,
    window_padding,
)


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("name", sorted(KERNEL_MODELS))
def test_kernel_model_bit_exact_under_sanitizers(name: str, tmp_path: Path) -> None:
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(KERNEL_MODELS[name]())
    result = host_verify(model, n_inputs=4, seed=11, opt="-O1", sanitize=True)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == []
    assert result.outputs_match and result.inputs == 4


# ---- TFLite's Prepare-time arithmetic -------------------------------------------------------------


@pytest.mark.parametrize(
    ("real", "expected"),
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.75, (3 << 29, 0)),
        (2.0**-40, (0, 0)),  # below 2^-31: flushed to zero, as TFLite does
        # frexp mantissa rounds up to 1.0: the multiplier halves and the shift grows.
        (1.0 - 2.0**-40, (1 << 30, 1)),
        (0.002979507770665836, (1638001719, -8)),
    ],
)
def test_quantize_multiplier(real: float, expected: tuple[int, int]) -> None:
    assert quantize_multiplier(real) == expected
    m, s = quantize_multiplier(real)
    if m:
        assert abs(m * 2.0 ** (s - 31) - real) <= 2.0 ** (s - 32)


def test_activation_range_rounds_in_float32_half_away_from_zero() -> None:
    assert activation_range("NONE", 0.1, 3) == (-128, 127)
    assert activation_range("RELU", 0.1, 3) == (3, 127)
    assert activation_range("RELU6", 6.0 / 255, -128) == (-128, 127)
    assert activation_range("RELU6", 0.05, -10) == (-10, 110)
    assert activation_range("RELU_N1_TO_1", 1 / 64, 0) == (-64, 64)
    # 0.5 / 0.2 = 2.5 rounds away from zero to 3 (numpy's round would give 2).
    assert quantize_value(0.5, 0.2, 0) == 3
    assert quantize_value(-0.5, 0.2, 0) == -3


def test_window_padding_matches_tflite_same_and_valid() -> None:
    assert window_padding(11, 6, 3, 2, 1) == 1  # SAME, odd total: the smaller half before
    assert window_padding(10, 5, 3, 2, 1) == 0  # SAME, total 1
    assert window_padding(9, 3, 3, 3, 1) == 0  # VALID
    assert window_padding(8, 8, 3, 1, 2) == 2  # dilation 2: effective 5


def test_logistic_table_is_monotone_and_saturates() -> None:
    table = lut_int8(0.1, 0, 1.0 / 256, -128, lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)))
    by_input = np.array([table[q & 0xFF] for q in range(-128, 128)], dtype=np.int64)
    assert np.all(np.diff(by_input) >= 0)
    assert by_input[0] == -128 + 0 and by_input[-1] == 127
    assert table[0] == 0  # logistic(0) = 0.5 -> 128 - 128
