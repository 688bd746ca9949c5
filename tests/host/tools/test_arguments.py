"""Arguments (issue 3 §1), in-process: coercion rules, validation, conversion, the fast check.

The coercion table runs every row through all three ways of declaring parameters (type
hints, a pydantic model, a raw JSON Schema) where the row's type can be written that way.
The compiled fast check is compared with jsonschema on random schemas and instances.
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import json
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model, field_validator
from toolwire.host import ToolContext, tool
from toolwire.host.calls.executor import format_argument_error
from toolwire.host.schema import ArgumentSchema
from toolwire.host.tools.arguments import ArgumentError
from toolwire.host.tools.decorator import build_tool

from tests.host.builtins.support import run_tool

INVALID: Any = object()


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, and booleans never equal numbers."""
    if isinstance(a, BaseModel):
        a = a.model_dump()
    if isinstance(b, BaseModel):
        b = b.model_dump()
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return type(a) is type(b) or (
        (isinstance(a, (int, float)) and isinstance(b, (int, float))) and bool(a == b)
    )


class Inner(BaseModel):
    x: int


# (row id, annotation or None, raw JSON Schema fragment, input, expected handler value)
ROWS: list[tuple[str, Any, Any, Any, Any]] = [
    # numbers
    ("number from numeric string", float, {"type": "number"}, "42.5", 42.5),
    ("number from integer string", float, {"type": "number"}, "42", 42),
    ("number from exponent string", float, {"type": "number"}, "1e3", 1000),
    ("number from true", float, {"type": "number"}, True, 1),
    ("number from false", float, {"type": "number"}, False, 0),
    ("number refuses null", float, {"type": "number"}, None, INVALID),
    ("number refuses words", float, {"type": "number"}, "abc", INVALID),
    ("number refuses empty string", float, {"type": "number"}, "", INVALID),
    ("number refuses arrays", float, {"type": "number"}, [1], INVALID),
    ("integer from string", int, {"type": "integer"}, "42", 42),
    ("integer from whole decimal", int, {"type": "integer"}, "42.0", 42),
    ("integer refuses a fraction", int, {"type": "integer"}, "42.1", INVALID),
    ("integer from true", int, {"type": "integer"}, True, 1),
    ("integer refuses null", int, {"type": "integer"}, None, INVALID),
    ("integer keeps 3.0 valid", int, {"type": "integer"}, 3.0, 3),
    # booleans
    ("boolean from 'true'", bool, {"type": "boolean"}, "true", True),
    ("boolean from 'false'", bool, {"type": "boolean"}, "false", False),
    ("boolean from 1", bool, {"type": "boolean"}, 1, True),
    ("boolean from 0", bool, {"type": "boolean"}, 0, False),
    ("boolean refuses null", bool, {"type": "boolean"}, None, INVALID),
    ("boolean refuses '1'", bool, {"type": "boolean"}, "1", INVALID),
    ("boolean refuses 'yes'", bool, {"type": "boolean"}, "yes", INVALID),
    ("boolean refuses 2", bool, {"type": "boolean"}, 2, INVALID),
    # strings
    ("string from integer", str, {"type": "string"}, 42, "42"),
    ("string from float", str, {"type": "string"}, 4.5, "4.5"),
    ("string from whole float", str, {"type": "string"}, 4.0, "4"),
    ("string from true", str, {"type": "string"}, True, "true"),
    ("string refuses null", str, {"type": "string"}, None, INVALID),
    ("string refuses arrays", str, {"type": "string"}, [1], INVALID),
    ("string refuses objects", str, {"type": "string"}, {"a": 1}, INVALID),
    # null
    ("null from empty string", None, {"type": "null"}, "", None),
    ("null from 0", None, {"type": "null"}, 0, None),
    ("null from false", None, {"type": "null"}, False, None),
    ("null refuses text", None, {"type": "null"}, "x", INVALID),
    # type arrays (raw schemas only: hints give anyOf)
    ("type list keeps a matching value", None, {"type": ["number", "string"]}, "1", "1"),
    ("type list: first change wins", None, {"type": ["boolean", "number"]}, "1", 1),
    ("type list: null from empty string", None, {"type": ["integer", "null"]}, "", None),
    # anyOf / oneOf / allOf
    (
        "anyOf keeps a value valid as is",
        int | str,
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "5",
        "5",
    ),
    (
        "anyOf: first arm that validates",
        int | bool,
        {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        "true",
        True,
    ),
    (
        "nullable keeps null",
        int | None,
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        None,
        None,
    ),
    (
        "nullable coerces the value",
        int | None,
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "5",
        5,
    ),
    (
        "oneOf: first arm that validates",
        None,
        {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
        "false",
        False,
    ),
    ("allOf coerces through each", None, {"allOf": [{"type": "integer"}, {"minimum": 0}]}, "3", 3),
    (
        "allOf still validates",
        None,
        {"allOf": [{"type": "integer"}, {"minimum": 0}]},
        "-1",
        INVALID,
    ),
    # JSON strings for objects and arrays, recursion into items and properties
    (
        "array from JSON string",
        list[int],
        {"type": "array", "items": {"type": "integer"}},
        '[1, "2"]',
        [1, 2],
    ),
    (
        "array JSON must parse",
        list[int],
        {"type": "array", "items": {"type": "integer"}},
        "[1, ",
        INVALID,
    ),
    (
        "array JSON must validate",
        list[int],
        {"type": "array", "items": {"type": "integer"}},
        '["a"]',
        INVALID,
    ),
    (
        "array items coerced",
        list[int],
        {"type": "array", "items": {"type": "integer"}},
        ["1", 2, "3"],
        [1, 2, 3],
    ),
    ("no array wrapping", list[int], {"type": "array", "items": {"type": "integer"}}, 1, INVALID),
    (
        "object from JSON string",
        Inner,
        {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        '{"x": "7"}',
        {"x": 7},
    ),
    (
        "object JSON must validate",
        Inner,
        {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        '{"y": 7}',
        INVALID,
    ),
    (
        "object properties coerced",
        Inner,
        {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        {"x": "8"},
        {"x": 8},
    ),
]


def _styles(annotation: Any, fragment: Any) -> list[tuple[str, Any]]:
    """Tools taking one argument ``v`` declared each way; the handler returns what it got."""
    out: list[tuple[str, Any]] = []
    if annotation is not None or fragment == {"type": "null"}:
        ann = type(None) if annotation is None else annotation

        def hints(v: Any, other: int = 0) -> Any:
            """Hints (two parameters, so a model-typed ``v`` is not the whole schema)."""
            return v

        hints.__annotations__ = {"v": ann, "other": int, "return": Any}
        out.append(("hints", build_tool(tool(hints))))

        model = create_model("Args", v=(ann, ...))

        def via_model(args: Any) -> Any:
            """Model."""
            return args.v

        via_model.__annotations__ = {"args": model, "return": Any}
        out.append(("model", build_tool(tool(via_model))))

    def raw(args: dict[str, Any]) -> Any:
        """Raw."""
        return args["v"]

    schema = {"type": "object", "properties": {"v": fragment}, "required": ["v"]}
    out.append(("schema", build_tool(tool(input_schema=schema)(raw))))
    return out


@pytest.mark.parametrize(
    ("annotation", "fragment", "value", "expected"),
    [r[1:] for r in ROWS],
    ids=[r[0] for r in ROWS],
)
def test_coercion_table(annotation: Any, fragment: Any, value: Any, expected: Any) -> None:
    for style, t in _styles(annotation, fragment):
        arguments = {"v": copy.deepcopy(value), "undeclared": 1}
        before = copy.deepcopy(arguments)
        if expected is INVALID:
            with pytest.raises(ArgumentError) as e:
                t.check(arguments).kwargs()
            assert e.value.problems, style
            assert e.value.problems[0][0].startswith("v"), (style, e.value.problems)
        else:
            kwargs = t.check(arguments).kwargs()
            assert "undeclared" not in str(list(kwargs)), style
            got = t.handler(**kwargs)
            assert same(got, expected), (style, got, expected)
        assert arguments == before, f"{style}: the input was changed"


class Color(enum.Enum):
    RED = "red"


class Even(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def even(cls, v: int) -> int:
        if v % 2:
            raise ValueError("must be even")
        return v


def test_handler_values_are_converted_only_where_the_type_needs_it() -> None:
    @tool
    def f(
        when: dt.datetime,
        color: Color,
        inner: Inner,
        items: list[Inner],
        pick: Literal["a", "b"],
        n: Annotated[int, Field(ge=0)] = 0,
        ratio: float = 1.0,
    ) -> str:
        """Converted."""
        return ""

    t = build_tool(f)
    kw = t.check(
        {
            "when": "2024-05-01T10:00:00Z",
            "color": "red",
            "inner": {"x": "1"},
            "items": [{"x": 2}],
            "pick": "a",
            "n": "4",
            "ratio": 2,
        }
    ).kwargs()
    assert kw["when"] == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)
    assert kw["color"] is Color.RED
    assert kw["inner"] == Inner(x=1)
    assert kw["items"] == [Inner(x=2)]
    assert kw["pick"] == "a" and kw["n"] == 4
    assert type(kw["ratio"]) is float
    with pytest.raises(ArgumentError) as e:
        t.check(
            {"when": "yesterday", "color": "red", "inner": {"x": 1}, "items": [], "pick": "a"}
        ).kwargs()
    assert [p for p, _ in e.value.problems] == ["when"]
    with pytest.raises(ArgumentError) as e:
        t.check(
            {"when": "2024-05-01T10:00:00Z", "color": "blue", "inner": {}, "items": [], "pick": "c"}
        ).kwargs()
    assert [p for p, _ in e.value.problems] == ["color", "inner.x", "pick"]


def test_a_model_validator_the_schema_cannot_express_still_applies() -> None:
    @tool
    def f(args: Even) -> str:
        """Even."""
        return ""

    t = build_tool(f)
    assert t.check({"n": "4"}).kwargs()["args"] == Even(n=4)
    with pytest.raises(ArgumentError) as e:
        t.check({"n": 3}).kwargs()
    assert e.value.problems == [("n", "Value error, must be even")]


def test_valid_arguments_are_not_copied() -> None:
    @tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    def raw(args: dict[str, Any]) -> str:
        """Raw."""
        return ""

    @tool
    def hints(text: str) -> str:
        """Hints."""
        return ""

    args = {"q": "x"}
    assert build_tool(raw).check(args).kwargs()["args"] is args
    nested = {"text": "x"}
    assert build_tool(hints).check(nested).arguments is nested


def test_undeclared_fields_and_explicit_extras() -> None:
    base = {"type": "object", "properties": {"a": {"type": "integer"}}}

    def make(schema: dict[str, Any]) -> Any:
        def f(args: dict[str, Any]) -> str:
            """Raw."""
            return ""

        return build_tool(tool(input_schema=schema)(f))

    assert make(base).check({"a": 1, "b": 2}).kwargs() == {"args": {"a": 1}}
    # a schema that admits other fields declares them
    extras = {**base, "additionalProperties": {"type": "integer"}}
    assert make(extras).check({"a": 1, "b": "2"}).kwargs() == {"args": {"a": 1, "b": 2}}
    with pytest.raises(ArgumentError):
        make({**base, "additionalProperties": False}).check({"a": 1, "b": 2}).kwargs()


def test_error_text_lists_every_path_and_the_arguments_received() -> None:
    @tool
    def f(a: int, b: str, items: list[Inner], c: bool = False) -> str:
        """Many."""
        return ""

    args = {"a": "nope", "items": [{"x": 1}, {"x": "y"}, {}], "c": "maybe"}
    with pytest.raises(ArgumentError) as e:
        build_tool(f).check(args).kwargs()
    text = format_argument_error("f", e.value.problems, args)
    assert text.splitlines()[0] == 'Invalid arguments for tool "f":'
    assert [line.split(":")[0] for line in text.splitlines()[1:6]] == [
        "  - a",
        "  - b",
        "  - items.1.x",
        "  - items.2.x",
        "  - c",
    ]
    assert "  - b: Field required" in text
    assert text.endswith("\n\nReceived arguments:\n" + json.dumps(args, separators=(",", ":")))


@pytest.mark.anyio
async def test_prepare_arguments_runs_before_validation_and_failures_are_results() -> None:
    from pathlib import Path

    from toolwire.host import ExecEnv

    seen: list[Any] = []

    def legacy(raw: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(raw))
        if "old" in raw:
            return {"new": raw["old"]}
        if raw.get("boom"):
            raise KeyError("no good")
        return raw

    @tool(prepare_arguments=legacy)
    async def f(new: int, ctx: ToolContext) -> str:
        """Prepared."""
        return f"new={new!r}"

    t = build_tool(f)
    ctx = ToolContext(1, "f", ExecEnv.at(Path.cwd()))
    assert (await run_tool(t, {"old": "5"}, ctx))["content"][0]["text"] == "new=5"
    failed = await run_tool(t, {"boom": True}, ctx)
    assert failed["isError"] is True
    assert failed["content"][0]["text"] == (
        "Could not prepare the arguments of tool \"f\": 'no good'"
    )
    assert seen == [{"old": "5"}, {"boom": True}]


# ---------------------------------------------------------------------------- the fast check

_SCALARS = [None, True, False, 0, 1, -1, 2, 0.0, 1.0, -2.0, 2.5, "", "a", "ab", "1", "b1"]
json_values = st.recursive(
    st.sampled_from(_SCALARS)
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.text(alphabet="ab1", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=6,
)
type_names = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        out.update(p)
    return out


def _schemas() -> st.SearchStrategy[Any]:
    leaf_keywords = st.one_of(
        type_names.map(lambda t: {"type": t}),
        st.lists(type_names, min_size=1, max_size=3, unique=True).map(lambda ts: {"type": ts}),
        st.lists(json_values, min_size=1, max_size=3).map(lambda vs: {"enum": vs}),
        json_values.map(lambda v: {"const": v}),
        st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]).flatmap(
            lambda k: st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False)).map(
                lambda n: {k: n}
            )
        ),
        st.integers(0, 3).map(lambda n: {"minLength": n}),
        st.integers(0, 3).map(lambda n: {"maxLength": n}),
        st.sampled_from(["^a", "1$", "b+"]).map(lambda p: {"pattern": p}),
        st.integers(0, 3).map(lambda n: {"minItems": n}),
        st.integers(0, 3).map(lambda n: {"maxItems": n}),
        st.integers(0, 2).map(lambda n: {"minProperties": n}),
        st.integers(0, 2).map(lambda n: {"maxProperties": n}),
        st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True).map(
            lambda r: {"required": r}
        ),
    )
    leaves = st.one_of(
        leaf_keywords,
        st.booleans(),
        st.lists(leaf_keywords, min_size=0, max_size=3).map(_merge),
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keyword = st.one_of(
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=2).map(
                lambda p: {"properties": p}
            ),
            inner.map(lambda s: {"additionalProperties": s}),
            inner.map(lambda s: {"items": s}),
            st.lists(inner, min_size=1, max_size=2).map(lambda s: {"prefixItems": s}),
            st.lists(inner, min_size=1, max_size=3).map(lambda s: {"anyOf": s}),
            st.lists(inner, min_size=1, max_size=3).map(lambda s: {"oneOf": s}),
            st.lists(inner, min_size=1, max_size=2).map(lambda s: {"allOf": s}),
            inner.map(lambda s: {"not": s}),
            leaf_keywords,
        )
        return st.lists(keyword, min_size=1, max_size=3).map(_merge)

    return st.recursive(leaves, extend, max_leaves=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_schemas(), instances=st.lists(json_values, min_size=1, max_size=12))
def test_fast_check_agrees_with_jsonschema(schema: Any, instances: list[Any]) -> None:
    reference = jsonschema.Draft202012Validator(schema)
    compiled = ArgumentSchema(schema if isinstance(schema, dict) else {"allOf": [schema]})
    assert compiled.fast
    check = compiled.is_valid
    if not isinstance(schema, dict):
        reference = jsonschema.Draft202012Validator({"allOf": [schema]})
    for x in instances:
        assert check(x) == reference.is_valid(x), (schema, x)


TRICKY: list[tuple[Any, list[Any]]] = [
    ({"type": "integer"}, [1.0, 1.5, True, 2**70]),
    ({"type": "number"}, [True, 1, 1.5, "1"]),
    ({"enum": [1]}, [True, 1.0, 1]),
    ({"enum": [True]}, [1, True]),
    ({"enum": ["a", "b"]}, ["a", "c", 1]),
    ({"const": 0}, [False, 0.0]),
    ({"const": [1]}, [[True], [1.0]]),
    ({"const": {"a": 1}}, [{"a": 1.0}, {"a": True}, {"a": 1, "b": 2}]),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, [1, 1.5, "x"]),
    ({"minimum": 1}, ["0", True, 0, 1]),
    ({"exclusiveMaximum": 1}, [1, 1.0, 0.5]),
    ({"required": ["a"]}, [[], "x", {}, {"a": None}]),
    ({"type": "object"}, [[], {}]),
    ({"items": False}, [[], [1]]),
    ({"prefixItems": [{"type": "string"}], "items": False}, [["a"], ["a", 1], [1]]),
    ({"additionalProperties": False, "properties": {"a": True}}, [{"a": 1, "b": 2}, {"a": 1}]),
    ({"not": {"type": "null"}}, [None, 0]),
    ({"maxLength": 1}, ["é", "\U0001f44d", "ab"]),
    ({"pattern": "^a"}, [5, "ba", "ab"]),
    ({"minProperties": 1}, [{}, [], {"a": 1}]),
]


