"""Gemini on Google Vertex AI through the official ``google-genai`` SDK
(``genai.Client(vertexai=True, project=, location=)``).

The same ``generateContent`` bodies as the Gemini API, so the Gemini adapter's translation is
reused whole; what differs is the client: ``projects/{project}/locations/{location}/
publishers/google/models/{model}:generateContent`` with a Google OAuth bearer token from
google-auth credentials instead of an API key.
"""

from __future__ import annotations

from pywrapai_graph.adapters._provider_payload import drop_none
from pywrapai_graph.adapters.llm._platforms import PlatformChatModel
from pywrapai_graph.adapters.llm.gemini import GeminiChatModel
from pywrapai_graph.errors import MissingExtraError

try:
    from google.auth.credentials import Credentials
    from google.auth.exceptions import GoogleAuthError
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("google-genai", "vertex") from exc

__all__ = ["GeminiVertexChatModel"]

DEFAULT_MODEL = "gemini-2.5-flash"


class GeminiVertexChatModel(PlatformChatModel, GeminiChatModel):
    """Gemini on Vertex AI, through ``google.genai.Client(vertexai=True)``.

    ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` work as with the SDK (the location
    defaults to ``global``); credentials are google-auth's application-default credentials
    unless ``credentials=`` is given.

    Args:
        model: a Gemini model, e.g. ``gemini-2.5-flash``.
        project: the Google Cloud project id.
        region: the Vertex AI location, e.g. ``europe-west4``, or ``global``.
        credentials: a ``google.auth.credentials.Credentials`` (refreshed by the SDK).
        base_url: another endpoint than ``https://{region}-aiplatform.googleapis.com``.
        timeout, max_retries: as for Gemini.

    Raises:
        MissingExtraError: google-genai is not installed.
        ConfigurationError: no project is given or found.
    """

    provider_name = "gemini-vertex"
    _credential_failures = (GoogleAuthError,)

    def __init__(
        self,
        model: str | None = None,
        *,
        project: str | None = None,
        region: str | None = None,
        credentials: Credentials | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        self._vertex = drop_none(project=project, location=region, credentials=credentials)
        self._credentials = credentials
        super().__init__(
            model or DEFAULT_MODEL, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
        self._secret = getattr(credentials, "token", None)
