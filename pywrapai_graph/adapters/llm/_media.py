"""Images and documents in chat requests: what each provider refuses, and what they cost.

Token formulas are the providers' published ones; they estimate the input of a call whose
usage never arrived (a stream cut before its usage): reported usage always wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

from pywrapai_graph.application.input_tokens import fitted
from pywrapai_graph.domain import DocumentPart, ImagePart, Message, TextPart
from pywrapai_graph.errors import UnsupportedContentError

__all__ = [
    "MAX_IMAGE_PIXELS",
    "anthropic_tokens",
    "data_url",
    "gemini_tokens",
    "media_parts",
    "openai_tokens",
    "refuse",
]

Media = ImagePart | DocumentPart
#: Why a provider cannot take a part (None: it can).
Refusal = Callable[[Media], str | None]


def media_parts(messages: Sequence[Message]) -> Iterator[tuple[int, Media]]:
    """(message index, part) for every image and document of ``messages``."""
    for i, m in enumerate(messages):
        for part in m.parts:
            if not isinstance(part, TextPart):
                yield i, part


#: The most pixels an image may claim, whatever the provider. OpenAI and Gemini document no
#: pixel limit (they scale an image down: OpenAI to fit 2048 x 2048 and 768 px on its short
#: side, Gemini to fit 3072 x 3072) and Anthropic refuses more than 8000 px a side; beyond
#: Pillow's decompression-bomb limit (twice its ``MAX_IMAGE_PIXELS``, 89,478,485) the
#: decoders image services use refuse a file, so a header claiming more is crafted or broken.
MAX_IMAGE_PIXELS = 178_956_970


def _undecodable(part: Media) -> str | None:
    size = part.size if isinstance(part, ImagePart) else None
    if size is None or (min(size) >= 1 and size[0] * size[1] <= MAX_IMAGE_PIXELS):
        return None
    return (
        f"its header claims {size[0]} x {size[1]} pixels; an image has at least one and at "
        f"most {MAX_IMAGE_PIXELS:,} pixels, so the file is damaged or crafted: send it "
        "re-encoded, scaled down"
    )


def refuse(provider: str, messages: Sequence[Message], why: Refusal | None = None) -> None:
    """Raise for the first part ``provider`` cannot take, before any request is sent: an
    image of no pixels or more than :data:`MAX_IMAGE_PIXELS`, or what ``why`` refuses.

    Raises:
        UnsupportedContentError: names the message, the part and what to do instead.
    """
    for i, part in media_parts(messages):
        reason = _undecodable(part) or (why(part) if why is not None else None)
        if reason is not None:
            raise UnsupportedContentError(
                f"{provider} cannot take {part!r} (messages[{i}]): {reason}"
            )


def data_url(part: Media) -> str:
    """The part's bytes as a ``data:`` URL."""
    return f"data:{part.media_type};base64,{part.base64()}"


def _counted(
    part: Media, *, page: int, unsized: int, image: Callable[[tuple[int, int]], int]
) -> int:
    """A document's pages at ``page`` tokens; an image by ``image(size)``, or ``unsized``
    when its size is unknown (a URL)."""
    if isinstance(part, DocumentPart):
        return part.pages * page
    size = part.size
    return unsized if size is None else image(size)


# Anthropic: images whose long edge exceeds 1568 px are scaled down; tokens = w * h / 750.
# A URL's size is unknown: priced as the largest unscaled square (1092 x 1092, ~1590 tokens).
# A PDF page is its text (1,500-3,000 tokens, the middle taken) plus its page image.
_ANTHROPIC_IMAGE_MAX = 1_590


def _anthropic_image(size: tuple[int, int]) -> int:
    width, height = fitted(size, 1568)
    return max(1, math.ceil(width * height / 750))


def anthropic_tokens(part: Media) -> int:
    """Claude's vision formula: (width x height) / 750 after fitting the long edge to 1568."""
    page = 2_250 + _ANTHROPIC_IMAGE_MAX
    return _counted(part, page=page, unsized=_ANTHROPIC_IMAGE_MAX, image=_anthropic_image)


# OpenAI (detail "auto" = high for large images): fit in 2048 x 2048, then scale the shorter
# side to 768; 170 tokens per 512-px tile plus 85. A URL: priced as 1024 x 1024 (765). A PDF
# page: its extracted text plus its page image.
_OPENAI_URL = 765


def _openai_image(size: tuple[int, int]) -> int:
    width, height = fitted(size, 2048)
    scale = min(1.0, 768 / max(1, min(width, height)))
    return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def openai_tokens(part: Media) -> int:
    """GPT-4o's tile formula: 85 + 170 per 512-pixel tile of the scaled image."""
    return _counted(part, page=500 + _OPENAI_URL, unsized=_OPENAI_URL, image=_openai_image)


# Gemini: images are scaled down to fit 3072 x 3072; then 258 tokens for an image with both
# sides <= 384 px, else 258 per 768 x 768 tile; 258 tokens per PDF page.
_GEMINI_UNIT = 258


def _gemini_image(size: tuple[int, int]) -> int:
    if max(size) <= 384:
        return _GEMINI_UNIT
    width, height = fitted(size, 3072)
    return math.ceil(width / 768) * math.ceil(height / 768) * _GEMINI_UNIT


def gemini_tokens(part: Media) -> int:
    """Gemini's formula: 258 per image tile (768 px) or PDF page."""
    return _counted(part, page=_GEMINI_UNIT, unsized=_GEMINI_UNIT, image=_gemini_image)
