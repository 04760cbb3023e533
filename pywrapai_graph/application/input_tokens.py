"""Estimates of a request's input tokens, for calls whose usage the provider never reported."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.domain import DocumentPart, ImagePart, Message, TextPart

__all__ = ["MediaTokens", "estimate_input_tokens", "generic_media_tokens"]

#: Tokens one image or document costs on a provider (see each adapter's ``media_tokens``).
MediaTokens = Callable[[ImagePart | DocumentPart], int]

# A provider without a documented formula: about a 1-megapixel image at 750 pixels a token,
# and a page's text plus its picture.
_GENERIC_IMAGE = 1_400
_GENERIC_PAGE = 2_000


def generic_media_tokens(part: ImagePart | DocumentPart) -> int:
    """A provider-neutral guess: an image's pixels at 750 a token (1,400 for a URL), a
    document's pages at 2,000 tokens each."""
    if isinstance(part, DocumentPart):
        return part.pages * _GENERIC_PAGE
    size = part.size
    return _GENERIC_IMAGE if size is None else max(1, size[0] * size[1] // 750)


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
