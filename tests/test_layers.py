"""The layer rule, read from the source: which package may import which.

The wire layer (``toolwire/``: framing, messages, models, session, ...) imports neither
side; the host (``toolwire.host``, in ``host/``) and the client (``toolwire.client``, in
``client/``) are siblings over it and never import each other. ``toolwire.cli`` is the
one module above both: the ``toolwire`` command, which starts either side lazily. Within
the client and the wire layer, no module imports one that imports it back (counting
imports inside functions; imports only for type checking do not run and do not count).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {
    "toolwire": REPO / "toolwire",
    "toolwire.host": REPO / "host",
    "toolwire.client": REPO / "client",
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, top in PACKAGES.items():
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(top).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """toolwire modules ``name`` imports when it runs (not under ``if TYPE_CHECKING``)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            for alias in node.names:
                found.add(f"{mod}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    # keep the deepest known module each name refers to
    out: set[str] = set()
    for mod in found:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        if mod and mod != name:
            out.add(mod)
    return out


MODULES = _modules()
GRAPH = {name: _imports(name, path, set(MODULES)) for name, path in MODULES.items()}


def _layer(module: str) -> str:
    if module == "toolwire.cli":
        return "cli"
    for pkg in ("toolwire.host", "toolwire.client"):
        if module == pkg or module.startswith(pkg + "."):
            return pkg.rpartition(".")[2]
    return "wire"


ALLOWED = {
    "wire": {"wire"},
    "host": {"wire", "host"},
    "client": {"wire", "client"},
    "cli": {"wire", "host", "client", "cli"},
}


def test_each_layer_imports_only_itself_and_the_layers_below() -> None:
    wrong = sorted(
        f"{mod} imports {dep}"
        for mod, deps in GRAPH.items()
        for dep in deps
        if _layer(dep) not in ALLOWED[_layer(mod)]
    )
    assert wrong == []


def _cycles_within(layer: str) -> list[list[str]]:
    nodes = {m for m in GRAPH if _layer(m) == layer}
    # Tarjan's strongly connected components, iteratively small enough to recurse
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v] & nodes):
            # a package's __init__ re-exporting its modules is not a circle: a module
            # importing its own package's names through it is (it would run __init__ first)
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


@pytest.mark.parametrize("layer", ["wire", "host", "client"])
def test_no_import_circles_within_a_layer(layer: str) -> None:
    assert _cycles_within(layer) == []


def test_serve_starts_the_host_without_loading_the_client(tmp_path: Path) -> None:
    # `-X importtime` lists every module the process imports on stderr; a root that does
    # not exist ends the host right after its start-up imports.
    out = subprocess.run(
        [
            sys.executable,
            "-P",
            "-X",
            "importtime",
            "-c",
            "import sys, toolwire.cli; sys.exit(toolwire.cli.main(sys.argv[1:]))",
            "serve",
            "--root",
            str(tmp_path / "no"),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    imported = {line.rpartition("|")[2].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "toolwire.host.sandbox.importpath" in imported
    assert not {m for m in imported if m.startswith("toolwire.client")}


def test_the_host_start_up_is_in_no_circle() -> None:
    # (launch, serve and runner are the modules' former names: the check holds on old trees)
    start_up = {
        "toolwire.host.launch",
        "toolwire.host.serve",
        "toolwire.host.runner",
        "toolwire.host.__main__",
        "toolwire.host.sandbox.commands",
        "toolwire.host.serve.connection",
        "toolwire.host.serve.options",
        "toolwire.host.serve.process",
    }
    assert [c for c in _cycles_within("host") if start_up & set(c)] == []
