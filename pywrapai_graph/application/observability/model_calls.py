"""Observations of model calls: chat (whole, streamed, structured), embedding and rerank batches."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from typing import Any

from pywrapai_graph.application.observability.observation import (
    AttrValue,
    Observation,
    fire,
    quiet,
)
from pywrapai_graph.application.observability.telemetry import (
    capture_content,
    gate,
)
from pywrapai_graph.domain import (
    CallRecord,
    ChatRequest,
    ImagePart,
    LLMResponse,
    Message,
    Part,
    TextPart,
    TokenUsage,
)
from pywrapai_graph.domain.events import LLMCallEvent
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.redaction import bare_url

__all__ = [
    "genai_attributes",
    "llm_attributes",
    "observe_embedding",
    "observe_llm",
    "observe_rerank",
    "provider_name",
]

_llm_log = logging.getLogger("pywrapai_graph.llm")
_embed_log = logging.getLogger("pywrapai_graph.embeddings")
_rerank_log = logging.getLogger("pywrapai_graph.rerank")
# what a call returns when nothing listens: its failure is still a WARNING record
_QUIET_CHAT = quiet("chat", _llm_log)
_QUIET_EMBEDDINGS = quiet("embeddings", _embed_log)
_QUIET_RERANK = quiet("rerank", _rerank_log)

# Our provider names where the GenAI conventions spell them differently.
_PROVIDER_NAMES = {
    "gemini": "gcp.gemini",
    "azure-openai": "azure.ai.openai",
    "anthropic-bedrock": "aws.bedrock",
    "anthropic-vertex": "gcp.vertex_ai",
    "gemini-vertex": "gcp.vertex_ai",
}


def provider_name(provider: str) -> str:
    """The ``gen_ai.provider.name`` value for one of our provider names."""
    return _PROVIDER_NAMES.get(provider, provider)


def genai_attributes(operation: str, provider: str, model: str) -> dict[str, AttrValue]:
    """The attributes every GenAI span starts with."""
    name = provider_name(provider)
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": name,
        "gen_ai.system": name,
        "gen_ai.request.model": model,
    }


def _part_summary(part: Part) -> dict[str, Any]:
    """A part as traced with content capture on: text as is; an image or document by its
    type, size and digest (never its bytes); a URL without its credentials, query and
    fragment."""
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ImagePart) and part.url is not None:
        return {"type": "uri", "modality": "image", "uri": bare_url(part.url)}
    data = part.data or b""
    return {
        "type": "blob",
        "modality": "image" if isinstance(part, ImagePart) else "document",
        "mime_type": part.media_type,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _message_json(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    if m.parts:
        out["parts"] = [_part_summary(p) for p in m.parts]
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name} for c in m.tool_calls]
    if m.reasoning:  # its text only: signatures and redacted data are opaque
        out["reasoning"] = [r.text for r in m.reasoning]
    return out


def observe_llm(
    provider: str,
    request: ChatRequest,
    *,
    prompt_file: str | None,
    stream: bool = False,
    hooks: tuple[Hooks, ...] = (),
) -> Observation:
    """Observe one chat call; set ``result`` to the booked :class:`LLMResponse`."""
    listening = gate(hooks, _llm_log)
    if listening is None:
        return _QUIET_CHAT
    tr, ins, every_hook = listening
    attrs = genai_attributes("chat", provider, request.model)
    attrs["gen_ai.output.type"] = "json" if request.response_format else "text"
    if request.temperature is not None:
        attrs["gen_ai.request.temperature"] = request.temperature
    if request.max_tokens is not None:
        attrs["gen_ai.request.max_tokens"] = request.max_tokens
    if stream:
        attrs["gen_ai.request.stream"] = True
    if prompt_file is not None:
        attrs["pywrapai.prompt_file"] = prompt_file
    if request.tools:
        attrs["pywrapai.request.tools"] = request.tool_names
    if capture_content():
        attrs["gen_ai.input.messages"] = json.dumps(
            [_message_json(m) for m in request.messages], ensure_ascii=False
        )
    finish = functools.partial(_finish_llm, hooks=every_hook, stream=stream)
    return Observation(
        f"chat {request.model}", attrs, tracer=tr, instruments=ins, finish=finish, attach=not stream
    )


def llm_attributes(response: LLMResponse) -> dict[str, AttrValue]:
    """The span attributes a finished chat response contributes."""
    attrs: dict[str, AttrValue] = {"gen_ai.response.model": response.model}
    attrs.update(_usage_attributes(response.usage))
    attrs["pywrapai.cost_usd"] = response.cost_usd
    attrs["pywrapai.cached"] = response.cached
    if response.finish_reason:
        attrs["gen_ai.response.finish_reasons"] = [response.finish_reason]
    if response.tool_calls:
        attrs["pywrapai.response.tool_calls"] = [c.name for c in response.tool_calls]
    if response.fallback_from:  # the models of the chain that failed before this one
        attrs["pywrapai.fallback.from"] = [str(f) for f in response.fallback_from]
    if capture_content():
        out: dict[str, Any] = {"role": "assistant", "content": response.content}
        if response.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
            ]
        if response.reasoning:
            out["reasoning"] = [r.text for r in response.reasoning]
        attrs["gen_ai.output.messages"] = json.dumps([out], ensure_ascii=False, default=str)
    return attrs


def _usage_attributes(usage: TokenUsage) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens:
        attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attrs["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return attrs


def _record_usage(ob: Observation, usage: TokenUsage, cost: float, output: bool) -> None:
    ins = ob.instruments
    if ins is None:
        return
    base = dict(ob.metric_attributes or {})
    ins.token_usage.record(usage.input_tokens, {**base, "gen_ai.token.type": "input"})
    if output:
        ins.token_usage.record(usage.output_tokens, {**base, "gen_ai.token.type": "output"})
    ins.cost.add(cost, base)


def _metric_attributes(ob: Observation, operation: str) -> dict[str, AttrValue]:
    keys = ("gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model")
    attrs: dict[str, AttrValue] = {"gen_ai.operation.name": operation}
    attrs.update({k: ob.attributes[k] for k in keys if k in ob.attributes})
    return attrs


def _finish_llm(ob: Observation, *, hooks: tuple[Hooks, ...], stream: bool) -> None:
    response: LLMResponse | None = ob.result
    if response is not None:
        ob.attributes.update(llm_attributes(response))
    ob.metric_attributes = _metric_attributes(ob, "chat")
    if response is not None and not response.cached:
        _record_usage(ob, response.usage, response.cost_usd, output=True)
    ob.record_duration("chat")
    a = ob.attributes
    if ob.error is None:
        _llm_log.info(
            "chat %s/%s: %s in + %s out tokens%s, $%.6f, %.3f s%s",
            a["gen_ai.provider.name"],
            a.get("gen_ai.response.model") or a["gen_ai.request.model"],
            a.get("gen_ai.usage.input_tokens", 0),
            a.get("gen_ai.usage.output_tokens", 0),
            " (estimated)" if a.get("pywrapai.usage.estimated") else "",
            a.get("pywrapai.cost_usd", 0.0),
            ob.duration_s,
            _outcome(a),
            extra={"attributes": dict(a)},
        )
    else:
        _llm_log.log(
            ob.log_level(),
            "chat %s/%s failed after %.3f s%s",
            a["gen_ai.provider.name"],
            a["gen_ai.request.model"],
            ob.duration_s,
            ob.failed(": "),
            extra={"attributes": dict(a)},
        )
    if hooks:
        prompt = a.get("pywrapai.prompt_file")
        event = _call_event(
            ob,
            response,
            cached=response.cached if response else False,
            stream=stream,
            prompt_file=str(prompt) if prompt is not None else None,
            finish_reasons=(response.finish_reason,) if response and response.finish_reason else (),
            estimated=bool(a.get("pywrapai.usage.estimated")),
        )
        fire(hooks, "on_llm_call", event)


def _call_event(
    ob: Observation, result: LLMResponse | CallRecord | None, **more: Any
) -> LLMCallEvent:
    """The hooks' event of a finished (or failed) model call; ``more``: chat's own fields."""
    a = ob.attributes
    return LLMCallEvent(
        operation=str(a["gen_ai.operation.name"]),
        provider=str(a["gen_ai.provider.name"]),
        request_model=str(a["gen_ai.request.model"]),
        response_model=result.model if result else "",
        usage=result.usage if result else TokenUsage(),
        cost_usd=result.cost_usd if result else 0.0,
        duration_s=ob.duration_s,
        error=ob.error_type,
        **more,
    )


def _outcome(a: dict[str, AttrValue]) -> str:
    if a.get("pywrapai.cached"):
        return " (cached)"
    if a.get("pywrapai.stream.abandoned"):
        return " (stream closed early)"
    return " (cancelled)" if a.get("pywrapai.cancelled") else ""


def observe_embedding(
    provider: str, model: str, texts: int, *, hooks: tuple[Hooks, ...] = ()
) -> Observation:
    """Observe one embedding request; set ``result`` to its ledger :class:`CallRecord`."""
    return _observe_batch("embeddings", provider, model, texts, hooks)


def observe_rerank(
    provider: str, model: str, documents: int, *, hooks: tuple[Hooks, ...] = ()
) -> Observation:
    """Observe one rerank request; set ``result`` to its ledger :class:`CallRecord` (its
    ``usage.input_tokens`` are the provider's billed units)."""
    return _observe_batch("rerank", provider, model, documents, hooks)


# per operation: its logger, what a quiet call returns, the attribute counting its inputs,
# and how the log line names the inputs and the billed units
_BATCHES = {
    "embeddings": (_embed_log, _QUIET_EMBEDDINGS, "pywrapai.embedding.texts", "texts", "tokens"),
    "rerank": (_rerank_log, _QUIET_RERANK, "pywrapai.rerank.documents", "documents", "units"),
}


def _observe_batch(
    operation: str, provider: str, model: str, inputs: int, hooks: tuple[Hooks, ...]
) -> Observation:
    log, quiet_call, counted, _, _ = _BATCHES[operation]
    listening = gate(hooks, log)
    if listening is None:
        return quiet_call
    tr, ins, every_hook = listening
    attrs = genai_attributes(operation, provider, model)
    attrs[counted] = inputs
    finish = functools.partial(_finish_batch, operation=operation, hooks=every_hook)
    return Observation(f"{operation} {model}", attrs, tracer=tr, instruments=ins, finish=finish)


def _finish_batch(ob: Observation, *, operation: str, hooks: tuple[Hooks, ...]) -> None:
    log, _, counted, inputs, units = _BATCHES[operation]
    rec: CallRecord | None = ob.result
    a = ob.attributes
    billed = "gen_ai.usage.input_tokens" if operation == "embeddings" else "pywrapai.rerank.units"
    if rec is not None:
        a["gen_ai.response.model"] = rec.model
        a[billed] = rec.usage.input_tokens
        a["pywrapai.cost_usd"] = rec.cost_usd
    ob.metric_attributes = _metric_attributes(ob, operation)
    if rec is not None and operation == "embeddings":
        _record_usage(ob, rec.usage, rec.cost_usd, output=False)
    elif rec is not None and ob.instruments is not None:  # billed units are not tokens
        ob.instruments.cost.add(rec.cost_usd, dict(ob.metric_attributes))
    ob.record_duration(operation)
    log.log(
        ob.log_level(),
        f"{operation} %s/%s: %s {inputs}, %s {units}, $%.6f, %.3f s%s",
        a["gen_ai.provider.name"],
        a.get("gen_ai.response.model") or a["gen_ai.request.model"],
        a[counted],
        a.get(billed, 0),
        a.get("pywrapai.cost_usd", 0.0),
        ob.duration_s,
        ob.failed(),
        extra={"attributes": dict(a)},
    )
    if hooks:
        fire(hooks, "on_llm_call", _call_event(ob, rec))
