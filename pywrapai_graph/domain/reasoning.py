"""ReasoningPart: what a model thought before it answered, kept to be sent back."""

from __future__ import annotations

from dataclasses import dataclass

from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["ReasoningPart"]


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """One piece of a model's reasoning, on an ASSISTANT message and on ``LLMResponse.reasoning``.

    One type for every provider: an Anthropic ``thinking`` block (``text`` and its
    ``signature``) or ``redacted_thinking`` block (``redacted``: its encrypted data), the
    ``reasoning_content`` of an OpenAI-compatible server (DeepSeek, vLLM, llama.cpp: ``text``
    only), a Gemini thought signature (``signature``, base64) and an OpenAI Responses API
    reasoning item (``id``, its summaries joined in ``text``, its encrypted content in
    ``signature``). Adapters send a part back,
    unchanged, only to the provider that produced it. The repr shows sizes, never the text.

    Attributes:
        text: the reasoning text ("" for a redacted block or a bare signature).
        signature: the provider's opaque signature over the text, kept byte for byte.
        redacted: the encrypted data of a redacted block (Anthropic ``redacted_thinking``).
        provider: the adapter that produced it ("anthropic", "openai", "gemini",
            "openai-responses", ...).
        id: the provider's id of the item, where it has one (Responses API ``rs_...``).
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str = ""
    id: str | None = None

    def __post_init__(self) -> None:
        for name in ("text", "signature", "redacted", "provider", "id"):
            value: object = getattr(self, name)
            if not (isinstance(value, str) or (value is None and name in _OPTIONAL)):
                raise ArgumentTypeError(
                    f"ReasoningPart.{name} must be str, got {type(value).__name__}"
                )
        check_unicode(self.text, "a ReasoningPart's text")
        if self.redacted is not None and (self.text or self.signature is not None):
            raise InvalidArgumentError(
                "a redacted ReasoningPart carries only its encrypted data (redacted=...); "
                "leave text and signature out"
            )

    def __repr__(self) -> str:
        if self.redacted is not None:
            return f"ReasoningPart({self.provider}, redacted, {len(self.redacted)} chars)"
        signed = ", signed" if self.signature is not None else ""
        return f"ReasoningPart({self.provider}, {len(self.text)} chars{signed})"


_OPTIONAL = ("signature", "redacted", "id")
