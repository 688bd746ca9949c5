"""The ``toolwire`` command line run in the test's own process.

:func:`run_cli` runs :func:`toolwire.cli.main` (what the console script runs) with the
words, working directory, environment and standard input a subprocess would get, and
returns a :class:`subprocess.CompletedProcess` with the exit code and what the command
wrote to stdout and stderr, so a test written against ``subprocess.run([toolwire,
...])`` keeps its assertions. The host the command starts is still a real process
(``spawn_host`` starts ``toolwire serve``); only the client side's own interpreter start
(about a third of a second of CPU per command on this machine) is saved.

What stays a subprocess: ``toolwire serve`` (it cleans ``sys.path`` and exits the
process) and ``-v`` (the host's stderr then goes straight to the command's file
descriptor 2): :func:`run_cli` hands both to the console script; and whatever a test asks of
the process itself (a terminal, a closed stdout, signals, what a fresh interpreter
imports): those tests keep calling the console script (:data:`TOOLWIRE`).

One command at a time per test process: stdout, stderr, stdin, the working directory
and the environment are the process's own, swapped for the command's duration.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["TOOLWIRE", "run_cli"]

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")
"""The installed console script, for the tests that need the command as a process."""

_ONE_AT_A_TIME = threading.Lock()


class _Text(io.StringIO):
    """A text stream that, like a pipe, is no terminal and has an encoding."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def _as_the_command(
    cwd: Path | str | None, env: Mapping[str, str] | None, stdin: str | None
) -> Iterator[tuple[_Text, _Text]]:
    """The process's stdio, working directory and environment as a subprocess of the
    test would have them, restored on leaving."""
    out, err = _Text(), _Text()
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved = sys.stdin, sys.stdout, sys.stderr
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = _Text(stdin or ""), out, err
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_cli(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``toolwire ARGS...`` and return its exit code, stdout and stderr.

    Args:
        args: the words after ``toolwire``.
        cwd: the command's working directory (default: the test's).
        env: the command's whole environment (default: the test's).
        stdin: the text on its standard input (default: none, an empty input).
        timeout: seconds the command may take.

    Returns:
        ``CompletedProcess(args, returncode, stdout, stderr)``; an exception that
        escapes :func:`toolwire.cli.main` is written to stderr as a traceback with exit
        code 1, as the interpreter would.

    Raises:
        subprocess.TimeoutExpired: the command did not end within ``timeout`` seconds.
    """
    words = ["toolwire", *args]
    if args[:1] == ("serve",) or "-v" in args or "--verbose" in args:
        return subprocess.run(
            [TOOLWIRE, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            env=None if env is None else dict(env),
        )
    from toolwire.cli import main

    code: list[int] = []

    def command() -> None:
        try:
            code.append(main(list(args)))
        except SystemExit as exc:  # argparse's usage errors and --help
            code.append(exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code.append(1)

    with _ONE_AT_A_TIME, _as_the_command(cwd, env, stdin) as (out, err):
        runner = threading.Thread(target=command, name="toolwire-cli", daemon=True)
        runner.start()
        runner.join(timeout)
        if runner.is_alive():
            raise subprocess.TimeoutExpired(words, timeout, out.getvalue(), err.getvalue())
    return subprocess.CompletedProcess(words, code[0], out.getvalue(), err.getvalue())
