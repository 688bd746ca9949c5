"""Tool names each provider accepts, unique and stable, for MCP names it would refuse.

MCP allows tool names such as ``ns.read-file`` or ``1st`` (toolwire's own rule is
wider than any provider's). The providers' rules:

* OpenAI (chat completions and Responses) and Anthropic: ``^[A-Za-z0-9_-]{1,64}$``.
* Gemini: starts with a letter or an underscore; letters, digits, underscores, dots and
  dashes; at most 64 characters in Google's API reference (other pages of it say 63, so
  63 is used).

A name the provider accepts is sent as it is. Any other is rewritten: each refused
character becomes ``_``, a refused first character gets a ``_`` in front, and the
result is cut to the length limit. When that rewritten name is taken by another tool
of the same request (as it is, or rewritten), every rewritten member of the clash gets
``_`` and six hex digits of the SHA-256 of its real name appended, so the mapping
depends only on the set of names, not on their order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ANTHROPIC_NAMES", "GEMINI_NAMES", "OPENAI_NAMES", "NameRule", "wire_names"]


@dataclass(frozen=True)
class NameRule:
    """A provider's tool-name rule.

    Attributes:
        allowed: one character class of the characters allowed anywhere (regex).
        first: the character class allowed first (regex), or None for ``allowed``.
        max_length: the longest name, in characters.
    """

    allowed: str
    first: str | None
    max_length: int

    def valid(self, name: str) -> bool:
        """Whether the provider accepts ``name`` as it is."""
        first = self.first or self.allowed
        pattern = f"{first}{self.allowed}{{0,{self.max_length - 1}}}"
        return re.fullmatch(pattern, name) is not None

    def rewrite(self, name: str) -> str:
        """``name`` with refused characters replaced (not yet made unique)."""
        out = re.sub(f"(?!{self.allowed}).", "_", name, flags=re.DOTALL)
        if not out or (self.first and not re.fullmatch(self.first, out[0])):
            out = "_" + out
        return out[: self.max_length]


OPENAI_NAMES = NameRule("[A-Za-z0-9_-]", None, 64)
"""OpenAI's function-name rule (chat completions and Responses)."""
ANTHROPIC_NAMES = NameRule("[A-Za-z0-9_-]", None, 64)
"""Anthropic's tool-name rule."""
GEMINI_NAMES = NameRule("[A-Za-z0-9_.-]", "[A-Za-z_]", 63)
"""Gemini's function-name rule."""


def _suffixed(name: str, real: str, rule: NameRule) -> str:
    tag = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{name[: rule.max_length - 7]}_{tag}"


def wire_names(names: Sequence[str], rule: NameRule) -> dict[str, str]:
    """Real tool name → the name sent to the provider, for one request's tools.

    Every value satisfies ``rule``; values are unique (unless two real names hash
    alike in six hex digits and rewrite alike, which the result still reports by
    containing fewer distinct values than keys); names the provider accepts map to
    themselves.
    """
    first = {n: (n if rule.valid(n) else rule.rewrite(n)) for n in dict.fromkeys(names)}
    count: dict[str, int] = {}
    for w in first.values():
        count[w] = count.get(w, 0) + 1
    return {
        real: (_suffixed(w, real, rule) if count[w] > 1 and w != real else w)
        for real, w in first.items()
    }
