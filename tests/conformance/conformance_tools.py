"""The tools the MCP conformance suite's tool scenarios call (names and content as the suite
expects them; see tests/conformance/bridge.py for how the suite reaches a stdio host)."""

from __future__ import annotations

import base64
from typing import Any

import anyio
from toolwire.host import ToolContext, ToolResult, tool

# A 1x1 PNG and a tiny WAV header: the suite checks types and MIME types, not pixels.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100ffff03000006000557bfab"
        "d40000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt " + bytes(24)).decode()


@tool(name="test_simple_text")
async def simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool(name="test_image_content")
async def image_content() -> ToolResult:
    """Returns an image."""
    return ToolResult([{"type": "image", "data": PNG, "mimeType": "image/png"}])


@tool(name="test_audio_content")
async def audio_content() -> ToolResult:
    """Returns audio."""
    return ToolResult([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])


@tool(name="test_embedded_resource")
async def embedded_resource() -> ToolResult:
    """Returns an embedded resource."""
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ToolResult([{"type": "resource", "resource": resource}])


@tool(name="test_multiple_content_types")
async def multiple_content_types() -> ToolResult:
    """Returns text, an image and a resource."""
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": '{"test": "data", "value": 123}',
    }
    return ToolResult(
        [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": resource},
        ]
    )


@tool(name="test_error_handling")
async def error_handling() -> str:
    """Always fails."""
    raise ValueError("This tool intentionally returns an error for testing")


@tool(name="test_tool_with_progress")
async def tool_with_progress(ctx: ToolContext) -> str:
    """Reports progress 0, 50, 100 of 100."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, total=100, message=f"{step}%")
        await anyio.sleep(0.05)
    return "Progress test completed"


# ---------------------------------------------------------------- server-stateless diagnostics

_registry: Any = None


def register(registry: Any) -> None:
    """Loading hook: keep the registry for ``test_trigger_tool_change``."""
    global _registry
    _registry = registry


@tool(name="test_missing_capability")
async def missing_capability(ctx: ToolContext) -> str:
    """Needs sampling (a request without it gets -32021)."""
    reply = await ctx.sample("Say hi", max_tokens=10)
    return str((reply.get("content") or {}).get("text"))


@tool(name="test_streaming_elicitation")
async def streaming_elicitation(ctx: ToolContext) -> str:
    """Asks the user (an input-required result in 2026-07-28, never a request)."""
    answer = await ctx.elicit("Continue?", {"type": "object", "properties": {}})
    return f"elicitation {answer.get('action')}"


@tool(name="test_logging_tool")
async def logging_tool(ctx: ToolContext) -> str:
    """Logs one info entry (sent only when the request asked for logs)."""
    await ctx.log("info", "logging tool ran")
    return "logged"


@tool(name="test_trigger_tool_change")
async def trigger_tool_change() -> str:
    """Adds a tool, so listeners get a tools list change."""
    n = len(_registry)

    def extra() -> str:
        return "extra"

    extra.__doc__ = "Added by test_trigger_tool_change."
    _registry.add(tool(name=f"test_added_tool_{n}")(extra))
    return "changed"


# ---------------------------------------------------------------- input-required results

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tool(name="test_input_required_result_elicitation")
async def irr_elicitation(ctx: ToolContext) -> str:
    """Asks for a user name under the key user_name."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {(answer.get('content') or {}).get('name', 'unknown')} ({answer.get('action')})"


@tool(name="test_input_required_result_sampling")
async def irr_sampling(ctx: ToolContext) -> str:
    """Asks the model."""
    reply = await ctx.sample("What is the capital of France?", max_tokens=50)
    return f"Model said: {(reply.get('content') or {}).get('text')}"


@tool(name="test_input_required_result_list_roots")
async def irr_roots(ctx: ToolContext) -> str:
    """Asks for the roots."""
    roots = await ctx.list_roots()
    return f"{len(roots)} roots"


