"""Provider adapters: tool definitions, tool calls and tool results in each model API's format.

Pure functions on plain dicts (no SDK, no network), one module per API, sharing the
conversation types of :mod:`toolwire.client.conversation`:

* :mod:`.openai_chat`: OpenAI chat completions and compatible servers.
* :mod:`.openai_responses`: OpenAI Responses.
* :mod:`.anthropic`: Anthropic Messages.
* :mod:`.gemini`: Gemini ``generateContent``.

Each API has a converter from the host's tool definitions to what it accepts, built
for one request's whole tool set (``openai_chat_tools``, ``openai_responses_tools``,
``anthropic_tools``, ``gemini_tools_for``, each a :class:`ProviderTools`): tool names
the API refuses are rewritten (unique, stable; :mod:`._names`), parameter schemas are
rewritten to the API's dialect (:mod:`._openai_schema`, :mod:`._gemini_schema`,
:func:`._schema.json_schema_dialect`), and the model's calls are mapped back to the real
tool name and the host's argument shapes. Pass the same :class:`ProviderTools` to the
``assistant_from_*`` readers, the streams and the ``to_*`` conversation writers.

Reasoning data (Anthropic thinking blocks, Responses reasoning items, Gemini thought
signatures) is kept on the :class:`~toolwire.client.conversation.AssistantMessage` and
sent back unchanged to the API it came from.

Streaming: :class:`OpenAIChatStream`, :class:`OpenAIResponsesStream`,
:class:`AnthropicStream` and :class:`GeminiStream` take the decoded stream events one
by one and assemble the text and the tool calls; their arguments are parsed
best-effort while they arrive (:func:`~toolwire.client.partial_json.parse_partial_arguments`)
and strictly at the end (a call whose final text is not a JSON object gets
``invalid_arguments`` and is not executed).

The system-prompt channel: :func:`tools_prompt_section` builds an "Available tools"
list from the ``toolwire/promptSnippet`` and ``toolwire/promptGuidelines`` members a
tool definition carries in ``_meta``.
"""

from __future__ import annotations

from toolwire.extensions import PROMPT_GUIDELINES_META_KEY, PROMPT_SNIPPET_META_KEY

from ._common import (
    ParsedToolResult,
    ProviderTools,
    content_text,
    tools_prompt_section,
    unique_ids,
)
from ._gemini_schema import gemini_parameters, gemini_schema
from ._names import ANTHROPIC_NAMES, GEMINI_NAMES, OPENAI_NAMES, NameRule, wire_names
from ._openai_schema import STRICT_MAX_DEPTH, strict_parameters, strict_schema_allowed
from ._schema import json_schema_dialect
from .anthropic import (
    AnthropicStream,
    anthropic_tool,
    anthropic_tools,
    assistant_from_anthropic,
    assistant_to_anthropic,
    to_anthropic_messages,
    tool_result_from_anthropic,
    tool_result_to_anthropic,
)
from .gemini import (
    GeminiStream,
    assistant_from_gemini,
    assistant_to_gemini,
    gemini_tools,
    gemini_tools_for,
    to_gemini_contents,
    tool_result_from_gemini,
    tool_result_to_gemini,
)
from .openai_chat import (
    OpenAIChatStream,
    assistant_from_openai_chat,
    assistant_to_openai_chat,
    openai_chat_tool,
    openai_chat_tools,
    to_openai_chat_messages,
    tool_result_from_openai_chat,
    tool_result_to_openai_chat,
)
from .openai_responses import (
    OpenAIResponsesStream,
    assistant_from_openai_responses,
    assistant_to_openai_responses,
    openai_responses_tool,
    openai_responses_tools,
    to_openai_responses_input,
    tool_result_from_openai_responses,
    tool_result_to_openai_responses,
)

__all__ = [
    "ANTHROPIC_NAMES",
    "GEMINI_NAMES",
    "OPENAI_NAMES",
    "PROMPT_GUIDELINES_META_KEY",
    "PROMPT_SNIPPET_META_KEY",
    "STRICT_MAX_DEPTH",
    "AnthropicStream",
    "GeminiStream",
    "NameRule",
    "OpenAIChatStream",
    "OpenAIResponsesStream",
    "ParsedToolResult",
    "ProviderTools",
    "anthropic_tool",
    "anthropic_tools",
    "assistant_from_anthropic",
    "assistant_from_gemini",
    "assistant_from_openai_chat",
    "assistant_from_openai_responses",
    "assistant_to_anthropic",
    "assistant_to_gemini",
    "assistant_to_openai_chat",
    "assistant_to_openai_responses",
    "content_text",
    "gemini_parameters",
    "gemini_schema",
    "gemini_tools",
    "gemini_tools_for",
    "json_schema_dialect",
    "openai_chat_tool",
    "openai_chat_tools",
    "openai_responses_tool",
    "openai_responses_tools",
    "strict_parameters",
    "strict_schema_allowed",
    "to_anthropic_messages",
    "to_gemini_contents",
    "to_openai_chat_messages",
    "to_openai_responses_input",
    "tool_result_from_anthropic",
    "tool_result_from_gemini",
    "tool_result_from_openai_chat",
    "tool_result_from_openai_responses",
    "tool_result_to_anthropic",
    "tool_result_to_gemini",
    "tool_result_to_openai_chat",
    "tool_result_to_openai_responses",
    "tools_prompt_section",
    "unique_ids",
    "wire_names",
]
