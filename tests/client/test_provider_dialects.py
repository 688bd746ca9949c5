"""Each provider's declaration of every tool is accepted by the provider, and a call
shaped by it validates on the host.

For every built-in tool and a gallery of tricky declarations, and for each API, the
request's declarations pass the provider's SDK request types and documented rules
(tests/provider_checks.py); then example calls generated from the provider's schema are
mapped back the way the adapter maps a model's call back and checked by the host's own
validator (``Tool.validate``, what ``tools/call`` runs). Literal payloads pin each fault
the converters fix.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from toolwire.client import adapters as ad
from toolwire.client.conversation import ToolCall
from toolwire.host.builtins import builtin_tools
from toolwire.host.tools.arguments import ArgumentError
from toolwire.host.tools.decorator import build_tool, tool
from toolwire.host.tools.definition import Tool

from tests.provider_checks import check_declarations, example
from toolwire.models import ToolDefinition

# --------------------------------------------------------------------------- the gallery


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Point(BaseModel):
    x: int
    y: int = 0
    label: str | None = None


class Node(BaseModel):
    name: str
    children: list[Node] = []


@tool
def optional(path: str, offset: int | None = None, limit: int = 10) -> str:
    """Optional parameters with defaults."""
    return ""


@tool
def literal(mode: Literal["r", "w"], level: Literal[1, 2, 3], on: Literal[True] = True) -> str:
    """Literal strings, numbers and a boolean."""
    return ""


@tool
def enums(color: Color, maybe: Color | None = None) -> str:
    """An enum.Enum with int values."""
    return ""


@tool
def nested(origin: Point, path: list[Point], box: tuple[Point, Point] | None = None) -> str:
    """Nested pydantic models."""
    return ""


@tool
def recursive(tree: Node, note: str = "") -> str:
    """A recursive pydantic model (as one parameter of two: a tool whose only parameter is
    a recursive model has a root ``$ref`` schema, a host-side case of its own)."""
    return ""


@tool
def maps(env: dict[str, int], groups: dict[str, list[str]] | None = None) -> str:
    """Maps (dict[str, X])."""
    return ""


@tool
def tuples(pair: tuple[int, str], xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> str:
    """Tuples."""
    return ""


@tool
def unions(value: int | str, target: Point | list[int] | None = None) -> str:
    """Unions."""
    return ""


@tool
def constrained(
    name: Annotated[str, Field(min_length=2, max_length=8)],
    ratio: Annotated[float, Field(gt=0, lt=1)],
    count: Annotated[int, Field(gt=0, le=50)],
    tags: Annotated[list[str], Field(min_length=1, max_length=3)],
) -> str:
    """Annotated constraints."""
    return ""


@tool
def anything(data: Any, free: dict[str, Any]) -> str:
    """Unconstrained values."""
    return ""


def _raw(name: str, schema: dict[str, Any]) -> Callable[..., Any]:
    @tool(name=name, input_schema=schema)
    def handler(args: dict[str, Any]) -> str:
        """A raw schema."""
        return ""

    return handler


SIBLING_REF = {
    "type": "object",
    "properties": {
        "src": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
            "required": ["path", "line"],
            "additionalProperties": False,
        },
        "dst": {"$ref": "#/properties/src"},
    },
    "required": ["src", "dst"],
}
UNTYPED_ENUM = {
    "type": "object",
    "properties": {"level": {"enum": [1, 2, 3]}, "mode": {"const": 0.5}},
    "required": ["level"],
}
ROOT_RECURSION = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}},
    "required": ["name"],
}
DRAFT7_DEFINITIONS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"Span": {"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]}},
    "properties": {"span": {"$ref": "#/definitions/Span"}, "kind": {"enum": ["a", None]}},
    "required": ["span"],
}

GALLERY: list[Callable[..., Any]] = [
    optional,
    literal,
    enums,
    nested,
    recursive,
    maps,
    tuples,
    unions,
    constrained,
    anything,
    _raw("sibling_ref", SIBLING_REF),
    _raw("untyped_enum", UNTYPED_ENUM),
    _raw("root_recursion", ROOT_RECURSION),
    _raw("draft7_definitions", DRAFT7_DEFINITIONS),
]
TOOLS: list[Tool] = [build_tool(fn) for fn in [*builtin_tools(), *GALLERY]]
DEFINITIONS = [ToolDefinition.model_validate(t.definition()) for t in TOOLS]
BY_NAME = {t.name: t for t in TOOLS}

APIS: dict[str, Callable[[list[ToolDefinition]], ad.ProviderTools]] = {
    "openai-chat": ad.openai_chat_tools,
    "openai-responses": ad.openai_responses_tools,
    "anthropic": ad.anthropic_tools,
    "gemini": ad.gemini_tools_for,
}


def _params(api: str, decl: dict[str, Any]) -> dict[str, Any]:
    if api == "openai-chat":
        return dict(decl["function"]["parameters"])
    if api == "openai-responses":
        return dict(decl["parameters"])
    if api == "anthropic":
        return dict(decl["input_schema"])
    return dict(decl.get("parameters") or {"type": "object", "properties": {}})


def _name(api: str, decl: dict[str, Any]) -> str:
    return str(decl["function"]["name"] if api == "openai-chat" else decl["name"])


@pytest.mark.parametrize("api", list(APIS))
def test_every_declaration_is_accepted_by_the_provider(api: str) -> None:
    tools = APIS[api](DEFINITIONS)
    assert len(tools.declarations) == len(DEFINITIONS)
    check_declarations(api, tools.declarations)


@pytest.mark.parametrize("variant", range(4))
@pytest.mark.parametrize("api", list(APIS))
@pytest.mark.parametrize("index", range(len(TOOLS)), ids=[t.name for t in TOOLS])
def test_a_call_shaped_by_the_declaration_validates_on_the_host(
    api: str, index: int, variant: int
) -> None:
    tools = APIS[api](DEFINITIONS)
    decl = tools.declarations[index]
    args = example(_params(api, decl), variant)
    call = tools.call_from_wire(ToolCall("c1", _name(api, decl), args))
    host_tool = BY_NAME[call.name]
    try:
        host_tool.check(call.arguments).kwargs()
    except ArgumentError as exc:
        raise AssertionError(
            f"{api} declared {_params(api, decl)}\nthe model sent {args}\n"
            f"mapped back to {call.arguments}\nthe host refused: {exc.problems}"
        ) from None


# --------------------------------------------------------------------------- the faults, literally


def _definition(schema: dict[str, Any], name: str = "t") -> ToolDefinition:
    return ToolDefinition(name=name, input_schema=schema)


def test_a_pointer_to_a_sibling_property_is_inlined() -> None:
    point = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
        "required": ["path", "line"],
    }
    assert ad.gemini_schema(SIBLING_REF) == {
        "type": "object",
        "properties": {"src": point, "dst": point},
        "required": ["src", "dst"],
    }
    decl = ad.anthropic_tool(_definition(SIBLING_REF))["input_schema"]
    assert decl["properties"]["dst"] == SIBLING_REF["properties"]["src"]  # type: ignore[index]
    strict = ad.openai_chat_tool(_definition(SIBLING_REF))["function"]
    assert strict["strict"] is True
    assert strict["parameters"]["properties"]["dst"] == {
        **point,
        "additionalProperties": False,
    }


def test_an_enum_of_numbers_without_type_is_declared_as_numbers() -> None:
    # Gemini takes string enums only: the values' JSON text, mapped back to the numbers.
    assert ad.gemini_schema(UNTYPED_ENUM) == {
        "type": "object",
        "properties": {
            "level": {"type": "string", "enum": ["1", "2", "3"]},
            "mode": {"type": "string", "enum": ["0.5"]},
        },
        "required": ["level"],
    }
    gemini = ad.gemini_tools_for([_definition(UNTYPED_ENUM)])
    back = gemini.call_from_wire(ToolCall("c", "t", {"level": "2", "mode": "0.5"}))
    assert back.arguments == {"level": 2, "mode": 0.5}
    # JSON-Schema APIs get the type the values imply.
    anthropic = ad.anthropic_tool(_definition(UNTYPED_ENUM))["input_schema"]
    assert anthropic["properties"] == {
        "level": {"enum": [1, 2, 3], "type": "integer"},
        "mode": {"const": 0.5, "type": "number"},
    }


def test_the_host_coerces_a_numeric_string_towards_an_untyped_enum() -> None:
    host_tool = build_tool(_raw("untyped_enum", UNTYPED_ENUM))
    assert host_tool.check({"level": "2"}).arguments == {"level": 2}


def test_a_map_is_declared_to_gemini_as_key_value_pairs() -> None:
    decl = ad.gemini_tools_for([DEFINITIONS[[t.name for t in TOOLS].index("maps")]])
    env = decl.declarations[0]["parameters"]["properties"]["env"]
    assert env == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "integer"}},
            "required": ["key", "value"],
        },
        "description": "a map, as a list of key/value pairs",
    }
    back = decl.call_from_wire(
        ToolCall("c", "maps", {"env": [{"key": "A", "value": 1}, {"key": "B", "value": 2}]})
    )
    assert back.arguments == {"env": {"A": 1, "B": 2}}


def test_a_tuple_keeps_its_element_types_and_length_for_gemini() -> None:
    decl = ad.gemini_tools_for([DEFINITIONS[[t.name for t in TOOLS].index("tuples")]])
    pair = decl.declarations[0]["parameters"]["properties"]["pair"]
    assert pair == {
        "type": "object",
        "properties": {"0": {"type": "integer"}, "1": {"type": "string"}},
        "required": ["0", "1"],
        "description": "a list of 2 items, given as an object keyed by position",
    }
    back = decl.call_from_wire(ToolCall("c", "tuples", {"pair": {"0": 4, "1": "four"}}))
    assert back.arguments == {"pair": [4, "four"]}
