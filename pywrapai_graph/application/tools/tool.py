"""``Tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, overload

from pywrapai_graph.application.tools.deadline import (
    acall_with_timeout,
    await_with_timeout,
    call_with_timeout,
)
from pywrapai_graph.application.tools.docstrings import parse_docstring
from pywrapai_graph.application.tools.type_schema import check_value, is_optional, schema_for_hint
from pywrapai_graph.domain.agent import check_tool_limits
from pywrapai_graph.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    InvalidStateError,
    ToolArgumentsError,
)

__all__ = ["TOOL_ATTRIBUTE", "Tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

#: The attribute ``@tool`` sets on the decorated function; ``ToolRegistry.register`` reads it.
TOOL_ATTRIBUTE = "_pywrapai_tool"

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable plus the schema the model sees.

    Attributes:
        name: the name the model calls the tool by.
        description: one line shown to the model.
        parameters: a JSON Schema object describing the arguments.
        fn: the Python callable (sync or ``async def``).

        timeout_s: seconds a call may take (None: the agent's ``tool_timeout_s``;
            ``math.inf``: no limit).
        max_result_bytes: UTF-8 bytes of the text the model receives (None: the agent's
            ``max_tool_result_bytes``).
        requires_approval: an agent stops before running a call of this tool until a
            person approves it (``AgentResult.paused``, ``Agent.resume``).

    Calling a Tool calls ``fn``: ``t("London")`` is ``t.fn("London")``.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    unchecked: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    timeout_s: float | None = None
    max_result_bytes: int | None = None
    requires_approval: bool = False

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise InvalidArgumentError("Tool.name must be a non-empty string")
        if not callable(self.fn):
            raise ArgumentTypeError(f"Tool.fn must be callable, got {type(self.fn).__name__}")
        if self.parameters.get("type", "object") != "object":
            raise InvalidArgumentError(
                f"Tool {self.name!r}: parameters must be a JSON Schema object"
            )
        check_tool_limits(self.timeout_s, self.max_result_bytes, f"Tool {self.name!r}: ")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def is_async(self) -> bool:
        """True when ``fn`` is a coroutine function."""
        return inspect.iscoroutinefunction(self.fn)

    def to_schema(self) -> dict[str, Any]:
        """The provider-neutral definition: name, description, parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": json.loads(json.dumps(self.parameters)),
        }

    def prepare_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the schema and signature, and convert enum values.

        Raises:
            ToolArgumentsError: listing every missing, unknown or mistyped argument.
        """
        if not isinstance(arguments, Mapping):
            raise ToolArgumentsError(
                f"tool {self.name!r}: arguments must be an object, got {type(arguments).__name__}"
            )
        problems: list[str] = []
        props: Mapping[str, Any] = self.parameters.get("properties", {})
        for name in self.parameters.get("required", []):
            if name not in arguments:
                problems.append(f"missing required argument {name!r}")
        for name, value in arguments.items():
            if name in props and name not in self.unchecked:
                if value is None and name not in self.parameters.get("required", []):
                    continue
                problems.extend(check_value(value, props[name], f"argument {name!r}"))
        problems.extend(self._signature_problems(arguments))
        if problems:
            raise ToolArgumentsError(f"tool {self.name!r}: " + "; ".join(problems))
        return _convert_enums(self.fn, dict(arguments))

    def _signature_problems(self, arguments: Mapping[str, Any]) -> list[str]:
        try:
            sig = inspect.signature(self.fn)
        except (TypeError, ValueError):
            return []
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            return []
        known = {n for n, p in sig.parameters.items() if p.kind not in _VARIADIC}
        problems = [f"unknown argument {n!r}" for n in arguments if n not in known]
        missing = [
            n
            for n, p in sig.parameters.items()
            if p.kind not in _VARIADIC and p.default is p.empty and n not in arguments
        ]
        required = set(self.parameters.get("required", []))
        problems += [f"missing required argument {n!r}" for n in missing if n not in required]
        return problems

    def invoke(self, arguments: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        """Validate ``arguments`` and call the tool synchronously.

        An ``async def`` tool is run to completion with ``asyncio.run`` when no event loop is
        running; inside a running loop use :meth:`ainvoke`. With ``timeout_s`` a sync tool
        runs in a thread of its own, abandoned when the time is up; an async one is cancelled.

        Raises:
            ToolArgumentsError: the arguments do not fit the tool.
            ToolTimeoutError: the call took longer than ``timeout_s``.
        """
        kwargs = self.prepare_arguments(arguments)
        if self.is_async:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(await_with_timeout(self.fn(**kwargs), timeout_s, self.name))
            raise InvalidStateError(
                f"tool {self.name!r} is async and an event loop is running; use aexecute()"
            )
        return call_with_timeout(self.fn, kwargs, timeout_s, self.name)

    async def ainvoke(self, arguments: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        """Validate and call: ``async def`` tools are awaited, sync ones run in a worker thread.

        Raises:
            ToolArgumentsError: the arguments do not fit the tool.
            ToolTimeoutError: the call took longer than ``timeout_s``.
        """
        kwargs = self.prepare_arguments(arguments)
        if self.is_async:
            return await await_with_timeout(self.fn(**kwargs), timeout_s, self.name)
        return await acall_with_timeout(self.fn, kwargs, timeout_s, self.name)


def _convert_enums(fn: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Turn raw enum values from the model into the Enum members the function expects."""
    hints = _safe_hints(fn)
    for name, value in kwargs.items():
        hint = hints.get(name)
        for candidate in (hint, *typing.get_args(hint)):
            if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
                if not isinstance(value, candidate) and value is not None:
                    kwargs[name] = candidate(value)
                break
    return kwargs


