"""A newcomer's mistakes on the command line and in ``toolwire.toml`` are refused clearly.

Each test runs the installed ``toolwire`` console script (a real host process where one
is spawned): arguments after options, ``--tools`` values that are not tool files, misspelt
``--approve`` names, config files of the wrong shape, start-up errors, and the commands a
newcomer reaches for (``--version``, ``list NAME``, ``agent`` without a key).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from toolwire.client.cli import build_parser, split_call_argv
from toolwire.host.serve.config import ConfigError, key_line, load_config_file

from tests.cli_support import TOOLWIRE, run_cli

TOOLS = '''"""Tools for the CLI tests."""

from pydantic import BaseModel

from toolwire.host import tool


@tool
def shout(text: str) -> str:
    """Shout the text back.

    A second paragraph, which the table leaves out.
    """
    return text.upper()


class Stats(BaseModel):
    chars: int


@tool
def stats(text: str) -> Stats:
    """Character statistics."""
    return Stats(chars=len(text))


@tool
def mark(path: str) -> str:
    """Write a marker file (a destructive tool)."""
    with open(path, "w") as f:
        f.write("ran")
    return "marked"
'''


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        *args,
        cwd=cwd,
        stdin=stdin,
        timeout=120,
        env={**os.environ, "COLUMNS": "400", **(env or {})},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shout.py").write_text(TOOLS)
    return tmp_path


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    """The stderr of a refused command: exactly one line, no traceback."""
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


# --------------------------------------------------------------------------- k=v anywhere


def test_the_help_example_k_v_after_an_option_is_an_argument(project: Path) -> None:
    # The call --help example: `toolwire call bash --args-json '{...}' timeout=5`.
    out = run(
        "call", "shout", "--args-json", '{"text": "from json"}', "text=hi", "--no-builtins",
        "--tools", "shout.py", cwd=project,
    )  # fmt: skip
    assert (out.returncode, out.stdout) == (0, "HI\n"), out.stderr


def test_k_v_after_tools_is_an_argument_not_a_module(project: Path) -> None:
    out = run("call", "shout", "--no-builtins", "--tools", "shout.py", "text=hello", cwd=project)
    assert (out.returncode, out.stdout) == (0, "HELLO\n"), out.stderr
    assert "Traceback" not in out.stderr
    # ... and a JSON object there too; an option's own value stays the option's.
    out = run(
        "call", "shout", "--tools", "shout.py", '{"text": "x=y"}', "--no-builtins", cwd=project
    )
    assert (out.returncode, out.stdout) == (0, "X=Y\n"), out.stderr


def test_a_misspelt_argument_name_is_refused_not_dropped(project: Path) -> None:
    # The host drops fields its schema does not declare (protocol.md §10.1): from the
    # command line that would make `txt=hi` vanish unseen, so the CLI refuses it first.
    out = run("call", "shout", "txt=hi", "--no-builtins", "--tools", "shout.py", cwd=project)
    line = one_line(out)
    assert out.returncode == 2, out.stderr
    assert "'txt'" in line and "its arguments: text" in line, line
    out = run(
        "call", "shout", '{"text": "a", "loud": 1}', "--no-builtins", "--tools", "shout.py",
        cwd=project,
    )  # fmt: skip
    assert out.returncode == 2 and "'loud'" in one_line(out), out.stderr


def test_an_abbreviated_option_is_refused(project: Path) -> None:
    # `--tool` for `--tools` (or `--roo` for `--root`) is a usage error, not a guess.
    out = run("call", "shout", "text=hi", "--no-builtins", "--tool", "shout.py", cwd=project)
    assert out.returncode == 2, out.stderr
    assert "--tool" in out.stderr and "HI" not in out.stdout, out.stderr
    out = run("serve", "--no-builtin", cwd=project, stdin="")
    assert out.returncode == 2 and "--no-builtin" in out.stderr, out.stderr


def test_a_tools_list_before_the_name_gives_the_name_back(project: Path) -> None:
    # `call --tools shout.py shout text=hi`: the --tools list would take `shout` as a
    # second module; the last word that is no file is the tool's name.
    out = run("call", "--no-builtins", "--tools", "shout.py", "shout", "text=hi", cwd=project)
    assert (out.returncode, out.stdout) == (0, "HI\n"), out.stderr
    # A name that is a file stays a --tools value (the call then lacks a name: usage).
    out = run("call", "--no-builtins", "--tools", "shout.py", "shout.py", cwd=project)
    assert out.returncode == 2, out.stderr


def test_split_call_argv_keeps_option_values() -> None:
    call = build_parser()._subparsers._group_actions[0].choices["call"]  # type: ignore[union-attr]
    rest, items = split_call_argv(
        call,
        ["read", "--root", "a=b", "--tools", "t.py", "m", "n=1", "--args-json", "{}", "x=2",
         "--timeout=5", "--timeout", "3", "{\"y\": 1}"],
    )  # fmt: skip
    assert items == ["n=1", "x=2", '{"y": 1}']
    assert rest == ["read", "--root", "a=b", "--tools", "t.py", "m", "--args-json", "{}",
                    "--timeout=5", "--timeout", "3"]  # fmt: skip


@pytest.mark.parametrize("command", ["list", "agent"])
def test_a_tools_value_that_looks_like_k_v_is_a_usage_error(project: Path, command: str) -> None:
    extra = ["hi", "--model", "m"] if command == "agent" else []
    out = run(command, *extra, "--tools", "text=hello", cwd=project, env={"OPENAI_API_KEY": "k"})
    assert out.returncode == 2
    line = one_line(out)
    assert line.startswith(f"toolwire {command}: --tools text=hello: ") and "k=v" in line


# --------------------------------------------------------------------------- start-up errors


@pytest.mark.parametrize("command", ["serve", "list", "call"])
def test_a_missing_tools_file_is_one_line_and_exit_2(project: Path, command: str) -> None:
    extra = ["shout", "text=x"] if command == "call" else []
    out = run(command, *extra, "--tools", "nothere.py", cwd=project, stdin="")
    assert out.returncode == 2, out.stderr
    assert one_line(out) == f"toolwire {command}: --tools nothere.py: no such file"


@pytest.mark.parametrize("command", ["serve", "list", "call"])
def test_a_missing_tools_module_is_one_line_and_exit_2(project: Path, command: str) -> None:
    # Two workers start at once; the second one's end is not a second warning.
    extra = ["shout", "text=x"] if command == "call" else []
    out = run(command, *extra, "--tools", "no_such_mod_2971", cwd=project, stdin="")
    assert out.returncode == 2, out.stderr
    lines = [x for x in out.stderr.splitlines() if "commands run sandboxed" not in x]
    assert lines == [
        f"toolwire {command}: --tools no_such_mod_2971: No module named 'no_such_mod_2971'"
    ], out.stderr


@pytest.mark.parametrize("command", ["serve", "list", "call"])
def test_a_syntax_error_in_a_tools_file_names_file_and_line(project: Path, command: str) -> None:
    (project / "bad.py").write_text('"""A module."""\n\n\ndef broken(:\n    pass\n')
    extra = ["shout", "text=x"] if command == "call" else []
    out = run(command, *extra, "--no-builtins", "--tools", "bad.py", cwd=project, stdin="")
    assert out.returncode == 2, out.stderr
    line = one_line(out)
    assert line.startswith(f"toolwire {command}: --tools bad.py:4:"), line
    assert line.endswith(": SyntaxError: invalid syntax"), line


@pytest.mark.parametrize("command", ["serve", "list", "call"])
def test_a_bad_root_is_one_line_and_exit_2(project: Path, command: str) -> None:
    extra = ["shout", "text=x"] if command == "call" else []
    out = run(command, *extra, "--root", str(project / "missing"), cwd=project, stdin="")
    assert out.returncode == 2, out.stderr
    assert "is not a directory" in one_line(out)


def test_a_host_that_fails_otherwise_is_exit_3(project: Path) -> None:
    server = f"{sys.executable} -c 'import sys; sys.exit(1)'"
    out = run("list", "--server", server, cwd=project)
    assert out.returncode == 3, out.stderr


# --------------------------------------------------------------------------- --approve


@pytest.mark.parametrize("name", ["destructiv", "mrak"])
def test_an_unknown_approve_name_refuses_to_start(project: Path, name: str) -> None:
    marker = project / "marker.txt"
    out = run(
        "call", "mark", f"path={marker}", "--approve", name, "--no-builtins",
        "--tools", "shout.py", "--root", str(project), cwd=project,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert not marker.exists(), "the call ran although its approval was misspelt"
    line = one_line(out)
    assert f"--approve {name}: no such tool or class" in line
    assert "'destructive'" in line and "mark, shout, stats" in line


def test_serve_refuses_an_unknown_approve_name(project: Path) -> None:
    out = run("serve", "--no-builtins", "--tools", "shout.py", "--approve", "shout,shuot",
              cwd=project, stdin="")  # fmt: skip
    assert out.returncode == 2
    assert "--approve shuot: no such tool or class" in out.stderr.splitlines()[-1]


def test_known_approve_names_still_ask(project: Path) -> None:
    marker = project / "marker.txt"
    out = run(
        "call", "mark", f"path={marker}", "--approve", "destructive", "--no-builtins",
        "--tools", "shout.py", "--root", str(project), cwd=project, stdin="n\n",
    )  # fmt: skip
    assert out.returncode == 1 and not marker.exists()
    assert "Allow this call?" in out.stderr


# --------------------------------------------------------------------------- toolwire.toml


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (
            '[host]\ntools = "shout.py"\n',
            2,
            "[host] tools must be an array of strings, not a string",
        ),
        ('[host]\n\nbuiltins = "false"\n', 3, "[host] builtins must be a boolean"),
        (
            "# c\n[host]\nbultins = false\n",
            3,
            "[host] unknown key 'bultins'; the keys of [host] are",
        ),
        ("[hots]\nbuiltins = false\n", 1, "unknown table [hots]"),
        ('[sandbox]\nallow_network = "yes"\n', 2, "[sandbox] allow_network must be a boolean"),
        (
            "[sandbox.limits]\ncpu_seconds = 1.5\n",
            2,
            "[sandbox] limits.cpu_seconds must be an integer",
        ),
        ("[host]\nworkers = 0\n", 2, "[host] workers: input should be greater than or equal to 1"),
        ("[approval]\npolicy = [1]\n", 2, "[approval] policy: must be an array of strings"),
        ('host.timeout = "5"\n', 1, "[host] timeout must be a number, not a string ('5')"),
        (
            '[workers]\nstart = "forks"\n',
            2,
            "[workers] start must be one of 'spawn', 'fork', not a string ('forks')",
        ),
        (
            "[host]\nshutdown_grace = -1\n",
            2,
            "[host] shutdown_grace: input should be greater than or equal to 0",
        ),
        (
            "[workers]\nreload_timeout = 0\n",
            2,
            "[workers] reload_timeout: input should be greater than 0",
        ),
    ],
)
def test_config_file_is_checked_against_its_schema(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    path = tmp_path / "toolwire.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert str(caught.value).startswith(f"{path}:{line}: {says}"), str(caught.value)


def test_config_errors_are_one_line_each_and_exit_2(project: Path) -> None:
    (project / "toolwire.toml").write_text(
        '[host]\ntools = "shout.py"\nbuiltins = "false"\nbultins = false\n'
    )
    for command in ("serve", "list"):
        out = run(command, "--config", "toolwire.toml", cwd=project, stdin="")
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and "usage:" not in out.stderr
        # The client hands the host the file's absolute path.
        path = "toolwire.toml" if command == "serve" else str(project / "toolwire.toml")
        assert out.stderr.splitlines() == [
            f"toolwire {command}: {path}:2: [host] tools must be an array of "
            "strings, not a string ('shout.py')",
            f"toolwire {command}: {path}:3: [host] builtins must be a boolean "
            "(true or false, unquoted), not a string ('false')",
            f"toolwire {command}: {path}:4: [host] unknown key 'bultins'; the keys "
            "of [host] are root, tools, builtins, entry_points, framing, log_level, timeout, "
            "max_message_size, max_threads, page_size, isolation, workers, reload, "
            "shutdown_grace",
        ]


def test_a_refused_file_setting_names_the_file_and_line_not_a_flag(project: Path) -> None:
    # The value came from toolwire.toml, so the refusal points there (not at --token-file,
    # which the user never typed); the same value given as a flag still names the flag.
    (project / "tok").write_text("t0ken\n")
    (project / "tok").chmod(0o600)
    (project / "toolwire.toml").write_text(
        '[host]\nroot = "."\n\n[http]\nlisten = "127.0.0.1:0"\ntoken_file = "tok"\n'
    )
    out = run("serve", "--config", "toolwire.toml", cwd=project, stdin="")
    line = one_line(out)
    assert out.returncode == 2, out.stderr
    assert line.startswith("toolwire serve: toolwire.toml:6: [http] token_file tok lies inside"), (
        line
    )
    out = run("serve", "--root", ".", "--http", "127.0.0.1:0", "--token-file", "tok",
              cwd=project, stdin="")  # fmt: skip
    assert out.returncode == 2 and "--token-file tok lies inside" in one_line(out), out.stderr


def test_a_valid_config_file_still_configures_the_host(project: Path) -> None:
    (project / "toolwire.toml").write_text(
        '[host]\ntools = ["shout.py"]\nbuiltins = false\n[approval]\npolicy = "destructive"\n'
    )
    out = run("list", "--json", "--config", "toolwire.toml", cwd=project)
    assert out.returncode == 0, out.stderr
    assert [t["name"] for t in json.loads(out.stdout)["tools"]] == ["shout", "stats", "mark"]


def test_key_line_finds_tables_dotted_and_quoted_keys() -> None:
    text = '[host]\n"tools" = 1\n\n[sandbox]\nlimits.cpu_seconds = 2\n[sandbox.x]\ny = 3\n'
    assert key_line(text, ["host", "tools"]) == 2
    assert key_line(text, ["sandbox", "limits", "cpu_seconds"]) == 5
    assert key_line(text, ["sandbox", "x", "y"]) == 7
    assert key_line(text, ["sandbox", "nope"]) == 4
    assert key_line(text, ["approval", "policy"]) is None


# --------------------------------------------------------------------------- the commands


def test_version_comes_from_the_distribution(tmp_path: Path) -> None:
    out = run("--version", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (0, f"toolwire {version('toolwire')}\n")


def test_list_name_shows_the_whole_definition(project: Path) -> None:
    opts = ["--no-builtins", "--tools", "shout.py"]
    shown = run("list", "shout", *opts, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("shout\n")
    assert "A second paragraph, which the table leaves out." in shown.stdout
    assert '"required": [\n    "text"\n  ]' in shown.stdout and "output schema" not in shown.stdout
    stats = run("list", "stats", *opts, cwd=project)
    assert "input schema:" in stats.stdout and "output schema:" in stats.stdout
    assert '"chars"' in stats.stdout.split("output schema:")[1]
    raw = run("list", "stats", "--json", *opts, cwd=project)
    every = run("list", "--json", *opts, cwd=project)
    expected = next(t for t in json.loads(every.stdout)["tools"] if t["name"] == "stats")
    assert json.loads(raw.stdout) == expected and "outputSchema" in expected


@pytest.mark.parametrize("command", ["list", "call"])
def test_an_unknown_tool_lists_the_tools(project: Path, command: str) -> None:
    out = run(command, "shuot", "--no-builtins", "--tools", "shout.py", cwd=project)
    assert out.returncode == 1, out.stderr
    assert f"toolwire {command}: unknown tool 'shuot'; the tools are: shout, stats, mark" in (
        out.stderr.splitlines()
    )


def test_agent_without_a_key_stops_before_any_host_or_request(tmp_path: Path) -> None:
    marker = tmp_path / "host-started"
    server = f"{sys.executable} -c 'open({str(marker)!r}, \"w\")'"
    drop = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    out = subprocess.run(
        [TOOLWIRE, "agent", "hi", "--model", "m", "--server", server],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert not marker.exists(), "the host was started before the key was checked"
    line = one_line(out)
    assert line.startswith("toolwire agent: no API key: $OPENAI_API_KEY is not set"), line
    assert "--api-key-env" in line and "--base-url" in line


def test_list_and_call_do_not_show_the_host_banner(project: Path) -> None:
    # With -v the host's stderr is passed through as it comes: its start banner says
    # which bubblewrap runs the commands.
    loud = run("list", "-v", cwd=project)
    assert loud.returncode == 0, loud.stderr
    if "toolwire serve: commands run sandboxed" not in loud.stderr:
        pytest.skip("no sandbox here, so the host prints no start banner to hide")
    for args in (["list"], ["call", "ls", "path=."]):
        out = run(*args, cwd=project)
        assert out.returncode == 0, out.stderr
        assert "toolwire serve:" not in out.stderr, out.stderr


def test_verbose_may_come_before_the_subcommand(project: Path) -> None:
    # `toolwire -v list` as `toolwire list -v` (users put it first as often as after).
    loud = run("-v", "list", cwd=project)
    assert loud.returncode == 0, loud.stderr
    if "toolwire serve: commands run sandboxed" not in loud.stderr:
        pytest.skip("no sandbox here, so the host prints no start banner to show")
    assert "ls" in loud.stdout


def test_the_hosts_warnings_still_reach_the_user(project: Path) -> None:
    # Only the start banner is held back: what the host warns about is shown (after the
    # command, since its stderr is captured).
    (project / "loud.py").write_text(
        "import logging\n\nfrom toolwire.host import tool\n\n"
        "logging.getLogger('toolwire.loud').warning('careful: 4711')\n\n\n"
        "@tool\ndef quiet() -> str:\n    'Say nothing.'\n    return ''\n"
    )
    opts = ["--no-builtins", "--isolation", "none", "--tools", "loud.py"]
    out = run("list", "--json", *opts, cwd=project)
    assert out.returncode == 0, out.stderr
    assert "WARNING toolwire.loud: careful: 4711" in out.stderr, out.stderr
    assert "toolwire serve:" not in out.stderr


# --------------------------------------------------------------------------- --url


def test_a_url_that_is_not_http_is_a_usage_error(tmp_path: Path) -> None:
    for bad in ("notaurl", "ftp://127.0.0.1/mcp", "http:///mcp"):
        out = run("list", "--url", bad, cwd=tmp_path)
        assert out.returncode == 2, (bad, out.stderr)
        assert "is not an http:// or https:// URL with a host" in out.stderr, out.stderr


def test_an_unreachable_url_says_the_http_request_failed(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        out = run("list", "--url", f"http://127.0.0.1:{port}/mcp", cwd=tmp_path)
    assert out.returncode == 3, out.stderr
    line = one_line(out)
    assert f"HTTP request to http://127.0.0.1:{port}/mcp failed" in line, line
