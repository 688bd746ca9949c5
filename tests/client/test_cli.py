"""The ``toolwire`` command line: run in process (:func:`tests.cli_support.run_cli`), and as
the installed console script where the process matters (``serve``, imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from toolwire.client.cli import UsageError, parse_call_arguments

from tests.agent_support import require_approval
from tests.cli_support import TOOLWIRE, run_cli
from tests.hostproc import TOOLS_DIR

HOST_OPTS = [
    "--no-builtins",
    "--isolation",
    "none",  # what the CLI prints is under test, not the host's worker processes
    "--tools",
    str(TOOLS_DIR / "basic_tools.py"),
    str(TOOLS_DIR / "client_tools.py"),
]


def run(
    *args: str, timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout, cwd=cwd)


# --------------------------------------------------------------------------- arguments


def test_key_value_arguments_are_json_parsed_when_they_parse() -> None:
    got = parse_call_arguments(
        ["n=3", "flag=true", "ratio=0.5", "name=hello world", "tags=[1,2]", 'q="3"', "e="],
        None,
    )
    assert got == {
        "n": 3,
        "flag": True,
        "ratio": 0.5,
        "name": "hello world",
        "tags": [1, 2],
        "q": "3",
        "e": "",
    }


def test_json_objects_merge_and_pairs_win() -> None:
    got = parse_call_arguments(['{"a": 1, "b": 2}', "b=3"], '{"a": 0, "c": "x"}')
    assert got == {"a": 1, "b": 3, "c": "x"}


@pytest.mark.parametrize(
    ("items", "args_json"),
    [(["novalue"], None), (["=1"], None), (["{not json"], None), ([], "[1, 2]")],
)
def test_malformed_arguments_are_usage_errors(items: list[str], args_json: str | None) -> None:
    with pytest.raises(UsageError):
        parse_call_arguments(items, args_json)


# --------------------------------------------------------------------------- call


def test_call_prints_the_text_and_exits_0(tmp_path: Path) -> None:
    out = run("call", "echo", "text=hello there", *HOST_OPTS, "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello there\n"


def test_call_json_output_is_the_whole_result(tmp_path: Path) -> None:
    out = run("call", "detailed", "--json", *HOST_OPTS, "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["content"] == [{"type": "text", "text": "the text for the model"}]
    assert result["structuredContent"] == {"answer": 42}
    assert result["_meta"]["toolwire/details"] == {"lines": 3, "path": "a.txt"}


def test_call_summarises_details_on_stderr(tmp_path: Path) -> None:
    out = run("call", "detailed", *HOST_OPTS, "--root", str(tmp_path))
    assert out.returncode == 0
    assert out.stdout == "the text for the model\n"
    assert "details: lines=3, path=a.txt" in out.stderr


def test_call_args_json_and_positional_json(tmp_path: Path) -> None:
    a = run("call", "echo", "--args-json", '{"text": "from flag"}', *HOST_OPTS)
    b = run("call", "echo", '{"text": "positional"}', *HOST_OPTS)
    assert (a.returncode, a.stdout) == (0, "from flag\n")
    assert (b.returncode, b.stdout) == (0, "positional\n")


def test_error_results_exit_1(tmp_path: Path) -> None:
    unknown = run("call", "no_such_tool", *HOST_OPTS)
    assert unknown.returncode == 1
    assert "Unknown tool: no_such_tool" in unknown.stdout
    # A JSON array, which no coercion turns into the string the echo tool's schema wants ...
    invalid = run("call", "echo", '{"text": [1,2]}', *HOST_OPTS)
    assert invalid.returncode == 1
    assert "Invalid arguments" in invalid.stdout and "text" in invalid.stdout
    # stderr names the tool, not the JSON-RPC id the CLI chose (which means nothing here)
    assert "error result from echo" in invalid.stderr and "(call" not in invalid.stderr
    # ... while a k=v value for a string parameter is the raw text, quotes included.
    raw = run("call", "echo", "text=[1,2]", *HOST_OPTS)
    assert (raw.returncode, raw.stdout) == (0, "[1,2]\n")
    quoted = run("call", "echo", 'text="[1,2]"', *HOST_OPTS)
    assert (quoted.returncode, quoted.stdout) == (0, '"[1,2]"\n')
    as_json = run("call", "no_such_tool", "--json", *HOST_OPTS)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["isError"] is True


def test_progress_goes_to_stderr(tmp_path: Path) -> None:
    out = run("call", "prog", "n=3", *HOST_OPTS)
    assert out.returncode == 0
    assert out.stdout == "done\n"
    assert "3/3 step 3" in out.stderr


def test_the_tools_log_records_go_to_stderr_escaped(tmp_path: Path) -> None:
    out = run("call", "chatty", "message=saved \x1b[2Jthe file", *HOST_OPTS)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "logged\n"
    assert "log info chatty: saved \\x1b[2Jthe file" in out.stderr, out.stderr
    assert "\x1b[2J" not in out.stderr


@pytest.mark.parametrize("command", ["call", "list"])
def test_config_file_says_which_host(tmp_path: Path, command: str) -> None:
    # The tools and the root come from the file alone; a relative path is the caller's.
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "toolwire.toml").write_text(
        '[host]\nbuiltins = false\nisolation = "none"\n'
        f"tools = [{json.dumps(str(TOOLS_DIR / 'client_tools.py'))}]\n"
    )
    args = ["chatty", "message=hi"] if command == "call" else ["--json"]
    out = run(command, *args, "--config", "cfg/toolwire.toml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    if command == "call":
        assert out.stdout == "logged\n"
    else:
        names = {t["name"] for t in json.loads(out.stdout)["tools"]}
        assert "chatty" in names and "read" not in names, names


@pytest.mark.parametrize("command", ["call", "list", "agent"])
def test_a_missing_config_file_is_a_usage_error(tmp_path: Path, command: str) -> None:
    args = {"call": ["echo"], "list": [], "agent": ["hi", "--model", "m"]}[command]
    out = run(command, *args, "--config", "nope.toml", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"toolwire {command}: --config: no such file: nope.toml\n"


def test_timeout_exits_3(tmp_path: Path) -> None:
    out = run("call", "nap", "seconds=30", "--timeout", "0.5", *HOST_OPTS, timeout=30)
    assert out.returncode == 3
    assert "timed out after 0.5 seconds" in out.stderr


def test_usage_errors_exit_2() -> None:
    assert run("call", "echo", "novalue", *HOST_OPTS).returncode == 2
    assert run("call").returncode == 2
    assert run().returncode == 2


def test_a_bad_root_is_a_usage_error(tmp_path: Path) -> None:
    out = run("call", "echo", "text=x", "--root", str(tmp_path / "missing"))
    assert out.returncode == 2
    assert "is not a directory" in out.stderr


def test_host_failure_exits_3(tmp_path: Path) -> None:
    # A server that ends before it answers (not a usage error of toolwire's host).
    out = run("call", "echo", "text=x", "--server", f"{sys.executable} -c pass")
    assert out.returncode == 3
    assert "closed the connection" in out.stderr


def test_call_help_documents_the_json_switches() -> None:
    out = run("call", "--help")
    assert out.returncode == 0
    assert "--args-json" in out.stdout and "--json" in out.stdout
    assert "exit codes" in out.stdout


# --------------------------------------------------------------------------- list, serve


def test_list_json_and_table(tmp_path: Path) -> None:
    as_json = run("list", "--json", *HOST_OPTS)
    assert as_json.returncode == 0, as_json.stderr
    names = [t["name"] for t in json.loads(as_json.stdout)["tools"]]
    assert names[:3] == ["echo", "slow", "prog"]
    table = run("list", *HOST_OPTS)
    assert table.returncode == 0
    assert "echo" in table.stdout and "Echo text back." in table.stdout


def test_list_another_mcp_server_with_server_option(tmp_path: Path) -> None:
    cmd = f"{sys.executable} -m toolwire.host --no-builtins --tools {TOOLS_DIR / 'basic_tools.py'}"
    out = run("list", "--json", "--server", cmd)
    assert out.returncode == 0, out.stderr
    assert [t["name"] for t in json.loads(out.stdout)["tools"]] == ["echo", "slow", "prog"]


def test_serve_forwards_to_the_host(tmp_path: Path) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    out = subprocess.run(
        [TOOLWIRE, "serve", "--no-builtins", "--root", str(tmp_path)],
        input=json.dumps(init) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout.splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == "toolwire"
    helped = run("serve", "--help")
    assert helped.returncode == 0
    assert "toolwire serve" in helped.stdout and "--framing" in helped.stdout


def test_the_cli_does_not_import_the_host_until_serve() -> None:
    code = (
        "import sys, toolwire.client.cli as cli; "
        "assert cli.build_parser().parse_args(['list']).command == 'list'; "
        "print('toolwire.host' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- approval


AGENT_OPTS = ["--no-builtins", "--tools", str(TOOLS_DIR / "agent_tools.py")]


def run_with_input(*args: str, stdin: str | None) -> subprocess.CompletedProcess[str]:
    # A wide console: the prompt's panel shows the whole call (a temporary directory's
    # path can be longer than the 80 columns a pipe gets by default).
    return run_cli(*args, stdin=stdin, env={**os.environ, "COLUMNS": "400"})


@pytest.mark.parametrize(
    ("stdin", "extra", "allowed"),
    [
        ("y\n", [], True),
        ("yes\n", [], True),
        ("n\n", [], False),
        ("\n", [], False),
        (None, [], False),
        (None, ["--yes"], True),
    ],
    ids=["y", "yes", "n", "empty", "closed-stdin", "--yes"],
)
def test_call_asks_on_the_terminal_when_the_host_wants_approval(
    tmp_path: Path, stdin: str | None, extra: list[str], allowed: bool
) -> None:
    require_approval()
    marker = tmp_path / "m.txt"
    # The marker lies in the root: the tool's sandboxed worker can write nowhere else.
    out = run_with_input(
        "call",
        "mark",
        f"path={marker}",
        "--approve",
        "mark",
        "--root",
        str(tmp_path),
        *extra,
        *AGENT_OPTS,
        stdin=stdin,
    )
    assert marker.exists() is allowed
    if allowed:
        assert (out.returncode, out.stdout) == (0, f"marked {marker}\n")
    else:
        assert out.returncode == 1
        assert "denied" in out.stdout.lower()
    if "--yes" in extra:
        assert "Allow this call?" not in out.stderr
    else:
        assert "Allow this call? [y/N]" in out.stderr
        assert "mark" in out.stderr and str(marker) in out.stderr


def test_call_without_approve_never_asks(tmp_path: Path) -> None:
    out = run_with_input("call", "say", "text=free", *AGENT_OPTS, stdin=None)
    assert (out.returncode, out.stdout) == (0, "free\n")
    assert "Allow this call?" not in out.stderr
