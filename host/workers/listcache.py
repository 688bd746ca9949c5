"""The tool definitions of worker modules, kept between host starts, so that a host's
first ``tools/list`` need not wait for its workers (issue 26).

A worker's ``initialize`` answer (its module's tools, their call rules and its hooks) is
stored under a key made of everything that decides it, and read back by the next host
with the same key, which registers the stand-ins at once and answers ``tools/list``
while the first worker is still starting. When that worker answers, the host compares:
the same answer changes nothing; a different one replaces the stand-ins in one registry
change (``notifications/tools/list_changed`` in both eras, as a ``--reload`` does) and the
entry is rewritten; a module that no longer loads has its tools removed (the same
notification) and its entry dropped. Calls of a module's tools wait until that check
(:attr:`~toolwire.host.tools.registry.Registry.pending`), so no call ever runs under a
definition its worker did not give. ``--no-list-cache`` or ``[workers] list_cache =
false`` turns the cache off.

The key (:meth:`DefinitionCache.key`) is a SHA-256 over: this file format, toolwire's
version and the size and modification time of every source file of the installed
toolwire (its definitions are built by toolwire's code), the Python version and
executable, the workers' ``sys.path``, the module's kind and name, the root, whether the
sandbox is active, the module's own source (the bytes its workers are given), and the
bytes of every Python module and package file beside a ``--tools`` file (what it can
import; SECURITY.md "Worker processes") or under a module's package directory. What is
not in the key (an installed dependency that changed, a module whose tools depend on a
file or the environment) is caught by the check against the worker.

Trust model (SECURITY.md "The definition cache"): the entries live in the host user's
cache directory (``$XDG_CACHE_HOME/toolwire/definitions``, else
``~/.cache/toolwire/definitions``), created with mode 0700, never in the root: a
sandboxed worker sees neither the home directory nor the cache (only the root is
writable to it), so a module can only have its own answer stored, under the key the
host computed for it, and cannot write another module's entry. A directory that is not
the user's, is writable by others, or lies inside the root (where tools write) is not
used. Without an active sandbox a module runs with the host user's rights and could
write any entry (as it could edit any module's source); what it could gain is bounded
by the check: a wrong first list, replaced when the worker answers, and no call run
under it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import sys
import tempfile
from typing import Any, Protocol

import orjson

from toolwire._json import RawJSON

from ..sandbox.bubblewrap import Sandbox
from .process import ModuleSpec

__all__ = [
    "CachedPool",
    "DefinitionCache",
    "cache_directory",
    "decode_entry",
    "encode_entry",
    "listed",
]

log = logging.getLogger("toolwire.workers")

FORMAT = 2
"""The entries' format (part of the key): one line of JSON, the header (the key, the hooks,
and every tool's description with its input schema replaced by the ``[start, end]`` byte
range of that schema in the body, and the SHA-256 of the body), a newline, then the body:
the input schemas' JSON texts one after the other, as orjson encoded them."""

_CONTROL = bytes(range(0x20))
"""The bytes no JSON text as orjson writes it holds raw (newlines, among others)."""

MAX_FILES = 2000
"""Most source files hashed into one module's key; a module with more is not cached."""

MAX_BYTES = 64 * 1024 * 1024
"""Most source bytes hashed into one module's key (64 MiB); past it, not cached."""


