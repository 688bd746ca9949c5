"""MCP Streamable HTTP (``toolwire serve --http``) and the fleet of replicas behind a
load balancer: the ASGI application (:mod:`.app`: :func:`create_app`,
:func:`serve_http`, :class:`HttpHost`), its two eras (:mod:`.legacy` for 2025-11-25
sessions; 2026-07-28 requests in :mod:`.app`, or answered in their own task,
:mod:`.direct`), the transport plumbing both share (:mod:`.wire`), authorization
(:mod:`.auth`), the ``[http]`` settings (:mod:`.config`), and what replicas share: the
change bus (:mod:`.bus`) and its settings and key rings (:mod:`.fleet`).

Imports from :mod:`toolwire.host.serve` (options, connection) and the packages below.
Nothing heavy is imported here: the names below are imported on first use, so the
options' parser can read :mod:`.config` and :mod:`.fleet` without loading the
application (``toolwire serve`` over stdio never does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

__all__ = ["HttpHost", "create_app", "serve_http"]

__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, ".app"))

if TYPE_CHECKING:
    from .app import HttpHost, create_app, serve_http
