"""A tool that fetches a URL, for the egress tests of tool modules (tests/host/sandbox/test_sandbox_egress.py).

It runs in a sandboxed worker process, whose environment points urllib at the egress
relay; ``[network.modules.egress_tools]`` adds to what it may reach.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from toolwire.host import tool


@tool
def fetch(url: str) -> str:
    """Fetch url and return its body, or ``HTTP <status>: <body>`` when refused.

    Args:
        url: an http:// URL.
    """
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return str(response.read().decode())
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read().decode()}"