def cache_directory(env: dict[str, str] | None = None) -> str:
    """Where entries live: ``$XDG_CACHE_HOME/toolwire/definitions`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG base directory rules say), else
    ``~/.cache/toolwire/definitions``."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "toolwire", "definitions")


def listed(info: dict[str, Any]) -> dict[str, Any]:
    """What of a worker's ``initialize`` answer is cached and compared: its tools and
    hooks (not its pid or protocol version)."""
    return {"tools": info.get("tools") or [], "hooks": info.get("hooks") or []}


def _toolwire_fingerprint() -> bytes:
    """The size and modification time of every ``.py`` file of the toolwire packages in
    use (toolwire's own code builds the definitions a worker reports)."""
    import toolwire

    digest = hashlib.sha256()
    version = getattr(toolwire, "__version__", "")
    digest.update(f"toolwire {version}\0".encode())
    host_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # toolwire.host
    for top in sorted({os.path.dirname(toolwire.__file__), host_dir}):
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    st = os.stat(path)
                    digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.digest()


class _Owner(Protocol):
    @property
    def sandbox(self) -> Sandbox | None: ...

    @property
    def sys_path(self) -> list[str]: ...

    @property
    def root(self) -> str: ...


class CachedPool(Protocol):
    """What the key needs of a :class:`~.pool.WorkerPool` (a narrow view, so this module
    never imports :mod:`.pool`, which imports it)."""

    @property
    def module(self) -> ModuleSpec: ...

    @property
    def source(self) -> bytes | None: ...

    @property
    def workers_owner(self) -> _Owner: ...

    def visible_paths(self) -> list[str]: ...

    def own_paths(self) -> list[str]: ...


class _TooMuch(Exception):
    """A module's sources are over :data:`MAX_FILES` or :data:`MAX_BYTES`."""


class DefinitionCache:
    """The definition cache of one host (see the module docstring).

    Args:
        directory: where entries live (:func:`cache_directory` by default).
        root: the host's root; a ``directory`` inside it is refused.

    Attributes:
        directory: the entries' directory, or None when it cannot be used (then
            :meth:`load` finds nothing and :meth:`store` does nothing).
    """

    def __init__(self, directory: str | None = None, *, root: str) -> None:
        self.directory: str | None = None
        self._fingerprint: bytes | None = None
        wanted = os.path.abspath(directory or cache_directory())
        problem = self._usable(wanted, os.path.realpath(root))
        if problem is not None:
            log.info("the definition cache is not used: %s", problem)
            return
        self.directory = wanted

    @staticmethod
    def _usable(directory: str, root: str) -> str | None:
        """Why ``directory`` cannot hold entries (None: it can; made when missing)."""
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            real = os.path.realpath(directory)
            st = os.stat(real)
        except OSError as exc:
            return f"{directory}: {exc.strerror or exc}"
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return f"{directory} is inside the root, where tools write"
        if st.st_uid != os.geteuid():
            return f"{directory} belongs to another user"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{directory} is writable by others"
        return None

    # ------------------------------------------------------------------ key

    def key(self, pool: CachedPool) -> str | None:
        """The key of ``pool``'s module as it is now (see the module docstring); None
        when the module cannot be cached (no cache directory, sources over the bounds
        or unreadable)."""
        if self.directory is None:
            return None
        owner = pool.workers_owner
        digest = hashlib.sha256()
        if self._fingerprint is None:
            self._fingerprint = _toolwire_fingerprint()
        sandbox = owner.sandbox
        head = {
            "format": FORMAT,
            "python": sys.version,
            "executable": sys.executable,
            "sysPath": owner.sys_path,
            "kind": pool.module.kind,
            "spec": pool.module.file or pool.module.spec,
            "root": owner.root,
            "sandboxed": bool(sandbox is not None and sandbox.active),
        }
        digest.update(self._fingerprint)
        digest.update(orjson.dumps(head, option=orjson.OPT_SORT_KEYS))
        try:
            if pool.module.file is not None:
                if pool.source is None:
                    return None  # unreadable: the worker reports it
                digest.update(b"source\0" + hashlib.sha256(pool.source).digest())
                paths = pool.visible_paths()[1:]
            else:
                paths = pool.own_paths()
                if not paths:
                    return None
            self._hash_paths(digest, paths)
        except (_TooMuch, OSError):
            return None
        return digest.hexdigest()

    @staticmethod
    def _hash_paths(digest: Any, paths: list[str]) -> None:
        """Hash the path and bytes of every ``.py`` file in ``paths`` (files, and
        directories walked in name order, caches skipped).

        Raises:
            _TooMuch: over :data:`MAX_FILES` files or :data:`MAX_BYTES` bytes.
            OSError: a file could not be read.
        """
        files: list[str] = []
        for path in sorted(paths):
            if os.path.isdir(path):
                for folder, dirs, names in os.walk(path):
                    dirs[:] = sorted(d for d in dirs if d != "__pycache__" and d[:1] != ".")
                    files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
            else:
                files.append(path)
            if len(files) > MAX_FILES:
                raise _TooMuch
        total = 0
        for path in files:
            with open(path, "rb") as f:
                data = f.read(MAX_BYTES + 1 - total)
            total += len(data)
            if total > MAX_BYTES:
                raise _TooMuch
            digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
            digest.update(hashlib.sha256(data).digest())

    # ------------------------------------------------------------------ entries

    def _path(self, key: str) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, f"{key}.json")

    def load(self, key: str) -> tuple[dict[str, Any], bytes] | None:
        """The stored answer under ``key`` and the entry's bytes, or None: no entry, or
        one that is unreadable or not of this key, format and shape. The answer's input
        schemas are :class:`~toolwire._json.RawJSON`: sent to clients as they are stored,
        decoded only when a tool is first called."""
        if self.directory is None:
            return None
        try:
            with open(self._path(key), "rb") as f:
                data = f.read()
        except OSError:
            return None
        info = decode_entry(key, data)
        return None if info is None else (info, data)

    def store(self, key: str, data: bytes) -> None:
        """Store an entry (:func:`encode_entry`) under ``key``, written to a temporary
        file and renamed over the entry, so a reader sees the old entry or the new one
        whole. Errors are logged, never raised: the cache only ever saves time."""
        if self.directory is None:
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self._path(key))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.info("the definition cache could not store an entry: %s", exc)

    def drop(self, key: str) -> None:
        """Remove the entry under ``key`` (when there is one)."""
        if self.directory is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._path(key))


