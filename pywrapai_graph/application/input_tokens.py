"""Estimates of a request's input tokens, for calls whose usage the provider never reported."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.domain import DocumentPart, ImagePart, Message, TextPart

__all__ = ["MediaTokens", "estimate_input_tokens", "fitted", "generic_media_tokens"]

#: Tokens one image or document costs on a provider (see each adapter's ``media_tokens``).
MediaTokens = Callable[[ImagePart | DocumentPart], int]

# A provider without a documented formula: about a 1-megapixel image at 750 pixels a token,
# and a page's text plus its picture. Every provider scales a large image down before the
# model sees it (Anthropic to 1568 px on its long side, OpenAI to 2048, Gemini to 3072):
# the guess takes the middle one, so no header can make it absurd.
_GENERIC_IMAGE = 1_400
_GENERIC_PAGE = 2_000
_GENERIC_LONGEST = 2_048


def fitted(size: tuple[int, int], longest: int) -> tuple[int, int]:
    """``size`` scaled down (never up), in whole pixels, so that its longer side is at most
    ``longest``."""
    width, height = size
    side = max(width, height)
    if side <= longest:
        return width, height
    return max(1, (width * longest + side // 2) // side), max(
        1, (height * longest + side // 2) // side
    )


def generic_media_tokens(part: ImagePart | DocumentPart) -> int:
    """A provider-neutral guess: an image's pixels, fitted into 2048 x 2048, at 750 a token
    (1,400 for a URL), a document's pages at 2,000 tokens each."""
    if isinstance(part, DocumentPart):
        return part.pages * _GENERIC_PAGE
    size = part.size
    if size is None:
        return _GENERIC_IMAGE
    width, height = fitted(size, _GENERIC_LONGEST)
    return max(1, width * height // 750)


def estimate_input_tokens(
    messages: Sequence[Message], media_tokens: MediaTokens = generic_media_tokens
) -> int:
    """The messages' text at 4 characters a token, plus each image and document at
    ``media_tokens``."""
    texts: list[str] = []
    media = 0
    for m in messages:
        for part in m.content_parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            else:
                media += media_tokens(part)
    return estimate_tokens(texts) + media
