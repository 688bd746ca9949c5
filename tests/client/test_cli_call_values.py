"""``toolwire call k=v`` reads each value as the tool's input schema says (the real
CLI, the real host): a string parameter takes the raw text; JSON only where the schema
wants a number, integer, boolean, null, array or object; NaN, Infinity and overflowing
numbers are never accepted (usage error, exit 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import run_cli
from tests.hostproc import TOOLS_DIR

KV = ["--no-builtins", "--isolation", "none", "--tools", str(TOOLS_DIR / "kv_tools.py")]
"""The host's options: the CLI's coercion is under test, so the tools run in the host."""


def _call(
    root: Path, *args: str, host: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli("call", *args, "--root", str(root), *(KV if host is None else host))


def _show(root: Path, *pairs: str) -> dict[str, Any]:
    proc = _call(root, "show", *pairs)
    assert proc.returncode == 0, proc.stderr
    value: dict[str, Any] = json.loads(proc.stdout)
    return value


@pytest.mark.parametrize("content", ["1.10", "null", "NaN", "1e999", '"quoted"', "[1, 2]", ""])
def test_write_content_is_the_raw_text(tmp_path: Path, content: str) -> None:
    proc = _call(tmp_path, "write", "path=out.txt", f"content={content}", host=[])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").read_text() == content


FOLLOWS = [
    ("text=1.10", "1.10"),
    ("text=null", "null"),
    ("text=NaN", "NaN"),
    ("count=3", 3),
    ("ratio=1.10", 1.1),
    ("flag=false", False),
    ('tags=["a","b"]', ["a", "b"]),
    ('opts={"k":1}', {"k": 1}),
    ("maybe_int=null", None),
    ("str_or_int=5", "5"),  # a union with string: the raw text
    ("mode=fast", "fast"),
    ("level=2", 2),
    ("ref=9", 9),
    ("anything=[1]", [1]),  # not described: JSON when it parses, else the text
]


def test_values_follow_the_schema(tmp_path: Path) -> None:
    got = _show(tmp_path, *(pair for pair, _ in FOLLOWS))
    assert got == {pair.partition("=")[0]: value for pair, value in FOLLOWS}
    assert _show(tmp_path, "anything=abc", "maybe_int=4", "ratio=2", "count=-7") == {
        "anything": "abc",
        "maybe_int": 4,
        "ratio": 2,
        "count": -7,
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("count=NaN", "NaN is not a JSON value"),
        ("ratio=Infinity", "Infinity is not a JSON value"),
        ("ratio=-Infinity", "-Infinity is not a JSON value"),
        ("ratio=1e999", "1e999 overflows"),
        ("anything=NaN", "NaN is not a JSON value"),
        ("unknown=1e999", "1e999 overflows"),
        ("tags=[1e999]", "1e999 overflows"),
        ("count=abc", "takes integer, written as JSON"),
        ("flag=yes", "takes boolean"),
        ("count=1.5", "takes integer, not number"),
        ("tags={}", "takes array, not object"),
        ("maybe_int=x", "takes one of integer, null"),
    ],
)
def test_values_a_parameter_cannot_take_are_usage_errors(
    tmp_path: Path, pair: str, message: str
) -> None:
    proc = _call(tmp_path, "show", pair)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("raw", ['{"count": NaN}', '{"ratio": Infinity}', '{"ratio": 1e999}'])
def test_json_objects_refuse_non_json_literals_before_the_host_starts(
    tmp_path: Path, raw: str
) -> None:
    proc = _call(tmp_path, "show", "--args-json", raw, host=["--tools", "/nonexistent.py"])
    assert proc.returncode == 2, proc.stderr
    assert "not valid JSON" in proc.stderr


def test_read_offset_must_be_an_integer(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    ok = _call(tmp_path, "read", "path=f.txt", "offset=2", host=[])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("two")
    for bad in ("NaN", "1e999", "two"):
        proc = _call(tmp_path, "read", "path=f.txt", f"offset={bad}", host=[])
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "offset=" in proc.stderr
