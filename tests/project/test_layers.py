"""The layer rule, read from the source: which package may import which.

The wire layer (``toolwire/``: framing, messages, models, session, ...) imports neither
side; the host (``toolwire.host``, in ``host/``) and the client (``toolwire.client``, in
``client/``) are siblings over it and never import each other. ``toolwire.cli`` is the
one module above both: the ``toolwire`` command, which starts either side lazily. Within
the client and the wire layer, no module imports one that imports it back (counting
imports inside functions; imports only for type checking do not run and do not count).

Within the host, each package (``toolwire.host.<package>``, a folder of ``host/``) names
the host packages it may import (:data:`HOST_ALLOWED`); an import of any other, at module
level or inside a function, is an upward arrow and fails. The order, bottom up: schema,
tools, sandbox, then builtins, calls (each over those three), methods (over calls),
workers (over calls), and serve over all of them; ``toolwire.host`` itself and its
``__main__`` are the face and the entry point above them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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


def _imports(name: str, path: Path, known: set[str], typing: bool = False) -> set[str]:
    """toolwire modules ``name`` imports when it runs (not under ``if TYPE_CHECKING``), or
    with ``typing`` also those it imports only for type checking."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing:
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
TYPED_GRAPH = {
    name: _imports(name, path, set(MODULES), typing=True) for name, path in MODULES.items()
}
"""Like :data:`GRAPH`, counting imports made only for type checking: within the host, a
type is a dependency too, so the package order holds for them as well."""


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
    # The options read the [http] and fleet settings; the HTTP application is not loaded.
    assert "toolwire.host.serve.http.config" in imported
    assert "toolwire.host.serve.http.app" not in imported


MAX_MODULE_LINES = 1100
"""Issue 23: a module longer than this is a house of its own, to be split by concern."""


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {
        str(path.relative_to(REPO)): len(path.read_text().splitlines())
        for folder in ("toolwire", "host", "client")
        for path in (REPO / folder).rglob("*.py")
    }
    assert sizes, "no modules found"
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_a_worker_pool_never_imports_what_owns_it() -> None:
    """host/workers: :mod:`.manager` (all pools) imports :mod:`.pool`, never the other
    way; a pool sees its owner through the ``PoolOwner`` protocol."""
    tree = ast.parse((REPO / "host" / "workers" / "pool.py").read_text())
    imported = {
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level >= 1
    }
    assert "pool" in {
        node.module
        for node in ast.walk(ast.parse((REPO / "host" / "workers" / "manager.py").read_text()))
        if isinstance(node, ast.ImportFrom)
    }
    assert "manager" not in imported


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


HOST_ALLOWED: dict[str, set[str]] = {
    "schema": set(),
    "tools": {"schema"},
    "sandbox": {"tools", "schema"},
    "builtins": {"sandbox", "tools", "schema"},
    "calls": {"sandbox", "tools", "schema"},
    "methods": {"calls", "sandbox", "tools", "schema"},
    "workers": {"calls", "sandbox", "tools", "schema"},
    "serve": {"workers", "methods", "calls", "builtins", "sandbox", "tools", "schema"},
}
"""Host package → the host packages it may import (besides itself): only ones below it."""

HOST_TYPE_ONLY = {"tools": {"sandbox"}}
"""Host package → packages above it it names only in types (``if TYPE_CHECKING``), never
at run time. The one: a tool's context carries the execution environment
(``ToolContext.env: ExecEnv``), which the sandbox defines because its path rule and its
command runner are what the environment is for. Any other type-only arrow upward fails."""


def _host_package(module: str) -> str | None:
    """``toolwire.host.<package>...`` → ``<package>``; None for the face (``toolwire.host``,
    ``toolwire.host.__main__``) and for modules outside the host."""
    if not module.startswith("toolwire.host."):
        return None
    package = module.split(".")[2]
    return package if package in HOST_ALLOWED else None


def host_arrows() -> set[tuple[str, str]]:
    """The (importer, imported) pairs of distinct host packages, read from the source."""
    return {
        (_host_package(mod) or "", _host_package(dep) or "")
        for mod, deps in GRAPH.items()
        for dep in deps
        if _host_package(mod) and _host_package(dep) and _host_package(mod) != _host_package(dep)
    }


def test_every_host_module_is_in_a_package_of_the_order() -> None:
    loose = sorted(
        m
        for m in GRAPH
        if m.startswith("toolwire.host.")
        and m != "toolwire.host.__main__"
        and _host_package(m) is None
    )
    assert loose == []


def _upward(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{mod} imports {dep}"
        for mod, deps in graph.items()
        for dep in deps
        if (low := _host_package(mod)) is not None
        and (high := _host_package(dep)) is not None
        and high != low
        and high not in allowed[low]
    )


def test_host_packages_import_only_the_packages_below_them() -> None:
    assert _upward(GRAPH, HOST_ALLOWED) == []


