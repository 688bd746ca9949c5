"""The test peer itself (tests/hostproc.py): what it reports must be what the process wrote."""

from __future__ import annotations

import sys

import pytest

from tests.hostproc import HostProcess

# A stand-in for the host: writes its stderr line only after it has read a line on stdin,
# so the line cannot be in the peer's buffer when the test starts waiting for it.
_LATE_LINE = (
    "import sys\n"
    "sys.stdin.readline()\n"
    "sys.stderr.write('late line\\n'); sys.stderr.flush()\n"
    "sys.stdin.readline()\n"
)


def test_expect_stderr_waits_for_a_line_written_after_the_wait_began() -> None:
    with HostProcess(command=(sys.executable, "-c", _LATE_LINE)) as proc:
        assert "late line" not in proc.stderr
        proc.send_raw(b"go\n")
        assert "late line" in proc.expect_stderr("late line")


def test_expect_stderr_fails_with_what_came_when_the_stderr_ends_without_it() -> None:
    with HostProcess(command=(sys.executable, "-c", _LATE_LINE)) as proc:
        proc.send_raw(b"go\n")
        proc.close_stdin()
        with pytest.raises(AssertionError, match="late line"):
            proc.expect_stderr("never written")
