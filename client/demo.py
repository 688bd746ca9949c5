"""``toolwire demo``: a recorded coding session that fixes a real bug through the host.

The session plan is data (``examples/invoice.session.json``): a list of steps
``{tool, arguments, note, check?}``. The demo copies the example project to a
temporary directory, spawns a host rooted there, lists its tools, and plays the plan
through the agent loop (:func:`~toolwire.client.agent.run_agent`) with a
:class:`~toolwire.client.providers.ScriptedProvider` standing in for the model: each
step is one assistant message (the note as its text, one tool call), and the loop runs
the call through ``tools/callBatch`` and feeds the result back. The demo prints each
call, its progress and its result from the loop's events. No language model is
involved.

The demo checks its own outcome: a step with ``"check": "tests-fail"`` must show
failing tests and ``"tests-pass"`` all tests passing (judged from pytest's summary
line and the bash tool's exit code); any other step must not be an error result.
Afterwards the project's tests are run once more, outside the host, with this
interpreter. The exit code is 0 only when all of that holds.

Placeholders in string arguments: ``{python}`` becomes this interpreter's path
(shell-quoted, so the tests run inside the same virtual environment) and ``{root}``
the project copy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from toolwire.errors import JsonRpcError

from .agent import (
    MessageEnd,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    run_agent,
)
from .client import Client, ToolReply, host_command
from .conversation import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from .providers import ModelRequest, ScriptedProvider
from .render import ProgressPrinter, result_panel, tools_table, visible

__all__ = [
    "DemoPlan",
    "DemoStep",
    "check_tests",
    "find_example",
    "load_plan",
    "pytest_summary",
    "run_demo",
    "run_demo_cli",
]

Check = Literal["tests-fail", "tests-pass"]

STEP_PAUSE = 0.6
"""Seconds between steps when the output is a terminal and ``--fast`` is not given."""


@dataclass
class DemoStep:
    """One recorded call: the tool, its arguments, a note for the viewer, an optional check."""

    tool: str
    arguments: dict[str, Any]
    note: str = ""
    check: Check | None = None


@dataclass
class DemoPlan:
    """A recorded session: a title, the project directory it works on, its steps."""

    title: str
    project: Path
    steps: list[DemoStep] = field(default_factory=list)


def load_plan(path: Path, project: Path | None = None) -> DemoPlan:
    """Read and check a session plan.

    Args:
        path: the plan JSON file.
        project: the project directory; default: the plan's ``project`` member,
            relative to the plan file.

    Raises:
        ValueError: the plan is not valid (the message says where).
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the plan {path}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        raise ValueError(f"{path}: a plan is an object with a 'steps' list")
    steps: list[DemoStep] = []
    for i, s in enumerate(raw["steps"], 1):
        if not isinstance(s, dict) or not isinstance(s.get("tool"), str):
            raise ValueError(f"{path}: step {i} needs a string 'tool'")
        args = s.get("arguments", {})
        if not isinstance(args, dict):
            raise ValueError(f"{path}: step {i}: 'arguments' must be an object")
        check = s.get("check")
        if check not in (None, "tests-fail", "tests-pass"):
            raise ValueError(f"{path}: step {i}: unknown check {check!r}")
        steps.append(DemoStep(s["tool"], args, str(s.get("note", "")), check))
    if project is None:
        name = raw.get("project")
        if not isinstance(name, str):
            raise ValueError(f"{path}: the plan needs a 'project' directory name")
        project = path.parent / name
    checks = [s.check for s in steps if s.check]
    if "tests-fail" not in checks or checks[-1] != "tests-pass":
        raise ValueError(
            f"{path}: the plan must run the tests failing first and passing last "
            "(steps with check 'tests-fail' and, last, 'tests-pass')"
        )
    return DemoPlan(str(raw.get("title", path.stem)), project, steps)


def find_example() -> Path:
    """The shipped plan: ``demo_project/invoice.session.json`` in the installed package
    (the wheel carries ``examples/`` there, see pyproject.toml), else
    ``examples/invoice.session.json`` of a source checkout (an editable install).

    Raises:
        FileNotFoundError: neither exists (a broken installation).
    """
    here = Path(__file__).resolve().parent
    for candidate in (
        here / "demo_project" / "invoice.session.json",
        here.parent / "examples" / "invoice.session.json",
    ):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "the demo's example project is missing from this installation (reinstall "
        "toolwire, or pass --plan PLAN.json)"
    )


def substitute(value: Any, mapping: dict[str, str]) -> Any:
    """Replace placeholders in every string inside ``value`` (plain text replacement)."""
    if isinstance(value, str):
        for key, repl in mapping.items():
            value = value.replace(key, repl)
        return value
    if isinstance(value, dict):
        return {k: substitute(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, mapping) for v in value]
    return value


