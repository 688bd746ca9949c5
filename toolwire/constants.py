"""Protocol constants shared by host and client (no third-party imports).

MCP revisions come from the MCP specification's version list; the ``toolwire/...``
keys are toolwire's own ``_meta`` names (MCP 2025-11-25 "_meta": a prefix, a slash,
a name), documented in protocol.md.
"""

from __future__ import annotations

__all__ = [
    "DETAILS_META_KEY",
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TERMINATE_META_KEY",
]

LATEST_PROTOCOL_VERSION = "2025-11-25"
"""The newest MCP revision toolwire speaks."""
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""MCP revisions accepted in ``initialize``, newest first."""

DETAILS_META_KEY = "toolwire/details"
"""Key under a result's ``_meta`` that carries ``details`` (data for programs, not the model)."""
TERMINATE_META_KEY = "toolwire/terminate"
"""Key under a result's ``_meta`` set to true when the tool asked the agent loop to stop."""
