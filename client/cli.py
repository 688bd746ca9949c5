"""The ``toolwire`` command line: serve, list, call, agent, demo.

``toolwire serve`` runs the host on stdio; the ``toolwire`` command
(:mod:`toolwire.cli`) starts it without loading this module, which never imports the
host (it is listed here for ``--help``). ``list`` and ``call`` spawn a
host (or any MCP stdio server given with ``--server``), talk to it through
:class:`~toolwire.client.Client` and end it. ``agent`` runs the agent loop with an
OpenAI-compatible model endpoint against a spawned host, once for a prompt given on the
command line or in an interactive session. ``demo`` runs the recorded coding session
of :mod:`toolwire.client.demo` through the agent loop with a scripted model.

``call`` and ``agent`` take ``--approve NAMES|destructive|all`` (passed on to the
spawned host: those calls then need approval; a name the host does not serve stops it
at start) and ask on the terminal before each such call; ``--yes`` allows them all
without asking. ``list NAME`` shows one tool's whole definition. ``call`` takes every
``k=v`` word and JSON object as an argument wherever it stands
(:func:`split_call_argv`). The spawned host's stderr is captured (its start banner
is not shown; its other lines are, after the command) unless ``-v``; when the host
refuses its options, its reason is printed as this command's usage error (exit 2).

Exit codes of ``call``: 0 for a result, 1 for an error result (``isError``, an
unknown tool, invalid arguments), 2 for a usage error, 3 when the host could not be
started or did not answer (including ``--timeout``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolwire.errors import JsonRpcError
from toolwire.jsonschema_facts import RefError, enum_types, is_type, json_type, resolve_ref

from .hostargs import HostStartError, add_host_options, spawn_host

__all__ = [
    "accepted_types",
    "build_parser",
    "convert_value",
    "main",
    "parse_call_arguments",
    "split_call_arguments",
    "split_call_argv",
]

EXIT_OK = 0
EXIT_ERROR_RESULT = 1
EXIT_USAGE = 2
EXIT_HOST_FAILED = 3

CALL_EPILOG = """\
arguments:
  Give the tool's arguments as k=v pairs, as one JSON object, or both (pairs win):
    toolwire call read path=app.py offset=10
    toolwire call grep '{"pattern": "TODO", "ignoreCase": true}'
    toolwire call bash --args-json '{"command": "ls"}' timeout=5
    toolwire call shout --tools shout.py text=hello
  Every k=v or {...} word is an argument, before or after options (also after
  --tools, whose values are files or modules), unless it is an option's own value
  (--args-json '{...}', --root a=b). 'toolwire list NAME' shows a tool's schema.
  A k=v value follows the tool's input schema. For a parameter that takes a string
  (also in a union with other types) the value is the raw text: content=1.10 writes
  "1.10", content=null writes "null". For one that takes only numbers, integers,
  booleans, null, arrays or objects the value must be JSON of such a type (n=3,
  flag=true, tags='["a","b"]'), or it is a usage error (exit 2). For a parameter the
  schema does not describe, JSON when the text parses, else the text. NaN, Infinity
  and overflowing numbers such as 1e999 are never accepted. To give any other JSON
  value (null for an optional string, say) use the JSON object form.

