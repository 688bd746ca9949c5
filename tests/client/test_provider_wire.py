"""Tool names, call ids and reasoning data across each provider's wire format.

Payloads are written from each provider's documented format (and, where the SDK has
request types, checked with them), not produced by the code under test.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from pydantic import TypeAdapter
from toolwire.client import adapters as ad
from toolwire.client.conversation import (
    AssistantMessage,
    ReasoningBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from tests.provider_checks import check_declarations, sdk
from toolwire.models import CallToolResult, TextContent, ToolDefinition


@functools.cache
def _message(api: str) -> TypeAdapter[Any]:
    """The SDK's type of one message of ``api``'s conversation (imported on first use,
    as in tests/provider_checks.py: the SDKs take seconds to import)."""
    if api == "anthropic":
        from anthropic.types import MessageParam

        return TypeAdapter(MessageParam)
    if api == "chat":
        from openai.types.chat import ChatCompletionMessageParam

        return TypeAdapter(ChatCompletionMessageParam)
    from openai.types.responses import ResponseInputItemParam

    return TypeAdapter(ResponseInputItemParam)


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
NAMES = ["ns.read-file", "1st", "ns_read-file", "x" * 70, "read"]
TOOLS = [ToolDefinition(name=n, description="d", input_schema=SCHEMA) for n in NAMES]
OK = CallToolResult(content=[TextContent(text="ok")])


# --------------------------------------------------------------------------- names


def test_names_each_provider_accepts() -> None:
    openai = ad.wire_names(NAMES, ad.OPENAI_NAMES)
    assert openai["1st"] == "1st"
    assert openai["read"] == "read"
    assert openai["ns_read-file"] == "ns_read-file"  # valid: kept as it is
    assert openai["ns.read-file"].startswith("ns_read-file_")  # rewritten, clashed: tagged
    assert len(openai["ns.read-file"]) == len("ns_read-file_") + 6
    assert openai["x" * 70] == "x" * 64
    gemini = ad.wire_names(NAMES, ad.GEMINI_NAMES)
    assert gemini["ns.read-file"] == "ns.read-file"  # dots and dashes are fine there
    assert gemini["1st"] == "_1st"  # must start with a letter or an underscore
    assert gemini["x" * 70] == "x" * 63


def test_names_are_unique_and_do_not_depend_on_order() -> None:
    for rule in (ad.OPENAI_NAMES, ad.ANTHROPIC_NAMES, ad.GEMINI_NAMES):
        forward = ad.wire_names(NAMES, rule)
        assert forward == ad.wire_names(list(reversed(NAMES)), rule)
        assert len(set(forward.values())) == len(NAMES)
        assert all(rule.valid(w) for w in forward.values())


@pytest.mark.parametrize(
    ("api", "build"),
    [
        ("openai-chat", ad.openai_chat_tools),
        ("openai-responses", ad.openai_responses_tools),
        ("anthropic", ad.anthropic_tools),
        ("gemini", ad.gemini_tools_for),
    ],
)
def test_declared_names_pass_the_provider_checks(api: str, build: Any) -> None:
    tools = build(TOOLS)
    check_declarations(api, tools.declarations)
    assert {tools.real_name(tools.wire_name(n)) for n in NAMES} == set(NAMES)


def _wire(tools: ad.ProviderTools, real: str) -> str:
    return tools.wire_name(real)


def test_openai_chat_calls_come_back_with_the_real_name_streamed_or_not() -> None:
    tools = ad.openai_chat_tools(TOOLS)
    wire = _wire(tools, "ns.read-file")
    assert wire != "ns.read-file"
    response = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": wire, "arguments": '{"path": "a"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    msg = ad.assistant_from_openai_chat(response, tools)
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("ns.read-file", {"path": "a"})]
    stream = ad.OpenAIChatStream(tools)
    stream.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": wire, "arguments": '{"pa'},
                            }
                        ]
                    },
                }
            ]
        }
    )
    assert stream.partial_tool_calls()[0].name == "ns.read-file"
    # Sent back under the provider's name.
    sent = ad.to_openai_chat_messages([UserMessage("hi"), msg], None, tools)
    assert sent[1]["tool_calls"][0]["function"]["name"] == wire
    for m in sent:
        _message("chat").validate_python(m)


def test_anthropic_responses_and_gemini_streams_map_names_back() -> None:
    anthropic = ad.anthropic_tools(TOOLS)
    s = ad.AnthropicStream(anthropic)
    s.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": anthropic.wire_name("1st"),
                "input": {},
            },
        }
    )
    s.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "b"}'},
        }
    )
    assert [(c.name, c.arguments) for c in s.message().tool_calls] == [("1st", {"path": "b"})]

    responses = ad.openai_responses_tools(TOOLS)
    r = ad.OpenAIResponsesStream(responses)
    r.feed(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "type": "function_call",
                "call_id": "call_r",
                "name": responses.wire_name("ns.read-file"),
                "arguments": "",
            },
        }
    )
    r.feed(
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "arguments": '{"path": "c"}',
        }
    )
    assert [c.name for c in r.message().tool_calls] == ["ns.read-file"]

    gemini = ad.gemini_tools_for(TOOLS)
    g = ad.GeminiStream(gemini)
    g.feed(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "_1st", "args": {"path": "d"}}}],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    msg = g.message()
    assert [(c.name, c.arguments) for c in msg.tool_calls] == [("1st", {"path": "d"})]
    result = ToolResultMessage(msg.tool_calls[0].id, "1st", OK)
    contents = ad.to_gemini_contents([UserMessage("u"), msg, result], gemini)
    assert contents[1]["parts"][0]["functionCall"]["name"] == "_1st"
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "_1st"
    for c in contents:
        sdk().genai.Content.model_validate(c)


# --------------------------------------------------------------------------- call ids


def llama_response(*calls: tuple[str | None, str, dict[str, Any]]) -> dict[str, Any]:
    """A chat completion as llama.cpp / Ollama send it: ids repeated or missing."""
    tool_calls = []
    for call_id, name, args in calls:
        tc: dict[str, Any] = {
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        if call_id is not None:
            tc["id"] = call_id
        tool_calls.append(tc)
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "", "tool_calls": tool_calls},
                "finish_reason": "tool_calls",
            }
        ]
    }


def test_repeated_and_missing_call_ids_become_unique() -> None:
    msg = ad.assistant_from_openai_chat(
        llama_response(
            ("call_0", "read", {"path": "a"}),
            ("call_0", "read", {"path": "b"}),
            (None, "read", {"path": "c"}),
            ("", "read", {"path": "d"}),
        )
    )
    ids = [c.id for c in msg.tool_calls]
    assert ids[0] == "call_0"
    assert len(set(ids)) == 4 and all(ids)
    assert [c.arguments["path"] for c in msg.tool_calls] == ["a", "b", "c", "d"]
    # Results pair with calls by position; each goes back under its call's id.
    results = [ToolResultMessage(c.id, c.name, OK) for c in msg.tool_calls]
    sent = ad.to_openai_chat_messages([UserMessage("go"), msg, *results])
    assert [tc["id"] for tc in sent[1]["tool_calls"]] == ids
    assert [m["tool_call_id"] for m in sent[2:]] == ids
    for m in sent:
        _message("chat").validate_python(m)


def test_repeated_ids_in_a_stream_become_unique_and_stay_stable() -> None:
    s = ad.OpenAIChatStream()
    for index in (0, 1):
        s.feed(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": index,
                                    "id": "call_0",
                                    "type": "function",
                                    "function": {"name": "read", "arguments": "{}"},
                                }
                            ]
                        },
                    }
                ]
            }
        )
    first = [c.id for c in s.partial_tool_calls()]
    s.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    final = [c.id for c in s.message().tool_calls]
    assert first == final and final[0] == "call_0" and len(set(final)) == 2


# --------------------------------------------------------------------------- reasoning


def test_anthropic_thinking_blocks_go_back_unchanged() -> None:
    thinking = {"type": "thinking", "thinking": "Look first.", "signature": "EqQBCkgIAR..."}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix..."}
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            thinking,
            redacted,
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
        ],
        "stop_reason": "tool_use",
    }
    msg = ad.assistant_from_anthropic(response)
    result = ToolResultMessage("toolu_1", "read", OK)
    sent = ad.to_anthropic_messages([UserMessage("go"), msg, result])
    assert sent[1] == {
        "role": "assistant",
        "content": [
            thinking,
            redacted,
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
        ],
    }
    for m in sent:
        _message("anthropic").validate_python(m)
    # Another API never gets them.
    assert all("thinking" not in json.dumps(c) for c in ad.to_gemini_contents([msg]))


def test_anthropic_streamed_thinking_keeps_text_and_signature() -> None:
    s = ad.AnthropicStream()
    for event in [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Step "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "one."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCkgIAR"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "a"}'},
        },
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    ]:
        s.feed(event)
    sent = ad.assistant_to_anthropic(s.message())
    assert sent["content"][0] == {
        "type": "thinking",
        "thinking": "Step one.",
        "signature": "EqQBCkgIAR",
    }
    assert sent["content"][1]["type"] == "tool_use"
    _message("anthropic").validate_python(sent)


def test_responses_reasoning_items_go_back_unchanged() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need the file."}],
        "encrypted_content": "gAAAAABo...",
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read",
        "arguments": '{"path": "a"}',
        "status": "completed",
    }
    msg = ad.assistant_from_openai_responses({"status": "completed", "output": [reasoning, call]})
    items = ad.to_openai_responses_input(
        [UserMessage("go"), msg, ToolResultMessage("call_1", "read", OK)]
    )
    assert items[1] == reasoning
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "read",
        "arguments": '{"path": "a"}',
    }
    assert items[3] == {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
    for item in items:
        _message("responses").validate_python(item)
    # Streamed: the finished reasoning item arrives in response.output_item.done.
    s = ad.OpenAIResponsesStream()
    s.feed(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**reasoning, "encrypted_content": None},
        }
    )
    s.feed({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
    s.feed({"type": "response.output_item.done", "output_index": 1, "item": call})
    s.feed({"type": "response.completed", "response": {"status": "completed"}})
    assert ad.assistant_to_openai_responses(s.message())[0] == reasoning


def test_gemini_thought_signatures_go_back_on_their_parts() -> None:
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Plan: read it.", "thought": True},
                        {"text": "Reading.", "thoughtSignature": "Ct0BAVSoXO8="},
                        {
                            "functionCall": {"name": "read", "args": {"path": "a"}},
                            "thoughtSignature": "CiwBVKhc7w==",
                        },
                        {"functionCall": {"name": "read", "args": {"path": "b"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    msg = ad.assistant_from_gemini(response)
    assert [c.thought_signature for c in msg.tool_calls] == ["CiwBVKhc7w==", None]
    content = ad.assistant_to_gemini(msg)
    a, b = msg.tool_calls
    assert content == {
        "role": "model",
        "parts": [
            {"text": "Plan: read it.", "thought": True},
            {"text": "Reading.", "thoughtSignature": "Ct0BAVSoXO8="},
            {
                "functionCall": {"id": a.id, "name": "read", "args": {"path": "a"}},
                "thoughtSignature": "CiwBVKhc7w==",
            },
            {"functionCall": {"id": b.id, "name": "read", "args": {"path": "b"}}},
        ],
    }
    sdk().genai.Content.model_validate(content)


def test_reasoning_of_one_api_is_not_sent_to_another() -> None:
    msg = AssistantMessage(
        "x",
        [ToolCall("c", "read", {})],
        "toolUse",
        reasoning=[
            ReasoningBlock("anthropic", {"type": "thinking", "thinking": "t", "signature": "s"})
        ],
    )
    assert ad.assistant_to_openai_responses(msg)[0]["type"] == "message"
    assert ad.assistant_to_gemini(msg)["parts"][0] == {"text": "x"}
