"""Names shared by host and client (no imports beyond typing).

The MCP revisions come from the MCP specification's version list. toolwire's own
names (its method names, ``_meta`` keys and capability key) are defined here once and
re-exported by :mod:`toolwire.extensions`, the home of the shapes and rules that use
them (protocol.md, "Batches", "Approval", "Results"). They sit in this small module
so that a worker process, which needs the names but none of the shapes, does not pay
for building those classes at its start.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APPROVAL_CAPABILITY",
    "APPROVE",
    "CALL_BATCH",
    "CALL_ENDED",
    "CALL_PROGRESS",
    "CALL_STARTED",
    "DETAILS_META_KEY",
    "EXTENSION_CAPABILITY",
    "LATEST_PROTOCOL_VERSION",
    "PROMPT_GUIDELINES_META_KEY",
    "PROMPT_SNIPPET_META_KEY",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TERMINATE_META_KEY",
]

LATEST_PROTOCOL_VERSION = "2025-11-25"
"""The newest MCP revision toolwire speaks."""
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""MCP revisions accepted in ``initialize``, newest first."""

# ------------------------------------------------------------------ method names

CALL_BATCH = "tools/callBatch"
"""Client -> host request running several tool calls (an assistant message's calls)."""
APPROVE = "toolwire/approve"
"""Host -> client request asking the client to approve one call before it runs."""
CALL_STARTED = "notifications/toolwire/callStarted"
"""A batch call started executing: ``{progressToken, callId, name}``."""
CALL_PROGRESS = "notifications/toolwire/callProgress"
"""A batch call reported progress: ``{progressToken, callId, progress, total?, message?}``."""
CALL_ENDED = "notifications/toolwire/callEnded"
"""A batch call's result is final: ``{progressToken, callId, isError}``."""

# ------------------------------------------------------------------ _meta keys

DETAILS_META_KEY = "toolwire/details"
"""Key under a result's ``_meta`` that carries ``details`` (data for programs, not the model)."""
TERMINATE_META_KEY = "toolwire/terminate"
"""Key under a result's ``_meta`` set to true when the tool asked the agent loop to stop."""
PROMPT_SNIPPET_META_KEY = "toolwire/promptSnippet"
"""Definition ``_meta`` key holding a tool's one-line system-prompt snippet."""
PROMPT_GUIDELINES_META_KEY = "toolwire/promptGuidelines"
"""Definition ``_meta`` key holding a tool's system-prompt guideline bullets (strings)."""

# ------------------------------------------------------------------ capabilities

EXTENSION_CAPABILITY = "toolwire"
"""The capability key under which a client declares toolwire's extensions."""
APPROVAL_CAPABILITY: dict[str, Any] = {EXTENSION_CAPABILITY: {"approval": True}}
"""The client capability that asks the host for ``toolwire/approve``."""
