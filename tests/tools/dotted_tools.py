"""A tool whose MCP name no OpenAI-compatible API accepts as it is (tests/client/test_provider_http.py)."""

from __future__ import annotations

from pathlib import Path

from toolwire.host import tool


@tool(name="ns.mark-file")
def mark_file(path: str, text: str) -> str:
    """Write text to the file at path (proof that the call ran).

    Args:
        path: an absolute file path.
        text: what to write.
    """
    Path(path).write_text(text)
    return f"wrote {text}"
