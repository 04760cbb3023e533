"""Azure OpenAI's data-plane API for chat, written from its public API reference.

``POST /openai/deployments/{deployment}/chat/completions?api-version=<version>`` with the
Chat Completions body and reply (:class:`~pywrapai_graph.testing.wire.OpenAIWire`'s), the
resource key in an ``api-key`` header or an Entra ID token as ``Authorization: Bearer``.
A request without ``api-version`` is a 404 (as Azure answers), one without a credential a 401.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from pywrapai_graph.testing.wire.providers import OpenAIWire
from pywrapai_graph.testing.wire.server import RecordedRequest, WireResponse

__all__ = ["AzureOpenAIWire", "azure_call"]

_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/(chat/completions|embeddings)$")


def azure_call(path: str) -> tuple[str, str | None] | None:
    """(deployment, api-version) of a recorded request path, or None when it is not a
    deployment call."""
    parts = urlsplit(path)
    m = _PATH.match(parts.path)
    if m is None:
        return None
    versions = parse_qs(parts.query).get("api-version")
    return m["deployment"], versions[0] if versions else None


class AzureOpenAIWire(OpenAIWire):
    """Chat Completions and Embeddings on Azure OpenAI deployments; give the SDK
    :attr:`url` as ``azure_endpoint``."""

    base_path = ""

    def route(self, method: str, path: str) -> str | None:
        call = azure_call(path)
        if method != "POST" or call is None:
            return None
        return "chat" if "/chat/completions" in path else "embeddings"

    def refuse(self, request: RecordedRequest, raw: bytes) -> WireResponse | None:
        call = azure_call(request.path)
        if call is None:
            return None
        if call[1] is None:
            return WireResponse(404, self.render_error(404, "Resource not found"))
        headers = request.headers
        if not (headers.get("api-key") or headers.get("authorization", "").startswith("Bearer ")):
            message = "Access denied due to missing subscription key or token."
            return WireResponse(401, self.render_error(401, message))
        return None
