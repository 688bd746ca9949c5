"""The host never waits on its own stderr (issue 27): a client that never reads the
host's stderr pipe (it fills at 64 KiB) does not block a tool that writes megabytes
there, in-process or in a worker, by print, sys.stderr or the file descriptors; the
call is answered, and what did not fit the host's bounded buffer is dropped with a
count. Through the real host, with a stderr pipe nobody reads until the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess

MODULE = str(TOOLS_DIR / "stderr_tools.py")


class DeafHost(HostProcess):
    """The host, with its stderr on a pipe this client does not read."""

    def _read_stderr(self) -> None:
        return


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_tool_flooding_stderr_unread_still_answers(tmp_path: Path, isolation: str) -> None:
    args = ["--root", str(tmp_path), "--no-builtins", "--tools", MODULE, "--isolation", isolation]
    with DeafHost(args) as h:
        h.initialize()
        for how in ("print", "stderr", "fd1", "fd2"):
            r = h.call("shout", {"mib": 4, "how": how})
            assert r["result"]["content"][0]["text"] == f"wrote 4 MiB with {how}", r
        assert h.request("ping")["result"] == {}
        # now read the stderr: what fitted, then the count of what did not
        h.close_stdin()
        assert h.proc.stderr is not None
        err = h.proc.stderr.read()
        h.wait(30)
    assert b"bytes of stderr dropped" in err
    assert len(err) < 8 << 20  # bounded: far less than the 16 MiB written