_SUMMARY = re.compile(r"\b(\d+) (passed|failed|errors?)\b")


def pytest_summary(text: str) -> dict[str, int] | None:
    """Counts from pytest's last summary line (``2 failed, 5 passed in 0.3s``), or None."""
    for line in reversed(text.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line):
            counts: dict[str, int] = {}
            for n, what in _SUMMARY.findall(line):
                key = "errors" if what.startswith("error") else what
                counts[key] = counts.get(key, 0) + int(n)
            if counts:
                return counts
    return None


def check_tests(res: ToolReply, expect: Check) -> tuple[bool, str]:
    """Did a bash call running pytest fail (``tests-fail``) or pass (``tests-pass``)?

    Uses pytest's summary line and the exit code from the result's ``details``
    (``exitCode``), or ``is_error`` when the tool gave no exit code.

    Returns:
        ``(ok, explanation)``.
    """
    counts = pytest_summary(res.text)
    details = res.details if isinstance(res.details, dict) else {}
    code = details.get("exitCode")
    failed_exit = code != 0 if isinstance(code, int) else res.is_error
    if counts is None:
        return False, "no pytest summary line in the output"
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    bad = counts.get("failed", 0) + counts.get("errors", 0)
    if expect == "tests-fail":
        ok = bad > 0 and failed_exit
        return (
            ok,
            f"the tests fail as expected ({summary})"
            if ok
            else f"expected failures, got {summary}",
        )
    ok = bad == 0 and counts.get("passed", 0) > 0 and not failed_exit
    return ok, f"all tests pass ({summary})" if ok else f"expected all tests to pass, got {summary}"


def _args_text(args: dict[str, Any], limit: int = 110) -> str:
    parts = []
    for k, v in args.items():
        s = json.dumps(v, ensure_ascii=False)
        if len(s) > 60:
            s = s[:57] + "…"
        parts.append(f"{k}={s}")
    text = " ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def run_demo(
    plan: DemoPlan,
    *,
    console: Console,
    keep: bool = False,
    fast: bool = False,
    extra_tools: list[str] | None = None,
) -> int:
    """Run ``plan`` against a fresh copy of its project; returns the exit code (0 = passed)."""
    pause = 0.0 if fast or not console.is_terminal else STEP_PAUSE
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-demo-")) / plan.project.name
    shutil.copytree(
        plan.project, workdir, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")
    )
    console.print(Rule(f"[bold]toolwire demo[/bold]: {escape(plan.title)}"))
    console.print(f"Project copied to [cyan]{escape(str(workdir))}[/cyan]")
    console.print("The plan plays through the agent loop, with a scripted model.")
    mapping = {"{python}": shlex.quote(sys.executable), "{root}": str(workdir)}
    problems: list[str] = []
    client = Client.spawn(
        host_command(root=workdir, tools=extra_tools or ()), stderr="capture", call_timeout=300
    )
    try:
        async with client as c:
            pid = c.process.pid if c.process else "?"
            console.print(
                f"Host: {escape(c.server_info.name)} {escape(c.server_info.version)}, "
                f"protocol {c.protocol_version}, pid {pid}"
            )
            tools = await c.list_tools()
            console.print(f"\n[bold]tools/list[/bold] → {len(tools)} tools")
            console.print(tools_table(tools))
            missing = sorted({s.tool for s in plan.steps} - {t.name for t in tools})
            if missing:
                problems.append(
                    f"the host does not offer the tool(s) {', '.join(missing)} "
                    "that the plan uses (are the built-in tools registered?)"
                )
            if not missing:
                await _play(plan, c, tools, console, mapping, pause, problems)
    except (JsonRpcError, OSError) as exc:
        problems.append(f"the session failed: {exc}")
    if problems and client.stderr_output.strip():
        console.print(Rule("host stderr (last lines)"))
        tail = "\n".join(client.stderr_output.strip().splitlines()[-20:])
        console.print(escape(visible(tail)))

    if not problems:
        # Confirm the outcome independently of the host: the project's tests pass now.
        console.print()
        console.print(Rule("[bold]verification outside the host[/bold]", align="left"))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        counts = pytest_summary(proc.stdout)
        shown = ", ".join(f"{n} {k}" for k, n in (counts or {}).items()) or "no summary"
        if proc.returncode == 0:
            console.print(f"[green]✔[/green] python -m pytest in the project copy: {shown}")
        else:
            problems.append(f"python -m pytest after the session exited {proc.returncode}: {shown}")

    console.print()
    if keep:
        console.print(f"The project copy is kept at [cyan]{escape(str(workdir))}[/cyan]")
    else:
        shutil.rmtree(workdir.parent, ignore_errors=True)
    if problems:
        console.print(Rule("[bold red]DEMO FAILED[/bold red]"))
        for p in problems:
            console.print(f"[red]✘[/red] {escape(visible(p))}")
        return 1
    console.print(Rule("[bold green]DEMO PASSED[/bold green]"))
    console.print(
        "[green]✔[/green] The tests failed before the edit and pass after it "
        "(confirmed again outside the host)."
    )
    return 0


