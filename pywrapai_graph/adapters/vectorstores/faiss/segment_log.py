"""SegmentLog: the FAISS store's append-only file of vector segments.

A write that adds rows appends one segment to ``<index>.log`` instead of rewriting the whole
index: a header (magic, row count, dimension), the rows' int64 labels and their float32
vectors, little-endian. The log itself decides nothing: a segment exists only once the
store's metadata transaction has committed a row naming its offset, length and SHA-256.
Bytes past the last committed segment are what a crashed, uncommitted append left; the
store cuts them off (under its write lock) before reading or appending. Every committed
segment is checked against its recorded SHA-256 before one byte of it is used.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters.vectorstores.kit.local_files import os_failure
from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file
from pywrapai_graph.errors import VectorStoreError

__all__ = ["Segment", "SegmentLog", "encode_segment"]

_MAGIC = b"PWSEG01\n"
_HEADER = struct.Struct("<8sQI")

Labels = npt.NDArray[np.int64]
Vectors = npt.NDArray[np.float32]


class Segment(NamedTuple):
    """One committed segment, as the store's metadata records it."""

    offset: int
    length: int
    rows: int
    sha256: str

    @property
    def end(self) -> int:
        return self.offset + self.length


def encode_segment(labels: Labels, vectors: Vectors) -> bytes:
    """The bytes of one segment: header, labels, vectors."""
    rows, dim = vectors.shape
    return b"".join(
        (
            _HEADER.pack(_MAGIC, rows, dim),
            np.ascontiguousarray(labels, dtype="<i8").tobytes(),
            np.ascontiguousarray(vectors, dtype="<f4").tobytes(),
        )
    )


class SegmentLog:
    """The log file next to the base index.

    Args:
        path: the log file (``<index>.log``).
        store_path: the path errors name (the index the user configured).
    """

    def __init__(self, path: Path, store_path: str) -> None:
        self.path = path
        self._store_path = store_path

    def size(self) -> int:
        """Bytes in the file (0 when it does not exist)."""
        try:
            return self.path.lstat().st_size
        except FileNotFoundError:
            return 0

    def append(self, offset: int, data: bytes) -> Segment:
        """Write ``data`` at ``offset`` (cutting off anything after it) and sync it.

        Nothing is committed by this: the caller records the returned segment in its
        metadata transaction.

        Raises:
            StorageFullError: the disk is full.
            VectorStoreError: another write failure.
        """
        self._write(offset, data, os.O_CREAT)
        rows = int(_HEADER.unpack_from(data)[1])
        return Segment(offset, len(data), rows, hashlib.sha256(data).hexdigest())

    def truncate(self, length: int) -> None:
        """Cut the file to ``length`` bytes (an uncommitted tail); a no-op when shorter."""
        if self.size() > length:
            self._write(length, b"", 0)  # (not created: it holds more than length)

    def _write(self, offset: int, data: bytes, create: int) -> None:
        """Cut the file at ``offset``, write ``data`` there and sync it."""
        try:
            fd = open_file(self.path, os.O_WRONLY | create)
            try:
                os.ftruncate(fd, offset)
                view = memoryview(data)
                written = 0
                while written < len(view):
                    written += os.pwrite(fd, view[written:], offset + written)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise os_failure(self._store_path, exc) from exc

    def read(self, segments: Sequence[Segment], dim: int) -> tuple[Labels, Vectors]:
        """The labels and vectors of ``segments`` (consecutive, in log order), each verified.

        Raises:
            VectorStoreError: the file is missing or shorter than the committed segments,
                or a segment's bytes do not match the SHA-256 its commit recorded.
        """
        if not segments:
            return np.empty(0, np.int64), np.empty((0, dim), np.float32)
        end = segments[-1].end
        if self.size() < end:
            raise VectorStoreError(
                f"the FAISS segment log {str(self.path)!r} is missing or shorter than its "
                "metadata says (it was removed or damaged outside this library); re-create "
                "the store from your documents"
            )
        first = segments[0].offset
        with os.fdopen(open_file(self.path, os.O_RDONLY), "rb") as f:
            f.seek(first)
            data = memoryview(f.read(end - first))
        labels: list[Labels] = []
        vectors: list[Vectors] = []
        for segment in segments:
            part = data[segment.offset - first : segment.end - first]
            if hashlib.sha256(part).hexdigest() != segment.sha256:
                raise VectorStoreError(
                    "the FAISS segment log and its metadata disagree (a segment at byte "
                    f"{segment.offset} of {str(self.path)!r} was changed or damaged outside "
                    "this library); re-create the store from your documents"
                )
            magic, rows, seg_dim = _HEADER.unpack_from(part)
            if magic != _MAGIC or rows != segment.rows or seg_dim != dim:
                raise VectorStoreError(
                    f"the FAISS segment log {str(self.path)!r} holds a segment this store "
                    "did not write (wrong header)"
                )
            start = _HEADER.size
            labels.append(np.frombuffer(part, "<i8", rows, start).astype(np.int64))
            start += 8 * rows
            vectors.append(np.frombuffer(part, "<f4", rows * dim, start).reshape(rows, dim))
        return np.concatenate(labels), np.concatenate(vectors).astype(np.float32, copy=False)
