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


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    modules = _modules()
    graph = defaultdict(set, {m: _imports(m, p, modules) for m, p in modules.items()})
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
    for m in sorted(modules):
        if m not in index:
            visit(m)
    return cycles


def test_no_import_cycle():
    assert import_cycles() == []
