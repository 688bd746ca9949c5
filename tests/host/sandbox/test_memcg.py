"""The memory cgroup files the host writes and reads (toolwire.host.sandbox.linux.memcg), on a fake
cgroup directory: the v2 path cannot be exercised end to end on a v1 machine, and the
end-to-end tests (tests/escape/test_sandbox_escape_memory.py) need a real memory controller."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolwire.host.sandbox.linux.memcg import (
    MemoryCgroups,
    exceeded_message,
    format_bytes,
    oom_kills,
)


def _group(tmp_path: Path, *files: str) -> Path:
    group = tmp_path / "toolwire-x"
    group.mkdir()
    for name in files:
        (group / name).write_text("max\n")
    return group


def test_v1_limits_memory_and_memory_plus_swap(tmp_path: Path) -> None:
    group = _group(tmp_path, "memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
    MemoryCgroups(str(tmp_path), 1).limit(str(group), 256 << 20)
    assert (group / "memory.limit_in_bytes").read_text() == str(256 << 20)
    assert (group / "memory.memsw.limit_in_bytes").read_text() == str(256 << 20)


def test_v2_limits_memory_forbids_swap_and_kills_the_whole_group(tmp_path: Path) -> None:
    group = _group(tmp_path, "memory.max", "memory.swap.max", "memory.oom.group")
    MemoryCgroups(str(tmp_path), 2).limit(str(group), 512 << 20)
    assert (group / "memory.max").read_text() == str(512 << 20)
    assert (group / "memory.swap.max").read_text() == "0"
    assert (group / "memory.oom.group").read_text() == "1"


def test_a_kernel_without_swap_accounting_still_gets_the_memory_limit(tmp_path: Path) -> None:
    group = _group(tmp_path, "memory.max")
    MemoryCgroups(str(tmp_path), 2).limit(str(group), 1 << 30)
    assert (group / "memory.max").read_text() == str(1 << 30)
    assert not (group / "memory.swap.max").exists()


def test_create_makes_a_group_below_the_base_and_removes_it_when_it_cannot_limit(
    tmp_path: Path,
) -> None:
    place = MemoryCgroups(str(tmp_path / "missing"), 2)
    assert place.create(1 << 20) is None  # no base: logged, no group


@pytest.mark.parametrize(
    ("name", "text", "kills"),
    [
        ("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2),
        ("memory.events", "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 1\n", 1),
        ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0),
    ],
)
def test_oom_kills_reads_both_versions(tmp_path: Path, name: str, text: str, kills: int) -> None:
    group = _group(tmp_path)
    (group / name).write_text(text)
    assert oom_kills(str(group)) == kills


def test_oom_kills_of_a_group_that_is_gone_is_zero(tmp_path: Path) -> None:
    assert oom_kills(str(tmp_path / "gone")) == 0


def test_the_message_names_the_limit_and_the_key() -> None:
    assert format_bytes(512 << 20) == "512 MiB" and format_bytes(3) == "3 bytes"
    assert exceeded_message(4 << 30) == (
        "it exceeded the memory limit of 4 GiB ([sandbox.limits] memory)"
    )
