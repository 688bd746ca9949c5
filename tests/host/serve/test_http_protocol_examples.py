"""protocol.md §13's HTTP examples are test vectors: each ```http block is sent to a real
``toolwire serve --http`` and its status and JSON body compared (``"<any>"`` matches any
value), so the document cannot drift from the behaviour."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.host.methods.test_protocol_examples import matches
from tests.hostproc import REPO
from tests.http_support import HttpHost, http_host

DOC = REPO / "protocol.md"
BLOCK_RE = re.compile(r"```http\n(.*?)```", re.S)


def http_blocks() -> list[tuple[str, str, dict[str, str], bytes, int, Any]]:
    """``(title, method path, headers, body, status, expected)`` per block."""
    out = []
    text = DOC.read_text(encoding="utf-8")
    for n, m in enumerate(BLOCK_RE.finditer(text), 1):
        request, _, answer = m.group(1).partition("\n---\n")
        head, _, body = request.partition("\n\n")
        first, *header_lines = head.splitlines()
        headers = dict(line.split(": ", 1) for line in header_lines)
        status_line, _, expected = answer.strip().partition("\n")
        out.append(
            (
                f"block {n}",
                first,
                headers,
                body.strip().encode(),
                int(status_line),
                json.loads(expected) if expected.strip() else None,
            )
        )
    return out


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpHost]:
    tools = [str(REPO / "examples" / "tools" / "echo_tools.py")]
    with http_host(tmp_path_factory.mktemp("root"), ["--no-builtins"], tools=tools) as h:
        yield h


def test_document_has_http_examples() -> None:
    assert len(http_blocks()) >= 6


@pytest.mark.parametrize("block", http_blocks(), ids=[b[0] for b in http_blocks()])
def test_http_example(
    host: HttpHost, block: tuple[str, str, dict[str, str], bytes, int, Any]
) -> None:
    _, first, headers, body, status, expected = block
    method, path = first.split(" ", 1)
    r = httpx.request(method, host.base + path, content=body, headers=headers, timeout=60)
    assert r.status_code == status, r.text
    if expected is not None:
        got = r.json()
        assert matches(expected, got), f"expected\n{expected}\ngot\n{got}"
