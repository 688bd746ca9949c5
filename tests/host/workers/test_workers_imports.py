"""What a worker process has imported when its tool module's first line runs (issue 23,
point 1: "the worker's start must not import more than today").

A worker's start is ~97% imports (bench/RESULTS.md, "A worker's start, and where it
goes"), so the modules a real worker child holds before its module loads are its start-up
cost. The host/ split added four package ``__init__``s to that path (``toolwire.host.
workers``, ``.tools``, ``.calls``, ``.sandbox``) and ``toolwire.host.sandbox.env``; the
modules below are now imported only when a call needs them, so the count is back to what
it was before the split (224 on CPython 3.11 here, measured the same way).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from tests.hostproc import HostProcess
from tests.workers_support import data_of, host_args

PROBE = """
import sys

AT_IMPORT = sorted(sys.modules)

from toolwire.host import tool


@tool
def loaded() -> dict:
    \"\"\"The modules this worker held when this module began to load.\"\"\"
    return {"count": len(AT_IMPORT), "names": AT_IMPORT}
"""

NOT_AT_START = (
    "toolwire.host.sandbox.env",  # ExecEnv: made at the first call or hook
    "toolwire.host.tools.rounds",  # the 2026-07-28 input rounds: once a tool asks
    "toolwire.modern",
    "toolwire.host.tools.redaction",  # [secrets]: a worker never registers any
    "toolwire.host.schema.metacheck",  # only for a declared input_schema
    "zlib",  # the module's name digest is binascii.crc32
)

MAX_MODULES = 224
"""sys.modules of a worker child at its tool module's first line before the host/ split
(CPython 3.11, the editable install), the bound held since."""

MAX_TOOLWIRE = 38
"""toolwire modules among them (37 before the split, 43 after it; the total above is
what holds the start's cost)."""


def test_a_worker_imports_no_more_at_start_than_before_the_split(tmp_path: Path) -> None:
    mod = tmp_path / "probe.py"
    mod.write_text(textwrap.dedent(PROBE))
    root = tmp_path / "root"
    root.mkdir()
    # Started from scratch: a worker forked from its template (the default on Linux)
    # imports none of this at its start, the template did (bench/NOTES.md, issue 26).
    args = host_args(root, "process", (str(mod),), "--workers", "1", "--worker-start", "spawn")
    with HostProcess(args) as h:
        assert "result" in h.initialize(), h.stderr
        got = data_of(h.call("loaded", {})["result"])
    names = set(got["names"])
    assert not names & set(NOT_AT_START), sorted(names & set(NOT_AT_START))
    ours = sorted(n for n in names if n == "toolwire" or n.startswith("toolwire."))
    assert len(ours) <= MAX_TOOLWIRE, ours
    if sys.version_info[:2] == (3, 11):
        # The standard library's share differs between Python versions.
        assert got["count"] <= MAX_MODULES, sorted(names)
