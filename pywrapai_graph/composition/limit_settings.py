"""The ``limits:`` section of the settings: client-side limits per provider."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from pywrapai_graph.domain import Limits

__all__ = ["LimitSettings", "LimitsSection"]


class LimitSettings(BaseModel):
    """One provider's limits: one budget for every LLM, fallback and embedder of the
    process that uses that provider and key; with ``shared`` (a PostgreSQL DSN), for every
    process using that database."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)
    max_in_flight: int | None = Field(default=None, gt=0)
    max_wait_s: float = Field(default=60.0, gt=0)
    shared: SecretStr | None = None

    def limits(self) -> Limits:
        """These settings as :class:`Limits`."""
        shared = None if self.shared is None else self.shared.get_secret_value()
        return Limits(**self.model_dump(exclude={"shared"}), shared=shared)


class LimitsSection(BaseModel):
    """``limits: {openai: {requests_per_minute: 500}, anthropic: {...}}`` — the providers
    that call a remote API (``PYWRAPAI_LIMITS__OPENAI='{"max_in_flight": 8}'``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    openai: LimitSettings | None = None
    anthropic: LimitSettings | None = None
    gemini: LimitSettings | None = None
    ollama: LimitSettings | None = None
    # the enterprise endpoints, by provider name (``azure-openai:``) or field name
    azure_openai: LimitSettings | None = Field(default=None, alias="azure-openai")
    anthropic_bedrock: LimitSettings | None = Field(default=None, alias="anthropic-bedrock")
    anthropic_vertex: LimitSettings | None = Field(default=None, alias="anthropic-vertex")
    gemini_vertex: LimitSettings | None = Field(default=None, alias="gemini-vertex")

    def of(self, provider: str) -> Limits | None:
        """The limits configured for ``provider``, if any."""
        given = getattr(self, provider.replace("-", "_"), None)
        return given.limits() if isinstance(given, LimitSettings) else None
