from __future__ import annotations

import asyncio
import enum
import threading
import time
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import Tool, ToolCall, ToolRegistry, ToolResult, tool
from pywrapai_graph.application.tools.provider_schemas import GEMINI_SCHEMA_KEYS
from pywrapai_graph.errors import ToolArgumentsError
from pywrapai_graph.tools import Tool as ToolFromSubmodule


@tool
def get_weather(city: str, units: str = "celsius") -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


@tool
def search_docs(query: str, limit: int = 5) -> str:
    """Search internal documentation."""
    return f"Found {limit} results for: {query}"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def schema_of(fn: Any) -> dict[str, Any]:
    t: Tool = fn._pywrapai_tool
    return t.parameters


def test_reference_example_schema_and_callable() -> None:
    t: Tool = get_weather._pywrapai_tool  # type: ignore[attr-defined]
    assert t.name == "get_weather"
    assert t.description == "Get the current weather for a city."
    assert t.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"type": "string", "default": "celsius"},
        },
        "required": ["city"],
    }
    assert get_weather(city="London") == "16°C, cloudy in London"
    assert t("Paris") == "16°C, cloudy in Paris"
    assert ToolFromSubmodule is Tool


def test_type_table() -> None:
    @tool
    def f(a: str, b: int, c: float, d: bool, e: list, g: dict, h, i: object) -> None:  # type: ignore[no-untyped-def, type-arg]
        """F."""

    props = schema_of(f)["properties"]
    assert {k: v["type"] for k, v in props.items()} == {
        "a": "string",
        "b": "integer",
        "c": "number",
        "d": "boolean",
        "e": "array",
        "g": "object",
        "h": "string",
        "i": "string",
    }


def test_optional_both_syntaxes_not_required() -> None:
    @tool
    def s1(query: str, limit: Optional[int] = None) -> list[str]:  # noqa: UP045
        """Search."""
        return []

    @tool
    def s2(query: str, limit: int | None = None) -> list[str]:
        """Search."""
        return []

    @tool
    def s3(query: str, limit: int | None) -> list[str]:
        """Optional without a default is still not required."""
        return []

    for f in (s1, s2, s3):
        schema = schema_of(f)
        assert schema["required"] == ["query"]
        assert schema["properties"]["limit"]["type"] == "integer"


