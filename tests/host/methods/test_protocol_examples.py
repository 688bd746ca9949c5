"""protocol.md's example exchanges are test vectors: each block is replayed against the real host.

Every ```jsonrpc block runs in a fresh host. A ``→`` line is sent as is; each ``←`` line that
follows must be the next message the host writes (compared as parsed JSON; the string
``"<any>"`` matches any value). So the document cannot drift from the behaviour.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e_helpers import exits_within
from tests.hostproc import REPO
from tests.inproc import InProcHost, in_host

DOC = REPO / "protocol.md"
BLOCK_RE = re.compile(r"```jsonrpc([^\n]*)\n(.*?)```", re.S)
"""A block's info string may add host options after ``jsonrpc`` (``jsonrpc --approve echo``)."""


def blocks() -> list[tuple[str, list[str], list[tuple[str, Any]]]]:
    text = DOC.read_text(encoding="utf-8")
    out = []
    for n, m in enumerate(BLOCK_RE.finditer(text), 1):
        steps = []
        for line in m.group(2).splitlines():
            if not line.strip():
                continue
            arrow, _, payload = line.partition(" ")
            assert arrow in ("→", "←"), f"block {n}: bad line {line!r}"
            steps.append((arrow, json.loads(payload)))
        heading = text.rfind("\n### ", 0, m.start())
        title = text[heading + 5 : text.index("\n", heading + 5)] if heading >= 0 else f"block {n}"
        out.append((title, m.group(1).split(), steps))
    return out


def matches(expected: Any, actual: Any) -> bool:
    if expected == "<any>":
        return True
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(matches(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return type(expected) is type(actual) and expected == actual


def test_document_has_examples() -> None:
    assert len(blocks()) >= 5


@pytest.mark.parametrize(("title", "options", "steps"), blocks(), ids=[t for t, _, _ in blocks()])
def test_example_block(title: str, options: list[str], steps: list[tuple[str, Any]]) -> None:
    args = ["--no-builtins", "--tools", str(REPO / "examples" / "tools" / "echo_tools.py")]
    args += options
    # In process (tests/inproc.py), rooted where a spawned host's working directory was.
    with InProcHost(in_host(["--root", str(REPO), *args])) as host:
        sent_exit = False
        for arrow, msg in steps:
            if arrow == "→":
                host.send(msg)
                sent_exit = isinstance(msg, dict) and msg.get("method") == "exit"
            else:
                got = host.recv(timeout=10)
                assert matches(msg, got), f"{title}: expected\n{msg}\ngot\n{got}"
        if sent_exit:
            assert exits_within(host) == 0
        else:
            host.close_stdin()
            assert exits_within(host) == 0
            assert host.drain() in ([], [None]), "host sent more than the document shows"
