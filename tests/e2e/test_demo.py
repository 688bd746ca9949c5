"""The demo: its project and plan, its self-checks, and the demo itself end to end."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from toolwire.client import ToolReply
from toolwire.client.demo import check_tests, find_example, load_plan, pytest_summary
from toolwire.host.builtins import builtin_tools

from toolwire.models import CallToolResult, TextContent

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
PLAN = find_example()
PROJECT = PLAN.parent / "invoice"

BUILTINS = {getattr(t, "name", None) or getattr(t, "__name__", "") for t in builtin_tools()}


def needs_builtins(fn: Any) -> Any:
    """The demo drives the built-in tools: a host without them is a regression, so the
    test fails (it never skips)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        missing = {"ls", "read", "grep", "bash", "edit"} - BUILTINS
        assert not missing, f"the built-in tools {sorted(missing)} are not registered"
        return fn(*args, **kwargs)

    return functools.wraps(fn)(wrapper)


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TOOLWIRE, "demo", "--fast", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def pytest_in(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def bash_result(text: str, exit_code: int | None) -> ToolReply:
    meta = {"toolwire/details": {"exitCode": exit_code}} if exit_code is not None else None
    result = CallToolResult(content=[TextContent(text=text)], is_error=bool(exit_code), _meta=meta)
    return ToolReply(1, "bash", result)


# --------------------------------------------------------------------------- the project


def test_shipped_project_fails_and_the_plans_edit_fixes_it(tmp_path: Path) -> None:
    """Independent of the host: the bug is real and the recorded edit is the fix."""
    work = tmp_path / "invoice"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("__pycache__"))
    before = pytest_in(work)
    assert before.returncode == 1
    assert pytest_summary(before.stdout) == {"failed": 2, "passed": 5}

    edits = [s for s in json.loads(PLAN.read_text())["steps"] if s["tool"] == "edit"]
    assert len(edits) == 1
    args = edits[0]["arguments"]
    source = (work / args["path"]).read_text()
    assert source.count(args["oldText"]) == 1
    (work / args["path"]).write_text(source.replace(args["oldText"], args["newText"]))
    after = pytest_in(work)
    assert after.returncode == 0, after.stdout
    assert pytest_summary(after.stdout) == {"passed": 7}


