"""``toolwire.toml``: the host's configuration file.

Given explicitly with ``toolwire serve --config FILE`` (never picked up from the root on
its own, so files a tool writes cannot reconfigure the next host). Tables:

* ``[host]``: root, tools, builtins, entry_points, framing, log_level, timeout,
  max_message_size, max_threads, page_size, isolation, workers, reload — the command-line
  options of the same names — and ``shutdown_grace`` (seconds LSP ``shutdown`` lets calls in
  flight finish, default 5; protocol.md §3.4);
* ``[sandbox]``: see :class:`toolwire.host.sandbox.SandboxSettings`;
* ``[approval]``: ``policy`` (a list of tool names, ``"destructive"`` or ``"all"``) and
  ``timeout`` (seconds);
* ``[http]``: serve Streamable HTTP (:mod:`toolwire.host.serve.http.config`);
* ``[workers]``: ``start`` (``"fork"``, the default on Linux, or ``"spawn"``: ``--worker-start``),
  ``list_cache`` (``true``, the default; ``false``: ``--no-list-cache``), ``reload_timeout``
  (seconds a reloaded module may take to load, default 10; ``--reload``);
* ``[network]``: the egress policy of sandboxed processes (``allow``, ``resolve``,
  ``tools.NAME.allow``, ``modules.NAME.allow``: :mod:`toolwire.host.sandbox.egress.policy`);
* ``[secrets.NAME]``: ``env`` or ``file``, and ``hosts``: credentials the egress proxy
  substitutes for placeholders (:mod:`toolwire.host.sandbox.egress.credentials`);
* ``[fleet]``: ``state_keys``, ``audience``, ``bus`` — ``--state-keys``, ``--audience``,
  ``--bus`` (:mod:`toolwire.host.serve.http.fleet`).

The whole file is checked against a schema (:func:`config_schema`, pydantic) before any
of it is used: unknown tables and keys are errors, and types are strict — a string
where a list is meant (``tools = "shout.py"``) or the string ``"false"`` for a boolean
is an error, never coerced. Each error names the file, the key's line, the key, the
type it takes and what the file gave. Command-line options override the file.
"""

from __future__ import annotations

import functools
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

__all__ = ["ConfigError", "config_schema", "key_line", "load_config_file"]

_TABLES = ("host", "sandbox", "approval", "http", "workers", "network", "secrets", "fleet")


class ConfigError(ValueError):
    """The configuration file is missing, not TOML, or does not match the schema; the
    message names the file and line (``toolwire.toml:3: ...``), one line per problem."""