def test_literal_enum_list_items_and_annotated() -> None:
    @tool
    def f(
        mode: Literal["fast", "slow"],
        color: Color,
        tags: list[str],
        n: Annotated[int, "how many"],
        color2: Color = Color.BLUE,
    ) -> None:
        """F."""

    props = schema_of(f)["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["n"] == {"type": "integer", "description": "how many"}
    assert props["color2"]["default"] == "blue"


def test_google_numpy_and_sphinx_parameter_descriptions() -> None:
    @tool
    def g(city: str, days: int = 1) -> str:
        """Forecast.

        Args:
            city (str): The city name,
                e.g. Paris.
            days: How many days.

        Returns:
            Text.
        """
        return ""

    @tool
    def n(city: str, days: int = 1) -> str:
        """Forecast.

        Parameters
        ----------
        city : str
            The city name.
        days : int
            How many days.

        Returns
        -------
        str
        """
        return ""

    @tool
    def s(city: str, days: int = 1) -> str:
        """Forecast.

        :param city: The city name.
        :param int days: How many days.
        :returns: text
        """
        return ""

    assert schema_of(g)["properties"]["city"]["description"] == "The city name, e.g. Paris."
    for f in (g, n, s):
        props = schema_of(f)["properties"]
        assert props["days"]["description"] == "How many days.", f.__name__
        assert props["city"]["description"].startswith("The city name"), f.__name__
        assert set(props) == {"city", "days"}


def test_decorator_with_overrides_and_args_kwargs_skipped() -> None:
    @tool(name="lookup", description="Look it up.")
    def f(q: str, *args: Any, **kwargs: Any) -> str:
        return q

    t: Tool = f._pywrapai_tool  # type: ignore[attr-defined]
    assert (t.name, t.description, list(t.parameters["properties"])) == (
        "lookup",
        "Look it up.",
        ["q"],
    )


def test_register_get_names_len_repr() -> None:
    registry = ToolRegistry()
    registry.register(get_weather)
    registry.register(search_docs)
    assert registry.names == ["get_weather", "search_docs"]
    assert len(registry) == 2
    assert repr(registry) == "ToolRegistry(tools=['get_weather', 'search_docs'])"
    assert registry.get("get_weather").name == "get_weather"
    assert "search_docs" in registry
    with pytest.raises(KeyError, match="nope"):
        registry.get("nope")


def test_register_rejects_plain_functions_and_duplicates() -> None:
    def plain(x: str) -> str:
        return x

    registry = ToolRegistry()
    with pytest.raises(TypeError, match="@tool"):
        registry.register(plain)
    registry.register(get_weather)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(get_weather)


def test_register_tool_instance() -> None:
    t = Tool(
        name="get_weather",
        description="Get the current weather for a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        fn=lambda city: f"sunny in {city}",
    )
    registry = ToolRegistry()
    registry.register(t)
    assert (
        registry.execute(ToolCall("c", "get_weather", {"city": "Oslo"})).content == "sunny in Oslo"
    )


def test_execute_wraps_result_and_errors() -> None:
    @tool
    def boom(city: str) -> str:
        """Fail."""
        raise ValueError("city not found")

    registry = ToolRegistry()
    registry.register(get_weather)
    registry.register(boom)
    ok = registry.execute(ToolCall("call_abc", "get_weather", {"city": "London"}))
    assert ok == ToolResult(
        tool_call_id="call_abc", name="get_weather", content="16°C, cloudy in London"
    )
    bad = registry.execute(ToolCall("call_x", "boom", {"city": "Atlantis"}))
    assert bad == ToolResult("call_x", "boom", "Error: city not found")
    with pytest.raises(KeyError):
        registry.execute(ToolCall("c", "unknown", {}))


def test_arguments_validated_before_the_call() -> None:
    calls: list[Any] = []

    @tool
    def f(n: int, mode: Literal["a", "b"] = "a", tags: list[int] | None = None) -> str:
        """F."""
        calls.append(n)
        return "ok"

    registry = ToolRegistry()
    registry.register(f)
    cases: dict[str, dict[str, Any]] = {
        "missing": {},
        "wrong type": {"n": "three"},
        "bool is not int": {"n": True},
        "enum": {"n": 1, "mode": "c"},
        "items": {"n": 1, "tags": [1, "x"]},
        "unknown": {"n": 1, "extra": 2},
    }
    for label, args in cases.items():
        result = registry.execute(ToolCall("c", "f", args))
        assert result.content.startswith("Error: tool 'f'"), label
    assert calls == []
    assert registry.execute(ToolCall("c", "f", {"n": 2, "tags": None})).content == "ok"
    with pytest.raises(ToolArgumentsError, match="missing required argument 'n'"):
        f._pywrapai_tool.prepare_arguments({})  # type: ignore[attr-defined]


def test_enum_values_converted_to_members() -> None:
    seen: list[Color] = []

    @tool
    def paint(color: Color) -> str:
        """Paint."""
        seen.append(color)
        return color.name

    registry = ToolRegistry()
    registry.register(paint)
    assert registry.execute(ToolCall("c", "paint", {"color": "red"})).content == "RED"
    assert seen == [Color.RED]


def test_non_string_results_are_json() -> None:
    @tool
    def data() -> dict[str, int]:
        """Data."""
        return {"a": 1}

    @tool
    def nothing() -> None:
        """Nothing."""

    registry = ToolRegistry()
    registry.register(data)
    registry.register(nothing)
    assert registry.execute(ToolCall("c", "data", {})).content == '{"a": 1}'
    assert registry.execute(ToolCall("c", "nothing", {})).content == ""


def test_async_tools_execute_and_aexecute() -> None:
    @tool
    async def slow(x: int) -> int:
        """Slow."""
        await asyncio.sleep(0)
        return x * 2

    registry = ToolRegistry()
    registry.register(slow)
    assert registry.execute(ToolCall("c", "slow", {"x": 2})).content == "4"
    assert asyncio.run(registry.aexecute(ToolCall("c", "slow", {"x": 3}))).content == "6"
    assert asyncio.run(slow(5)) == 10  # the decorated coroutine function still works


def test_aexecute_runs_sync_tools_in_worker_threads_concurrently() -> None:
    threads: set[int] = set()

    @tool
    def blocking(x: int) -> int:
        """Block."""
        threads.add(threading.get_ident())
        time.sleep(0.2)
        return x

    registry = ToolRegistry()
    registry.register(blocking)

    async def run() -> list[ToolResult]:
        return await asyncio.gather(
            *(registry.aexecute(ToolCall(str(i), "blocking", {"x": i})) for i in range(3))
        )

    results = asyncio.run(run())
    assert [r.content for r in results] == ["0", "1", "2"]
    assert threading.get_ident() not in threads and len(threads) >= 2


def test_provider_schemas() -> None:
    registry = ToolRegistry()
    registry.register(get_weather)
    neutral = registry.to_schema()[0]
    assert registry.to_openai_schema() == [{"type": "function", "function": neutral}]
    assert registry.to_anthropic_schema() == [
        {
            "name": "get_weather",
            "description": neutral["description"],
            "input_schema": neutral["parameters"],
        }
    ]
    gemini = registry.to_gemini_schema()[0]
    assert gemini["parameters"]["properties"]["units"] == {"type": "string"}  # default stripped


def test_gemini_keeps_property_names_that_look_like_keywords() -> None:
    @tool
    def f(default: str, title: str, additionalProperties: int = 1) -> None:
        """F."""

    registry = ToolRegistry()
    registry.register(f)
    props = registry.to_gemini_schema()[0]["parameters"]["properties"]
    assert set(props) == {"default", "title", "additionalProperties"}


json_leaf = st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none())
schema_keys = st.sampled_from(
    [
        "type",
        "description",
        "default",
        "title",
        "additionalProperties",
        "$schema",
        "examples",
        "enum",
        "minimum",
        "format",
    ]
)
schemas = st.recursive(
    st.dictionaries(schema_keys, json_leaf, max_size=4),
    lambda inner: st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3),
        },
        optional={"items": inner, "default": json_leaf, "title": st.text(max_size=3)},
    ),
    max_leaves=10,
)


