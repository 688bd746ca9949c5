"""A worker tool's result too big for the pipe to the host (issue 21, point 6).

A worker's messages to its host are bounded (64 MiB by default, ``--max-message-size``).
Before the fix a tool returning more was sent whole: the host refused the frame as
malformed, killed the worker, and the call failed with a "malformed message" text. Now
the worker measures what it sends: a reply that large becomes an error naming the limit, a
notification (a log message) fails the call that sent it with that error; the worker stays
and serves the next call.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.hostproc import HostProcess
from tests.workers_support import host_args

BIG = """
import os

from toolwire.host import ToolContext, tool

@tool
def big(mib: int) -> str:
    \"\"\"Returns ``mib`` MiB of text.\"\"\"
    return "x" * (mib << 20)

@tool
async def big_log(mib: int, ctx: ToolContext) -> str:
    \"\"\"Logs ``mib`` MiB of text.\"\"\"
    await ctx.log("debug", "x" * (mib << 20))
    return "logged"

@tool
def pid() -> str:
    \"\"\"The worker's pid.\"\"\"
    return str(os.getpid())
"""


def _text(resp: dict[str, object]) -> str:
    result = resp["result"]
    assert isinstance(result, dict), resp
    return "".join(str(b.get("text", "")) for b in result["content"])


def test_a_result_over_the_message_limit_is_an_error_naming_it(tmp_path: Path) -> None:
    mod = tmp_path / "big.py"
    mod.write_text(textwrap.dedent(BIG))
    root = tmp_path / "root"
    root.mkdir()
    with HostProcess(host_args(root, "process", (str(mod),), "--workers", "1")) as h:
        assert "result" in h.initialize()
        before = _text(h.call("pid", {}))
        resp = h.call("big", {"mib": 80}, timeout=120)
        result = resp["result"]
        text = _text(resp)
        assert result.get("isError") is True, text[:300]
        assert "80.0 MiB" in text and "64 MiB limit" in text, text
        assert "malformed" not in text, text
        # The worker lives: the next call is served by the same process.
        assert _text(h.call("pid", {})) == before, h.stderr
        # A log message over the limit fails the call that sent it, naming the limit.
        resp = h.call("big_log", {"mib": 80}, timeout=120)
        text = _text(resp)
        assert resp["result"].get("isError") is True, text[:300]
        assert "80.0 MiB" in text and "64 MiB limit" in text, text
        assert _text(h.call("pid", {})) == before, h.stderr
        # A result under the limit still arrives whole.
        small = h.call("big", {"mib": 1}, timeout=60)
        assert _text(small) == "x" * (1 << 20)
