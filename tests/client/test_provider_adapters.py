"""Provider adapters: tool definitions, calls, results and streams in each model API's format.

Pure functions, no network. Each format is a row of the same tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from toolwire.client import adapters as ad
from toolwire.client.conversation import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from toolwire.client.partial_json import (
    ArgumentsError,
    parse_final_arguments,
    parse_partial_arguments,
)

from toolwire.models import CallToolResult, ImageContent, TextContent, ToolDefinition

READ = ToolDefinition(
    name="read",
    description="Read a file.",
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path.", "title": "Path"},
            "offset": {"type": "integer", "default": 1},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    _meta={
        "toolwire/promptSnippet": "Read a text file or an image.",
        "toolwire/promptGuidelines": ["Read a file before editing it.", "Prefer read to cat."],
    },
)
STRICT = ToolDefinition(
    name="move",
    description="Move a file.",
    input_schema={
        "type": "object",
        "properties": {
            "src": {"type": "string"},
            "dst": {"type": ["string", "null"]},
            "opts": {
                "type": "object",
                "properties": {"force": {"type": "boolean"}},
                "required": ["force"],
                "additionalProperties": False,
            },
        },
        "required": ["src", "dst", "opts"],
        "additionalProperties": False,
    },
)
NO_PARAMS = ToolDefinition(name="now", input_schema={"type": "object"})


# --------------------------------------------------------------------------- definitions


# READ in OpenAI's strict form, written from OpenAI's structured-outputs rules: every
# property required, the optional one nullable, additionalProperties false, no
# $schema/title/default.
READ_STRICT = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path."},
        "offset": {"type": ["integer", "null"]},
    },
    "required": ["path", "offset"],
    "additionalProperties": False,
}


def test_openai_chat_tool_shape_in_strict_form() -> None:
    assert ad.openai_chat_tool(READ) == {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": READ_STRICT,
            "strict": True,
        },
    }
    move = ad.openai_chat_tool(STRICT)
    assert move["function"]["strict"] is True
    assert move["function"]["parameters"] == STRICT.input_schema
    assert ad.openai_chat_tool(READ, strict=False)["function"] == {
        "name": "read",
        "description": "Read a file.",
        "parameters": READ.input_schema,
    }
    # The definition's own schema is never modified.
    ad.openai_chat_tool(NO_PARAMS)
    assert NO_PARAMS.input_schema == {"type": "object"}
    assert ad.openai_chat_tool(NO_PARAMS)["function"]["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_strict_form_drops_the_null_it_invited_for_an_optional_field() -> None:
    tools = ad.openai_chat_tools([READ])
    call = tools.call_from_wire(ToolCall("c", "read", {"path": "a", "offset": None}))
    assert call.arguments == {"path": "a"}
    assert tools.call_from_wire(ToolCall("c", "read", {"path": "a", "offset": 2})).arguments == {
        "path": "a",
        "offset": 2,
    }


def test_a_map_cannot_be_strict_and_keeps_its_schema() -> None:
    tool = ToolDefinition(
        name="env",
        input_schema={
            "type": "object",
            "properties": {"vars": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["vars"],
        },
    )
    assert ad.openai_chat_tool(tool)["function"] == {
        "name": "env",
        "description": "",
        "parameters": tool.input_schema,
    }


def test_openai_responses_tool_is_flat_with_explicit_strict() -> None:
    read = ad.openai_responses_tool(READ)
    assert read == {
        "type": "function",
        "name": "read",
        "description": "Read a file.",
        "parameters": READ_STRICT,
        "strict": True,
    }
    assert ad.openai_responses_tool(READ, strict=False) == {
        "type": "function",
        "name": "read",
        "description": "Read a file.",
        "parameters": READ.input_schema,
        "strict": False,
    }


def test_anthropic_tool_uses_input_schema() -> None:
    assert ad.anthropic_tool(READ) == {
        "name": "read",
        "description": "Read a file.",
        "input_schema": READ.input_schema,
    }


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
        **extra,
    }


@pytest.mark.parametrize(
    ("schema", "allowed"),
    [
        (obj({"a": {"type": "string"}}), True),
        (obj({}), True),
        (obj({"a": {"type": ["string", "null"]}}), True),
        (obj({"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}), True),
        (obj({"a": {"type": "array", "items": obj({"b": {"type": "integer"}})}}), True),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, False),
        ({**obj({"a": {"type": "string"}}), "required": []}, False),
        (obj({"a": {"type": "object", "properties": {"b": {"type": "string"}}}}), False),
        (obj({"a": {"type": "array", "items": {"type": "object", "properties": {}}}}), False),
        (obj({"a": {"type": "string", "default": "x"}}), False),
        (obj({"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), False),
        (obj({"a": {"allOf": [{"type": "string"}]}}), False),
        (obj({"a": {"$ref": "#/$defs/X"}}, **{"$defs": {"X": {"type": "object"}}}), False),
        ({"type": "array", "items": {"type": "string"}}, False),
    ],
)
def test_strict_schema_allowed(schema: dict[str, Any], allowed: bool) -> None:
    assert ad.strict_schema_allowed(schema) is allowed


def test_strict_rejects_nesting_deeper_than_ten() -> None:
    node: dict[str, Any] = obj({"leaf": {"type": "string"}})
    for _ in range(9):
        node = obj({"n": node})
    assert ad.strict_schema_allowed(node)  # 10 levels
    assert not ad.strict_schema_allowed(obj({"n": node}))  # 11


@pytest.mark.parametrize(
    ("schema", "reduced"),
    [
        (
            READ.input_schema,
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path."},
                    "offset": {"type": "integer"},
                },
                "required": ["path"],
            },
        ),
        (
            {
                "type": "object",
                "properties": {"item": {"$ref": "#/$defs/Item"}},
                "$defs": {
                    "Item": {
                        "type": "object",
                        "title": "Item",
                        "properties": {"n": {"type": "integer", "minimum": 0}},
                        "required": ["n", "ghost"],
                    }
                },
            },
            {
                "type": "object",
                "properties": {
                    "item": {
                        "type": "object",
                        "properties": {"n": {"type": "integer", "minimum": 0}},
                        "required": ["n"],
                    }
                },
            },
        ),
        (
            {"type": "object", "properties": {"x": {"type": ["string", "null"]}}},
            {"type": "object", "properties": {"x": {"type": "string", "nullable": True}}},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "x": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "d"}
                },
            },
            {
                "type": "object",
                "properties": {"x": {"type": "integer", "nullable": True, "description": "d"}},
            },
        ),
        (
            {"type": "object", "properties": {"m": {"enum": ["a", "b"]}, "c": {"const": "k"}}},
            {
                "type": "object",
                "properties": {
                    "m": {"type": "string", "enum": ["a", "b"]},
                    "c": {"type": "string", "enum": ["k"]},
                },
            },
        ),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}},
            {
                "type": "object",
                "properties": {"n": {"type": "string", "enum": ["1", "2"]}},
            },
        ),
        (
            {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "boolean"}}},
                ]
            },
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                "required": ["a"],
            },
        ),
        (
            {
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/Node"}},
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                        },
                    }
                },
            },
            {
                "type": "object",
                "properties": {
                    "tree": {
                        "type": "object",
                        "properties": {
                            "kids": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "kids": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "kids": {
                                                        "type": "array",
                                                        "items": {
                                                            "type": "string",
                                                            "description": "JSON text: a value "
                                                            "of the same shape as its parent",
                                                        },
                                                    }
                                                },
                                            },
                                        }
                                    },
                                },
                            }
                        },
                    }
                },
            },
        ),
        (
            {"type": "object", "properties": {"tags": {"type": "array"}}},
            {
                "type": "object",
                "properties": {
                    "tags": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "description": "any JSON value, written as JSON text",
                        },
                    }
                },
            },
        ),
    ],
    ids=[
        "plain",
        "ref",
        "type-array",
        "anyof-null",
        "enum-const",
        "int-enum",
        "allof",
        "cycle",
        "items",
    ],
)
def test_gemini_schema_reduction(schema: dict[str, Any], reduced: dict[str, Any]) -> None:
    assert ad.gemini_schema(schema) == reduced


def test_gemini_schema_keeps_only_the_accepted_keywords() -> None:
    allowed = {"type", "properties", "required", "items", "enum", "description", "nullable"}

    def keys(node: Any) -> set[str]:
        if not isinstance(node, dict):
            return set()
        out = set(node)
        for k, v in node.items():
            if k == "properties":
                for sub in v.values():
                    out |= keys(sub)
            elif k == "items":
                out |= keys(v)
        return out

    assert keys(ad.gemini_schema(READ.input_schema)) <= allowed
    assert keys(ad.gemini_schema(STRICT.input_schema)) <= allowed


def test_gemini_tools_are_function_declarations() -> None:
    out = ad.gemini_tools([READ, NO_PARAMS])
    assert len(out) == 1
    decls = out[0]["function_declarations"]
    assert [d["name"] for d in decls] == ["read", "now"]
    assert decls[0]["parameters"]["required"] == ["path"]
    assert "parameters" not in decls[1]  # Gemini refuses an object without properties
    assert ad.gemini_tools([]) == []


# --------------------------------------------------------------------------- system prompt


def test_tools_prompt_section_lists_only_tools_with_snippets() -> None:
    other = ToolDefinition(
        name="grep",
        input_schema={"type": "object"},
        _meta={"toolwire/promptGuidelines": ["Prefer read to cat.", "Search before reading."]},
    )
    text = ad.tools_prompt_section([READ, NO_PARAMS, other])
    assert text == (
        "Available tools:\n"
        "- read: Read a text file or an image.\n\n"
        "Guidelines:\n"
        "- Read a file before editing it.\n"
        "- Prefer read to cat.\n"
        "- Search before reading."
    )
    assert ad.tools_prompt_section([NO_PARAMS]) == ""


# --------------------------------------------------------------------------- round trips


@dataclass(frozen=True)
class Format:
    name: str
    to_assistant: Callable[[AssistantMessage], Any]
    from_assistant: Callable[[Any], AssistantMessage]
    to_result: Callable[[ToolResultMessage], Any]
    from_result: Callable[[Any], ad.ParsedToolResult]
    carries_error_flag: bool


def _chat_response(m: dict[str, Any]) -> AssistantMessage:
    reason = "tool_calls" if m.get("tool_calls") else "stop"
    return ad.assistant_from_openai_chat({"choices": [{"message": m, "finish_reason": reason}]})


FORMATS = [
    Format(
        "openai-chat",
        ad.assistant_to_openai_chat,
        _chat_response,
        ad.tool_result_to_openai_chat,
        ad.tool_result_from_openai_chat,
        False,
    ),
    Format(
        "openai-responses",
        ad.assistant_to_openai_responses,
        lambda items: ad.assistant_from_openai_responses({"status": "completed", "output": items}),
        ad.tool_result_to_openai_responses,
        ad.tool_result_from_openai_responses,
        False,
    ),
    Format(
        "anthropic",
        ad.assistant_to_anthropic,
        lambda m: ad.assistant_from_anthropic(
            {**m, "stop_reason": "tool_use" if len(m["content"]) > 1 else "end_turn"}
        ),
        ad.tool_result_to_anthropic,
        ad.tool_result_from_anthropic,
        True,
    ),
    Format(
        "gemini",
        ad.assistant_to_gemini,
        lambda c: ad.assistant_from_gemini(
            {"candidates": [{"content": c, "finishReason": "STOP"}]}
        ),
        ad.tool_result_to_gemini,
        ad.tool_result_from_gemini,
        True,
    ),
]
FORMAT_IDS = [f.name for f in FORMATS]

CALLS = [
    ToolCall("call_1", "read", {"path": "a.py", "offset": 3}),
    ToolCall("call_2", "bash", {"command": "ls -la", "env": {"A": "é✓"}, "flags": [1, None]}),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_assistant_message_round_trip(fmt: Format) -> None:
    message = AssistantMessage("Let me look.", CALLS, "toolUse")
    back = fmt.from_assistant(json.loads(json.dumps(fmt.to_assistant(message))))
    assert back.text == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in back.tool_calls] == [
        (c.id, c.name, c.arguments) for c in CALLS
    ]
    assert back.stop_reason == "toolUse"
    assert all(c.invalid_arguments is None for c in back.tool_calls)
    plain = fmt.from_assistant(fmt.to_assistant(AssistantMessage("Done.")))
    assert (plain.text, plain.tool_calls, plain.stop_reason) == ("Done.", [], "stop")


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("is_error", [False, True])
def test_tool_result_round_trip(fmt: Format, is_error: bool) -> None:
    result = CallToolResult(
        content=[TextContent(text="line 1"), TextContent(text="line 2 ✓")], is_error=is_error
    )
    back = fmt.from_result(
        json.loads(json.dumps(fmt.to_result(ToolResultMessage("call_7", "read", result))))
    )
    assert back.tool_call_id == "call_7"
    assert back.text == "line 1\nline 2 ✓"
    if fmt.carries_error_flag:
        assert back.is_error is is_error


def test_images_in_results_reach_each_format() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="Read image file [image/png]"),
            ImageContent(data="iVBO", mime_type="image/png"),
        ]
    )
    msg = ToolResultMessage("c1", "read", result)
    anthropic = ad.tool_result_to_anthropic(msg)["content"]
    assert anthropic[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    responses = ad.tool_result_to_openai_responses(msg)["output"]
    assert responses[1] == {"type": "input_image", "image_url": "data:image/png;base64,iVBO"}
    chat = ad.to_openai_chat_messages([UserMessage("look"), msg])
    assert chat[1]["content"] == "Read image file [image/png]\n[image image/png]"
    assert chat[2]["role"] == "user"
    assert chat[2]["content"][1]["image_url"]["url"] == "data:image/png;base64,iVBO"


def test_conversations_group_results_as_each_api_requires() -> None:
    ok = CallToolResult(content=[TextContent(text="ok")])
    convo = [
        UserMessage("go"),
        AssistantMessage("", CALLS, "toolUse"),
        ToolResultMessage("call_1", "read", ok),
        ToolResultMessage("call_2", "bash", ok),
        AssistantMessage("done"),
    ]
    chat = ad.to_openai_chat_messages(convo, "be brief")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert chat[2]["content"] is None
    anthropic = ad.to_anthropic_messages(convo)
    assert [m["role"] for m in anthropic] == ["user", "assistant", "user", "assistant"]
    assert [b["tool_use_id"] for b in anthropic[2]["content"]] == ["call_1", "call_2"]
    gemini = ad.to_gemini_contents(convo)
    assert [c["role"] for c in gemini] == ["user", "model", "user", "model"]
    assert len(gemini[2]["parts"]) == 2
    responses = ad.to_openai_responses_input(convo)
    assert [i.get("type", i.get("role")) for i in responses] == [
        "user",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (
            lambda: ad.assistant_from_openai_chat(
                {"choices": [{"message": {"content": "x"}, "finish_reason": "length"}]}
            ),
            "length",
        ),
        (
            lambda: ad.assistant_from_openai_chat(
                {"choices": [{"message": {}, "finish_reason": "content_filter"}]}
            ),
            "error",
        ),
        (
            lambda: ad.assistant_from_anthropic({"content": [], "stop_reason": "max_tokens"}),
            "length",
        ),
        (lambda: ad.assistant_from_anthropic({"content": [], "stop_reason": "refusal"}), "error"),
        (
            lambda: ad.assistant_from_gemini(
                {"candidates": [{"content": {"parts": []}, "finishReason": "MAX_TOKENS"}]}
            ),
            "length",
        ),
        (
            lambda: ad.assistant_from_gemini(
                {"candidates": [{"content": {"parts": []}, "finishReason": "SAFETY"}]}
            ),
            "error",
        ),
        (
            lambda: ad.assistant_from_openai_responses(
                {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                    "output": [],
                }
            ),
            "length",
        ),
        (lambda: ad.assistant_from_openai_responses({"status": "failed", "output": []}), "error"),
    ],
    ids=[
        "chat-length",
        "chat-filter",
        "anthropic-max",
        "anthropic-refusal",
        "gemini-max",
        "gemini-safety",
        "responses-incomplete",
        "responses-failed",
    ],
)
def test_stop_reasons_are_normalised(build: Callable[[], AssistantMessage], reason: str) -> None:
    assert build().stop_reason == reason


def test_a_call_whose_final_arguments_are_not_json_is_marked_invalid() -> None:
    msg = ad.assistant_from_openai_chat(
        {
            "choices": [
                {
                    "message": {
                        "tool_calls": [
                            {
                                "id": "a",
                                "function": {"name": "read", "arguments": '{"path": "x.py"'},
                            },
                            {"id": "b", "function": {"name": "read", "arguments": "[1]"}},
                            {"id": "c", "function": {"name": "ls", "arguments": ""}},
                        ]
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    a, b, c = msg.tool_calls
    assert a.invalid_arguments is not None and "not valid JSON" in a.invalid_arguments
    assert a.arguments == {"path": "x.py"}  # best effort, for display only
    assert b.invalid_arguments is not None and "must be a JSON object" in b.invalid_arguments
    assert (c.arguments, c.invalid_arguments) == ({}, None)


def test_gemini_calls_without_ids_get_unique_ones() -> None:
    msg = ad.assistant_from_gemini(
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"functionCall": {"name": "ls", "args": {}}},
                            {"functionCall": {"name": "ls", "args": {"path": "a"}}},
                        ]
                    }
                }
            ]
        }
    )
    ids = [c.id for c in msg.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert msg.stop_reason == "toolUse"


# --------------------------------------------------------------------------- partial JSON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("{", {}),
        ('{"pa', {}),
        ('{"path"', {}),
        ('{"path":', {}),
        ('{"path": "src/ma', {"path": "src/ma"}),
        ('{"path": "a\\', {"path": "a"}),
        ('{"path": "a\\"b', {"path": 'a"b'}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b": tr', {"a": 1}),
        ('{"a": 12', {"a": 12}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": "x"}, ', {"a": {"b": "x"}}),
        ('{"a": {"b": [{"c": "d', {"a": {"b": [{"c": "d"}]}}),
        ('{"a": "\\u00e9', {"a": "é"}),
        ('{"a": "\\u00', {"a": ""}),
        ('{"a": "brace } and [ in text', {"a": "brace } and [ in text"}),
        ('{"a": 1}', {"a": 1}),
        ("[1, 2", {}),
        ("nonsense", {}),
    ],
)
def test_partial_arguments(text: str, expected: dict[str, Any]) -> None:
    assert parse_partial_arguments(text) == expected


def test_every_prefix_of_an_object_parses_without_raising() -> None:
    full = json.dumps(
        {"path": "a/b.py", "edits": [{"oldText": 'x "q"\n', "newText": "y\\z"}], "n": -1.5e3}
    )
    seen = []
    for i in range(len(full) + 1):
        got = parse_partial_arguments(full[:i])
        assert isinstance(got, dict)
        seen.append(got)
    assert seen[-1] == json.loads(full)


@pytest.mark.parametrize(("text", "expected"), [("", {}), (" \n", {}), ('{"a": [1]}', {"a": [1]})])
def test_final_arguments_strict_ok(text: str, expected: dict[str, Any]) -> None:
    assert parse_final_arguments(text) == expected


@pytest.mark.parametrize("text", ['{"a": 1', "[1]", '"x"', "{'a': 1}", '{"a": 1} {"b": 2}'])
def test_final_arguments_strict_refuses(text: str) -> None:
    with pytest.raises(ArgumentsError):
        parse_final_arguments(text)


# --------------------------------------------------------------------------- streams


def chat_chunks() -> list[dict[str, Any]]:
    def tc(index: int, args: str, **first: Any) -> dict[str, Any]:
        fn: dict[str, Any] = {"arguments": args}
        if "name" in first:
            fn["name"] = first["name"]
        out: dict[str, Any] = {"index": index, "function": fn}
        if "id" in first:
            out["id"] = first["id"]
            out["type"] = "function"
        return {"choices": [{"index": 0, "delta": {"tool_calls": [out]}}]}

    return [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Look"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ing."}}]},
        tc(0, "", id="call_a", name="read"),
        tc(0, '{"pa'),
        tc(1, "", id="call_b", name="ls"),
        tc(0, 'th": "x.py"}'),
        tc(1, ""),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"total_tokens": 9}},
    ]


def test_openai_chat_stream_assembles_calls() -> None:
    s = ad.OpenAIChatStream()
    partials = []
    added = ""
    for chunk in chat_chunks():
        added += s.feed(chunk)
        partials.append([c.arguments for c in s.partial_tool_calls()])
    assert added == "Looking."
    assert [{}] in partials and [{}, {}] in partials  # '{"pa' is still {}
    msg = s.message()
    assert msg.text == "Looking."
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("call_a", "read", {"path": "x.py"}),
        ("call_b", "ls", {}),
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.usage == {"total_tokens": 9}


def test_openai_chat_stream_cut_off_by_length_keeps_best_effort_args_but_marks_invalid() -> None:
    s = ad.OpenAIChatStream()
    s.feed(
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c",
                                "function": {
                                    "name": "write",
                                    "arguments": '{"path": "a", "content": "hel',
                                },
                            }
                        ]
                    }
                }
            ]
        }
    )
    s.feed({"choices": [{"delta": {}, "finish_reason": "length"}]})
    assert s.partial_tool_calls()[0].arguments == {"path": "a", "content": "hel"}
    msg = s.message()
    assert msg.stop_reason == "length"
    assert msg.tool_calls[0].invalid_arguments is not None


def test_anthropic_stream_assembles_calls() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "a'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '.py"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    s = ad.AnthropicStream()
    mid = None
    for i, e in enumerate(events):
        s.feed(e)
        if i == 6:
            mid = s.partial_tool_calls()[0].arguments
    assert mid == {"path": "a"}
    msg = s.message()
    assert msg.text == "Hi"
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("toolu_1", "read", {"path": "a.py"})
    ]
    assert msg.stop_reason == "toolUse"


def test_openai_responses_stream_assembles_calls() -> None:
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Sure"},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"type": "function_call", "call_id": "call_r", "name": "grep", "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "delta": '{"pattern": "TO',
        },
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": 'DO"}'},
        {
            "type": "response.function_call_arguments.done",
            "output_index": 1,
            "arguments": '{"pattern": "TODO"}',
        },
        {
            "type": "response.completed",
            "response": {"status": "completed", "usage": {"total_tokens": 3}},
        },
    ]
    s = ad.OpenAIResponsesStream()
    for e in events[:4]:
        s.feed(e)
    assert s.partial_tool_calls()[0].arguments == {"pattern": "TO"}
    for e in events[4:]:
        s.feed(e)
    msg = s.message()
    assert msg.text == "Sure"
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("call_r", "grep", {"pattern": "TODO"})
    ]
    assert msg.stop_reason == "toolUse"


def test_gemini_stream_collects_whole_calls() -> None:
    s = ad.GeminiStream()
    s.feed({"candidates": [{"content": {"role": "model", "parts": [{"text": "One "}]}}]})
    s.feed(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "sec"},
                            {"functionCall": {"id": "g1", "name": "ls", "args": {"path": "."}}},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    msg = s.message()
    assert msg.text == "One sec"
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [("g1", "ls", {"path": "."})]
    assert msg.stop_reason == "toolUse"
