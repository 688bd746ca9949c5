"""Approval across the process boundary: which calls need the client's yes, and asking for it.

A client that declares ``capabilities.toolwire.approval: true`` receives
``toolwire/approve {callId, name, arguments, annotations?}`` before each call the policy
marks, and answers ``{decision: "allow"|"deny", reason?, arguments?}``. Any other MCP
client that declares ``elicitation`` is asked with a standard form
(:func:`approval_form`: allow or deny, and an optional reason). In 2025-11-25 both are
host→client requests; in 2026-07-28 they are input requests of an input-required
result (protocol.md §10.4, §11.7). A client that can do neither is denied with a message
saying so. By default nothing needs approval (the client that launched the host is
trusted).

This module chooses the question and reads the answer; the era is the call's channel's
(:class:`~toolwire.host.tools.channel.CallChannel`), which carries the question and, in
2026-07-28, the request's input round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolwire import _json
from toolwire.errors import REQUEST_TIMEOUT, JsonRpcError
from toolwire.extensions import APPROVE, ApprovalDecision, ApprovalRequest, declares_approval
from toolwire.showntext import escape_hidden, escape_hidden_json

from ..tools.channel import APPROVAL_KEY, CallChannel
from ..tools.definition import Tool

if TYPE_CHECKING:
    from ..tools.hooks import IncomingCall

__all__ = [
    "APPROVAL_KEY",
    "FORM_MAX_CHARS",
    "ApprovalPolicy",
    "FormTooLong",
    "HostDenial",
    "approval_form",
    "approve_call",
    "decision_from_elicitation",
]


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
    known: set[str] = field(default_factory=set, compare=False, repr=False)
    """The tools the host served when it started (:meth:`settle`); empty until then."""

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

    def settle(self, names: Iterable[str]) -> None:
        """Record the tools the host serves once started (called once, before the first
        call). With a list of names, a tool that is not among them (one a ``--reload``
        added later) needs approval too: the user chose the names knowing those tools."""
        if not self.known:
            self.known.update(names)

    def unknown_names(self, served: Iterable[str]) -> str | None:
        """A one-line error when the policy names a tool that is not among ``served``
        (a misspelt tool or class, ``destructiv``: approving nothing while the user
        believes the calls are guarded), listing what exists; None when every name is
        served."""
        tools = sorted(set(served))
        unknown = sorted(self.names - set(tools))
        if not unknown:
            return None
        shown = ", ".join(tools[:40]) + (f" and {len(tools) - 40} more" if len(tools) > 40 else "")
        return (
            f"--approve {', '.join(unknown)}: no such tool or class; the classes are "
            f"'destructive' and 'all', the tools are {shown or '(none)'}"
        )

    @property
    def active(self) -> bool:
        """True when some call may need approval."""
        return self.everything or self.destructive or bool(self.names)

    def needs_approval(self, tool: Tool) -> bool:
        """Whether a call to ``tool`` must be approved by the client first: it is named,
        or the policy is ``all``, or it is not read-only under ``destructive``; or the
        policy names tools and ``tool`` was not served at start (:meth:`settle`)."""
        if self.everything or tool.name in self.names:
            return True
        if self.names and self.known and tool.name not in self.known:
            return True
        return self.destructive and not tool.read_only


@dataclass(frozen=True)
class HostDenial:
    """A call the host denied itself, without a decision from the client (the client
    cannot be asked, did not answer in time, or answered malformed).

    Attributes:
        message: the denied call's error result text.
    """

    message: str


FORM_MAX_CHARS = 32_768
"""Longest call an approval form shows (characters of its JSON, as shown): a longer one is
denied rather than shown in part, since a user cannot review what a form leaves out."""


class FormTooLong(ValueError):
    """A call too long to show whole in an approval form.

    Attributes:
        shown: characters the call's arguments take as shown.
    """

    def __init__(self, shown: int) -> None:
        super().__init__(f"{shown} characters, more than {FORM_MAX_CHARS}")
        self.shown = shown


def approval_form(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``elicitation/create`` params asking the user to approve one call: a form with
    ``decision`` ("allow" or "deny", required) and an optional ``reason``.

    The message shows the tool's name and the whole arguments as JSON, with every
    invisible, control or bidirectional character escaped
    (:func:`toolwire.showntext.escape_hidden_json`), so what the user reads is what runs.

    Raises:
        FormTooLong: the arguments take more than :data:`FORM_MAX_CHARS` characters as
            shown; no part of a call is ever shown alone.
    """
    shown = escape_hidden_json(_json.dumps(arguments).decode("utf-8"))
    if len(shown) > FORM_MAX_CHARS:
        raise FormTooLong(len(shown))
    return {
        "mode": "form",
        "message": f'Allow the tool "{escape_hidden(name, keep="")}" to run with these '
        f"arguments?\n{shown}",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": ["allow", "deny"],
                },
                "reason": {"type": "string", "title": "Reason (optional)"},
            },
            "required": ["decision"],
        },
    }