def plan_script(
    plan: DemoPlan, mapping: dict[str, str], pause: float = 0.0
) -> list[AssistantMessage | Any]:
    """The plan as a model script: one assistant message per step (its note as the text,
    one tool call with id ``step-N``), then a closing message without calls.

    With ``pause``, each step waits that many seconds before "answering" (pacing for a
    terminal)."""

    def step_message(i: int, step: DemoStep) -> Any:
        message = AssistantMessage(
            step.note,
            [ToolCall(f"step-{i}", step.tool, substitute(step.arguments, mapping))],
            "toolUse",
        )

        async def answer(request: ModelRequest) -> AssistantMessage:
            if pause:
                await anyio.sleep(pause)
            return message

        return answer

    script: list[AssistantMessage | Any] = [
        step_message(i, step) for i, step in enumerate(plan.steps, 1)
    ]
    script.append(AssistantMessage("The tests pass now; the bug is fixed."))
    return script


async def _play(
    plan: DemoPlan,
    client: Client,
    tools: list[Any],
    console: Console,
    mapping: dict[str, str],
    pause: float,
    problems: list[str],
) -> None:
    """Run the plan through the agent loop, printing from its events; a failed check or
    an unexpected error result ends the session early (leaving the run cancels it)."""
    steps = {f"step-{i}": (i, step) for i, step in enumerate(plan.steps, 1)}
    provider = ScriptedProvider(plan_script(plan, mapping, pause))
    stack = contextlib.ExitStack()
    printer: ProgressPrinter | None = None
    messages = [UserMessage(plan.title)]
    async with run_agent(
        provider, client, messages, tools=tools, max_turns=len(plan.steps) + 1
    ) as run:
        async for event in run:
            if isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
                msg = event.message
                for call in msg.tool_calls:
                    i, step = steps[call.id]
                    console.print()
                    console.print(
                        Rule(
                            f"[bold]step {i}/{len(plan.steps)}[/bold]  "
                            f"[cyan]{escape(visible(call.name))}[/cyan] "
                            f"{escape(visible(_args_text(call.arguments)))}",
                            align="left",
                        )
                    )
                    if msg.text:
                        console.print(f"[italic]{escape(visible(msg.text))}[/italic]")
                if not msg.tool_calls and msg.text:
                    console.print()
                    console.print(f"[bold]model:[/bold] {escape(visible(msg.text))}")
            elif isinstance(event, ToolExecutionStart):
                printer = ProgressPrinter(console, f"{event.name} running")
                stack.enter_context(printer.showing())
            elif isinstance(event, ToolExecutionUpdate) and printer is not None:
                printer(event.progress)
            elif isinstance(event, ToolExecutionEnd):
                stack.close()
                printer = None
            elif isinstance(event, MessageEnd) and isinstance(event.message, ToolResultMessage):
                result = event.message
                i, step = steps[result.tool_call_id]
                res = ToolReply(result.tool_call_id, result.tool_name, result.result)
                console.print(result_panel(res))
                if step.check is not None:
                    ok, why = check_tests(res, step.check)
                    mark = "[green]✔[/green]" if ok else "[red]✘[/red]"
                    console.print(f"{mark} {escape(visible(why))}")
                    if not ok:
                        problems.append(f"step {i}: {why}")
                        break
                elif res.is_error:
                    problems.append(f"step {i} ({step.tool}) returned an error result")
                    break
    stack.close()
    if not problems and run.end_reason != "stop":
        problems.append(f"the agent loop ended early ({run.end_reason})")


def run_demo_cli(ns: argparse.Namespace) -> int:
    """``toolwire demo`` with parsed arguments (``--keep``, ``--fast``, ``--project``,
    ``--plan``, ``--tools``); returns the exit code."""
    console = Console(highlight=False)
    try:
        plan_path = ns.plan or find_example()
        plan = load_plan(plan_path, ns.project)
    except (OSError, ValueError) as exc:
        console.print(f"[red]toolwire demo:[/red] {escape(str(exc))}")
        return 2
    code: int = anyio.run(
        lambda: run_demo(
            plan, console=console, keep=ns.keep, fast=ns.fast, extra_tools=list(ns.tools)
        ),
        backend="asyncio",
    )
    return code
