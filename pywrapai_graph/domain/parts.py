"""Content parts: text, images and documents a USER message carries besides its text."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.domain.media import IMAGE_TYPES, image_size, image_type, pdf_pages
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["DocumentPart", "ImagePart", "Part", "TextPart"]

_URL_SCHEMES = ("https://", "http://")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class TextPart:
    """A piece of text between other parts (a message's ``content`` is its first text)."""

    text: str

    def __post_init__(self) -> None:
        text: object = self.text
        if not isinstance(text, str):
            raise ArgumentTypeError(f"TextPart.text must be str, got {type(text).__name__}")
        check_unicode(text, "a TextPart's text")


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image, as bytes or as an http(s) URL the provider fetches.

    Build it with :meth:`from_bytes` or :meth:`from_url`. Bytes must be a PNG, JPEG, GIF or
    WebP image; the media type is read from them (a given one must agree). The repr shows
    the type, size and a digest, never the bytes.

    Attributes:
        media_type: "image/png", "image/jpeg", "image/gif" or "image/webp"; None for a URL
            whose type was not given.
        data: the image's bytes (None for a URL).
        url: the image's address (None for bytes).
    """

    media_type: str | None
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None

    def __post_init__(self) -> None:
        data: object = self.data
        url: object = self.url
        if (data is None) == (url is None):
            raise InvalidArgumentError(
                "an ImagePart holds either data (bytes) or a url; use ImagePart.from_bytes(...) "
                "or ImagePart.from_url(...)"
            )
        if data is not None:
            self._check_bytes(data)
        else:
            self._check_url(url)

    def _check_bytes(self, data: object) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ArgumentTypeError(f"ImagePart.data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        object.__setattr__(self, "data", data)
        found = image_type(data)
        if found is None:
            raise InvalidArgumentError(
                f"ImagePart.data is not a PNG, JPEG, GIF or WebP image ({len(data)} bytes); "
                "convert it to one of these formats"
            )
        if self.media_type is not None and self.media_type != found:
            raise InvalidArgumentError(
                f"ImagePart.media_type is {self.media_type!r} but the bytes are {found!r}; "
                "leave media_type out to take it from the bytes"
            )
        object.__setattr__(self, "media_type", found)

    def _check_url(self, url: object) -> None:
        if not isinstance(url, str) or not url.startswith(_URL_SCHEMES):
            raise InvalidArgumentError(
                f"ImagePart.url must be an http(s) URL, got {str(url)[:80]!r}; pass the "
                "image's bytes with ImagePart.from_bytes(...) instead"
            )
        if self.media_type is not None and self.media_type not in IMAGE_TYPES:
            raise InvalidArgumentError(
                f"ImagePart.media_type must be one of {list(IMAGE_TYPES)}, got {self.media_type!r}"
            )

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None) -> ImagePart:
        """An image from its bytes (e.g. ``Path("cat.png").read_bytes()``).

        Raises:
            InvalidArgumentError: the bytes are no PNG, JPEG, GIF or WebP image, or are not of
                the ``media_type`` given.
        """
        return cls(media_type, data=data)

    @classmethod
    def from_url(cls, url: str, media_type: str | None = None) -> ImagePart:
        """An image the provider downloads itself.

        Raises:
            InvalidArgumentError: not an http(s) URL, or an unknown ``media_type``.
        """
        return cls(media_type, url=url)

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) in pixels read from the bytes' header; None for a URL."""
        return None if self.data is None else image_size(self.data)

    def base64(self) -> str:
        """The bytes, base64-encoded (as most APIs take them)."""
        return base64.b64encode(self.data or b"").decode("ascii")

    def __repr__(self) -> str:
        if self.data is None:
            return f"ImagePart(url={self.url!r})"
        return f"ImagePart({self.media_type}, {len(self.data)} bytes, sha256 {_digest(self.data)})"


@dataclass(frozen=True, slots=True)
class DocumentPart:
    """A PDF document, as bytes. The repr shows its size and a digest, never the bytes.

    Attributes:
        data: the PDF's bytes.
        name: a file name some providers show the model (OpenAI requires one; "document.pdf"
            is sent when None).
    """

    data: bytes = field(repr=False)
    name: str | None = None
    media_type: str = "application/pdf"

    def __post_init__(self) -> None:
        data: object = self.data
        if not isinstance(data, bytes | bytearray | memoryview):
            raise ArgumentTypeError(f"DocumentPart.data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        object.__setattr__(self, "data", data)
        if self.media_type != "application/pdf" or not data.startswith(b"%PDF-"):
            raise InvalidArgumentError(
                f"DocumentPart takes PDF bytes (starting with %PDF-); got {len(data)} bytes "
                f"of {self.media_type!r}; send other text as the message's content"
            )

    @classmethod
    def from_bytes(cls, data: bytes, name: str | None = None) -> DocumentPart:
        """A PDF from its bytes (e.g. ``Path("report.pdf").read_bytes()``).

        Raises:
            InvalidArgumentError: the bytes are not a PDF.
        """
        return cls(data, name)

    @property
    def pages(self) -> int:
        """The page count read from the PDF's objects (an estimate for compressed PDFs)."""
        return pdf_pages(self.data)

    def base64(self) -> str:
        """The bytes, base64-encoded."""
        return base64.b64encode(self.data).decode("ascii")

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"DocumentPart({name}{len(self.data)} bytes, sha256 {_digest(self.data)})"


#: One part of a message's content.
Part = TextPart | ImagePart | DocumentPart
