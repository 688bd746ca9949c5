"""The ``toolwire`` command: a dispatcher above both the host and the client.

``toolwire serve`` runs the host (:mod:`toolwire.host`); every other subcommand
(``list``, ``call``, ``agent``, ``demo``) is the client's command line
(:mod:`toolwire.client.cli`). This is the only module that may import both: each side is
imported lazily, only for its own subcommands, so ``toolwire serve`` never loads the
client and ``toolwire list`` never loads the host.

Standard library only at import time, and nothing else imported before the scrub: a
console script starts with its ``bin`` directory first on ``sys.path`` (inside the root
when the project holds the venv), so ``serve`` cleans the import path before it imports
anything of the host's (see :mod:`toolwire.host.sandbox.importpath`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported before the scrub
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolwire`` command; returns the exit code (``serve`` never returns).

    ``serve`` takes the host's arguments (``toolwire serve --help``) and exits the
    process with the host's exit code; the other subcommands return the client command
    line's exit code (0 ok, 1 error result, 2 usage error, 3 host failure).
    """
    args = _verbose_after_the_subcommand(list(sys.argv[1:] if argv is None else argv))
    if args and args[0] == "serve":
        from toolwire.host.sandbox.importpath import scrub_at_entry

        scrub_at_entry(args[1:])
        from toolwire.host.serve.process import main as serve_main

        serve_main(args[1:])
        return 0  # pragma: no cover - serve_main exits the process
    from toolwire.client.cli import main as client_main

    return client_main(args)


_VERBOSE = ("-v", "--verbose")
_TAKES_VERBOSE = ("list", "call", "agent")


def _verbose_after_the_subcommand(args: list[str]) -> list[str]:
    """``toolwire -v list`` as ``toolwire list -v``: ``-v`` belongs to the subcommands
    that start a host, and users put it first as often as after. Only leading ``-v``
    words before one of those subcommands move; anything else is left for the parser
    to accept or refuse."""
    lead = 0
    while lead < len(args) and args[lead] in _VERBOSE:
        lead += 1
    if lead and lead < len(args) and args[lead] in _TAKES_VERBOSE:
        return [args[lead], *args[:lead], *args[lead + 1 :]]
    return args


if __name__ == "__main__":  # pragma: no cover - ``python -m toolwire.cli``
    sys.exit(main())
