"""A tool server's JSON Schema lowered to the neutral shape, and the Tool built from it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from pywrapai_graph.application.tools import ToolRegistry
from pywrapai_graph.application.tools.remote_schema import (
    MAX_SCHEMA_DEPTH,
    SchemaLimitError,
    lower_schema,
)
from pywrapai_graph.application.tools.remote_tools import remote_tools
from pywrapai_graph.domain import ToolCall
from pywrapai_graph.domain.remote_tool import RemoteToolSpec
from pywrapai_graph.errors import InvalidStateError, ToolArgumentsError, ToolServerError
from pywrapai_graph.ports.tool_server import ToolServer

PYDANTIC_STYLE = {
    "type": "object",
    "title": "shapeArguments",
    "$defs": {
        "Point": {
            "title": "Point",
            "type": "object",
            "properties": {"x": {"title": "X", "type": "number"}},
            "required": ["x"],
        }
    },
    "properties": {
        "p": {"$ref": "#/$defs/Point", "description": "where"},
        "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "count": {"type": ["integer", "null"]},
        "mode": {"const": "fast"},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "wrapped": {"allOf": [{"$ref": "#/$defs/Point"}], "title": "W"},
    },
    "required": ["p"],
}

POINT = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}


def test_pydantic_style_schema_is_lowered() -> None:
    lowered = lower_schema(PYDANTIC_STYLE)
    assert lowered == {
        "type": "object",
        "properties": {
            "p": {**POINT, "description": "where"},
            "points": {"type": "array", "items": POINT},
            "note": {"type": "string"},
            "count": {"type": "integer"},
            "mode": {"enum": ["fast"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "wrapped": POINT,
        },
        "required": ["p"],
    }
    assert "$defs" in PYDANTIC_STYLE  # the input is left as it was


def test_recursive_and_unknown_references_become_plain_objects() -> None:
    tree = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"}},
            }
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}, "other": {"$ref": "#/elsewhere"}},
    }
    lowered = lower_schema(tree)
    root = lowered["properties"]["root"]
    assert root["properties"]["v"] == {"type": "integer"}
    assert root["properties"]["child"] == {"type": "object"}
    assert lowered["properties"]["other"] == {"type": "object"}


def test_an_empty_schema_is_an_object_without_arguments() -> None:
    assert lower_schema({}) == {"type": "object", "properties": {}}


class FakeServer:
    """A ToolServer that answers from a dict and records what it was asked."""

    name = "fake"

    def __init__(self, tools: list[RemoteToolSpec]) -> None:
        self.tools = tools
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def list_tools(self) -> list[RemoteToolSpec]:
        return self.tools

    async def acall(self, tool: str, arguments: Mapping[str, Any]) -> str:
        self.calls.append((tool, dict(arguments)))
        await asyncio.sleep(0)
        return f"{tool}:{sorted(arguments.items())}"


def test_remote_tools_validate_before_calling_and_keep_the_remote_name() -> None:
    server = FakeServer([RemoteToolSpec("shape", "Draw.", PYDANTIC_STYLE)])
    assert isinstance(server, ToolServer)
    registry = ToolRegistry()
    for t in remote_tools(server, prefix="geo_", timeout_s=2.0):
        registry.register(t)
    tool = registry.get("geo_shape")
    assert (tool.description, tool.timeout_s, tool.is_async) == ("Draw.", 2.0, True)
    with pytest.raises(ToolArgumentsError, match="unknown argument 'q'"):
        tool.invoke({"p": {"x": 1}, "q": 1})
    with pytest.raises(ToolArgumentsError, match="missing required argument 'p'"):
        tool.invoke({})
    with pytest.raises(ToolArgumentsError, match="'count' must be of type integer"):
        tool.invoke({"p": {"x": 1}, "count": "many"})
    assert server.calls == []  # nothing invalid reached the server
    result = registry.execute(ToolCall("c", "geo_shape", {"p": {"x": 1}, "note": None}))
    assert result.content == "shape:[('note', None), ('p', {'x': 1})]"
    assert server.calls == [("shape", {"p": {"x": 1}, "note": None})]


def test_open_ended_schemas_accept_any_argument_name() -> None:
    schema = {"type": "object", "properties": {"user-id": {"type": "string"}}}
    server = FakeServer([RemoteToolSpec("lookup", "", schema)])
    [tool] = remote_tools(server)
    assert asyncio.run(tool.ainvoke({"user-id": "7", "extra": 1})).startswith("lookup:")


def test_a_server_that_is_not_open_says_so() -> None:
    class Closed(FakeServer):
        def list_tools(self) -> list[RemoteToolSpec]:
            raise InvalidStateError("not open")

    with pytest.raises(InvalidStateError):
        remote_tools(Closed([]))


def test_names_are_lowered_to_what_every_provider_accepts() -> None:
    server = FakeServer([RemoteToolSpec("files.read/v2", "", {}), RemoteToolSpec("x" * 80, "", {})])
    first, second = remote_tools(server, prefix="fs-")
    assert (first.name, len(second.name)) == ("fs-files_read_v2", 64)
    assert asyncio.run(first.ainvoke({})) == "files.read/v2:[]"  # called by its own name


def exponential(depth: int) -> dict[str, Any]:
    """``depth`` definitions, each referring twice to the next: 2**depth copies inlined."""
    defs: dict[str, Any] = {f"L{depth}": {"type": "string"}}
    for level in range(depth):
        ref = {"$ref": f"#/$defs/L{level + 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs}


def test_repeated_references_are_bounded_in_size() -> None:
    assert lower_schema(exponential(8))["properties"]["x"]["properties"]["a"]["type"] == "object"
    with pytest.raises(SchemaLimitError, match="more than 20,000 keywords and values"):
        lower_schema(exponential(30))


def test_a_large_value_inlined_many_times_counts_every_copy() -> None:
    """Four references to a definition whose enum has 6,000 values: 24,000 copies."""
    schema = {
        "type": "object",
        "$defs": {"Big": {"enum": list(range(6_000))}},
        "properties": {k: {"$ref": "#/$defs/Big"} for k in "abcd"},
    }
    with pytest.raises(SchemaLimitError):
        lower_schema(schema)
    del schema["properties"]["d"]  # type: ignore[attr-defined]
    assert len(lower_schema(schema)["properties"]["c"]["enum"]) == 6_000


def test_a_long_chain_of_references_is_bounded_in_depth() -> None:
    defs: dict[str, Any] = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(40)}
    defs["D40"] = {"type": "object", "properties": {"v": {"$ref": "#/$defs/D0"}}}
    chain = {"type": "object", "properties": {"p": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    assert lower_schema(chain)["properties"]["p"]["properties"]["v"] == {"type": "object"}
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        nested = {"type": "array", "items": nested}
    with pytest.raises(SchemaLimitError, match=f"deeper than {MAX_SCHEMA_DEPTH} levels"):
        lower_schema({"type": "object", "properties": {"n": nested}})


def test_a_tool_whose_schema_is_over_the_limits_fails_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = FakeServer(
        [RemoteToolSpec("bomb", "Hostile.", exponential(30)), RemoteToolSpec("fine", "", {})]
    )
    bomb, fine = remote_tools(server)
    assert "over the limits" in caplog.text
    assert bomb.description == "Hostile."
    with pytest.raises(ToolServerError, match="listed tool 'bomb' with an input schema") as info:
        bomb.invoke({"x": 1})
    assert (info.value.server, info.value.tool) == ("fake", "bomb")
    assert server.calls == []
    assert asyncio.run(fine.ainvoke({})) == "fine:[]"
