"""Approval across the process boundary: which calls need the client's yes, and asking for it.

A client that declares ``capabilities.toolwire.approval: true`` in ``initialize`` receives
a host→client request ``toolwire/approve {callId, name, arguments, annotations?}`` before
each call the policy marks, and answers ``{decision: "allow"|"deny", reason?, arguments?}``.
By default nothing needs approval (the client that launched the host is trusted).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .tools import Tool

__all__ = ["APPROVE_METHOD", "ApprovalDecision", "ApprovalPolicy", "parse_answer"]

APPROVE_METHOD = "toolwire/approve"
"""The host→client request asking the client to approve one call."""


@dataclass(frozen=True)
class ApprovalPolicy:
    """Which tools need the client's approval before they run.

    Attributes:
        names: tools named explicitly.
        destructive: every tool whose annotations do not say ``readOnlyHint: true``.
        everything: every tool.
    """

    names: frozenset[str] = frozenset()
    destructive: bool = False
    everything: bool = False

    @classmethod
    def parse(cls, items: Iterable[str]) -> ApprovalPolicy:
        """The policy for ``--approve`` values: tool names, ``destructive``, ``all``
        (each item may hold several, comma-separated). No items: nothing needs approval."""
        names: set[str] = set()
        destructive = everything = False
        for item in items:
            for word in str(item).split(","):
                word = word.strip()
                if word == "all":
                    everything = True
                elif word == "destructive":
                    destructive = True
                elif word:
                    names.add(word)
        return cls(frozenset(names), destructive, everything)

    @property
    def active(self) -> bool:
        """True when some call may need approval."""
        return self.everything or self.destructive or bool(self.names)

    def needs_approval(self, tool: Tool) -> bool:
        """Whether a call to ``tool`` must be approved by the client first."""
        if self.everything or tool.name in self.names:
            return True
        return self.destructive and not tool.read_only


@dataclass(frozen=True)
class ApprovalDecision:
    """The client's answer, checked.

    Attributes:
        allowed: True for ``"allow"``.
        reason: the client's reason, if it gave one.
        arguments: replacement arguments (validated again before use), or None.
    """

    allowed: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None


def parse_answer(result: Any) -> ApprovalDecision | str:
    """Check a ``toolwire/approve`` result; return the decision, or why it is malformed."""
    if type(result) is not dict:
        return "the answer is not an object"
    decision = result.get("decision")
    if decision not in ("allow", "deny"):
        return f'\'decision\' must be "allow" or "deny", not {decision!r}'
    reason = result.get("reason")
    if reason is not None and type(reason) is not str:
        return "'reason' must be a string"
    arguments = result.get("arguments")
    if arguments is not None and type(arguments) is not dict:
        return "'arguments' must be an object"
    return ApprovalDecision(decision == "allow", reason, arguments)
