"""TextFiles: the text files under some paths, read safely, as Documents.

Reads only what it was pointed at: a symbolic link is not followed out of the given paths
(unless asked), and device files, FIFOs, sockets, ``/proc``-style files, unreadable and
non-UTF-8 files are skipped with a reason instead of being read or stopping the run.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from pywrapai_graph.domain import Document
from pywrapai_graph.domain.ingest_report import SkippedSource
from pywrapai_graph.errors import InputNotFoundError

__all__ = ["TEXT_SUFFIXES", "TextFiles"]

_log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
#: Pseudo-filesystems whose "files" are process or kernel state, never documents.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_LINKED_OUT = "a symbolic link out of the given paths (--follow-symlinks reads it)"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


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
            if path.is_dir():
                yield from self._walk(path)
            else:
                yield from self._read(path, named=True)

    # ------------------------------------------------------------------ steps
    def _walk(self, top: Path) -> Iterator[Document]:
        for dirpath, dirnames, filenames in os.walk(top, followlinks=self.follow_symlinks):
            dirnames.sort()
            if self.follow_symlinks:  # a link cycle would otherwise walk forever
                real = os.path.realpath(dirpath)
                if real in self._seen:
                    dirnames.clear()
                    continue
                self._seen.add(real)
            else:
                for name in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    self._skip_link(Path(dirpath, name))
            for name in sorted(filenames):
                if Path(name).suffix.lower() in self.suffixes:
                    yield from self._read(Path(dirpath, name), named=False)

    def _skip_link(self, path: Path) -> None:
        """A linked directory: inside the roots its files are read anyway; outside, say so."""
        if not any(_within(os.path.realpath(path), root) for root in self.roots):
            self._skip(path, _LINKED_OUT)

    def _skip(self, path: Path, reason: str) -> None:
        self.skipped.append(SkippedSource(str(path), reason))
        _log.warning("skipped %s: %s", path, reason, extra={"attributes": {"path": str(path)}})

    def _read(self, path: Path, *, named: bool) -> Iterator[Document]:
        real = os.path.realpath(path)
        if real in self._seen:
            return  # a link to a file already read
        linked_out = path.is_symlink() and not any(_within(real, r) for r in self.roots)
        if linked_out and not named and not self.follow_symlinks:
            self._skip(path, _LINKED_OUT)
            return
        if any(_within(real, pseudo) for pseudo in _PSEUDO_ROOTS):
            self._skip(path, f"{real} is a device or kernel pseudo-file, not a document")
            return
        text = self._text(path, real)
        if text is None:
            return
        self._seen.add(real)
        self.shown[real] = str(path)
        yield Document(text, metadata={"source": path.name, "path": real}, id=real)

    def _text(self, path: Path, real: str) -> str | None:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            self._skip(path, f"cannot open it: {exc.strerror}")
            return None
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                kind = "a directory" if stat.S_ISDIR(mode) else "a device, FIFO or socket"
                self._skip(path, f"not a regular file ({kind})")
                return None
            try:
                data = f.read()
            except OSError as exc:
                self._skip(path, f"cannot read it: {exc.strerror}")
                return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._skip(path, f"not UTF-8 text (invalid byte at offset {exc.start})")
            return None
