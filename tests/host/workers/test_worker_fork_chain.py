"""The status pipe of a boxed fork (host/workers/worker.py): the child that makes the
worker's namespaces reports the init's pid, the init reports the worker's, at the same
time and in either order. A template that misread the pair took the child that made the
namespaces (which exits 0 at once) for the worker: the host saw its worker "die (exit
code 0) while starting" and removed the cgroups the real worker was about to join
(found by a busy CI run: ENODEV on the join)."""

from __future__ import annotations

import os

import pytest
from toolwire.host.workers.worker import _read_chain, _report_chain


@pytest.mark.parametrize("order", ["init first", "worker first"])
def test_the_chain_is_read_whichever_record_comes_first(order: str) -> None:
    r, w = os.pipe()
    records = [(b"P", 4321), (b"W", 2)]
    if order == "worker first":
        records.reverse()
    for kind, pid in records:
        _report_chain(w, kind, pid)
    os.close(w)
    assert _read_chain(r) == (4321, 2)


def test_a_chain_that_failed_before_the_worker_reports_only_the_init() -> None:
    r, w = os.pipe()
    _report_chain(w, b"P", 77)
    os.close(w)
    assert _read_chain(r) == (77, 0)


def test_an_empty_chain_reports_nothing() -> None:
    r, w = os.pipe()
    os.close(w)
    assert _read_chain(r) == (0, 0)