def test_fast_check_agrees_with_jsonschema_on_known_tricky_cases() -> None:
    for schema, instances in TRICKY:
        reference = jsonschema.Draft202012Validator(schema)
        compiled = ArgumentSchema(schema)
        assert compiled.fast
        for x in instances:
            assert compiled.is_valid(x) == reference.is_valid(x), (schema, x)


@settings(max_examples=300, deadline=None)
@given(schema=_schemas(), x=json_values)
def test_coercion_never_changes_its_input_and_keeps_valid_values(schema: Any, x: Any) -> None:
    root = schema if isinstance(schema, dict) else {"allOf": [schema]}
    compiled = ArgumentSchema(root)
    before = copy.deepcopy(x)
    out = compiled.coerce(x)
    assert same(x, before)
    if compiled.is_valid(x):
        assert same(out, x)


class Node(BaseModel):
    name: str
    children: list[Node] = []


def test_refs_and_recursive_schemas_use_the_fast_check() -> None:
    schema = Node.model_json_schema()
    compiled = ArgumentSchema(schema)
    assert compiled.fast
    reference = jsonschema.Draft202012Validator(schema)
    for x in (
        {"name": "a"},
        {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]},
        {"name": "a", "children": [{"name": 1}]},
        {"children": []},
        {"name": "a", "children": [{"name": "b", "children": [{}]}]},
    ):
        assert compiled.is_valid(x) == reference.is_valid(x), x
    coerced = compiled.coerce({"name": 1, "children": [{"name": 2}]})
    assert coerced == {"name": "1", "children": [{"name": "2"}]}


