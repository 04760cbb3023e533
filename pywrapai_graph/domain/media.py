"""What a file's first bytes say about it: an image's type and pixel size, a PDF's pages.

Read from the headers alone (no decoding), so a part can be checked and its tokens
estimated without an imaging library.
"""

from __future__ import annotations

import re
import struct

__all__ = ["IMAGE_TYPES", "image_size", "image_type", "pdf_pages"]

#: The image media types the library knows how to send, by the bytes they start with.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

# "/Type /Page" but not "/Type /Pages" (the page-tree nodes)
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def image_type(data: bytes) -> str | None:
    """The media type ``data`` starts like, or None when it is none of :data:`IMAGE_TYPES`."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from the image's header, or None when it cannot be read."""
    try:
        kind = image_type(data)
        if kind == "image/png" and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if kind == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if kind == "image/webp":
            return _webp_size(data)
        if kind == "image/jpeg":
            return _jpeg_size(data)
    except struct.error:  # a header cut short
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk the JPEG segments to the first start-of-frame marker (SOF0..SOF15 but DHT, JPG,
    DAC), which holds the height and width."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int(struct.unpack(">H", data[i + 2 : i + 4])[0])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    return None


def pdf_pages(data: bytes) -> int:
    """The number of page objects in a PDF (at least 1): a count of ``/Type /Page``
    dictionaries, which holds for uncompressed object tables and undercounts PDFs that keep
    their objects in compressed streams."""
    return max(1, len(_PDF_PAGE.findall(data)))
