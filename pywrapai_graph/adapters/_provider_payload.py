"""Request and response payload helpers the chat and embedding provider adapters share."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ResponseFormatError

__all__ = ["add_extra_body", "drop_none", "owned_fields", "parse_arguments", "split_extra"]


def owned_fields(**specific: str) -> dict[str, str]:
    """The request fields every chat adapter writes from the library's own arguments, plus the
    provider's ``specific`` ones, each mapped to the argument a caller should use instead."""
    return {
        "model": "LLM(model=...)",
        "messages": "the input messages",
        "tools": "tools=",
        "tool_choice": "tool_choice=",
        "temperature": "temperature=",
        "top_p": "top_p=",
        "seed": "seed=",
        "stream": "stream()/astream()",
        **specific,
    }


def parse_arguments(raw: str | None, tool_name: str) -> dict[str, Any]:
    """Decode a tool call's JSON arguments.

    Raises:
        ResponseFormatError: the text is not a JSON object (``raw`` keeps it).
    """
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResponseFormatError(
            f"the model sent malformed JSON arguments for tool {tool_name!r}: {exc.msg} "
            f"at position {exc.pos}",
            raw=raw,
        ) from exc
    if not isinstance(value, dict):
        raise ResponseFormatError(
            f"the model sent arguments for tool {tool_name!r} that are not a JSON object",
            raw=raw,
        )
    return value


def drop_none(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were actually given."""
    return {k: v for k, v in values.items() if v is not None}


def split_extra(
    extra: Mapping[str, Any],
    *,
    provider: str,
    owned: Mapping[str, str],
    keywords: Collection[str],
    nested: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Route a request's ``extra=`` fields: (keyword arguments the SDK call names, fields for
    the request body the SDK sends as they are).

    A key in ``keywords`` is passed to the SDK call as a keyword argument; any other key goes
    into the body fields, as do the entries of a ``nested`` mapping (the SDK's own escape
    hatch, e.g. OpenAI's ``extra_body``). Values are never changed.

    Args:
        owned: the fields this adapter writes from the library's own arguments, each with the
            argument to use instead; ``extra`` may not set them (here or inside ``nested``).

    Raises:
        InvalidArgumentError: a key the library sets itself, or one given twice.
        ArgumentTypeError: ``nested`` is not a mapping.
    """
    calls: dict[str, Any] = {}
    body: dict[str, Any] = {}

    def to_body(key: str, value: Any) -> None:
        if key in owned:
            raise InvalidArgumentError(
                f"{provider}: extra={{{key!r}: ...}} sets a field the library sends itself; "
                f"use {owned[key]} instead (extra= carries only fields the library never sets)"
            )
        if key in body:
            raise InvalidArgumentError(
                f"{provider}: extra= gives {key!r} twice (directly and inside {nested!r})"
            )
        body[key] = value

    for key, value in extra.items():
        if key == nested:
            if not isinstance(value, Mapping):
                raise ArgumentTypeError(
                    f"{provider}: extra={{{nested!r}: ...}} must be a mapping of request "
                    f"fields, got {type(value).__name__}"
                )
            for inner, inner_value in value.items():
                to_body(str(inner), inner_value)
        elif key in keywords and key not in owned:
            calls[key] = value
        else:
            to_body(key, value)
    return calls, body


def add_extra_body(
    params: dict[str, Any],
    extra: Mapping[str, Any],
    *,
    provider: str,
    owned: Mapping[str, str],
    keywords: Collection[str],
) -> None:
    """Add ``extra`` to the keyword arguments of a Stainless SDK call (OpenAI, Anthropic): the
    keywords it names, and the other fields in its ``extra_body`` (see :func:`split_extra`)."""
    named, body = split_extra(
        extra, provider=provider, owned=owned, keywords=keywords, nested="extra_body"
    )
    params.update(named)
    if body:
        params["extra_body"] = body