@tool(name="test_input_required_result_request_state")
async def irr_state(ctx: ToolContext) -> str:
    """Asks once; the answer comes back with the signed state."""
    await ctx.elicit("Confirm?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return "state-ok"


@tool(name="test_input_required_result_multi_round")
async def irr_multi_round(ctx: ToolContext) -> str:
    """Two questions, so two rounds with different states."""
    await ctx.elicit("First?", {"type": "object", "properties": {}})
    await ctx.elicit("Second?", {"type": "object", "properties": {}})
    return "two rounds done"


@tool(name="test_input_required_result_tampered_state")
async def irr_tampered(ctx: ToolContext) -> str:
    """Asks once; a tampered state on the retry is refused by the host."""
    await ctx.elicit("Confirm?", {"type": "object", "properties": {}})
    return "not tampered"


@tool(name="test_input_required_result_capabilities")
async def irr_capabilities(ctx: ToolContext) -> str:
    """Asks only through what the request declared."""
    caps = ctx.client_capabilities
    if "elicitation" in caps:
        await ctx.elicit("Name?", NAME_FORM)
    if "sampling" in caps:
        await ctx.sample("Hi?", max_tokens=10)
    if "roots" in caps:
        await ctx.list_roots()
    return "asked what was declared"


@tool(name="test_input_required_result_multiple_inputs")
async def irr_multiple(ctx: ToolContext) -> str:
    """Asks the user, the model and for the roots in one round."""
    name, reply, roots = await ctx.gather(
        ctx.elicit("Name?", NAME_FORM),
        ctx.sample("Capital of France?", max_tokens=20),
        ctx.list_roots(),
    )
    return f"{name.get('action')} / {(reply.get('content') or {}).get('text')} / {len(roots)} roots"


# ---------------------------------------------------------------------------- 2025-11-25 only
# (server→client requests and unsolicited-by-request logs: these scenarios exist only there)


@tool(name="test_tool_with_logging")
async def tool_with_logging(ctx: ToolContext) -> str:
    """Sends three log messages while it runs."""
    for i in range(3):
        await ctx.log("info", f"log message {i + 1}")
    return "logged three messages"


@tool(name="test_sampling")
async def sampling(prompt: str, ctx: ToolContext) -> str:
    """Asks the client's model to answer ``prompt``; returns its text."""
    answer = await ctx.sample(prompt, max_tokens=100)
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return f"LLM response: {text}"


@tool(name="test_elicitation")
async def elicitation(message: str, ctx: ToolContext) -> str:
    """Asks the user for a username and an email; returns the answer."""
    schema = {
        "type": "object",
        "properties": {"username": {"type": "string"}, "email": {"type": "string"}},
        "required": ["username", "email"],
    }
    answer = await ctx.elicit(message, schema)
    return f"User response: {answer.get('action')} {answer.get('content')}"


@tool(name="test_elicitation_sep1034_defaults")
async def elicitation_defaults(ctx: ToolContext) -> str:
    """Asks for a form whose fields of every primitive type carry a default (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = await ctx.elicit("Confirm your details", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


@tool(name="test_elicitation_sep1330_enums")
async def elicitation_enums(ctx: ToolContext) -> str:
    """Asks for a form with the five enum shapes of SEP-1330."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": _titled(
                    ("value1", "First Option"),
                    ("value2", "Second Option"),
                    ("value3", "Third Option"),
                ),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": _titled(
                        ("value1", "First Choice"),
                        ("value2", "Second Choice"),
                        ("value3", "Third Choice"),
                    )
                },
            },
        },
    }
    answer = await ctx.elicit("Pick your options", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


# ------------------------------------------------------------------------------ 2026-07-28

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(name="json_schema_2020_12_tool", input_schema=JSON_SCHEMA_2020_12)
async def json_schema_2020_12(arguments: dict[str, Any]) -> str:
    """Takes a contact described with Draft 2020-12 keywords (listed unchanged)."""
    return f"contact for {arguments.get('name')}"


REGION_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


@tool(name="test_custom_header", input_schema=REGION_SCHEMA)
async def custom_header(arguments: dict[str, Any]) -> str:
    """Echoes ``region``, which HTTP clients mirror in the ``Mcp-Param-Region`` header."""
    return f"region {arguments['region']}"


@tool(name="test_reconnection")
async def reconnection(ctx: ToolContext) -> str:
    """Logs one line (so the answer streams as SSE, with event ids), then returns."""
    await ctx.log("info", "reconnection test running")
    return "Reconnection test completed"