@functools.cache
def config_schema() -> Any:
    """The pydantic model of a whole ``toolwire.toml``: tables ``host``, ``sandbox``,
    ``approval``, ``http``, ``workers``, ``network`` and ``fleet``, extra keys forbidden,
    strict types. Built on first use: pydantic is imported only when a config file is read, so ``toolwire serve`` without one starts
    faster. It checks shapes only: its defaults are placeholders (the host's defaults are
    :class:`~toolwire.host.serve.options.HostConfig`'s and
    :class:`~toolwire.host.sandbox.SandboxSettings`'), and only the keys a file sets are
    used."""
    from pydantic import (
        AfterValidator,
        BaseModel,
        ConfigDict,
        Field,
        field_validator,
        model_validator,
    )

    strict = ConfigDict(extra="forbid", strict=True)

    class HostTable(BaseModel):
        model_config = strict
        root: str | None = None
        tools: list[str] = []
        builtins: bool = True
        entry_points: bool = True
        framing: Literal["auto", "lsp", "ndjson"] = "auto"
        log_level: Literal["debug", "info", "warning", "error", "critical"] = "warning"
        timeout: float = 600.0
        max_message_size: Annotated[int, Field(ge=1024)] = 64 << 20
        max_threads: Annotated[int, Field(ge=1)] = 256
        page_size: Annotated[int, Field(ge=1)] = 500
        isolation: Literal["process", "none"] = "process"
        workers: Annotated[int, Field(ge=1, le=256)] = 1
        reload: bool = False
        shutdown_grace: Annotated[float, Field(ge=0)] = 5.0

    class SandboxTable(BaseModel):
        model_config = strict
        mode: Literal["auto", "bwrap", "none"] = "auto"
        allow_network: bool = False
        extra_ro_paths: list[str] = []
        extra_rw_paths: list[str] = []
        env_allow: list[str] = []
        limits: dict[str, Annotated[int, Field(ge=0)]] = {}
        bwrap: str | None = None
        max_commands: Annotated[int, Field(ge=0)] = 0

    class ApprovalTable(BaseModel):
        model_config = strict
        policy: Any = []
        timeout: float = 120.0

        @field_validator("policy")
        @classmethod
        def _policy(cls, value: Any) -> Any:
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return value
            raise ValueError(
                "must be an array of strings (tool names, 'destructive', 'all') or one "
                f"such string, not {_toml_type(value)}"
            )

    class OAuthTable(BaseModel):  # toolwire.host.serve.http.config.OAuthSettings
        model_config = strict
        issuer: str
        jwks: str
        audience: str | None = None
        resource: str | None = None
        tool_scopes: dict[str, list[str]] = {}
        algorithms: list[str] = []

    class HttpTable(BaseModel):  # toolwire.host.serve.http.config.HttpSettings
        model_config = strict
        listen: str | None = None
        token_file: str | None = None
        allow_unauthenticated: bool = False
        allowed_hosts: list[str] = []
        allowed_origins: list[str] = []
        session_idle_timeout: Annotated[float, Field(gt=0)] = 1800.0
        body_timeout: Annotated[float, Field(gt=0)] = 30.0
        path: str = "/mcp"
        oauth: OAuthTable | None = None

    class WorkersTable(BaseModel):
        model_config = strict
        start: Literal["spawn", "fork"] = "fork"
        list_cache: bool = True
        reload_timeout: Annotated[float, Field(gt=0)] = 10.0

    def _rule(value: str) -> str:
        from ..sandbox.egress.policy import parse_rule

        parse_rule(value)
        return value

    Rule = Annotated[str, AfterValidator(_rule)]

    class ScopeTable(BaseModel):  # [network.tools.NAME], [network.modules.NAME]
        model_config = strict
        allow: list[Rule] = []

    class NetworkTable(BaseModel):  # toolwire.host.sandbox.egress.policy.NetworkPolicy
        model_config = strict
        allow: list[Rule] = []
        resolve: dict[str, str] = {}
        upstream_ca: list[str] = []
        tools: dict[str, ScopeTable] = {}
        modules: dict[str, ScopeTable] = {}

        @field_validator("resolve")
        @classmethod
        def _resolve(cls, value: dict[str, str]) -> dict[str, str]:
            from ..sandbox.egress.policy import NetworkPolicy

            NetworkPolicy.from_table({"resolve": value})
            return value

    class SecretTable(BaseModel):  # toolwire.host.sandbox.egress.credentials.SecretSet
        model_config = strict
        env: str | None = None
        file: str | None = None
        hosts: Annotated[list[Rule], Field(min_length=1)]

        @model_validator(mode="after")
        def _one_source(self) -> Any:
            if (self.env is None) == (self.file is None):
                raise ValueError('give exactly one of env = "VAR" or file = "PATH"')
            return self

    def _secret_names(value: dict[str, Any]) -> dict[str, Any]:
        from ..sandbox.egress.credentials import NAME_PATTERN

        for name in value:
            if not NAME_PATTERN.match(name):
                raise ValueError(
                    f"{name!r} is not an environment variable name (letters, digits, '_')"
                )
        return value

    class FleetTable(BaseModel):  # toolwire.host.serve.http.fleet.FleetSettings
        model_config = strict
        state_keys: str | None = None
        audience: str | None = None
        bus: str | None = None

    class ConfigFileModel(BaseModel):
        model_config = strict
        host: HostTable = HostTable()
        sandbox: SandboxTable = SandboxTable()
        approval: ApprovalTable = ApprovalTable()
        http: HttpTable = HttpTable()
        workers: WorkersTable = WorkersTable()
        network: NetworkTable | None = None
        secrets: Annotated[dict[str, SecretTable], AfterValidator(_secret_names)] = {}
        fleet: FleetTable = FleetTable()

    return ConfigFileModel


