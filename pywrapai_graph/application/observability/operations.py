"""Observations of retrieval, vector-store operations, tool calls and agent runs and turns."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.application.observability.model_calls import genai_attributes
from pywrapai_graph.application.observability.observation import (
    NOOP,
    AttrValue,
    Observation,
    fire,
    quiet,
)
from pywrapai_graph.application.observability.telemetry import (
    capture_content,
    gate,
    listeners,
)
from pywrapai_graph.domain import ScoredChunk, ToolCall
from pywrapai_graph.domain.agent import AgentResult
from pywrapai_graph.domain.events import RetrievalEvent, ToolCallEvent
from pywrapai_graph.ports.hooks import Hooks

__all__ = [
    "observe_agent_run",
    "observe_agent_turn",
    "observe_retrieval",
    "observe_store",
    "observe_tool",
]

_retrieval_log = logging.getLogger("pywrapai_graph.retrieval")
_store_log = logging.getLogger("pywrapai_graph.store")
_tool_log = logging.getLogger("pywrapai_graph.tools")
_agent_log = logging.getLogger("pywrapai_graph.agent")
# what an operation returns when nothing listens: its failure is still a WARNING record
_QUIET_RETRIEVAL = quiet("retrieval", _retrieval_log)
_QUIET_STORE = quiet("vector store operation", _store_log)
# a tool's own error message may quote the user's data: its type only, unless content is captured
_QUIET_TOOL = quiet("tool", _tool_log, detail=False)
_QUIET_AGENT = quiet("agent run", _agent_log)


# ---------------------------------------------------------------------------- retrieval
def observe_retrieval(
    retriever: str, query: str, k: int, *, hooks: tuple[Hooks, ...] = ()
) -> Observation:
    """Observe one retrieval; set ``result`` to the hits returned."""
    listening = gate(hooks, _retrieval_log)
    if listening is None:
        return _QUIET_RETRIEVAL
    tr, ins, every_hook = listening
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": retriever,
        "pywrapai.retrieval.k": k,
    }
    if capture_content():
        attrs["gen_ai.retrieval.query.text"] = query
    finish = functools.partial(_finish_retrieval, k=k, hooks=every_hook)
    return Observation(
        f"retrieval {retriever}", attrs, tracer=tr, instruments=ins, finish=finish, client=False
    )


def _finish_retrieval(ob: Observation, *, k: int, hooks: tuple[Hooks, ...]) -> None:
    hits: Sequence[ScoredChunk] = ob.result or ()
    a = ob.attributes
    a["pywrapai.retrieval.chunk_ids"] = [h.chunk.id for h in hits]
    a["pywrapai.retrieval.scores"] = [float(h.score) for h in hits]
    ob.metric_attributes = {"gen_ai.data_source.id": a["gen_ai.data_source.id"]}
    ob.record_duration("retrieval")
    _retrieval_log.log(
        ob.log_level(),
        "retrieval %s: %d hits (k=%s), top score %s, %.3f s%s",
        a["gen_ai.data_source.id"],
        len(hits),
        a["pywrapai.retrieval.k"],
        f"{hits[0].score:.3f}" if hits else "-",
        ob.duration_s,
        ob.failed(),
        extra={"attributes": dict(a)},
    )
    if hooks:
        event = RetrievalEvent(
            retriever=str(a["gen_ai.data_source.id"]),
            k=k,
            hits=tuple(hits),
            duration_s=ob.duration_s,
            error=ob.error_type,
        )
        fire(hooks, "on_retrieval", event)


# ---------------------------------------------------------------------------- store
def observe_store(system: str, operation: str, **numbers: int) -> Observation:
    """Observe one vector-store operation (a span only); ``numbers`` become attributes."""
    tr = listeners()[0]
    if tr is None and not _store_log.isEnabledFor(logging.DEBUG):
        return _QUIET_STORE
    attrs: dict[str, AttrValue] = {"db.system.name": system, "db.operation.name": operation}
    attrs.update({f"pywrapai.store.{k}": v for k, v in numbers.items()})
    return Observation(
        f"{operation} {system}", attrs, tracer=tr, instruments=None, finish=_finish_store
    )


def _finish_store(ob: Observation) -> None:
    if isinstance(ob.result, int):
        ob.attributes["db.response.returned_rows"] = ob.result
    _store_log.log(
        ob.log_level(logging.DEBUG),
        "%s %s: %.3f s%s",
        ob.attributes["db.operation.name"],
        ob.attributes["db.system.name"],
        ob.duration_s,
        ob.failed(),
        extra={"attributes": dict(ob.attributes)},
    )


# ---------------------------------------------------------------------------- tools
def observe_tool(call: ToolCall, *, hooks: tuple[Hooks, ...] = ()) -> Observation:
    """Observe one tool execution; set ``result`` to the text the model receives."""
    listening = gate(hooks, _tool_log)
    if listening is None:
        return _QUIET_TOOL
    tr, ins, every_hook = listening
    attrs: dict[str, AttrValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    if capture_content():
        attrs["gen_ai.tool.call.arguments"] = json.dumps(call.arguments, default=str)
    finish = functools.partial(_finish_tool, call=call, hooks=every_hook)
    return Observation(
        f"execute_tool {call.name}", attrs, tracer=tr, instruments=ins, finish=finish, client=False
    )


def _finish_tool(ob: Observation, *, call: ToolCall, hooks: tuple[Hooks, ...]) -> None:
    a = ob.attributes
    if capture_content() and isinstance(ob.result, str):
        a["gen_ai.tool.call.result"] = ob.result
    ob.metric_attributes = {"gen_ai.tool.name": call.name}
    ob.record_duration("execute_tool")
    _tool_log.log(
        ob.log_level(),
        "tool %s (%s): %.3f s%s",
        call.name,
        call.id,
        ob.duration_s,
        ob.failed(detail=capture_content()),
        extra={"attributes": dict(a)},
    )
    if hooks:
        fire(hooks, "on_tool_call", ToolCallEvent(call, ob.duration_s, ob.error_type))


# ---------------------------------------------------------------------------- agent
def observe_agent_run(run_id: str, provider: str, model: str) -> Observation:
    """Observe one agent run; set ``result`` to its :class:`AgentResult`."""
    listening = gate((), _agent_log)
    if listening is None:
        return _QUIET_AGENT
    tr, ins, _ = listening
    attrs = genai_attributes("invoke_agent", provider, model)
    attrs["gen_ai.agent.name"] = "pywrapai.Agent"
    attrs["gen_ai.agent.id"] = run_id
    return Observation(
        "invoke_agent pywrapai.Agent",
        attrs,
        tracer=tr,
        instruments=ins,
        finish=_finish_agent,
        client=False,
    )


def _finish_agent(ob: Observation) -> None:
    result: AgentResult | None = ob.result
    partial: Any = getattr(ob.error, "partial", None)
    if result is None and isinstance(partial, AgentResult):
        result = partial
    a = ob.attributes
    if result is not None:
        a["pywrapai.agent.turns"] = result.total_turns
        a["gen_ai.usage.input_tokens"] = result.total_usage.input_tokens
        a["gen_ai.usage.output_tokens"] = result.total_usage.output_tokens
        a["pywrapai.cost_usd"] = result.total_cost_usd
    ob.metric_attributes = {
        k: a[k] for k in ("gen_ai.provider.name", "gen_ai.request.model") if k in a
    }
    ob.record_duration("invoke_agent")
    _agent_log.log(
        ob.log_level(),
        "agent run %s: %s turns, $%.6f, %.3f s%s",
        a["gen_ai.agent.id"],
        a.get("pywrapai.agent.turns", 0),
        a.get("pywrapai.cost_usd", 0.0),
        ob.duration_s,
        ob.failed(" stopped: "),
        extra={"attributes": dict(a)},
    )


def observe_agent_turn(turn: int) -> Observation:
    """A span around one agent turn: its model call and tool calls nest inside."""
    tr = listeners()[0]
    if tr is None:
        return NOOP
    attrs: dict[str, AttrValue] = {"pywrapai.agent.turn": turn}
    return Observation(
        f"agent_turn {turn}", attrs, tracer=tr, instruments=None, finish=None, client=False
    )
