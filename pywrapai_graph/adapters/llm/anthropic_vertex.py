"""Claude on Google Vertex AI through the official ``anthropic`` SDK (``AnthropicVertex``).

The Messages API's request and reply bodies, so the Anthropic adapter's translation is reused
whole; what differs is the client: ``POST /v1/projects/{project}/locations/{region}/publishers/
anthropic/models/{model}:rawPredict`` (``:streamRawPredict`` for a stream), with a Google
OAuth bearer token from google-auth credentials.
"""

from __future__ import annotations

import os
from typing import Any

from pywrapai_graph.adapters._provider_payload import drop_none
from pywrapai_graph.adapters.llm._anthropic_cache import PromptCache
from pywrapai_graph.adapters.llm._platforms import PlatformChatModel
from pywrapai_graph.adapters.llm.anthropic import DEFAULT_MAX_TOKENS, AnthropicChatModel
from pywrapai_graph.errors import MissingExtraError

try:
    import anthropic
    from google.auth.credentials import Credentials
    from google.auth.exceptions import GoogleAuthError
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("anthropic[vertex]", "vertex") from exc

__all__ = ["AnthropicVertexChatModel"]

DEFAULT_MODEL = "claude-haiku-4-5@20251001"


class AnthropicVertexChatModel(PlatformChatModel, AnthropicChatModel):
    """Claude on Vertex AI, through ``anthropic.AnthropicVertex`` / ``AsyncAnthropicVertex``.

    Credentials are google-auth's: application-default credentials
    (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth application-default login``, the
    metadata server) unless ``credentials=`` is given. The region comes from ``region=``,
    ``CLOUD_ML_REGION`` (the SDK's variable) or ``GOOGLE_CLOUD_LOCATION``; the project from
    ``project=``, ``ANTHROPIC_VERTEX_PROJECT_ID``, ``GOOGLE_CLOUD_PROJECT`` or the
    credentials' own project.

    Args:
        model: a Vertex AI Claude model, e.g. ``claude-haiku-4-5@20251001``.
        project: the Google Cloud project id.
        region: the Vertex AI region, e.g. ``us-east5``, or ``global``.
        credentials: a ``google.auth.credentials.Credentials`` (refreshed by the SDK).
        base_url: another endpoint than ``https://{region}-aiplatform.googleapis.com/v1``.
        timeout, max_retries, default_max_tokens, prompt_cache: as for Anthropic.

    Raises:
        MissingExtraError: the ``vertex`` extra (google-auth) is not installed.
        ConfigurationError: no region can be found.
    """

    provider_name = "anthropic-vertex"
    _credential_failures = (GoogleAuthError,)
    native_auto = False  # structured output: the forced tool unless mode="native"

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
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        prompt_cache: PromptCache = "auto",
    ) -> None:
        env = os.environ
        self._credentials = credentials
        self._gcp = drop_none(
            project_id=project
            or env.get("ANTHROPIC_VERTEX_PROJECT_ID")
            or env.get("GOOGLE_CLOUD_PROJECT"),
            region=region or env.get("CLOUD_ML_REGION") or env.get("GOOGLE_CLOUD_LOCATION"),
            credentials=credentials,
        )
        super().__init__(
            model or DEFAULT_MODEL,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_max_tokens=default_max_tokens,
            prompt_cache=prompt_cache,
        )

    def _connect(self, options: dict[str, Any]) -> None:
        self._platform_clients(
            anthropic.AnthropicVertex,
            anthropic.AsyncAnthropicVertex,
            {**options, **self._gcp},
            "set GOOGLE_CLOUD_LOCATION (or CLOUD_ML_REGION) or pass region=",
        )
        self._secret = getattr(self._credentials, "token", None)