def load_config_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read and check a ``toolwire.toml``; returns ``{table: {key: value}}`` for the
    tables (:data:`_TABLES`), holding only the keys the file sets (``network`` only
    when the file has a ``[network]`` table: its presence turns the egress proxy on).

    Raises:
        ConfigError: unreadable file, invalid TOML, or a table, key or value the schema
            refuses (one line per problem: ``FILE:LINE: [table] key: ...``).
    """
    from pydantic import ValidationError

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {p} is not UTF-8 text: {exc.reason}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    model = config_schema()
    try:
        model.model_validate(data)
    except ValidationError as exc:
        found = [_describe_error(p, text, model, err) for err in exc.errors()]
        found.sort(key=lambda item: item[0])
        raise ConfigError("\n".join(line for _, line in found)) from None
    out = {name: dict(data.get(name, {})) for name in _TABLES}
    if "network" not in data:
        del out["network"]
    return out


# --------------------------------------------------------------------------- errors


def _describe_error(path: Path, text: str, model: Any, err: Any) -> tuple[int, str]:
    """``(line, message)`` for one pydantic error; the message is
    ``FILE:LINE: [table] key ...`` (line 0: not found in the text)."""
    loc = tuple(err["loc"])
    line = key_line(text, [str(part) for part in loc if not isinstance(part, int)]) or 0
    return line, _message(path, line, model, err, loc)


def _message(path: Path, line: int, model: Any, err: Any, loc: tuple[Any, ...]) -> str:
    where = f"{path}:{line}" if line else str(path)
    table, keys = (str(loc[0]), loc[1:]) if loc else ("", ())
    key = ".".join(str(k) if not isinstance(k, int) else f"[{k}]" for k in keys)
    key = key.replace(".[", "[")
    kind = err["type"]
    if kind == "extra_forbidden":
        if not keys:
            return f"{where}: unknown table [{table}]; the tables are " + ", ".join(
                f"[{t}]" for t in _TABLES
            )
        known = _known_keys(model, loc[:-1])
        listed = f"; the keys of [{table}] are {', '.join(known)}" if known else ""
        return f"{where}: [{table}] unknown key {key!r}{listed}"
    expected = _expected(model, loc)
    got = _toml_type(err.get("input"))
    label = f"[{table}] {key}" if key else f"[{table}]"
    if expected and (kind.endswith("_type") or kind == "literal_error"):
        return f"{where}: {label} must be {expected}, not {got}"
    detail = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    suffix = f" (it takes {expected})" if expected else ""
    return f"{where}: {label}: {detail[:1].lower() + detail[1:]}{suffix}"


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(
    r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)


def _split_key(dotted: str) -> list[str]:
    parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)", dotted)
    return [a or b or c for a, b, c in parts]


def key_line(text: str, loc: list[str]) -> int | None:
    """The 1-based line of ``text`` (TOML) that defines the key at ``loc``
    (``["host", "tools"]``), or the line of its nearest enclosing key or table header
    the text has; None when none is found (tomllib reports no positions, so the text
    is scanned: table headers, dotted keys and quoted keys; not keys inside multi-line
    values)."""
    best: tuple[int, int] | None = None  # (matched depth, line)
    table: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(raw):
            table = _split_key(m.group(1))
            path = table
        elif m := _KEY.match(raw):
            path = table + _split_key(m.group(1))
        else:
            continue
        depth = 0
        for a, b in zip(path, loc, strict=False):
            if a != b:
                break
            depth += 1
        if depth == len(path) and depth and (best is None or depth > best[0]):
            best = (depth, number)
    return best[1] if best else None


def _field_annotation(model: Any, loc: tuple[Any, ...]) -> Any:
    """The annotation of the field at ``loc`` in ``model`` (None when unknown)."""
    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return None
            current = info.annotation
        else:
            args = typing.get_args(_unwrap(current))
            if not args:
                return None
            current = args[-1]  # list[X] -> X, dict[str, X] -> X
    return current


def _unwrap(annotation: Any) -> Any:
    if typing.get_origin(annotation) is Annotated:
        return typing.get_args(annotation)[0]
    return annotation


def _known_keys(model: Any, loc: tuple[Any, ...]) -> list[str]:
    from pydantic import BaseModel

    annotation = _field_annotation(model, loc) if loc else model
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _expected(model: Any, loc: tuple[Any, ...]) -> str:
    """What the schema takes at ``loc``, in TOML words (``an array of strings``)."""
    return _words(_field_annotation(model, loc))


def _words(annotation: Any) -> str:
    from pydantic import BaseModel

    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is bool:
        return "a boolean (true or false, unquoted)"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is list:
        inner = _words(args[0])
        return "an array of " + re.sub(r"^an? ", "", inner).replace("string", "strings")
    if origin is dict:
        return "a table of " + re.sub(r"^an? ", "", _words(args[1])).replace("integer", "integers")
    if origin in (typing.Union, types.UnionType):
        shown = [_words(a) for a in args if a is not type(None)]
        return " or ".join(w for w in shown if w)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a table"
    return ""


def _toml_type(value: Any) -> str:
    """A TOML value described for an error message: ``a string ("shout.py")``."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"a string ({shown!r})"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"
