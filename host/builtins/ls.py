"""The ``ls`` tool: list a directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import anyio.to_thread

from ..sandbox.paths import PathError, open_directory
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import builtin_tool, check_opened_inside, display_path

__all__ = ["list_directory", "ls", "shown_name"]


def shown_name(name: str) -> str:
    """A file name as the tools show it: the bytes of a name that are not UTF-8 (which
    Python holds as lone surrogates, PEP 383) become U+FFFD, as find, grep and bash
    show them; a lone surrogate reaches no client."""
    if name.isascii():
        return name
    return os.fsencode(name).decode("utf-8", "replace")


def list_directory(path: str, shown: str, within: Path | None = None) -> list[str]:
    """Entry names of ``path``, dotfiles included, sorted case-insensitively, with
    ``/`` after directories and ``@`` after symbolic links (a name that is not UTF-8
    shows U+FFFD for its other bytes: :func:`shown_name`). Entries are classified
    with ``lstat``: a link is never followed, so a link to a host path outside the
    root tells nothing about that path (whether it exists, or is a directory).
    Entries that cannot be examined are left out. With ``within`` (the root), ``path`` is a real
    path inside it (as :func:`toolwire.host.sandbox.paths.resolve_path` gives it), opened
    relative to a descriptor of the root without following any symlink
    (:func:`toolwire.host.sandbox.paths.open_directory`).

    Raises:
        ToolError: missing, not a directory, unreadable, or outside ``within``.
    """
    try:
        if within is None:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            fd = open_directory(within, Path(path), shown=shown, listable=True)
    except PathError as exc:
        raise ToolError(str(exc)) from None
    except FileNotFoundError:
        raise ToolError(f"Path not found: {shown}") from None
    except NotADirectoryError:
        raise ToolError(f"Not a directory: {shown}; use read for files") from None
    except OSError as exc:
        raise ToolError(f"Cannot list {shown}: {exc.strerror or type(exc).__name__}") from None
    try:
        check_opened_inside(fd, within, shown)
        names: list[str] = []
        with os.scandir(fd) as it:
            for e in it:
                try:
                    is_link = e.is_symlink()
                    is_dir = not is_link and e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                names.append(shown_name(e.name) + ("@" if is_link else "/" if is_dir else ""))
    except OSError as exc:
        raise ToolError(f"Cannot list {shown}: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(fd)
    names.sort(key=lambda n: (n.casefold(), n))
    return names


@builtin_tool(annotations={"readOnlyHint": True, "idempotentHint": True})
async def ls(
    ctx: ToolContext,
    path: Annotated[
        str, Param(default=".", description="Directory to list (default: the working directory).")
    ] = ".",
    limit: Annotated[int, Param(default=500, ge=1, description="Most entries to return.")] = 500,
) -> ToolResult:
    """List a directory's entries, hidden ones included, sorted case-insensitively;
    directories end with '/', symbolic links with '@' (never followed)."""
    real = await anyio.to_thread.run_sync(lambda: ctx.env.resolve(path, must_exist=True))
    shown = display_path(real, ctx.env.cwd)
    names = await anyio.to_thread.run_sync(list_directory, str(real), shown, ctx.env.root)
    if not names:
        return ToolResult("(empty directory)", details={"entries": 0})
    body = "\n".join(names[:limit])
    details: dict[str, object] = {"entries": len(names)}
    if any("\ufffd" in n for n in names[:limit]):
        body += (
            "\n\n[Some names are not valid UTF-8: their other bytes are shown as U+FFFD. "
            "Use bash (e.g. ls -b) to see them.]"
        )
    if len(names) > limit:
        body += (
            f"\n\n[Showing {limit} of {len(names)} entries. "
            f"Use limit={min(len(names), limit * 2)} for more.]"
        )
        details["limitReached"] = limit
    return ToolResult(body, details=details)
