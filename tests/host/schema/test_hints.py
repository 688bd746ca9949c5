"""Schemas written without pydantic must match pydantic's for the same hints, and a host
whose tools need nothing more must start without importing pydantic."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest
from pydantic import TypeAdapter
from toolwire.host import Param, tool
from toolwire.host.schema.hints import simple_schema
from toolwire.host.tools.arguments import ArgumentError
from toolwire.host.tools.decorator import build_tool
from toolwire.host.tools.pydantic_glue import clean_schema

from tests.hostproc import REPO

CASES: list[Any] = [
    str,
    int,
    float,
    bool,
    type(None),
    Any,
    list[str],
    list[int],
    list,
    dict,
    dict[str, Any],
    dict[str, int],
    list[list[str]],
    str | None,
    Optional[int],  # noqa: UP045 - the old spelling must work too
    int | str,
    Literal["a", "b"],
    Literal["only"],
    Literal[1, 2, 3],
    list[Literal["x", "y"]],
]


@pytest.mark.parametrize("ann", CASES, ids=[repr(c) for c in CASES])
def test_simple_schema_matches_pydantic(ann: Any) -> None:
    ours = simple_schema(ann)
    assert ours is not None
    theirs = TypeAdapter(ann).json_schema()
    theirs.pop("title", None)
    assert ours == _clean_schema_node(theirs)


def _clean_schema_node(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _clean_schema_node(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_clean_schema_node(v) for v in node]
    return node


def test_a_string_in_annotated_is_the_description() -> None:
    # toolwire's own convention (pydantic ignores bare strings in Annotated)
    assert simple_schema(Annotated[int | None, "maybe"]) == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "description": "maybe",
    }


@pytest.mark.parametrize("ann", [set[str], tuple[int, int], dict[int, str], complex])
def test_richer_hints_fall_back(ann: Any) -> None:
    assert simple_schema(ann) is None


def test_whole_tool_schema_matches_the_pydantic_path() -> None:
    @tool
    def f(
        name: str,
        count: int = 3,
        tags: list[str] | None = None,
        mode: Literal["fast", "slow"] = "fast",
        note: Annotated[str, "free text"] = "",
    ) -> str:
        """Do f.

        Args:
            name: who.
        """
        return name

    built = build_tool(f)
    from pydantic import Field, create_model

    model = create_model(
        "f_arguments",
        name=(str, Field(description="who.")),
        count=(int, 3),
        tags=(list[str] | None, None),
        mode=(Literal["fast", "slow"], "fast"),
        note=(str, Field(default="", description="free text")),
    )
    assert built.input_schema == clean_schema(model.model_json_schema())


def test_param_constraints_are_in_the_schema_and_enforced() -> None:
    @tool
    def g(
        limit: Annotated[int, Param("How many.", ge=1, le=10)] = 5,
        word: Annotated[str, Param(min_length=2)] = "ab",
    ) -> str:
        """Do g."""
        return f"{limit} {word}"

    built = build_tool(g)
    props = built.input_schema["properties"]
    assert props["limit"] == {
        "default": 5,
        "description": "How many.",
        "maximum": 10,
        "minimum": 1,
        "type": "integer",
    }
    assert props["word"]["minLength"] == 2
    assert built.check({"limit": 3}).kwargs() == {"limit": 3}
    with pytest.raises(ArgumentError) as e:
        built.check({"limit": 0, "word": "x"}).kwargs()
    assert {p for p, _ in e.value.problems} == {"limit", "word"}


def test_param_default_without_a_signature_default_reaches_the_handler() -> None:
    @tool
    def h(n: Annotated[int, Param("n", default=7)]) -> int:  # type: ignore[assignment]
        """Do h."""
        return n

    built = build_tool(h)
    assert "required" not in built.input_schema
    assert built.check({}).kwargs() == {"n": 7}


def test_host_with_plain_tools_starts_without_pydantic_or_jsonschema() -> None:
    code = (
        "import sys\n"
        "from toolwire.host.serve.connection import HostConfig, build_registry\n"
        "from pathlib import Path\n"
        f"cfg = HostConfig(root=Path('.'), tools=[{str(REPO / 'bench' / 'servers' / 'toolwire_tools.py')!r}],"
        " builtins=False, entry_points=False, isolation='none')\n"
        "reg = build_registry(cfg)\n"
        "defs = reg.definitions()\n"
        "assert {d['name'] for d in defs} >= {'echo', 'sleep', 'block'}, defs\n"
        "heavy = [m for m in ('pydantic', 'jsonschema', 'toolwire.models', 'rich') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Spec(TypedDict):
    """One change."""

    old: Annotated[str, "before"]
    new: str
    everywhere: NotRequired[bool]


def test_typeddict_is_written_inline_with_its_optional_keys() -> None:
    # this module uses postponed annotations, where Python 3.11 cannot see NotRequired
    # when it builds __required_keys__; the schema must still make `everywhere` optional
    assert simple_schema(list[_Spec]) == {
        "items": {
            "description": "One change.",
            "properties": {
                "old": {"description": "before", "type": "string"},
                "new": {"type": "string"},
                "everywhere": {"type": "boolean"},
            },
            "required": ["old", "new"],
            "type": "object",
        },
        "type": "array",
    }


def test_builtins_load_without_pydantic() -> None:
    code = (
        "import sys\n"
        "from toolwire.host.builtins import builtin_tools\n"
        "from toolwire.host.tools.decorator import build_tool\n"
        "tools = [build_tool(f) for f in builtin_tools()]\n"
        "print([m for m in ('pydantic', 'jsonschema', 'toolwire.models') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