def _all_keys(schema: Any) -> set[str]:
    keys: set[str] = set()
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k == "properties" and isinstance(v, dict):
                for sub in v.values():
                    keys |= _all_keys(sub)
            else:
                keys.add(k)
                keys |= _all_keys(v) if k == "items" else set()
    return keys


@given(params=schemas)
def test_property_gemini_schema_has_only_supported_keys(params: dict[str, Any]) -> None:
    t = Tool("t", "d", {"type": "object", "properties": {"p": params}}, fn=lambda **_: None)
    registry = ToolRegistry()
    registry.register(t)
    out = registry.to_gemini_schema()[0]["parameters"]
    assert _all_keys(out) <= GEMINI_SCHEMA_KEYS
    assert set(out["properties"]) == {"p"}


@given(
    required=st.lists(st.sampled_from(["s", "i", "f", "b"]), unique=True),
)
def test_property_required_iff_no_default(required: list[str]) -> None:
    hints = {"s": "str", "i": "int", "f": "float", "b": "bool"}
    defaults = {"s": '"x"', "i": "1", "f": "1.5", "b": "True"}
    ordered = [n for n in "sifb" if n in required] + [n for n in "sifb" if n not in required]
    params = ", ".join(
        f"{n}: {hints[n]}" if n in required else f"{n}: {hints[n]} = {defaults[n]}" for n in ordered
    )
    namespace: dict[str, Any] = {}
    exec(f"def fn({params}):\n    '''Doc.'''\n    return 1", namespace)
    t: Tool = tool(namespace["fn"])._pywrapai_tool  # type: ignore[attr-defined]
    assert t.parameters["required"] == [n for n in ordered if n in required]
    assert list(t.parameters["properties"]) == ordered
    for n in ordered:
        assert ("default" in t.parameters["properties"][n]) == (n not in required)
