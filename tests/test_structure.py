"""The package's shape: no import cycle among tinysched's modules, no private name crossing a module
boundary, and each stage importable on its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tinysched"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, except what sits under `if TYPE_CHECKING:` (imports for annotations only)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return out


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every run-time `import`/`from ... import` of tinysched, at any depth."""
    out = []
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tinysched"):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("tinysched")]
    return out


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for target, names in _imports(path):
            for candidate in [target, *(f"{target}.{n}" for n in names)]:
                if candidate in MODULES and candidate != module:
                    edges[module].add(candidate)
    return edges


def test_no_import_cycle() -> None:
    edges = _edges()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n) :] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_no_private_name_crosses_a_module() -> None:
    crossings = []
    for module, path in MODULES.items():
        for target, names in _imports(path):
            crossings += [
                f"{module} imports {target}.{n}"
                for n in names
                if n.startswith("_") and not n.startswith("__")
            ]
    assert crossings == []


def test_each_module_imports_alone() -> None:
    """Each module imported first, in a fresh set of tinysched modules (third-party ones stay loaded),
    so import order inside the test run cannot hide a missing import."""
    script = (
        "import importlib, sys\n"
        f"for name in {sorted(MODULES)!r}:\n"
        "    for loaded in [m for m in sys.modules if m == 'tinysched' or m.startswith('tinysched.')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
