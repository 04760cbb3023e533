"""The settings of the enterprise endpoints (Azure OpenAI, Amazon Bedrock, Vertex AI): where
the model lives. Credentials stay with each platform's own chain (``AZURE_OPENAI_API_KEY`` or
``api_key``, the AWS chain, Google application-default credentials), never in a YAML file."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, model_validator

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["ENDPOINT_KEYS", "EndpointFields"]

#: which endpoint setting each provider reads
ENDPOINT_KEYS: dict[str, frozenset[str]] = {
    "azure-openai": frozenset({"azure_endpoint", "api_version"}),
    "anthropic-bedrock": frozenset({"region", "aws_profile"}),
    "anthropic-vertex": frozenset({"region", "project"}),
    "gemini-vertex": frozenset({"region", "project"}),
}

#: the providers that authenticate with credentials objects only
_KEYLESS = frozenset({"anthropic-vertex", "gemini-vertex"})


class EndpointFields(BaseModel):
    """``llm.azure_endpoint``, ``llm.api_version`` (azure-openai), ``llm.region``
    (anthropic-bedrock: the AWS region; anthropic-vertex, gemini-vertex: the location),
    ``llm.project`` (the Vertex AI ones), ``llm.aws_profile`` (anthropic-bedrock). Unset,
    each SDK reads its own variables (``AZURE_OPENAI_ENDPOINT``, ``OPENAI_API_VERSION``,
    ``AWS_REGION``, ``AWS_PROFILE``, ``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``)."""

    azure_endpoint: str | None = None
    api_version: str | None = None
    region: str | None = None
    project: str | None = None
    aws_profile: str | None = None

    @model_validator(mode="after")
    def _read_by_the_provider(self) -> Self:
        provider = str(getattr(self, "provider", None))
        given = {k for k in EndpointFields.model_fields if getattr(self, k) is not None}
        stray = sorted(given - ENDPOINT_KEYS.get(provider, frozenset()))
        if stray:
            readers = sorted(p for p, keys in ENDPOINT_KEYS.items() if keys & set(stray))
            raise InvalidArgumentError(
                f"{', '.join(stray)}: read by provider {' or '.join(map(repr, readers))} "
                f"only (got provider {provider!r})"
            )
        if provider in _KEYLESS and getattr(self, "api_key", None) is not None:
            raise InvalidArgumentError(
                f"provider {provider!r} takes google-auth credentials (application-default "
                "credentials, GOOGLE_APPLICATION_CREDENTIALS), not api_key"
            )
        return self

    def endpoint_options(self) -> dict[str, Any]:
        """The adapter options these settings give (only those that are set)."""
        return {k: getattr(self, k) for k in EndpointFields.model_fields if getattr(self, k)}