def test_schemas_beyond_the_fast_subset_fall_back_to_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": True}},
        "if": {"required": ["a"]},
        "then": {"required": ["b"]},
    }
    compiled = ArgumentSchema(schema)
    assert not compiled.fast
    assert compiled.is_valid({"tags": [1, 2]})
    assert not compiled.is_valid({"tags": [1, 1]})
    assert not compiled.is_valid({"a": 1})
    older = ArgumentSchema(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"t": {"type": "array", "items": [{"type": "integer"}]}},
        }
    )
    assert not older.fast
    assert older.is_valid({"t": [1, "x"]}) and not older.is_valid({"t": ["x"]})
    assert older.coerce({"t": ["3"]}) == {"t": [3]}


# ---------------------------------------------------------------------------- null


class OptionalArgs(BaseModel):
    name: str
    count: int = 3
    label: str = "x"


class NullItem(BaseModel):
    old: str
    new: str
    note: str = "-"


def _optional_styles() -> list[tuple[str, Any]]:
    """Tools with a required ``name: str`` and optional ``count: int = 3`` and
    ``label: str = "x"``, declared each way; the handler returns what it got."""

    def hints(name: str, count: int = 3, label: str = "x") -> Any:
        """Hints."""
        return {"name": name, "count": count, "label": label}

    def via_model(args: Any) -> Any:
        """Model."""
        return args.model_dump()

    via_model.__annotations__ = {"args": OptionalArgs, "return": Any}

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer", "default": 3},
            "label": {"type": "string", "default": "x"},
        },
        "required": ["name"],
    }

    def raw(args: dict[str, Any]) -> Any:
        """Raw."""
        return {"count": 3, "label": "x", **args}

    return [
        ("hints", build_tool(tool(hints))),
        ("model", build_tool(tool(via_model))),
        ("schema", build_tool(tool(input_schema=schema)(raw))),
    ]


