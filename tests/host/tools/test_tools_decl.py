"""Tool declarations, the registry and loading (in-process: pure logic, no I/O)."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, TypedDict

import jsonschema
import pytest
from pydantic import BaseModel, Field
from toolwire.host import (
    Registry,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolResult,
    tool,
)
from toolwire.host.tools import loading
from toolwire.host.tools.arguments import ArgumentError
from toolwire.host.tools.decorator import build_tool


def _schema(fn: Any) -> dict[str, Any]:
    return build_tool(fn).input_schema


# ---------------------------------------------------------------------------- schemas


def test_sync_and_async_functions() -> None:
    @tool
    def s(a: int) -> str:
        """Sync."""
        return str(a)

    @tool
    async def a(a: int) -> str:
        """Async."""
        return str(a)

    assert build_tool(s).is_async is False
    assert build_tool(a).is_async is True


def test_schema_from_hints_docstring_and_annotated() -> None:
    @tool
    def f(
        path: str,
        count: Annotated[int, "how many (Annotated str)"],
        tags: list[str] | None = None,
        mode: Annotated[str, Field(description="the mode", pattern="^[a-z]+$")] = "fast",
        ratio: float = 0.5,
        ctx: ToolContext | None = None,
    ) -> str:
        """Do a thing.

        Longer explanation line.

        Args:
            path: the file path,
                continued on a second line.
            count: ignored, Annotated wins.
            ratio: a ratio.

        Returns:
            text.
        """
        return ""

    t = build_tool(f)
    assert t.description == "Do a thing.\n\nLonger explanation line."
    s = t.input_schema
    assert s["type"] == "object"
    assert s["required"] == ["path", "count"]
    props = s["properties"]
    assert set(props) == {"path", "count", "tags", "mode", "ratio"}  # ctx is not in the schema
    assert props["path"] == {
        "type": "string",
        "description": "the file path, continued on a second line.",
    }
    assert props["count"]["description"] == "how many (Annotated str)"
    assert props["mode"]["description"] == "the mode"
    assert props["mode"]["pattern"] == "^[a-z]+$"
    assert props["mode"]["default"] == "fast"
    assert props["ratio"]["description"] == "a ratio."
    assert t.context_param == "ctx"  # Optional[ToolContext] is injected too
    jsonschema.Draft202012Validator.check_schema(s)


def test_context_parameter_is_injected_not_described() -> None:
    @tool
    async def f(x: int, ctx: ToolContext) -> str:
        """Ctx."""
        return ""

    t = build_tool(f)
    assert t.context_param == "ctx"
    assert set(t.input_schema["properties"]) == {"x"}
    assert t.check({"x": 1}).kwargs() == {"x": 1}


def test_overrides() -> None:
    @tool(
        name="my.tool-2",
        description="Overridden.",
        title="My Tool",
        annotations={"readOnlyHint": True, "destructive_hint": False},
        timeout=3.5,
    )
    def f() -> str:
        """Docstring."""
        return ""

    t = build_tool(f)
    d = t.definition()
    assert d == {
        "name": "my.tool-2",
        "title": "My Tool",
        "description": "Overridden.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False},
    }
    assert t.timeout == 3.5
    assert t.read_only


class Args(BaseModel):
    name: str = Field(description="a name")
    n: int = 1


class Inner(BaseModel):
    x: int


class Out(BaseModel):
    a: int


class TD(TypedDict):
    b: str


def test_pydantic_model_parameter() -> None:
    @tool
    def f(args: Args, ctx: ToolContext) -> str:
        """Model."""
        return ""

    t = build_tool(f)
    assert t.input_schema["properties"]["name"]["description"] == "a name"
    assert t.input_schema["required"] == ["name"]
    kwargs = t.check({"name": "x"}).kwargs()
    assert isinstance(kwargs["args"], Args) and kwargs["args"].n == 1


def test_raw_json_schema_is_compiled_once_and_validated() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
        "required": ["q"],
        "additionalProperties": False,
    }

    @tool(input_schema=schema)
    def f(args: dict[str, Any]) -> str:
        """Raw."""
        return ""

    t = build_tool(f)
    assert t.input_schema is schema
    check = t.validator.schema.is_valid
    assert t.validator.schema.fast  # the compiled check, not jsonschema
    assert t.check({"q": "a"}).kwargs() == {"args": {"q": "a"}}
    assert t.validator.schema.is_valid is check
    assert isinstance(t.validator.schema.validator, jsonschema.Draft202012Validator)
    with pytest.raises(ArgumentError) as e:
        t.check({"n": -1, "zz": 1}).kwargs()
    paths = [p for p, _ in e.value.problems]
    assert "q" in paths and "n" in paths and "(root)" in paths

    with pytest.raises(ToolDefinitionError, match="invalid input_schema"):
        build_tool(
            tool(name="bad", description="d", input_schema={"type": "object", "properties": 5})(
                lambda args: ""
            )
        )
    with pytest.raises(ToolDefinitionError, match="type 'object'"):

        @tool(input_schema={"type": "array"})
        def g(args: Any) -> str:
            """Bad root."""
            return ""

        build_tool(g)


def test_every_failing_field_is_listed() -> None:
    @tool
    def f(a: int, b: str, items: list[Inner], c: bool = False) -> str:
        """Many fields."""
        return ""

    with pytest.raises(ArgumentError) as e:
        build_tool(f).check(
            {"a": "nope", "items": [{"x": 1}, {"x": "y"}, {}], "c": "maybe"}
        ).kwargs()
    paths = [p for p, _ in e.value.problems]
    assert paths == ["a", "b", "items.1.x", "items.2.x", "c"]


# ---------------------------------------------------------------------------- output schemas


def test_output_schema_from_pydantic_model_and_typeddict() -> None:
    @tool
    def m() -> Out:
        """Model out."""
        return Out(a=1)

    @tool
    def d() -> TD:
        """TypedDict out."""
        return {"b": "x"}

    @tool
    def plain() -> dict[str, int]:
        """No output schema."""
        return {}

    assert build_tool(m).output_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
    assert build_tool(d).output_schema == {
        "type": "object",
        "properties": {"b": {"type": "string"}},
        "required": ["b"],
    }
    assert build_tool(plain).output_schema is None


# ---------------------------------------------------------------------------- registry


def _named(name: str, doc: str | None = "Doc.") -> Any:
    def f() -> str:
        return ""

    f.__doc__ = doc
    return tool(name=name)(f)


@pytest.mark.parametrize("name", ["a", "A_b.c-d", "x" * 64, "0"])
def test_valid_names(name: str) -> None:
    assert Registry().add(_named(name)).name == name


@pytest.mark.parametrize("name", ["x" * 65, "has space", "slash/name", "ü", "a:b", "tab\t"])
def test_bad_names_are_rejected(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="1-64"):
        Registry().add(_named(name))


def test_empty_name_is_rejected() -> None:
    f = _named("ok")
    f.__name__ = ""
    f.__toolwire_tool__["name"] = ""
    with pytest.raises(ToolDefinitionError):
        Registry().add(f)


@pytest.mark.parametrize("doc", [None, "", "   \n  "])
def test_missing_description_is_rejected(doc: str | None) -> None:
    with pytest.raises(ToolDefinitionError, match="no description"):
        Registry().add(_named("nodoc", doc))


def test_duplicates_are_rejected_and_changes_notify() -> None:
    r = Registry()
    changes: list[int] = []
    r.on_change(lambda: changes.append(len(r)))
    r.add(_named("a"))
    with pytest.raises(ToolDefinitionError, match="already registered"):
        r.add(_named("a"))
    r.add(build_tool(_named("b")))
    assert [d["name"] for d in r.definitions()] == ["a", "b"]
    r.remove("a")
    assert changes == [1, 2, 1]
    assert [d["name"] for d in r.definitions()] == ["b"]
    # only definitions leave the registry: plain JSON, no handler
    assert all(
        set(d)
        <= {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}
        for d in r.definitions()
    )


def test_paging() -> None:
    r = Registry()
    for i in range(7):
        r.add(_named(f"t{i}"))
    page, cur = r.page(None, 3)
    names = [d["name"] for d in page]
    while cur is not None:
        page, cur = r.page(cur, 3)
        names += [d["name"] for d in page]
    assert names == [f"t{i}" for i in range(7)]
    for bad in ("x", "dHc6OTk=", "dHc6YQ=="):
        with pytest.raises(ValueError):
            r.page(bad, 3)


# ---------------------------------------------------------------------------- loading


def test_load_from_file_and_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file_tools.py").write_text(
        textwrap.dedent(
            '''
            from toolwire.host import tool

            @tool
            def one() -> str:
                """One."""
                return "1"

            def not_a_tool() -> None:
                pass
            '''
        )
    )
    pkg = tmp_path / "pkg_for_tools"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(
        textwrap.dedent(
            '''
            from toolwire.host import tool

            @tool
            async def two() -> str:
                """Two."""
                return "2"

            def register(registry):
                @tool(name="three")
                def three_impl() -> str:
                    """Three, registered by a hook."""
                    return "3"
                registry.add(three_impl)
            '''
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    r = Registry()
    assert loading.load_tools(r, str(tmp_path / "file_tools.py")) == 1
    assert loading.load_tools(r, "pkg_for_tools.mod") == 1
    assert [t.name for t in r] == ["one", "two", "three"]
    with pytest.raises(ImportError):
        loading.load_tools(r, str(tmp_path / "missing.py"))
    with pytest.raises(ImportError):
        loading.load_tools(r, "no_such_module_for_toolwire")
    sys.modules.pop("pkg_for_tools.mod", None)
    sys.modules.pop("pkg_for_tools", None)


class _FakeEntryPoint:
    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self._obj = obj

    def load(self) -> Any:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    @tool
    def ep_tool() -> str:
        """From an entry point."""
        return ""

    @tool
    def ep_listed() -> str:
        """Listed."""
        return ""

    seen: list[str] = []

    def fake_entry_points(*, group: str) -> list[_FakeEntryPoint]:
        seen.append(group)
        return [
            _FakeEntryPoint("single", ep_tool),
            _FakeEntryPoint("broken", ImportError("boom")),
            _FakeEntryPoint("list", [ep_listed, "not a tool"]),
        ]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    r = Registry()
    assert loading.load_entry_points(r) == 2
    assert seen == ["toolwire.tools"]
    assert [t.name for t in r] == ["ep_tool", "ep_listed"]


def test_tool_objects_and_results_are_public() -> None:
    t = build_tool(_named("x"))
    assert isinstance(t, Tool)
    assert ToolResult("a", details={"k": 1}).to_wire() == {
        "content": [{"type": "text", "text": "a"}],
        "_meta": {"toolwire/details": {"k": 1}},
    }
