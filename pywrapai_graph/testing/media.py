"""Small, valid media files built in memory, for tests of messages with images and PDFs."""

from __future__ import annotations

import struct
import zlib

__all__ = ["gif_bytes", "pdf_bytes", "png_bytes"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data)
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_bytes(width: int = 2, height: int = 1) -> bytes:
    """A black RGB PNG of ``width`` x ``height`` pixels."""
    row = b"\x00" + b"\x00\x00\x00" * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(row * height))
        + _chunk(b"IEND", b"")
    )


def gif_bytes(width: int = 1, height: int = 1) -> bytes:
    """A one-colour GIF of ``width`` x ``height`` pixels."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0)
    image = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return b"GIF89a" + screen + b"\x00\x00\x00\xff\xff\xff" + image + b"\x02\x02\x44\x01\x00;"


def pdf_bytes(pages: int = 1) -> bytes:
    """A PDF of ``pages`` empty pages."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>",
        *["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages,
    ]
    body = "".join(f"{n} 0 obj {o} endobj\n" for n, o in enumerate(objects, 1))
    return f"%PDF-1.4\n{body}trailer << /Root 1 0 R /Size {len(objects) + 1} >>\n%%EOF\n".encode()
