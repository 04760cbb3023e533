"""TextFiles: the text files under some paths, read safely, as Documents.

Reads only what it was pointed at: a symbolic link is not followed out of the given paths
(unless asked), and device files, FIFOs, sockets, ``/proc``-style files, unreadable and
non-UTF-8 files, files whose path is not UTF-8 (it becomes the document id, which must
be text), symbolic link loops and every entry the walk fails on (``OSError``) are skipped with
a reason instead of being read or stopping the run.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from pywrapai_graph.domain import Document
from pywrapai_graph.domain.checks import encodes_as_utf8
from pywrapai_graph.domain.ingest_report import SkippedSource
from pywrapai_graph.errors import InputNotFoundError

__all__ = ["TEXT_SUFFIXES", "TextFiles"]

_log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
#: Pseudo-filesystems whose "files" are process or kernel state, never documents.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_PSEUDO_PREFIXES = tuple(root + os.sep for root in _PSEUDO_ROOTS)
_LINKED_OUT = "a symbolic link out of the given paths (--follow-symlinks reads it)"
_NOT_UTF8_PATH = (
    "its path is not UTF-8 (the path is the document id, which must be text): rename it"
)
# O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
#: Linux returns at most this much from one read(); a larger file is read in pieces.
_ONE_READ = 0x7FFFF000


def _printable(path: str) -> str:
    """``path`` as it can be shown: bytes that are not UTF-8 as ``\\xNN`` escapes.

    (A name whose bytes are not UTF-8 comes from ``os`` with lone surrogates, which no
    document id, store or UTF-8 output takes.)
    """
    if encodes_as_utf8(path):
        return path
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _why(failed: str, exc: OSError) -> str:
    """The reason an ``OSError`` gives for skipping a path."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (the link leads back to itself)"
    return f"{failed}: {exc.strerror or type(exc).__name__}"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _read_all(fd: int, size: int) -> bytes:
    """The whole file: one read when it is no larger than ``fstat`` said, else until EOF."""
    first = os.read(fd, size + 1)
    if len(first) <= size < _ONE_READ:  # a short read of a regular file is EOF
        return first
    parts = [first]
    while part := os.read(fd, 1 << 20):
        parts.append(part)
    return b"".join(parts)


class TextFiles:
    """The text files named by ``paths`` (directories are searched recursively).

    Iterate :meth:`documents`; afterwards :attr:`skipped` lists what was not read and why.
    Each document's id is the file's resolved path; ``shown[doc_id]`` is the path as found.

    Args:
        paths: files or directories. A named file is read whatever its suffix; in a
            directory only files with one of ``suffixes`` are.
        follow_symlinks: follow links that lead out of the given paths.
        suffixes: the file suffixes taken from directories.

    Raises:
        FileNotFoundError: a path does not exist (checked up front, before anything is read).
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        follow_symlinks: bool = False,
        suffixes: Sequence[str] = TEXT_SUFFIXES,
    ) -> None:
        self.paths = [Path(p) for p in paths]
        for path in self.paths:
            if not os.path.lexists(path):
                raise InputNotFoundError(f"no such file or directory: {path}")
        self.follow_symlinks = follow_symlinks
        self.suffixes = tuple(s.lower() for s in suffixes)
        self.roots = [os.path.realpath(p) for p in self.paths]
        self.skipped: list[SkippedSource] = []
        self.shown: dict[str, str] = {}
        self._seen: set[str] = set()

    def documents(self) -> Iterator[Document]:
        """Each readable text file once, in path order."""
        for path in self.paths:
            try:
                is_dir = path.is_dir()
            except OSError as exc:  # a parent that cannot be searched
                self._skip(path, _why("cannot tell what it is", exc))
                continue
            if is_dir:
                yield from self._walk(os.fspath(path), os.path.realpath(path))
            else:
                name = os.fspath(path)
                real, link = os.path.realpath(name), os.path.islink(name)
                doc = self._read(name, real, link, os.path.basename(name), named=True)
                if doc is not None:
                    yield doc

    # ------------------------------------------------------------------ steps
    def _walk(self, shown: str, real: str) -> Iterator[Document]:
        """The files of one directory (sorted by name), then its subdirectories', depth first.

        ``real`` is the directory's resolved path, so a file that is not a link resolves to
        ``real/name`` without a system call per path component.
        """
        if self.follow_symlinks:  # a link cycle would otherwise walk forever
            if real in self._seen:
                return
            self._seen.add(real)
        try:
            with os.scandir(shown) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            self._skip(shown, _why("cannot list it", exc))
            return
        subdirs: list[os.DirEntry[str]] = []
        inside = os.path.join(real, "")  # real + "/": os.path.join(real, name) for any name
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows links, like os.walk
            except OSError as exc:  # a link loop, a file gone since the listing...
                self._skip(entry.path, _why("cannot tell what it is", exc))
                continue
            if is_dir:
                subdirs.append(entry)
            elif self._wanted(name := entry.name):
                path, link = entry.path, entry.is_symlink()
                resolved = os.path.realpath(path) if link else inside + name
                doc = self._read(path, resolved, link, name)
                if doc is not None:
                    yield doc
        for entry in subdirs:
            if not entry.is_symlink():
                yield from self._walk(entry.path, inside + entry.name)
            elif self.follow_symlinks:
                yield from self._walk(entry.path, os.path.realpath(entry.path))
            else:
                self._skip_link(Path(entry.path))

    def _skip_link(self, path: Path) -> None:
        """A linked directory: inside the roots its files are read anyway; outside, say so."""
        if not any(_within(os.path.realpath(path), root) for root in self.roots):
            self._skip(path, _LINKED_OUT)

    def _skip(self, path: str | Path, reason: str) -> None:
        path = _printable(str(path))
        self.skipped.append(SkippedSource(path, reason))
        _log.warning("skipped %s: %s", path, reason, extra={"attributes": {"path": str(path)}})

    def _wanted(self, name: str) -> bool:
        """The name has one of the suffixes (as ``os.path.splitext`` sees it: a leading dot
        starts no suffix)."""
        dot = name.rfind(".")
        return dot > 0 and name[dot:].lower() in self.suffixes and bool(name[:dot].strip("."))

    def _read(
        self, path: str, real: str, link: bool, name: str, *, named: bool = False
    ) -> Document | None:
        """``path`` (its base name ``name``, resolved path ``real``) as a Document, or None."""
        if real in self._seen:
            return None  # a link to a file already read
        linked_out = link and not any(_within(real, r) for r in self.roots)
        if linked_out and not named and not self.follow_symlinks:
            self._skip(path, _LINKED_OUT)
            return None
        if real.startswith(_PSEUDO_PREFIXES) or real in _PSEUDO_ROOTS:
            self._skip(path, f"{real} is a device or kernel pseudo-file, not a document")
            return None
        if not encodes_as_utf8(real):
            self._skip(path, _NOT_UTF8_PATH)
            return None
        text = self._text(path, real)
        if text is None:
            return None
        self._seen.add(real)
        self.shown[real] = path
        return Document(text, metadata={"source": name, "path": real}, id=real)

    def _text(self, path: str, real: str) -> str | None:
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            self._skip(path, _why("cannot open it", exc))
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket"
                self._skip(path, f"not a regular file ({kind})")
                return None
            try:
                data = _read_all(fd, info.st_size)
            except OSError as exc:
                self._skip(path, _why("cannot read it", exc))
                return None
        finally:
            os.close(fd)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._skip(path, f"not UTF-8 text (invalid byte at offset {exc.start})")
            return None
