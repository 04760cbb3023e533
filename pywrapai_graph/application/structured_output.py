"""Structured output that recovers: validate the model's JSON against the schema and, when it
does not validate, send the model its reply and the errors and ask again.

Written once for the sync and async facades (a :data:`~pywrapai_graph.ports.sync_async.Core`
that yields the requests to send): each attempt is a whole chat call of its own, booked in
the ledger and traced as a ``chat`` span inside a ``structured_attempt`` span. Retrying a
failed transport (429, 5xx, timeouts) stays the provider retry's job; this retries replies.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, TypeVar

from pywrapai_graph.application.observability.observation import NOOP, Observation
from pywrapai_graph.application.observability.telemetry import listeners
from pywrapai_graph.domain import ChatRequest, LLMResponse, Message, Role, ToolResult
from pywrapai_graph.errors import ArgumentTypeError, ResponseFormatError, StructuredOutputError
from pywrapai_graph.ports.sync_async import Core

if TYPE_CHECKING:  # pydantic loads only when structured output is used
    from pydantic import BaseModel, ValidationError

__all__ = ["checked_retries", "structured_attempts", "validated"]

M = TypeVar("M", bound="BaseModel")

_MAX_ERRORS = 10  # errors quoted back to the model; the rest are counted
_log = logging.getLogger("pywrapai_graph.llm")


def checked_retries(retries: object) -> int:
    """``retries`` when it is a whole number of at least 0.

    Raises:
        ArgumentTypeError: ``retries`` is not a non-negative int.
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ArgumentTypeError(
            f"retries must be an int >= 0 (attempts after the first), got {retries!r}"
        )
    return retries


def _errors_text(exc: ValidationError) -> str:
    """The validation errors, one ``location: message`` line each (no input values: a reply
    may quote the user's data, and this text reaches logs through the error)."""
    lines = []
    for error in exc.errors()[:_MAX_ERRORS]:
        where = ".".join(str(part) for part in error["loc"]) or "(the reply)"
        lines.append(f"- {where}: {error['msg']}")
    if exc.error_count() > _MAX_ERRORS:
        lines.append(f"- ... and {exc.error_count() - _MAX_ERRORS} more")
    return "\n".join(lines)


def validated(content: str, schema: type[M]) -> M:
    """``content`` validated against ``schema``.

    Raises:
        StructuredOutputError: invalid JSON or schema mismatch; ``raw`` keeps the text and
            ``validation_error`` the errors.
    """
    from pydantic import ValidationError

    try:
        return schema.model_validate_json(content)
    except ValidationError as exc:
        errors = _errors_text(exc)
        raise StructuredOutputError(
            f"the model's reply is not a valid {schema.__name__}: "
            f"{exc.error_count()} error(s):\n{errors}",
            raw=content,
            validation_error=errors,
        ) from exc


def _follow_up(response: LLMResponse, name: str, errors: str) -> list[Message]:
    """The turns that tell the model what was wrong: a tool result answering the forced
    tool's call, or the reply and a user message on the native path."""
    call = next((c for c in response.tool_calls if c.name == name), None)
    if call is not None:
        text = f"Validation failed:\n{errors}\nCall {name} again with arguments that fix this."
        return [
            Message(Role.ASSISTANT, "", tool_calls=[call]),
            Message(Role.TOOL, text, tool_result=ToolResult(call.id, name, text)),
        ]
    text = (
        f"Your reply is not a valid {name} object:\n{errors}\n"
        "Reply again with only the JSON object, fixed."
    )
    said = [Message(Role.ASSISTANT, response.content)] if response.content else []
    return [*said, Message(Role.USER, text)]


def _observe_attempt(attempt: int, name: str) -> Observation:
    """A span around one attempt: its chat span nests inside."""
    tr = listeners()[0]
    if tr is None:
        return NOOP
    attrs: dict[str, str | int | bool] = {
        "pywrapai.structured.schema": name,
        "pywrapai.structured.attempt": attempt,
    }
    return Observation(
        f"structured_attempt {attempt}",
        dict(attrs),
        tracer=tr,
        instruments=None,
        finish=None,
        client=False,
    )


def structured_attempts(
    request: ChatRequest, schema: type[M], retries: int
) -> Core[ChatRequest, M]:
    """Yield ``request``, then — while the reply does not validate and attempts remain — the
    same request with the reply and its errors appended; return the validated object.

    A reply the adapter could not decode (a ``ResponseFormatError``: no forced tool call,
    malformed arguments) counts as an invalid attempt too: it was billed and is retried.

    Raises:
        StructuredOutputError: no attempt validated; ``replies`` holds every raw reply.
    """
    fmt = request.response_format
    name = fmt.name if fmt is not None else schema.__name__
    replies: list[str] = []
    last: ResponseFormatError | None = None
    sent = request
    for attempt in range(1, retries + 2):
        with _observe_attempt(attempt, name) as ob:
            try:
                response: LLMResponse = yield sent
                try:
                    return validated(response.content, schema)
                except StructuredOutputError as exc:
                    replies.append(response.content)
                    turns = _follow_up(response, name, exc.validation_error)
                    last = exc
            except ResponseFormatError as exc:  # undecodable: say so, without echoing it
                replies.append(exc.raw)
                text = f"Your reply could not be read as a {name} object. Answer with one."
                turns = [Message(Role.USER, text)]
                last = exc
            ob.set({"pywrapai.structured.valid": False})
        if attempt <= retries:
            _log.info(
                "structured output %s: attempt %d did not validate; asking again", name, attempt
            )
        sent = dataclasses.replace(sent, messages=(*sent.messages, *turns))
    cause = last.__cause__ if isinstance(last, StructuredOutputError) else last
    raise _exhausted(name, replies, last) from cause


def _exhausted(
    name: str, replies: list[str], last: ResponseFormatError | None
) -> StructuredOutputError:
    errors = last.validation_error if isinstance(last, StructuredOutputError) else str(last)
    return StructuredOutputError(
        f"no valid {name} after {len(replies)} attempt(s); the last one failed with:\n"
        f"{errors}\nRaise retries=, simplify the schema, or try the other mode= ('native' or "
        "'tool'); every raw reply is in the error's .replies",
        raw=replies[-1] if replies else "",
        replies=tuple(replies),
        validation_error=errors,
    )
