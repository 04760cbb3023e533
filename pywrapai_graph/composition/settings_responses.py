"""``llm.api``: which OpenAI API a configured chat model speaks."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["OpenAIAPISetting"]


class OpenAIAPISetting(BaseModel):
    """``api: responses`` sends an OpenAI model's calls to the Responses API
    (``PYWRAPAI_LLM__API=responses``); ``chat`` or nothing, to Chat Completions."""

    api: Literal["chat", "responses"] | None = Field(
        default=None, description="openai provider only: 'chat' (default) or 'responses'"
    )

    @model_validator(mode="after")
    def _api_needs_openai(self) -> Self:
        provider = getattr(self, "provider", None)
        if self.api is not None and provider != "openai":
            raise InvalidArgumentError(
                f"api applies to provider 'openai' only (got provider {provider!r})"
            )
        return self