def _too_long(name: str, exc: FormTooLong) -> HostDenial:
    return HostDenial(
        f'Call denied: the arguments of tool "{name}" take {exc.shown} characters, more than '
        f"the {FORM_MAX_CHARS} an approval form shows whole, so the user cannot review the "
        'call in a form. A client that declares {"toolwire": {"approval": true}} '
        "receives the arguments as data and can approve it; or the host's approval policy "
        "(--approve, [approval] policy in the configuration) can leave this tool out."
    )


def decision_from_elicitation(answer: Any) -> ApprovalDecision:
    """The decision in an ``elicitation/create`` result for :func:`approval_form`.
    Declining or cancelling the form denies the call.

    Raises:
        ValueError: the answer is malformed; the message says why.
    """
    if type(answer) is not dict:
        raise ValueError("the answer is not an object")
    action = answer.get("action")
    if action in ("decline", "cancel"):
        done = "declined" if action == "decline" else "cancelled"
        return ApprovalDecision(False, f"the user {done} the approval form")
    content = answer.get("content")
    if action != "accept" or type(content) is not dict:
        raise ValueError("the form was neither accepted with content, declined nor cancelled")
    reason = content.get("reason")
    reason = reason if type(reason) is str and reason.strip() else None
    decision = content.get("decision")
    if decision not in ("allow", "deny"):
        raise ValueError(f'\'decision\' must be "allow" or "deny", not {decision!r}')
    return ApprovalDecision(decision == "allow", reason)


async def approve_call(
    channel: CallChannel,
    call: IncomingCall,
    tool: Tool,
    arguments: dict[str, Any],
    *,
    timeout: float,
) -> ApprovalDecision | HostDenial:
    """Ask the client to approve one call through the call's channel; returns its
    decision, or a denial the host made itself.

    Order: ``toolwire/approve`` when the client declared it (in the channel's
    capabilities: ``initialize``'s in 2025-11-25, the request's in 2026-07-28), else a
    standard elicitation form when it declared ``elicitation``, else a denial saying the
    client can do neither. The channel decides how the question travels
    (:meth:`~toolwire.host.tools.channel.CallChannel.ask_approval`): a host→client request
    in 2025-11-25, answered within ``timeout`` seconds; in 2026-07-28 an input request
    of the request's input round, so this raises
    :class:`~toolwire.host.tools.rounds.InputNeeded` until the retry brings the answer
    (accepted only for a question this host asked, proven by the signed
    ``requestState``).

    Args:
        channel: the call's way back to its client (its era, its input round).
        call: the call as received (its id goes into ``toolwire/approve``).
        tool: the tool called.
        arguments: the arguments to approve (after the before hooks).
        timeout: seconds to wait for an answer on the connection (2025-11-25).
    """
    if not channel.reaches_client:
        return _cannot_ask(tool.name)
    caps = channel.client_capabilities
    if declares_approval(caps):
        annotations = tool.definition().get("annotations") or {}
        method = APPROVE
        question = ApprovalRequest(call.id, tool.name, arguments, annotations).to_params()
    elif type(caps.get("elicitation")) is dict:
        try:
            method, question = "elicitation/create", approval_form(tool.name, arguments)
        except FormTooLong as exc:
            return _too_long(tool.name, exc)
    else:
        return _cannot_ask(tool.name)
    try:
        answer = await channel.ask_approval(method, question, timeout)
    except JsonRpcError as exc:
        if exc.code == REQUEST_TIMEOUT:
            return HostDenial(
                "Call denied: the client did not answer the approval request within "
                f"{timeout:g} seconds"
            )
        return HostDenial(f"Call denied: the approval request failed: {exc.message}")
    if method == APPROVE:
        return _checked(ApprovalDecision.from_wire, answer)
    return _checked(decision_from_elicitation, answer)


def _checked(read: Callable[[Any], ApprovalDecision], answer: Any) -> ApprovalDecision | HostDenial:
    try:
        return read(answer)
    except ValueError as exc:
        return HostDenial(f"Call denied: the client's approval answer is malformed: {exc}")


def _cannot_ask(name: str) -> HostDenial:
    return HostDenial(
        f'Call denied: tool "{name}" needs the client\'s approval, but the client declared '
        'neither {"toolwire": {"approval": true}} nor "elicitation", so it cannot be asked'
    )
