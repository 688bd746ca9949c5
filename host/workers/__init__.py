"""Tool modules in worker processes: the host's side (:mod:`.pool`, a
:class:`WorkerPool` per module; :mod:`.manager`, :class:`Workers` for all of them; :mod:`.process`, one
worker process; :mod:`.remote`, a module's files and the stand-ins for its tools and
hooks; :mod:`.template`, :mod:`.health`) and the child's side (:mod:`.worker`, the entry point, and
:mod:`._workerside`), with what the two say to each other (:mod:`.workerwire`) and the
taking over of the standard streams both entry points do first (:mod:`.stdio`).

Imports from below only: :mod:`toolwire.host.calls`, :mod:`toolwire.host.tools`,
:mod:`toolwire.host.sandbox`, :mod:`toolwire.host.schema`. The names below are the
package's public face (``toolwire.host.workers`` was one module); they are imported on
first use, so a worker process's start (``python -m toolwire.host.workers.worker``)
imports none of the host's side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

__all__ = [
    "RESTART_BACKOFF",
    "START_TIMEOUT",
    "STOP_GRACE",
    "ModuleSpec",
    "WorkerPool",
    "WorkerStartError",
    "Workers",
]

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(__all__, ".pool"),
        "Workers": ".manager",
        **dict.fromkeys(
            ("START_TIMEOUT", "STOP_GRACE", "ModuleSpec", "WorkerStartError"), ".process"
        ),
    },
)

if TYPE_CHECKING:
    from .manager import Workers
    from .pool import (
        RESTART_BACKOFF,
        START_TIMEOUT,
        STOP_GRACE,
        ModuleSpec,
        WorkerPool,
        WorkerStartError,
    )