output:
  The result's text goes to stdout; progress and a summary of 'details' go to stderr.
  Control characters in it (terminal escape sequences, carriage returns, bidi
  overrides) are shown as escapes such as \\x1b, never sent to the terminal raw.
  --json prints the whole result (an MCP CallToolResult object) to stdout instead.
  (--json is the output switch; the arguments' JSON goes in --args-json or positionally.)

exit codes:
  0 result, 1 error result (isError, unknown tool, invalid arguments),
  2 usage error (also the host refusing its options: a missing --tools file, a
  bad --root or --config, an unknown --approve name), 3 host failed to start or
  did not answer (--timeout expired)
"""

LIST_EPILOG = """\
With a NAME, the tool's whole definition: its description, its input schema and its
output schema if it has one (--json: the definition as the host sent it). An unknown
NAME exits 1 and lists the tools there are.
"""


class UsageError(Exception):
    """A malformed command line argument (exit code 2)."""


# --------------------------------------------------------------------------- parsing


class _NotJson(ValueError):
    """A literal Python's json module accepts but JSON has not: NaN, Infinity, or a
    number that overflows a double (``1e999`` would become infinity)."""


def _strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and overflowing numbers (RFC 8259 §6
    has no such values) with :class:`_NotJson`; other malformed text: ValueError."""

    def constant(name: str) -> Any:
        raise _NotJson(f"{name} is not a JSON value (JSON has no NaN or Infinity)")

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise _NotJson(f"{literal} overflows a JSON number (a double)")
        return value

    return json.loads(text, parse_constant=constant, parse_float=number)


def accepted_types(schema: Any, root: Any = None, _depth: int = 0) -> frozenset[str] | None:
    """The JSON types a parameter's schema accepts, or None when it does not say.

    Read from ``type`` (a name or a list), else ``const``/``enum`` (the types of their
    values), else the union of ``anyOf``/``oneOf`` branches (None when one branch is
    unconstrained), else the intersection of the ``allOf`` branches that say; a local
    ``$ref`` (any JSON Pointer, :func:`toolwire.jsonschema_facts.resolve_ref`) is followed
    within ``root``; the types of ``enum`` values are :func:`~toolwire.jsonschema_facts.enum_types`.
    """
    if not isinstance(schema, dict) or _depth > 20:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and isinstance(root, dict):
        try:
            target = resolve_ref(root, ref)
        except RefError:
            return None
        if isinstance(target, dict):
            return accepted_types(target, root, _depth + 1)
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset([kind])
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    implied = enum_types(schema)
    if implied is not None:
        return frozenset(implied)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            union: set[str] = set()
            for branch in branches:
                types = accepted_types(branch, root, _depth + 1)
                if types is None:
                    return None
                union |= types
            return frozenset(union)
    branches = schema.get("allOf")
    if isinstance(branches, list):
        found = [accepted_types(b, root, _depth + 1) for b in branches]
        said = [t for t in found if t is not None]
        if said:
            return frozenset.intersection(*said)
    return None


def _matches(value: Any, types: frozenset[str]) -> bool:
    return any(is_type(value, name) for name in types)


def convert_value(key: str, text: str, types: frozenset[str] | None) -> Any:
    """The value of ``key=text`` for a parameter accepting ``types`` (see the epilog):

    * the schema accepts a string (alone or in a union): the raw text, as a string;
    * it accepts only other types (number, integer, boolean, null, array, object):
      the text must be JSON of one of them;
    * it does not say (no schema, an unknown parameter, ``{}``): JSON when the text
      parses as JSON, else the raw text.

    NaN, Infinity and overflowing numbers are never accepted as JSON.

    Raises:
        UsageError: the text is not JSON where JSON is required, is of another type,
            or holds a non-JSON literal.
    """
    if types is not None and "string" in types:
        return text
    try:
        value = _strict_json(text)
    except _NotJson as exc:
        raise UsageError(f"{key}={text}: {exc}") from None
    except ValueError:
        if types is None:
            return text
        raise UsageError(
            f"{key}={text}: the parameter takes {_describe(types)}, written as JSON "
            '(e.g. 3, 2.5, true, null, [1,2], {"a":1})'
        ) from None
    if types is not None and not _matches(value, types):
        raise UsageError(
            f"{key}={text}: the parameter takes {_describe(types)}, not {json_type(value)}"
        )
    return value


def _describe(types: frozenset[str]) -> str:
    names = sorted(types)
    return names[0] if len(names) == 1 else "one of " + ", ".join(names)


def split_call_arguments(
    items: Sequence[str], args_json: str | None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Check the shape of a call's arguments before the host starts.

    Returns:
        ``(objects, pairs)``: the JSON objects (``args_json`` first, then positional
        ones) merged, and the ``k=v`` pairs as ``(key, text)`` in order.

    Raises:
        UsageError: an item is neither ``k=v`` nor a JSON object, a JSON object is not
            valid JSON (NaN and Infinity included) or not an object.
    """
    out: dict[str, Any] = {}
    objects = ([args_json] if args_json is not None else []) + [
        i for i in items if i.lstrip().startswith("{")
    ]
    for raw in objects:
        try:
            value = _strict_json(raw)
        except ValueError as exc:
            raise UsageError(f"the arguments are not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise UsageError("the arguments' JSON must be an object {...}")
        out.update(value)
    pairs: list[tuple[str, str]] = []
    for item in items:
        if item.lstrip().startswith("{"):
            continue
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value or a JSON object, got {item!r}")
        pairs.append((key, text))
    return out, pairs


def parse_call_arguments(
    items: Sequence[str], args_json: str | None, schema: Any = None
) -> dict[str, Any]:
    """Build a call's arguments from ``k=v`` items and JSON objects.

    Args:
        items: ``k=v`` strings, or JSON objects (an item starting with ``{``).
        args_json: a JSON object given with ``--args-json``, or None.
        schema: the tool's ``inputSchema``; each ``k=v`` value is read as its
            parameter's schema says (:func:`convert_value`). None: no schema known.

    Returns:
        The merged arguments: ``args_json`` first, then positional objects, then
        ``k=v`` pairs (later wins).

    Raises:
        UsageError: malformed items, or a value its parameter cannot take.
    """
    out, pairs = split_call_arguments(items, args_json)
    props = schema.get("properties") if isinstance(schema, dict) else None
    for key, text in pairs:
        prop = props.get(key) if isinstance(props, dict) else None
        out[key] = convert_value(key, text, accepted_types(prop, schema))
    undeclared = [key for key in out if key not in declared_fields(schema)]
    if undeclared and declared_fields(schema):
        names = ", ".join(sorted(declared_fields(schema)))
        raise UsageError(
            f"the tool takes no argument {', '.join(repr(k) for k in undeclared)}"
            f" (its arguments: {names}); the host would drop it unseen"
        )
    return out


_OPEN_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def declared_fields(schema: Any) -> frozenset[str]:
    """The argument names a tool's input schema declares when it admits no others, else
    an empty set (nothing to check).

    The host drops top-level fields the schema does not declare (protocol.md §10.1), so a
    misspelt ``k=v`` on the command line would vanish without a word. Checked only for a
    plain root: ``properties`` and none of ``additionalProperties``,
    ``patternProperties``, ``unevaluatedProperties`` (other than ``false``), ``$ref``,
    ``allOf``, ``anyOf``, ``oneOf``; for anything else the host decides alone.
    """
    if not isinstance(schema, dict):
        return frozenset()
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return frozenset()
    if any(k in schema for k in ("$ref", "allOf", "anyOf", "oneOf")):
        return frozenset()
    if any(k in schema and schema[k] is not False for k in _OPEN_KEYWORDS):
        return frozenset()
    return frozenset(props)


def _is_call_item(word: str) -> bool:
    """A word of ``toolwire call``'s command line that is a tool argument: ``k=v`` or a
    JSON object (a tool name holds neither ``=`` nor ``{``)."""
    return not word.startswith("-") and ("=" in word or word.lstrip().startswith("{"))


def _option_action(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    """The option ``word`` (``--tools``, ``--root=x``) names in ``parser``, or None (not
    an option of it: the parsers take no abbreviations)."""
    return parser._option_string_actions.get(word.partition("=")[0])


def split_call_argv(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Separate ``toolwire call``'s tool arguments from the rest of its command line.

    Every ``k=v`` word and JSON object is a tool argument wherever it stands (before or
    after options, after ``--tools`` values too), except an option's own value
    (``--args-json '{...}'``, ``--root a=b``). So the options can be given in any order
    and a ``--tools`` list ends at the first argument. ``--`` ends the options.

    Args:
        parser: the ``call`` subcommand's parser (its options say which take values).
        argv: the words after ``call``.

    Returns:
        ``(rest, items)``: the words for ``parser`` (options and the tool's name), and
        the arguments in order, with any further plain word (which
        :func:`split_call_arguments` then refuses).
    """
    rest: list[str] = []
    items: list[str] = []
    named = False
    last_list: tuple[int, int] | None = None  # where the last --tools-like list lies in rest
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            for later in argv[i:]:
                if named:
                    items.append(later)
                else:
                    rest += ["--", later]
                    named = True
            break
        if word.startswith("-") and word != "-":
            rest.append(word)
            action = _option_action(parser, word)
            if action is None or "=" in word:
                continue
            nargs = action.nargs
            if nargs is None or isinstance(nargs, int):
                count = 1 if nargs is None else nargs
                rest += argv[i : i + count]
                i += count
            elif nargs in ("+", "*"):
                start = len(rest)
                while i < len(argv) and not argv[i].startswith("-") and not _is_call_item(argv[i]):
                    rest.append(argv[i])
                    i += 1
                last_list = (start, len(rest))
            continue
        if _is_call_item(word) or named:
            items.append(word)
        else:
            rest.append(word)
            named = True
    if not named and last_list is not None and last_list[1] - last_list[0] > 1:
        # `call --tools a.py NAME k=v`: the list swallowed the tool's name. Its last
        # word, when it is no file, is the name (a module name there would leave the
        # call without one, which argparse refuses anyway).
        word = rest[last_list[1] - 1]
        if not Path(word).exists():
            del rest[last_list[1] - 1]
            rest += ["--", word]
    return rest, items


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise KeyError(name)  # pragma: no cover - build_parser adds every subcommand


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolwire")
    except PackageNotFoundError:  # pragma: no cover - run from a tree never installed
        from toolwire import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``toolwire`` (``serve`` is forwarded before parsing)."""
    # No abbreviations anywhere: `--tool` for `--tools` is a mistake to report, not a
    # guess to act on (and a later option could make the guess mean something else).
    p = argparse.ArgumentParser(
        prog="toolwire",
        allow_abbrev=False,
        description="toolwire: a JSON-RPC tool host (MCP tool subset) and its client.",
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"toolwire {_version()}",
        help="print the installed version and exit",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub_kwargs: dict[str, Any] = {"allow_abbrev": False}
    sub.add_parser(
        "serve",
        **sub_kwargs,
        help="run the host on stdin/stdout (see 'toolwire serve --help')",
        add_help=False,
    )

    lp = sub.add_parser(
        "list",
        **sub_kwargs,
        help="list the tools a host offers, or show one tool's whole definition",
        epilog=LIST_EPILOG,
    )
    lp.add_argument("name", nargs="?", help="show this tool's definition and schemas")
    add_host_options(lp)
    lp.add_argument(
        "--json",
        action="store_true",
        help='print {"tools": [...]} as JSON (with NAME: that tool\'s definition)',
    )

    cp = sub.add_parser(
        "call",
        **sub_kwargs,
        help="call one tool and print its result",
        epilog=CALL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cp.add_argument("name", help="the tool's name ('toolwire list' shows them)")
    cp.add_argument(
        "arguments",
        nargs="*",
        metavar="k=v|JSON",
        help="the tool's arguments, anywhere after the name (see below)",
    )
    cp.add_argument(
        "--args-json",
        metavar="JSON",
        help="the arguments as one JSON object (k=v pairs are merged on top)",
    )
    cp.add_argument(
        "--json", action="store_true", help="print the whole result as JSON (for scripts)"
    )
    cp.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="give up after S seconds (0 or less: no limit, as for toolwire serve)",
    )
    add_host_options(cp, approval=True)

    ap = sub.add_parser(
        "agent",
        **sub_kwargs,
        help="let a model (OpenAI-compatible endpoint) use the host's tools",
        description="Run the agent loop: the model calls the host's tools until it is done. "
        "With a PROMPT, one run; without, an interactive session (an empty line ends it).",
    )
    ap.add_argument("prompt", nargs="?", help="the task (default: ask interactively)")
    ap.add_argument("--model", required=True, help="the model name sent to the endpoint")
    ap.add_argument(
        "--base-url",
        help="the API root, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL or OpenAI)",
    )
    ap.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY); "
        "checked before the host starts: OpenAI's own endpoint needs one, another "
        "--base-url may take none",
    )

    ap.add_argument("--stream", action="store_true", help="stream the model's answers")
    ap.add_argument("--system", help="the system prompt (the tools' section is appended)")
    ap.add_argument("--max-turns", type=int, default=25, help="model calls per prompt at most")
    add_host_options(ap, approval=True)

    dp = sub.add_parser(
        "demo", **sub_kwargs, help="watch a recorded coding session fix a bug through the host"
    )
    dp.add_argument("--keep", action="store_true", help="keep the project copy and print its path")
    dp.add_argument("--fast", action="store_true", help="no pauses between steps")
    dp.add_argument(
        "--project", type=Path, help="the project to copy (default: the shipped invoice example)"
    )
    dp.add_argument("--plan", type=Path, help="the session plan JSON (default: the example's)")
    dp.add_argument(
        "--tools",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE.py|MODULE",
        help="also load these tools into the demo's host",
    )
    return p


# --------------------------------------------------------------------------- commands


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _unknown_tool(name: str, tools: Sequence[Any]) -> str:
    """The line for a tool name the host does not offer, listing the ones it does."""
    from .render import visible

    names = ", ".join(t.name for t in tools) or "(none)"
    return visible(f"unknown tool {name!r}; the tools are: {names}")


async def _list(ns: argparse.Namespace) -> int:
    from rich.console import Console

    from toolwire.models import dump

    from .render import json_text, tools_table

    async with spawn_host(ns) as c:
        tools = await c.list_tools()
    if ns.name is None:
        if ns.json:
            sys.stdout.write(json_text({"tools": [dump(t) for t in tools]}) + "\n")
        else:
            Console(highlight=False).print(tools_table(tools))
        return EXIT_OK
    tool = next((t for t in tools if t.name == ns.name), None)
    if tool is None:
        print(f"toolwire list: {_unknown_tool(ns.name, tools)}", file=sys.stderr)
        return EXIT_ERROR_RESULT
    if ns.json:
        sys.stdout.write(json_text(dump(tool)) + "\n")
    else:
        sys.stdout.write(_definition_text(tool))
    return EXIT_OK


def _definition_text(tool: Any) -> str:
    """One tool's definition for a terminal: name (and title), annotations, the whole
    description, the input schema and the output schema (as indented JSON)."""
    from toolwire.models import dump

    from .render import json_text, visible

    parts = [tool.name + (f" ({tool.title})" if tool.title else "")]
    if tool.annotations is not None:
        hints = dump(tool.annotations)
        if hints:
            parts.append("annotations: " + json_text(hints, indent=None))
    if tool.description:
        parts.append("\n" + tool.description.rstrip())
    parts.append("\ninput schema:\n" + json_text(tool.input_schema))
    if tool.output_schema is not None:
        parts.append("\noutput schema:\n" + json_text(tool.output_schema))
    return visible("\n".join(parts)) + "\n"


async def _call(ns: argparse.Namespace) -> int:
    from rich.markup import escape

    from .client import CallTimeout, LogMessage
    from .render import (
        ProgressPrinter,
        TerminalApprover,
        content_text,
        json_text,
        log_line,
        summarize,
        visible,
    )

    err = _err_console()
    printer = ProgressPrinter(err, f"{ns.name} …")
    approver = TerminalApprover(err, assume_yes=ns.yes, pause=printer.paused)

    def on_log(item: LogMessage) -> None:
        # The tool's ctx.log records (and the host's own) go to stderr, as they come.
        err.print(f"  {log_line(item)}", style="dim", markup=False, highlight=False)

    unknown = ""
    async with spawn_host(ns, on_approval=approver, on_log=on_log) as c:
        # k=v values are read as the tool's input schema says (string parameters take
        # the raw text): look the tool up first.
        tools = await c.list_tools()
        schema = next((t.input_schema for t in tools if t.name == ns.name), None)
        if not any(t.name == ns.name for t in tools):
            unknown = _unknown_tool(ns.name, tools)  # the host's error result comes too
        arguments = parse_call_arguments(ns.arguments, ns.args_json, schema)
        try:
            with printer.showing():
                timeout = ns.timeout if ns.timeout is not None and ns.timeout > 0 else None
                res = await c.call_tool(ns.name, arguments, on_progress=printer, timeout=timeout)
        except CallTimeout as exc:
            err.print(f"[red]toolwire call:[/red] {escape(visible(exc.message))}", markup=True)
            return EXIT_HOST_FAILED
    if ns.json:
        # JSON escapes every control character: the exact text, safe on a terminal.
        sys.stdout.write(json_text(res.to_wire()) + "\n")
    else:
        # Tool output may hold terminal escapes (a window title, an OSC 52 clipboard
        # write, a screen clear): they are shown, never sent raw (--json has the text).
        text = visible(content_text(res))
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        if res.details is not None:
            err.print(f"details: {visible(summarize(res.details, 400))}", style="dim", markup=False)
    sys.stdout.flush()
    if unknown:
        err.print(f"toolwire call: {unknown}", markup=False, soft_wrap=True)
    if res.is_error:
        err.print(f"[red]error result[/red] from {escape(visible(ns.name))}")
        return EXIT_ERROR_RESULT
    return EXIT_OK


def _check_host_options(ns: argparse.Namespace) -> None:
    """Usage errors in the host options that are plain to see before a host starts (the
    host checks the rest: the files' contents, the modules, the ``--approve`` names).

    Raises:
        UsageError: a missing ``--config`` file, a ``--root`` that is not a directory, a
            ``--tools`` value that looks like a tool argument (``k=v``).
    """
    if getattr(ns, "server", None):
        return
    config = getattr(ns, "config", None)
    if config is not None and not config.is_file():
        raise UsageError(f"--config: no such file: {config}")
    root = getattr(ns, "root", None)
    if root is not None and not root.is_dir():
        raise UsageError(f"--root {root} is not a directory")
    for spec in getattr(ns, "tools", []):
        if "=" in spec and not os.path.exists(spec):
            hint = f" (toolwire call NAME {spec})" if ns.command == "call" else ""
            raise UsageError(
                f"--tools {spec}: not a tool file or module; it looks like a tool "
                f"argument k=v, which goes after the tool's name{hint}"
            )


def _run_async(func: Any, *args: Any) -> int:
    import anyio

    code: int = anyio.run(func, *args, backend="asyncio")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the client's ``toolwire`` subcommands (not ``serve``: :mod:`toolwire.cli` runs
    that); returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        # The host is not this layer's: `toolwire serve` is dispatched by toolwire.cli.
        print(
            "toolwire serve: start the host with 'toolwire serve' or 'python -P -m toolwire.host'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    parser = build_parser()
    items: list[str] = []
    if args and args[0] == "call":
        # k=v and JSON words are the tool's arguments wherever they stand (argparse
        # would refuse them after an option, or take them as --tools values).
        rest, items = split_call_argv(_subparser(parser, "call"), args[1:])
        args = ["call", *rest]
    ns = parser.parse_args(args)
    if ns.command == "call":
        ns.arguments = items
    try:
        _check_host_options(ns)  # before starting the host
        if ns.command == "list":
            return _run_async(_list, ns)
        if ns.command == "call":
            split_call_arguments(ns.arguments, ns.args_json)  # before starting the host
            return _run_async(_call, ns)
        if ns.command == "agent":
            from .agent_cli import MissingApiKey, check_api_key, run_agent_cli

            try:
                check_api_key(ns)  # before the host starts or a request is sent
            except MissingApiKey as exc:
                raise UsageError(str(exc)) from None
            return _run_async(run_agent_cli, ns)
        if ns.command == "demo":
            from .demo import run_demo_cli

            return run_demo_cli(ns)
    except HostStartError as exc:
        for line in exc.message.splitlines() or [""]:
            print(f"toolwire {ns.command}: {line}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_HOST_FAILED
    except UsageError as exc:
        print(f"toolwire {ns.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # stdout closed early (`toolwire list | head`): not an error worth a message
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (JsonRpcError, OSError) as exc:
        from .render import visible

        print(f"toolwire {ns.command}: {visible(str(exc))}", file=sys.stderr)
        if getattr(ns, "url", None) and "Unauthorized" in str(exc):
            # 401 from the endpoint (RFC 6750 §3): the credentials are the user's to fix.
            print(
                f"toolwire {ns.command}: give the endpoint's bearer token with "
                "--token-file FILE (or $TOOLWIRE_TOKEN)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return EXIT_HOST_FAILED
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE  # pragma: no cover - argparse requires a command