def test_host_packages_name_only_the_packages_below_them_in_types() -> None:
    allowed = {p: HOST_ALLOWED[p] | HOST_TYPE_ONLY.get(p, set()) for p in HOST_ALLOWED}
    assert _upward(TYPED_GRAPH, allowed) == []
    # the allowance is still needed, and only for types
    typed_only = {(a, b) for a, bs in HOST_TYPE_ONLY.items() for b in bs}
    assert typed_only <= {
        (_host_package(m), _host_package(d)) for m, ds in TYPED_GRAPH.items() for d in ds
    }
    assert not typed_only & host_arrows()


def test_the_host_order_has_no_circle_and_is_read_from_the_source() -> None:
    # the allowed arrows form an order (no package is below itself) ...
    def below(pkg: str, seen: frozenset[str] = frozenset()) -> set[str]:
        assert pkg not in seen, f"{pkg} is below itself"
        out = set(HOST_ALLOWED[pkg])
        for lower in HOST_ALLOWED[pkg]:
            out |= below(lower, seen | {pkg})
        return out

    for pkg in HOST_ALLOWED:
        below(pkg)
    # ... and the graph holds the arrows the order exists for (it is read, not empty)
    arrows = host_arrows()
    assert {("serve", "workers"), ("methods", "calls"), ("calls", "tools")} <= arrows


def test_the_check_catches_an_upward_import() -> None:
    # a tools module importing the calls package would be named
    fake = {"toolwire.host.tools.fake": {"toolwire.host.calls.pipeline"}}
    upward = [
        (m, d)
        for m, deps in fake.items()
        for d in deps
        if _host_package(d) not in HOST_ALLOWED[_host_package(m) or ""]
    ]
    assert upward == [("toolwire.host.tools.fake", "toolwire.host.calls.pipeline")]


def test_the_old_public_import_paths_still_work() -> None:
    import toolwire.host
    import toolwire.host.sandbox
    import toolwire.host.schema
    import toolwire.host.workers

    assert toolwire.host.tool.__name__ == "tool"
    assert toolwire.host.sandbox.Sandbox.__name__ == "Sandbox"
    assert toolwire.host.sandbox.SandboxSettings.__name__ == "SandboxSettings"
    assert toolwire.host.schema.ArgumentSchema.__name__ == "ArgumentSchema"
    assert toolwire.host.workers.Workers.__name__ == "Workers"
    for package in (toolwire.host, toolwire.host.sandbox, toolwire.host.workers):
        assert all(hasattr(package, name) for name in package.__all__)


# Private slots whose hand-off between modules goes through a public seam instead (issue 23):
# ToolContext.early and .timeout_scope, Tool(known_definition=...),
# RequestContext.bind_scope/mark_done. The check below watches every private name; these
# stay named for the test that the check catches a reach.
WATCHED_PRIVATE = frozenset({"_early", "_definition", "_scope", "_done", "_timeout_scope"})

STDLIB_PRIVATE = frozenset({"_exit", "_accept"})
"""Private names of the standard library the host uses on purpose: ``os._exit`` (a forked
child ends without running its parent's clean-up) and the socket's C ``_accept`` (the
egress relay's forked child takes bare descriptors)."""


def _own_private_names(tree: ast.Module) -> set[str]:
    """Underscore names a module's own classes hold: ``self._x`` stores, methods, class-level
    annotations (dataclass fields) and ``__slots__`` strings."""
    owned: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                owned.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owned.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    owned.add(item.target.id)
                elif isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets
                ):
                    for elt in ast.walk(item.value):
                        if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                            owned.add(elt.value)
    return owned


def _private_reaches(source: str, watched: frozenset[str] | None) -> list[tuple[int, str]]:
    """(line, name) of each read or write of ``obj._name`` (``_name`` in ``watched``, or with
    None any single-underscore name; ``obj`` not ``self``/``cls``) where no class of this
    module holds ``_name``: a reach into another module's private slot."""
    tree = ast.parse(source)
    owned = _own_private_names(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and (
                node.attr in watched
                if watched is not None
                else node.attr.startswith("_") and not node.attr.startswith("__")
            )
            and node.attr not in owned
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            out.append((node.lineno, node.attr))
    return out


def test_no_host_module_reaches_into_another_modules_private_slot() -> None:
    found = []
    for path in sorted((REPO / "host").rglob("*.py")):
        for line, name in _private_reaches(path.read_text(), None):
            if name not in STDLIB_PRIVATE:
                found.append(f"{path.relative_to(REPO)}:{line}: .{name}")
    assert found == []


def test_the_private_slot_check_catches_a_reach() -> None:
    reach = "def f(ctx):\n    ctx._early = 1\n    return ctx._done\n"
    assert _private_reaches(reach, WATCHED_PRIVATE) == [(2, "_early"), (3, "_done")]
    own = "class C:\n    def __init__(self):\n        self._done = False\n\n"
    own += "def f(c: C) -> bool:\n    return c._done\n"
    assert _private_reaches(own, WATCHED_PRIVATE) == []
    # with no list, every private name of another module's class counts, methods included
    other = "def g(w):\n    return w._sandbox_pids, w._finish(), w.__dict__\n"
    assert _private_reaches(other, None) == [(2, "_sandbox_pids"), (2, "_finish")]
