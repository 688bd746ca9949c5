"""One kernel for both eras (issue 23 point 2): the shape, read from the source, and the
behaviour it keeps, through the real host in process.

Shape: the kernel (``host/methods/kernel.py``) names neither face (``HostServer``,
``ModernServer``) and imports neither face module; the 2026-07-28 face does not refer to
the 2025-11-25 one; and no context variable carries an input round (approval asks
through the call's channel, which carries the round).

Behaviour: on one connection the era of a call is its request's, not the connection's:
a 2026-07-28 call is asked what its own envelope declares even after a 2025-11-25
``initialize`` declared more, and a 2025-11-25 call is asked with host→client requests.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import REPO
from tests.inproc import InProcHost

METHODS = REPO / "host" / "methods"
FACES = {"HostServer", "ModernServer"}
FACE_MODULES = {"server", "modern"}

NO_CONTEXT_VARS = [
    REPO / "host" / "calls" / "approval.py",
    REPO / "host" / "tools" / "rounds.py",
    REPO / "host" / "tools" / "channel.py",
    REPO / "host" / "tools" / "context.py",
    *sorted(METHODS.glob("*.py")),
]
"""Where an input round (or what a call asks through) could be held per context."""


def _code_names(path: Path) -> tuple[set[str], set[str]]:
    """``(names, imported modules)`` the code of ``path`` uses: identifiers, attribute
    names, names defined and imported (docstrings and comments are not code); relative imports
    as their last part (``from .server import x`` gives ``server``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.name.rpartition(".")[2])
            names.add(node.asname or "")
        if isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").rpartition(".")[2])
            modules.update(alias.name for alias in node.names)  # from . import server
        elif isinstance(node, ast.Import):
            modules.update(alias.name.rpartition(".")[2] for alias in node.names)
    return names, modules


def test_the_kernel_refers_to_no_face() -> None:
    names, modules = _code_names(METHODS / "kernel.py")
    assert "HostKernel" in names and "run_batch" in names  # the source is read
    assert names & FACES == set()
    assert modules & FACE_MODULES == set()


def test_the_modern_face_refers_only_down_to_the_kernel() -> None:
    names, modules = _code_names(METHODS / "modern.py")
    assert "HostKernel" in names and "kernel" in modules
    assert "HostServer" not in names and "server" not in modules


def test_the_batch_module_refers_to_no_face_and_no_kernel() -> None:
    names, modules = _code_names(METHODS / "batch.py")
    assert "run_batch" in names
    assert names & (FACES | {"HostKernel"}) == set()
    assert modules & (FACE_MODULES | {"kernel"}) == set()


@pytest.mark.parametrize("path", NO_CONTEXT_VARS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_context_variable_carries_a_round(path: Path) -> None:
    names, modules = _code_names(path)
    assert "contextvars" not in modules
    assert "ContextVar" not in names


def test_the_shape_checks_see_a_context_variable_and_a_face(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import contextvars\nfrom .server import HostServer\n_r = contextvars.ContextVar('r')\n",
        encoding="utf-8",
    )
    names, modules = _code_names(bad)
    assert "contextvars" in modules and "ContextVar" in names
    assert "HostServer" in names and "server" in modules


# --------------------------------------------------------------------------- behaviour

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
ECHO_TOOLS = str(REPO / "examples" / "tools" / "echo_tools.py")
APPROVE_BOTH = {"toolwire": {"approval": True}, "elicitation": {}}


@contextmanager
def _host(tmp_path: Path) -> Iterator[InProcHost]:
    args = ["--root", str(tmp_path), "--no-builtins", "--no-entry-points", "--tools", ECHO_TOOLS]
    with InProcHost([*args, "--approve", "echo"]) as h:
        h.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": APPROVE_BOTH, "clientInfo": {}},
        )
        h.notify("notifications/initialized")
        yield h


def _modern(params: dict[str, Any], caps: dict[str, Any]) -> dict[str, Any]:
    return {"_meta": {PV: V, CAPS: caps}, **params}


def _text(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def test_a_modern_call_is_asked_what_its_envelope_declares_not_the_connection(
    tmp_path: Path,
) -> None:
    call = {"name": "echo", "arguments": {"text": "hi"}}
    with _host(tmp_path) as h:
        # initialize declared toolwire approval; this request declares nothing: denied
        # without asking anyone (no host→client request on the connection).
        none = h.request("tools/call", _modern(call, {}))["result"]
        assert none["isError"] is True and "declared neither" in _text(none)
        # this one declares elicitation only: its round asks with a form
        form = h.request("tools/call", _modern(call, {"elicitation": {}}))["result"]
        assert form["resultType"] == "input_required"
        assert form["inputRequests"]["approval"]["method"] == "elicitation/create"
        assert h.drain() == []
        # a 2025-11-25 call on the same connection asks with toolwire/approve
        h.send({"jsonrpc": "2.0", "id": "legacy", "method": "tools/call", "params": call})
        ask = h.recv()
        assert ask["method"] == "toolwire/approve" and ask["params"]["callId"] == "legacy"
        h.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow"}})
        assert _text(h.recv_response("legacy")["result"]) == "hi"


def test_batches_of_both_eras_ask_through_their_own_channels(tmp_path: Path) -> None:
    calls = [{"id": 7, "name": "echo", "arguments": {"text": "a"}}]
    with _host(tmp_path) as h:
        modern = h.request("tools/callBatch", _modern({"calls": calls}, APPROVE_BOTH))["result"]
        assert list(modern["inputRequests"]) == ["approval/7"]
        assert modern["inputRequests"]["approval/7"]["method"] == "toolwire/approve"
        assert h.drain() == []
        h.send(
            {"jsonrpc": "2.0", "id": "b", "method": "tools/callBatch", "params": {"calls": calls}}
        )
        ask = h.recv()
        assert ask["method"] == "toolwire/approve" and ask["params"]["callId"] == 7
        h.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "deny"}})
        (entry,) = h.recv_response("b")["result"]["results"]
        assert entry["result"]["isError"] is True
        assert _text(entry["result"]) == "Call denied by the client: no reason given"
