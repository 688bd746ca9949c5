"""Loading tools: ``--tools`` files and modules and the entry-point group (the built-ins
register through :func:`toolwire.host.builtins.load_builtins`)."""

from __future__ import annotations

import binascii
import importlib
import importlib.util
import logging
import sys
import types
from pathlib import Path
from typing import Any

from .decorator import is_tool
from .definition import Tool
from .hooks import is_hook
from .registry import Registry

__all__ = [
    "ENTRY_POINT_GROUP",
    "entry_point_names",
    "hooks_in",
    "load_entry_points",
    "load_tools",
    "register_module",
    "tools_in",
]

log = logging.getLogger("toolwire.loading")

ENTRY_POINT_GROUP = "toolwire.tools"
"""Entry-point group scanned at start-up; each entry names a module, a tool or a list."""


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file from its source every time, never from ``__pycache__``: a file
    rewritten within the same second at the same size would otherwise be served from
    its stale bytecode (the cache is keyed on whole-second mtime and size). With
    ``source`` given, compiles that instead of what the file holds now."""

    def __init__(self, fullname: str, path: str, source: bytes | None = None) -> None:
        super().__init__(fullname, path)
        self._source = source

    def get_code(self, fullname: str) -> types.CodeType:
        source = self._source if self._source is not None else self.get_data(self.path)
        return compile(source, self.path, "exec", dont_inherit=True)


def import_spec(spec: str, *, fresh: bool = False, source: bytes | None = None) -> types.ModuleType:
    """Import ``spec``: a path to a ``.py`` file, or a dotted module name.

    Args:
        spec: the file or module.
        fresh: kept for callers; a file is always compiled from its source, never from
            its cached bytecode (which the sandbox may have written, or which may be
            stale after a ``--reload`` change).
        source: the file's source to compile instead of its current contents (implies
            ``fresh``): what the worker's generation read.

    Raises:
        ImportError: the file or module cannot be loaded.
    """
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ImportError(f"tool file not found: {spec}")
        real = path.resolve()
        digest = f"{binascii.crc32(str(real).encode()):08x}"
        name = f"toolwire_user_{real.stem}_{digest}"
        # Always from source (SECURITY.md, "Host inputs"): a __pycache__ entry beside
        # the file may have been written by a sandboxed command.
        loader = _FreshSourceLoader(name, str(real), source)
        module_spec = importlib.util.spec_from_file_location(name, real, loader=loader)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        # Its directory goes last (SECURITY.md, "Host inputs"): a file beside it, which a
        # sandboxed command may have made, can add a name but never shadow a module of
        # the installation (a planted json.py or requests.py).
        sys.path.append(str(real.parent))
        try:
            module_spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(real.parent))
        return module
    return importlib.import_module(spec)


def tools_in(obj: Any) -> list[Any]:
    """The ``@tool`` functions in a module (definition order), or ``obj`` itself."""
    if isinstance(obj, types.ModuleType):
        seen: set[int] = set()
        found = []
        for value in vars(obj).values():
            if (is_tool(value) or isinstance(value, Tool)) and id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        return found
    if isinstance(obj, (list, tuple)):
        return [v for v in obj if is_tool(v) or isinstance(v, Tool)]
    if is_tool(obj) or isinstance(obj, Tool):
        return [obj]
    return []


def hooks_in(module: types.ModuleType) -> list[Any]:
    """The ``@before_tool_call`` / ``@after_tool_call`` functions defined at module level,
    in definition order."""
    seen: set[int] = set()
    found = []
    for value in vars(module).values():
        if is_hook(value) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


def load_tools(registry: Registry, spec: str) -> int:
    """Register every ``@tool`` and every hook found in ``spec`` (file or module);
    returns the number of tools.

    Module-level functions marked ``@before_tool_call`` / ``@after_tool_call`` are
    registered as hooks, in definition order. A module may also define
    ``register(registry)`` to add tools and hooks itself; it is called last.

    Raises:
        ImportError: the module cannot be imported.
        toolwire.host.tools.definition.ToolDefinitionError: a tool is invalid or a duplicate.
    """
    found = register_module(registry, import_spec(spec))
    log.info("loaded %d tools from %s", found, spec)
    return found


def register_module(registry: Registry, module: types.ModuleType) -> int:
    """Register ``module``'s ``@tool`` functions and hooks (definition order), then call
    its ``register(registry)`` when it defines one; returns the number of tools found.

    Raises:
        toolwire.host.tools.definition.ToolDefinitionError: a tool is invalid or a duplicate.
        Exception: whatever ``register`` raises.
    """
    found = tools_in(module)
    for fn in found:
        registry.add(fn)
    for hook in hooks_in(module):
        registry.add_hook(hook)
    register = getattr(module, "register", None)
    if callable(register) and not is_tool(register):
        register(registry)
    return len(found)


def load_entry_points(registry: Registry) -> int:
    """Register tools from the ``toolwire.tools`` entry-point group; returns the count.

    A broken entry point is logged and skipped, so one bad plugin cannot stop the host.
    """
    count = 0
    import importlib.metadata  # ~20 ms to import: only when entry points are scanned

    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            for fn in tools_in(obj):
                registry.add(fn)
                count += 1
        except Exception as exc:
            log.error("entry point %s failed to load: %s", ep.name, exc)
    return count


def entry_point_names() -> list[str]:
    """The names in the ``toolwire.tools`` entry-point group (nothing is imported)."""
    import importlib.metadata

    return [ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
