"""Cancel and commit order (protocol.md §5), end to end through the real host.

A tool calls ``ctx.commit()`` just before a change it cannot take back. After that, a
cancellation no longer interrupts the call and its answer is owed (the change was
made); before it, a cancellation or the call's timeout makes ``commit()`` false and
nothing changes. Tools run in the host (``--isolation none``), where the request's own
cancel scope and the executor's timeout scope decide.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.e2e_helpers import PROMPT, text_of, wait_until
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.workers_support import call_msg, wait_for_message

COMMIT_TOOLS = str(TOOLS_DIR / "commit_tools.py")


@contextmanager
def commit_host(root: Path) -> Iterator[HostProcess]:
    args = ["--root", str(root), "--no-builtins", "--no-entry-points", "--isolation", "none"]
    with HostProcess([*args, "--tools", COMMIT_TOOLS]) as h:
        assert "result" in h.initialize(), h.stderr
        yield h


def _progress(message: str) -> Any:
    def pred(m: Any) -> bool:
        return (
            isinstance(m, dict)
            and m.get("method") == "notifications/progress"
            and m["params"].get("message") == message
        )

    return pred


def _cancel_and_sync(h: HostProcess, id: str) -> None:
    """Cancel request ``id``; the host has read the cancellation when a ping sent after
    it is answered (messages are read in order)."""
    h.notify("notifications/cancelled", {"requestId": id, "reason": "test"})
    assert h.request("ping", timeout=PROMPT)["result"] == {}


def test_a_cancellation_after_commit_is_answered_with_the_result(tmp_path: Path) -> None:
    with commit_host(tmp_path) as h:
        h.send(call_msg("c", "commit_then_wait", {"path": "out.txt", "go": "go"}, token="t"))
        wait_for_message(h, _progress("committed"), PROMPT, "the tool's 'committed' progress")
        _cancel_and_sync(h, "c")
        (tmp_path / "go").write_text("")
        resp = h.recv_response("c", timeout=PROMPT)
        assert resp["result"].get("isError") is not True, resp
        assert text_of(resp) == "done"
    assert (tmp_path / "out.txt").read_text() == "written"


def test_a_cancellation_before_commit_changes_nothing(tmp_path: Path) -> None:
    with commit_host(tmp_path) as h:
        h.send(call_msg("c", "wait_then_commit", {"path": "out.txt", "go": "go"}, token="t"))
        wait_for_message(h, _progress("waiting"), PROMPT, "the tool's 'waiting' progress")
        _cancel_and_sync(h, "c")
        (tmp_path / "go").write_text("")
        wait_until(lambda: (tmp_path / "out.txt.ended").exists(), PROMPT, "the handler's end")
        assert h.request("ping", timeout=PROMPT)["result"] == {}
    assert not (tmp_path / "out.txt").exists()


def test_a_call_past_its_timeout_cannot_commit(tmp_path: Path) -> None:
    with commit_host(tmp_path) as h:
        resp = h.call("commit_after_timeout", {"path": "out.txt"}, timeout=PROMPT)
        assert (tmp_path / "out.txt.ended").exists()
        assert resp["result"].get("isError") is True or text_of(resp) == "not committed", resp
    assert not (tmp_path / "out.txt").exists()
