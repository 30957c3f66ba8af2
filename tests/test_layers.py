"""The package layout is the pipeline: a package imports only packages below it, and no import cycles.

Every import counts, wherever it stands (module level, inside a function, under TYPE_CHECKING): a late
import would hide an upward dependency, not remove it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tinysched"

# The pipeline, bottom first. The shared basics sit below every stage.
LAYERS = (
    (
        "tinysched",
        "tinysched.errors",
        "tinysched.files",
        "tinysched.text",
        "tinysched.resources",
        "tinysched.boards",
        "tinysched.exports",
        "tinysched.budget",
        "tinysched.children",
        "tinysched.caches",
    ),
    ("tinysched.model",),
    ("tinysched.memory",),
    ("tinysched.order",),
    ("tinysched.arena",),
    ("tinysched.codegen",),
    ("tinysched.pipeline",),
    ("tinysched.build",),
    ("tinysched.device",),
    ("tinysched.report",),
    ("tinysched.commands",),
    ("tinysched.cli",),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> int:
    for depth, members in enumerate(LAYERS):
        for member in members:
            if module == member or (member != "tinysched" and module.startswith(member + ".")):
                return depth
    raise AssertionError(f"{module} is in no layer of the pipeline: add it to LAYERS")


def imports_in(source: str) -> set[str]:
    """The tinysched modules a module's source imports, wherever the import stands."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "tinysched")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "tinysched":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return {m for m in found if m in MODULES}


GRAPH = {m: imports_in(p.read_text()) - {m} for m, p in MODULES.items()}


def test_every_module_sits_in_a_layer() -> None:
    for module in MODULES:
        layer(module)


def test_no_import_goes_up_the_pipeline() -> None:
    upward = [
        f"{m} imports {t}"
        for m, targets in sorted(GRAPH.items())
        for t in sorted(targets)
        if layer(t) > layer(m)
    ]
    assert not upward, "imports that go up the pipeline:\n" + "\n".join(upward)


def cycles() -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    assert not cycles(), "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles())


def test_the_reader_sees_late_and_type_checking_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tinysched.memory.overlap import Refinement\n"
        "def f():\n    from tinysched import codegen\n    from tinysched.order import native\n"
    )
    assert imports_in(source) == {"tinysched.memory.overlap", "tinysched.codegen", "tinysched.order.native"}


def test_each_stage_package_says_what_it_holds_and_exports_its_api() -> None:
    import importlib
    import types

    for name in ("model", "memory", "order", "arena", "device"):
        package = importlib.import_module(f"tinysched.{name}")
        assert package.__doc__ and "Takes:" in package.__doc__ and "Gives:" in package.__doc__, name
        for export in package.__all__:
            value = getattr(package, export)
            assert not isinstance(value, types.ModuleType), f"tinysched.{name}.{export} is a module"


def test_start_up_calls_the_application_only_through_its_hooks() -> None:
    """targets/common/startup.c -> the application (main, ts_fault) and never the other way: the
    harness calls board support (reset.c, counter.c, target.c), not start-up."""
    import re

    root = PACKAGE.parent
    startup = (root / "targets" / "common" / "startup.c").read_text()
    harness = (root / "firmware" / "harness" / "harness.c").read_text()
    defined = set(
        re.findall(r"^(?!static)[\w ()]*?\b(\w+)\((?:void|const[^)]*|uint32_t[^)]*)\)\s*$", startup, re.M)
    )
    defined |= set(re.findall(r"TS_FAULT_HANDLER\((\w+),", startup))
    assert "Reset_Handler" in defined and "ts_system_reset" not in defined
    called = {name for name in defined if re.search(rf"\b{name}\s*\(", harness)}
    assert not called, f"the harness calls start-up's {sorted(called)}"
    harness_defines = set(re.findall(r"^(?!static)[\w ]+?\b(\w+)\([^;]*\)\s*$", harness, re.M))
    hooks = {n for n in harness_defines - {"__attribute__"} if re.search(rf"\b{n}\s*\(", startup)}
    assert hooks == {"main", "ts_fault"}
