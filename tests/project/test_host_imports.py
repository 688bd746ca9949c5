"""The host package's import graph has no cycles: no module in host/ imports a module
that imports it back, directly or through others.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

HOST = Path(__file__).resolve().parents[2] / "host"

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Cycles accepted for now: none."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(HOST).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def host_import_graph() -> dict[str, set[str]]:
    """``{module: modules of host/ it imports}``, names relative to ``toolwire.host``."""
    paths = {_module_name(p): p for p in HOST.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        if name == "__init__":
            package = []
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                elif (node.module or "").startswith("toolwire.host"):
                    module = (node.module or "")[len("toolwire.host") :].lstrip(".")
                else:
                    continue
                subs = [f"{module}.{a.name}" if module else a.name for a in node.names]
                if not all(s in paths for s in subs):
                    targets.append(module or "__init__")
                targets += subs
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("toolwire.host"):
                        targets.append(alias.name[len("toolwire.host") :].lstrip(".") or "__init__")
            deps.update(t for t in targets if t in paths and t != name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_host_package_has_no_import_cycles() -> None:
    graph = host_import_graph()
    assert {"tools.context", "methods.server", "methods.batch", "calls.pipeline"} <= set(graph)
    assert "tools.channel" in graph["tools.context"]  # the graph is read, not empty
    unexpected = [sorted(c) for c in cycles(graph) if c not in KNOWN_CYCLES]
    assert unexpected == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]