def encode_entry(key: str, info: dict[str, Any]) -> bytes | None:
    """The entry of a worker's answer (:data:`FORMAT`); the same answer always gives the
    same bytes, so an answer is compared with an entry by its encoding. None when the
    answer cannot be stored (a tool without an object input schema, or something orjson
    cannot encode, such as an integer beyond 64 bits)."""
    body = bytearray()
    tools = []
    try:
        for d in listed(info)["tools"]:
            definition = d.get("definition") if type(d) is dict else None
            schema = definition.get("inputSchema") if type(definition) is dict else None
            if type(schema) is RawJSON:
                data = schema.data
            elif type(schema) is dict:
                data = orjson.dumps(schema)
            else:
                return None
            start = len(body)
            body += data
            assert definition is not None
            tools.append({**d, "definition": {**definition, "inputSchema": [start, len(body)]}})
        header = {
            "key": key,
            "body": hashlib.sha256(body).hexdigest(),
            "tools": tools,
            "hooks": listed(info)["hooks"],
        }
        return orjson.dumps(header) + b"\n" + bytes(body)
    except TypeError:
        return None


def decode_entry(key: str, data: bytes) -> dict[str, Any] | None:
    """The answer an entry holds (``{"tools": [...], "hooks": [...]}``, input schemas as
    :class:`~toolwire._json.RawJSON`), or None for anything but an intact entry of
    ``key``: its body's digest must match and hold no raw control character, so a
    damaged file can never put a broken or newline-split JSON text on the wire."""
    split = data.find(b"\n")
    # One raw control byte in all (the newline after the header): the body, spliced into
    # messages as it is, can never split an ndjson message.
    if split < 0 or len(data.translate(None, _CONTROL)) != len(data) - 1:
        return None
    base = split + 1
    body = memoryview(data)[base:]
    try:
        entry = orjson.loads(data[:split])
    except orjson.JSONDecodeError:
        return None
    if (
        type(entry) is not dict
        or entry.get("key") != key
        or type(entry.get("tools")) is not list
        or type(entry.get("hooks")) is not list
        or entry.get("body") != hashlib.sha256(body).hexdigest()
    ):
        return None
    for d in entry["tools"]:
        definition = d.get("definition") if type(d) is dict else None
        at = definition.get("inputSchema") if type(definition) is dict else None
        if (
            type(at) is not list
            or len(at) != 2
            or not all(type(n) is int for n in at)
            or not 0 <= at[0] < at[1] <= len(body)
        ):
            return None
        assert definition is not None
        definition["inputSchema"] = RawJSON(data[base + at[0] : base + at[1]])
    return {"tools": entry["tools"], "hooks": entry["hooks"]}
