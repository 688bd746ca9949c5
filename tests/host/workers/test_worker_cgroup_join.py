"""A worker joins its process-count cgroup itself, through a descriptor the host opened,
while it imports; it never runs the module when the join failed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolwire.host.workers.worker import _start_joining

from tests.sandbox_support import pids_cgroup_expected
from tests.workers_support import worker_host, worker_pids


def test_nothing_to_join_returns_at_once() -> None:
    _start_joining(None)()


def test_a_write_that_fails_is_raised_when_waited_for() -> None:
    r, w = os.pipe()
    os.close(w)
    wait = _start_joining(r)  # a read end: the write fails (EBADF)
    with pytest.raises(OSError, match="could not join the worker's cgroup"):
        wait()
    with pytest.raises(OSError):
        os.fstat(r)  # the descriptor is closed either way


def test_the_descriptor_gets_a_zero_and_is_closed() -> None:
    r, w = os.pipe()
    _start_joining(w)()
    assert os.read(r, 10) == b"0"
    os.close(r)
    with pytest.raises(OSError):
        os.fstat(w)


@pytest.mark.skipif(
    os.geteuid() != 0 or not pids_cgroup_expected(),
    reason="the host makes a pids cgroup per worker only as root with a pids hierarchy",
)
def test_a_sandboxed_worker_sits_in_a_pids_cgroup_of_its_own(tmp_path: Path) -> None:
    with worker_host(tmp_path, "process", ["--workers", "1"]) as h:
        h.call("hello")
        pythons = [
            pid
            for pid in worker_pids(tmp_path)
            if Path(f"/proc/{pid}/comm").read_text().startswith("python")
        ]
        assert len(pythons) == 1, pythons
        groups = Path(f"/proc/{pythons[0]}/cgroup").read_text().splitlines()
        pids_line = next(ln for ln in groups if ":pids:" in ln or ln.startswith("0::"))
        assert "/toolwire-" in pids_line, groups
        assert pids_line not in Path("/proc/self/cgroup").read_text().splitlines()
