"""The ``google.genai.Client`` the Gemini chat and embedding adapters share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pywrapai_graph.errors import ConfigurationError, MissingExtraError
from pywrapai_graph.redaction import scrubbed

try:
    from google import genai
    from google.genai import types
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("google-genai", "gemini") from exc

__all__ = ["close_aio", "gemini_client"]


def gemini_client(
    api_key: str | None,
    base_url: str | None,
    timeout: float | None,
    max_retries: int | None,
    client_args: dict[str, Any] | None = None,
    async_client_args: dict[str, Any] | None = None,
    vertex: Mapping[str, Any] | None = None,
) -> genai.Client:
    """A ``google.genai.Client`` with our options; on Vertex AI with ``vertex`` (its
    ``project``, ``location`` and ``credentials``) instead of an API key.

    Raises:
        MissingExtraError: google-genai is not installed.
        ConfigurationError: no API key is available (no project, on Vertex AI).
    """
    http: dict[str, Any] = {}
    if base_url:
        http["base_url"] = base_url
    if timeout is not None:
        http["timeout"] = int(timeout * 1000)
    if client_args:
        http["client_args"] = client_args
    if async_client_args:
        http["async_client_args"] = async_client_args
    if max_retries is not None:
        http["retry_options"] = types.HttpRetryOptions(attempts=max_retries + 1)
    options = types.HttpOptions(**http) if http else None
    try:
        if vertex is not None:
            return genai.Client(vertexai=True, http_options=options, **vertex)
        return genai.Client(api_key=api_key, http_options=options)
    except ValueError as exc:
        needs = (
            "Gemini on Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT or pass project="
            if vertex is not None
            else "Gemini needs an API key: set GOOGLE_API_KEY or pass api_key="
        )
        raise ConfigurationError(needs) from scrubbed(exc, [api_key])


async def close_aio(client: Any) -> None:
    """Close one ``client.aio`` (a loop's async Gemini client)."""
    await client.aclose()
