"""The tools of a tool server (an MCP server) as :class:`Tool` objects.

Each remote tool becomes a ``Tool`` whose ``fn`` is an ``async def`` that asks the server,
so a ``ToolRegistry`` and an ``Agent`` treat it as any async tool: the arguments are checked
against the lowered schema before anything is sent, the call is bounded by the tool timeout
(the call is cancelled on the server's side too) and the result size limit, observed in an
``execute_tool`` span, and its failures go to the agent's ``tool_error_policy``. ``fn``
carries a signature made from the schema's properties, so an unknown or a missing argument
is caught here, not by the server.

A tool whose schema is over the lowering's limits (a few KB of ``$ref``s can inline to an
exponential size, see :mod:`~pywrapai_graph.application.tools.remote_schema`) is still
listed, with no arguments: calling it fails with a :class:`ToolServerError` that names the
server and the tool (logged once as a warning when the tool is made), so one hostile tool
neither hangs the listing nor takes its server's other tools away.
"""

from __future__ import annotations

import inspect
import keyword
import logging
import re
from typing import Any

from pywrapai_graph.application.tools.remote_schema import SchemaLimitError, lower_schema
from pywrapai_graph.application.tools.tool import Tool
from pywrapai_graph.domain.remote_tool import RemoteToolSpec
from pywrapai_graph.errors import ToolServerError
from pywrapai_graph.ports.tool_server import ToolServer

__all__ = ["model_tool_name", "remote_tool", "remote_tools"]

#: what OpenAI and Anthropic accept as a tool name (Gemini accepts a superset)
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
#: the arguments of a tool whose own schema could not be lowered: any (the call fails anyway)
_ANY_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": True}
_log = logging.getLogger(__name__)


def model_tool_name(name: str) -> str:
    """``name`` as every provider accepts it: characters other than letters, digits, ``_``
    and ``-`` (an MCP name may hold ``.`` or ``/``) become ``_``, and it is cut to 64."""
    return _NOT_ALLOWED.sub("_", name)[:_MAX_NAME]


def remote_tools(
    server: ToolServer,
    *,
    prefix: str = "",
    timeout_s: float | None = None,
    max_result_bytes: int | None = None,
) -> list[Tool]:
    """A :class:`Tool` for every tool ``server`` listed, named ``prefix + name`` as every
    provider accepts it (:func:`model_tool_name`); the server is called by its own name.

    Args:
        server: an open tool server.
        prefix: put before each name (tools of two servers may share a name).
        timeout_s: per-call timeout of these tools (None: the agent's ``tool_timeout_s``).
        max_result_bytes: result size limit of these tools (None: the agent's).

    Raises:
        InvalidStateError: the server is not open.
        ValueError: a listed tool has an empty name.
    """
    return [
        remote_tool(
            server, spec, prefix=prefix, timeout_s=timeout_s, max_result_bytes=max_result_bytes
        )
        for spec in server.list_tools()
    ]


def remote_tool(
    server: ToolServer,
    spec: RemoteToolSpec,
    *,
    prefix: str = "",
    timeout_s: float | None = None,
    max_result_bytes: int | None = None,
) -> Tool:
    """The :class:`Tool` that calls ``spec`` on ``server``; one that fails with a
    :class:`ToolServerError` when ``spec``'s schema is over the lowering's limits."""
    remote_name, name = spec.name, model_tool_name(prefix + spec.name)
    why = ""
    try:
        parameters = lower_schema(spec.input_schema)
    except SchemaLimitError as exc:
        why, parameters = str(exc), dict(_ANY_ARGUMENTS)
        _log.warning("%s", _unusable(server, remote_name, why))

    async def call_remote(**arguments: Any) -> str:
        if why:
            raise _unusable(server, remote_name, why)
        return await server.acall(remote_name, arguments)

    call_remote.__name__ = call_remote.__qualname__ = name
    call_remote.__signature__ = _signature(parameters)  # type: ignore[attr-defined]
    return Tool(
        name=name,
        description=spec.description,
        parameters=parameters,
        fn=call_remote,
        timeout_s=timeout_s,
        max_result_bytes=max_result_bytes,
    )


def _unusable(server: ToolServer, tool: str, why: str) -> ToolServerError:
    return ToolServerError(
        f"MCP server {server.name!r} listed tool {tool!r} with an input schema over the "
        f"limits: {why}; the tool cannot be called",
        server=server.name,
        tool=tool,
    )


def _signature(parameters: dict[str, Any]) -> inspect.Signature:
    """Keyword-only parameters named as the schema's properties (required ones without a
    default); ``**arguments`` when the schema admits more or a name is no identifier."""
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    names = list(properties)
    open_ended = parameters.get("additionalProperties") not in (None, False) or any(
        not n.isidentifier() or keyword.iskeyword(n) for n in names
    )
    if open_ended:
        return inspect.Signature(
            [inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)], return_annotation=str
        )
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter(n, kw) if n in required else inspect.Parameter(n, kw, default=None)
        for n in names
    ]
    return inspect.Signature(params, return_annotation=str)
