"""``null`` never destroys data (issue 10 point 4), end to end through the real host.

A null for a required parameter that does not admit null is an invalid-arguments
result naming the field (the tool never runs); a null for an optional parameter means
the parameter is absent. protocol.md §10.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import text_of
from tests.hostproc import TOOLS_DIR
from tests.inproc import InProcHost

KEEP = "line one\nline two\n"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[InProcHost]:
    (tmp_path / "keep.txt").write_text(KEEP)
    with InProcHost(
        [
            "--root",
            str(tmp_path),
            "--no-entry-points",
            "--tools",
            str(TOOLS_DIR / "null_tools.py"),
        ]
    ) as h:
        h.initialize()
        yield h


def _refused(resp: dict[str, Any], field: str) -> str:
    assert resp["result"].get("isError") is True, resp
    text = text_of(resp)
    assert text.startswith("Invalid arguments"), text
    assert f"  - {field}: " in text and "null" in text, text
    return text


def test_write_with_null_content_leaves_the_file_alone(host: InProcHost, tmp_path: Path) -> None:
    _refused(host.call("write", {"path": "keep.txt", "content": None}), "content")
    assert (tmp_path / "keep.txt").read_text() == KEEP
    _refused(host.call("write", {"path": None, "content": "x"}), "path")


def test_edit_with_null_new_text_deletes_nothing(host: InProcHost, tmp_path: Path) -> None:
    resp = host.call(
        "edit", {"path": "keep.txt", "edits": [{"oldText": "line two\n", "newText": None}]}
    )
    _refused(resp, "edits.0.newText")
    # The older single-edit form goes through the same rule.
    resp = host.call("edit", {"path": "keep.txt", "oldText": "line one", "newText": None})
    _refused(resp, "edits.0.newText")
    assert (tmp_path / "keep.txt").read_text() == KEEP
    # An optional field inside an item given as null is absent.
    resp = host.call(
        "edit",
        {
            "path": "keep.txt",
            "edits": [{"oldText": "line two", "newText": "line 2", "replaceAll": None}],
        },
    )
    assert resp["result"].get("isError") is not True, resp
    assert (tmp_path / "keep.txt").read_text() == "line one\nline 2\n"


def test_bash_with_null_command_runs_nothing(host: InProcHost, tmp_path: Path) -> None:
    _refused(host.call("bash", {"command": None}), "command")
    # An optional parameter given as null is absent: the command runs without a timeout.
    resp = host.call("bash", {"command": "echo ran > ran.txt; echo ok", "timeout": None})
    assert resp["result"].get("isError") is not True, resp
    assert (tmp_path / "ran.txt").read_text() == "ran\n"


@pytest.mark.parametrize(("name", "default"), [("raw_save", "!"), ("model_save", "?")])
def test_custom_tools_follow_the_same_rule(
    host: InProcHost, tmp_path: Path, name: str, default: str
) -> None:
    _refused(host.call(name, {"path": "keep.txt", "content": None}), "content")
    assert (tmp_path / "keep.txt").read_text() == KEEP
    resp = host.call(name, {"path": "new.txt", "content": "c", "suffix": None})
    assert resp["result"].get("isError") is not True, resp
    assert (tmp_path / "new.txt").read_text() == "c" + default


def test_null_for_a_nullable_optional_parameter_stays_null(host: InProcHost) -> None:
    # protocol.md §10.1: a parameter whose schema admits null receives it as it is; only
    # a null the schema refuses counts as absent (its default applies)
    assert text_of(host.call("nullable_note", {"note": None})) == "None"
    assert text_of(host.call("nullable_note", {})) == "'default note'"
    assert text_of(host.call("nullable_note", {"note": "given"})) == "'given'"
    # ... also when another argument needs coercion ("2" to 2), which runs the lenient
    # conversions over every argument: the null is not taken for an absent value there
    assert text_of(host.call("nullable_note", {"note": None, "repeat": "2"})) == "None None"
