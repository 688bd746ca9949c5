"""MCP revisions shared by host and client (no third-party imports).

They come from the MCP specification's version list. toolwire's own names (methods,
``_meta`` keys) live in :mod:`toolwire.extensions`.
"""

from __future__ import annotations

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
]

LATEST_PROTOCOL_VERSION = "2025-11-25"
"""The newest MCP revision toolwire speaks."""
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""MCP revisions accepted in ``initialize``, newest first."""
