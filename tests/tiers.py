"""Test tiers: which tools each tier needs, and what a missing tool does to a test.

A missing tool skips its tier's tests with the reason, or fails them when TINYSCHED_REQUIRE names
the tier (`make test` and CI set TINYSCHED_REQUIRE=host,qemu,browser).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest

TIER_TOOLS = {
    "host": ("gcc",),
    "qemu": ("qemu-system-arm", "arm-none-eabi-gcc", "arm-none-eabi-objcopy"),
    "hardware": ("arm-none-eabi-gcc",),
    "browser": ("chromium",),
}


def missing_tools(tier: str) -> list[str]:
    """Tools a test tier needs that are not on PATH."""
    return [t for t in TIER_TOOLS.get(tier, ()) if shutil.which(t) is None]


def required_tiers() -> set[str]:
    """Tiers whose missing tools fail instead of skip: TINYSCHED_REQUIRE=qemu,host."""
    return {t.strip() for t in os.environ.get("TINYSCHED_REQUIRE", "").split(",") if t.strip()}


def require(tier: str, tools: tuple[str, ...] | None = None) -> None:
    """Inside a test: skip (or fail, when required) unless the tier's tools are installed."""
    missing = [t for t in tools if shutil.which(t) is None] if tools is not None else missing_tools(tier)
    if missing:
        reason = f"tier {tier}: {', '.join(missing)} not installed"
        if tier in required_tiers():
            pytest.fail(reason + " (TINYSCHED_REQUIRE asks for this tier)")
        pytest.skip(reason)


def needs(tier: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator form of `require`, checked when the test runs."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> Any:
            require(tier)
            return test(*args, **kwargs)

        return run

    return decorate


needs_gcc = needs("host")
needs_qemu = needs("qemu")