def _safe_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: treat as unhinted
        return {}


def build_tool(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    timeout_s: float | None = None,
    max_result_bytes: int | None = None,
    requires_approval: bool = False,
) -> Tool:
    """Inspect ``fn`` and build its :class:`Tool` (what ``@tool`` does)."""
    doc = parse_docstring(inspect.getdoc(fn))
    hints = _safe_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    unchecked: set[str] = set()
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in _VARIADIC:
            continue
        hint = hints.get(pname, inspect.Parameter.empty)
        schema = schema_for_hint(hint)
        if hint is inspect.Parameter.empty or (schema == {"type": "string"} and hint is not str):
            unchecked.add(pname)  # no usable hint: the reference's "string" default, unenforced
        if doc.params.get(pname):
            schema.setdefault("description", doc.params[pname])
        if param.default is not param.empty:
            default = param.default.value if isinstance(param.default, enum.Enum) else param.default
            if default is not None and _is_json(default):
                schema["default"] = default
        elif not is_optional(hint):
            required.append(pname)
        properties[pname] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    return Tool(
        name=name or fn.__name__,
        description=description if description is not None else doc.summary,
        parameters=parameters,
        fn=fn,
        unchecked=frozenset(unchecked),
        timeout_s=timeout_s,
        max_result_bytes=max_result_bytes,
        requires_approval=requires_approval,
    )


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


@overload
def tool(fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    max_result_bytes: int | None = None,
    requires_approval: bool = False,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    max_result_bytes: int | None = None,
    requires_approval: bool = False,
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Turn a function into a tool, reading its schema from type hints and docstring.

    Use bare (``@tool``) or with overrides (``@tool(name="lookup", description="...")``);
    ``timeout_s`` and ``max_result_bytes`` replace the agent's defaults for this tool;
    with ``requires_approval=True`` an agent stops before each call of it until a person
    approves (``Agent.resume``).
    The decorated function still works as before; its :class:`Tool` is on
    ``fn._pywrapai_tool``.

    Raises:
        TypeError: when applied to something that is not a function.
        ValueError: a timeout or size limit that is not positive.
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        if not callable(func):
            raise ArgumentTypeError(f"@tool needs a function, got {type(func).__name__}")
        built = build_tool(func, name, description, timeout_s, max_result_bytes, requires_approval)
        wrapper: Callable[P, R]
        if inspect.iscoroutinefunction(func):
            async_func = typing.cast(Callable[P, Awaitable[Any]], func)

            @functools.wraps(func)
            async def async_wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await async_func(*args, **kwargs)

            wrapper = typing.cast(Callable[P, R], async_wrapper)
        else:

            @functools.wraps(func)
            def sync_wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
                return func(*args, **kwargs)

            wrapper = sync_wrapper
        setattr(wrapper, TOOL_ATTRIBUTE, built)
        return wrapper

    if fn is not None:
        return decorate(fn)
    return decorate