@pytest.mark.parametrize("style", ["hints", "model", "schema"])
def test_null_for_an_optional_parameter_means_absent(style: str) -> None:
    t = dict(_optional_styles())[style]
    got = t.handler(**t.check({"name": "n", "count": None, "label": None}).kwargs())
    assert got == {"name": "n", "count": 3, "label": "x"}, style


@pytest.mark.parametrize("style", ["hints", "model", "schema"])
def test_null_for_a_required_parameter_is_an_error_naming_it(style: str) -> None:
    t = dict(_optional_styles())[style]
    with pytest.raises(ArgumentError) as e:
        t.check({"name": None, "count": None}).kwargs()
    assert [p for p, _ in e.value.problems] == ["name"], (style, e.value.problems)
    assert "null" in e.value.problems[0][1]


def test_null_inside_items_is_an_error_and_nullable_parameters_keep_null() -> None:
    def edits(items: list[NullItem], maybe: str | None = "d") -> Any:
        """Items."""
        return [i.model_dump() for i in items], maybe

    t = build_tool(tool(edits))
    with pytest.raises(ArgumentError) as e:
        t.check({"items": [{"old": "a", "new": None}]}).kwargs()
    assert [p for p, _ in e.value.problems] == ["items.0.new"]
    got = t.handler(**t.check({"items": [{"old": "a", "new": "b", "note": None}]}).kwargs())
    assert got == ([{"old": "a", "new": "b", "note": "-"}], "d")
    # A parameter that admits null receives null (not its default).
    assert t.handler(**t.check({"items": [], "maybe": None}).kwargs()) == ([], None)


def test_null_is_never_converted_inside_arrays_and_unions() -> None:
    schema = ArgumentSchema(
        {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "items": {"type": "string"}},
                "u": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "extra": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": ["xs", "u", "extra"],
        }
    )
    coerced = schema.coerce({"xs": ["a", None], "u": None, "extra": {"k": None}})
    assert coerced == {"xs": ["a", None], "u": None, "extra": {"k": None}}
    paths = [p for p, _ in schema.problems(coerced)]
    assert paths == ["xs.1", "u", "extra.k"]
