"""The package's shape: no import cycle between modules (imports inside functions count too)."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "microinterp"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                root = package
                for _ in range(node.level - 1):
                    root = root.rsplit(".", 1)[0]
                base = f"{root}.{base}" if base else root
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in modules else base)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    # a module importing its own package (``from . import x``) or an ancestor is not an edge of the cycle check
    return {m for m in found if m in modules and m != name and not name.startswith(m + ".")}


def _folder(module: str, modules: dict[str, Path]) -> str:
    """The folder (subpackage of ``microinterp``) a module belongs to; a module at the package's root is its own."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and modules[module].name == "__init__.py"):
        return ".".join(parts[:2])
    return module


def import_cycles(folders: bool = False) -> list[list[str]]:
    """Strongly connected components of more than one module, or of more than one folder (Tarjan)."""
    modules = _modules()
    graph = defaultdict(set, {m: _imports(m, p, modules) for m, p in modules.items()})
    if folders:
        grouped: defaultdict[str, set[str]] = defaultdict(set)
        for m, targets in list(graph.items()):
            grouped[_folder(m, modules)] |= {_folder(t, modules) for t in targets} - {_folder(m, modules)}
        graph = grouped
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for m in sorted(graph):
        if m not in index:
            visit(m)
    return cycles


def test_no_import_cycle():
    assert import_cycles() == []


def test_no_import_cycle_between_folders():
    """The folders layer: tflm facts, kernels, planner/bands/cost, runtime and pager, the interpreter, then apps,
    schedule and testing -- none imports one above it (function-level imports included)."""
    assert import_cycles(folders=True) == []


#: The longest a module may be: a file one reader can hold in mind (split by job beyond it).
MAX_MODULE_LINES = 500


def test_no_module_is_longer_than_the_limit():
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_capability_table_of_op_names_outside_the_kernels():
    """What an op can do is its kernel's declaration (microinterp/kernels/contract.py): no module outside
    ``kernels/``, ``tflm/`` and ``testing/`` holds a set or mapping of op names, or probes a kernel's members."""
    from microinterp.kernels import REFERENCE_KERNELS

    ops = set(REFERENCE_KERNELS)
    found = []
    for name, path in _modules().items():
        if name.split(".")[1:2] in (["kernels"], ["tflm"], ["testing"]):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List, ast.Dict)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                names = {k.value for k in items if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(names & ops) >= 2:
                    found.append(f"{name}:{node.lineno}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr") and \
                    node.args and getattr(node.args[0], "id", "") in ("kernel", "kern"):
                found.append(f"{name}:{node.lineno} probes a kernel")
    assert found == []