def test_the_plan_loads() -> None:
    plan = load_plan(PLAN)
    assert plan.project == PROJECT
    assert [s.tool for s in plan.steps] == ["ls", "read", "bash", "grep", "edit", "bash"]
    assert [s.check for s in plan.steps if s.check] == ["tests-fail", "tests-pass"]
    assert all("{python}" in s.arguments["command"] for s in plan.steps if s.tool == "bash")


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"project": "p"}, "'steps' list"),
        ({"project": "p", "steps": [{"arguments": {}}]}, "step 1 needs a string 'tool'"),
        ({"project": "p", "steps": [{"tool": "x", "arguments": []}]}, "must be an object"),
        ({"project": "p", "steps": [{"tool": "x", "check": "maybe"}]}, "unknown check"),
        ({"project": "p", "steps": [{"tool": "bash", "check": "tests-pass"}]}, "failing first"),
        (
            {"steps": [{"tool": "b", "check": "tests-fail"}, {"tool": "b", "check": "tests-pass"}]},
            "'project'",
        ),
    ],
)
def test_bad_plans_are_refused(tmp_path: Path, plan: dict[str, object], message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_plan(path)


# --------------------------------------------------------------------------- self-checks


def test_pytest_summary_reads_the_last_summary_line() -> None:
    text = "x\n1 failed in the log\n=== 2 failed, 5 passed, 1 error in 0.31s ===\n"
    assert pytest_summary(text) == {"failed": 2, "passed": 5, "errors": 1}
    assert pytest_summary("7 passed in 1.2s") == {"passed": 7}
    assert pytest_summary("no tests ran in 0.01s") is None
    assert pytest_summary("bash: python: command not found") is None


def test_check_tests_uses_summary_and_exit_code() -> None:
    failing = bash_result("..F\n1 failed, 2 passed in 0.1s", 1)
    passing = bash_result("...\n3 passed in 0.1s", 0)
    assert check_tests(failing, "tests-fail")[0]
    assert not check_tests(failing, "tests-pass")[0]
    assert check_tests(passing, "tests-pass")[0]
    assert not check_tests(passing, "tests-fail")[0]
    # A summary that says "passed" is not enough when the command failed.
    assert not check_tests(bash_result("3 passed in 0.1s", 2), "tests-pass")[0]
    # Without an exit code in details, the error flag decides.
    assert check_tests(bash_result("3 passed in 0.1s", None), "tests-pass")[0]
    ok, why = check_tests(bash_result("command not found", 127), "tests-fail")
    assert not ok and "no pytest summary" in why


# --------------------------------------------------------------------------- end to end


@needs_builtins
def test_demo_runs_and_fixes_the_bug() -> None:
    out = run_demo("--keep")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "tools/list" in text
    assert "agent loop" in text
    assert "result of read (call step-2)" in text  # the model's tool-call ids are the call ids
    for step in ("ls", "read", "grep", "edit", "bash"):
        assert re.search(rf"step \d/6\s+{step}\b", text), step
    fail_at = text.index("the tests fail as expected (2 failed, 5 passed)")
    pass_at = text.index("all tests pass (7 passed)")
    assert fail_at < pass_at
    assert "+    tax = money(taxable * tax_rate)" in text  # the edit's diff is shown
    assert "DEMO PASSED" in text
    kept = re.search(r"kept at (\S+)", text)
    assert kept is not None
    work = Path(kept.group(1))
    try:
        assert "tax = money(taxable * tax_rate)" in (work / "invoice.py").read_text()
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    # The shipped example is untouched: the demo works on a copy.
    assert "tax = money(subtotal * tax_rate)" in (PROJECT / "invoice.py").read_text()


@needs_builtins
def test_demo_fails_when_the_tests_do_not_pass(tmp_path: Path) -> None:
    """The demo's verdict is real: a plan without the fix must end in DEMO FAILED."""
    plan = json.loads(PLAN.read_text())
    plan["steps"] = [s for s in plan["steps"] if s["tool"] != "edit"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = run_demo("--plan", str(path), "--project", str(PROJECT))
    assert out.returncode == 1
    assert "expected all tests to pass, got 2 failed, 5 passed" in out.stdout
    assert "DEMO FAILED" in out.stdout


def test_demo_fails_when_the_host_lacks_a_tool(tmp_path: Path) -> None:
    plan = {
        "project": str(PROJECT),
        "steps": [
            {"tool": "no_such_tool", "check": "tests-fail"},
            {"tool": "no_such_tool", "check": "tests-pass"},
        ],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = run_demo("--plan", str(path))
    assert out.returncode == 1
    assert "does not offer the tool(s) no_such_tool" in out.stdout
    assert "DEMO FAILED" in out.stdout


# --------------------------------------------------------------------------- through the agent loop


def test_the_plan_becomes_a_model_script() -> None:
    import anyio
    from toolwire.client.conversation import AssistantMessage, UserMessage
    from toolwire.client.demo import plan_script
    from toolwire.client.providers import ModelRequest, ScriptedProvider

    plan = load_plan(PLAN)
    provider = ScriptedProvider(plan_script(plan, {"{python}": "PY", "{root}": "/r"}))
    request = ModelRequest(None, [UserMessage(plan.title)])

    async def play() -> list[AssistantMessage]:
        return [await provider.complete(request) for _ in range(len(plan.steps) + 2)]

    messages = anyio.run(play)
    calls = [m.tool_calls for m in messages[: len(plan.steps)]]
    assert [c[0].id for c in calls] == [f"step-{i}" for i in range(1, len(plan.steps) + 1)]
    assert [c[0].name for c in calls] == [s.tool for s in plan.steps]
    assert [m.text for m in messages[: len(plan.steps)]] == [s.note for s in plan.steps]
    assert calls[2][0].arguments["command"].startswith("PY -m pytest")
    # Then a closing message without calls ends the loop, and the script stays ended.
    assert messages[-2].tool_calls == [] and messages[-2].text
    assert messages[-1].tool_calls == []
