"""Google Vertex AI's prediction endpoints for Claude and Gemini, written from its public API
reference.

* Claude (Anthropic's publisher models): ``POST /v1/projects/{project}/locations/{region}/
  publishers/anthropic/models/{model}:rawPredict`` and ``:streamRawPredict`` (SSE), the
  Messages API body without ``model`` and with an ``anthropic_version``
  (:class:`~pywrapai_graph.testing.wire.AnthropicWire`'s bodies and events).
* Gemini: ``POST /v1beta1/projects/{project}/locations/{location}/publishers/google/models/
  {model}:generateContent`` and ``:streamGenerateContent?alt=sse``
  (:class:`~pywrapai_graph.testing.wire.GeminiWire`'s bodies and events).

Both take a Google OAuth access token as ``Authorization: Bearer``; without one they answer
401 ``UNAUTHENTICATED``, as Vertex AI does.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pywrapai_graph.testing.wire.providers import AnthropicWire, GeminiWire
from pywrapai_graph.testing.wire.server import RecordedRequest, WireResponse

__all__ = ["AnthropicVertexWire", "GeminiVertexWire", "vertex_call"]

_PATH = re.compile(
    r"^/(?P<version>v1|v1beta1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
    r"publishers/(?P<publisher>[^/]+)/models/(?P<model>[^/:?]+):(?P<method>\w+)(?:\?.*)?$"
)


def vertex_call(path: str) -> dict[str, str] | None:
    """The parts of a Vertex AI prediction path (version, project, location, publisher,
    model, method), or None."""
    m = _PATH.match(path)
    return None if m is None else m.groupdict()


def _unauthenticated(request: RecordedRequest) -> WireResponse | None:
    if request.headers.get("authorization", "").startswith("Bearer "):
        return None
    error = {
        "code": 401,
        "message": "Request is missing required authentication credential.",
        "status": "UNAUTHENTICATED",
    }
    return WireResponse(401, json.dumps({"error": error}).encode())


class AnthropicVertexWire(AnthropicWire):
    """Claude's ``:rawPredict`` / ``:streamRawPredict``; give the SDK :attr:`base_url`."""

    base_path = "/v1"
    methods: ClassVar[dict[str, str]] = {"rawPredict": "chat", "streamRawPredict": "chat"}

    def route(self, method: str, path: str) -> str | None:
        call = vertex_call(path)
        if method != "POST" or call is None or call["publisher"] != "anthropic":
            return None
        return self.methods.get(call["method"])

    def wants_stream(self, path: str, body: Any) -> bool:
        return ":streamRawPredict" in path

    def refuse(self, request: RecordedRequest, raw: bytes) -> WireResponse | None:
        return _unauthenticated(request)


class GeminiVertexWire(GeminiWire):
    """Gemini's ``:generateContent`` / ``:streamGenerateContent``; give the SDK :attr:`url`
    as its base URL."""

    def route(self, method: str, path: str) -> str | None:
        call = vertex_call(path)
        if method != "POST" or call is None or call["publisher"] != "google":
            return None
        return "chat" if call["method"] in ("generateContent", "streamGenerateContent") else None

    def refuse(self, request: RecordedRequest, raw: bytes) -> WireResponse | None:
        return _unauthenticated(request)
