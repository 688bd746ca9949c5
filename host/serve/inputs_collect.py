"""Which files are a host's inputs (:mod:`toolwire.host.sandbox.inputs` has the rule itself).

Kept apart from the rule because finding them needs the options, the loader and the
worker pool's view of a module's files, which the path rules and the sandbox (which
apply the rule) must not import.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from ..sandbox.inputs import HostInputs, configured_bwrap_refusal
from ..tools.loading import ENTRY_POINT_GROUP
from ..workers.remote import _module_location, importable_beside
from .options import HostConfig, StartupError

__all__ = ["check_configured_bwrap", "collect"]


def collect(config: HostConfig) -> HostInputs:
    """The host inputs of a host configured by ``config`` (see the module docstring).

    Relative ``--tools`` paths are read from the working directory, as the loader
    reads them. Nothing is imported: module names are located with
    :func:`importlib.util.find_spec` of their top-level name.
    """
    found = HostInputs()
    if config.config_file is not None:
        found.add(config.config_file, "the --config file")
    if config.sandbox.bwrap is not None:
        found.add(config.sandbox.bwrap, "the configured bubblewrap")
    if config.fleet.state_keys is not None:
        found.add(config.fleet.state_keys, "the --state-keys key ring")
    for spec in config.tools:
        path = Path(spec)
        if spec.endswith(".py") or path.is_file():
            real = os.path.realpath(spec)
            found.add(real, f"the --tools file {spec}")
            folder = os.path.dirname(real)
            for neighbour in importable_beside(real)[1:]:
                found.add(neighbour, f"a module beside the --tools file {spec}")
            found.add(os.path.join(folder, "__pycache__"), f"the bytecode cache beside {spec}")
            if folder not in found.import_dirs:
                found.import_dirs.append(folder)
        else:
            _add_module(found, _module_location(spec), f"the --tools module {spec}")
    if config.entry_points:
        with contextlib.suppress(Exception):
            import importlib.metadata

            for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                _add_module(found, _module_location(ep.module), f"the entry point {ep.name}")
    return found


def _add_module(found: HostInputs, places: Sequence[str], what: str) -> None:
    for place in places:
        found.add(place, what)
        if os.path.isfile(place):
            found.add(os.path.join(os.path.dirname(place), "__pycache__"), f"the cache of {what}")


def check_configured_bwrap(config: HostConfig) -> None:
    """:func:`toolwire.host.sandbox.inputs.configured_bwrap_refusal` for ``config``.

    Raises:
        StartupError: the configured bubblewrap is not trusted.
    """
    settings = config.sandbox
    writable: list[str | os.PathLike[str]] = [config.root, *settings.extra_rw_paths]
    refusal = configured_bwrap_refusal(settings.bwrap, settings.mode, writable)
    if refusal:
        raise StartupError(refusal)
