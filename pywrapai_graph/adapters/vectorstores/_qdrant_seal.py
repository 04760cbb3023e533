"""Qdrant's seal: a record of a local-mode folder's files (its engine unpickles them).

qdrant-client's local mode stores every point as a pickle in ``storage.sqlite`` and loads
them all when a client opens the folder, so a planted or edited file runs code. We write a
record of every file's SHA-256 after each of our writes and refuse to hand the folder to the
client unless the files match it: bytes we did not write are never unpickled.

The record proves the folder is as we left it; it is not a signature. Someone who can write to
the folder and knows this format can forge it, so keep the folder writable only by its owner.

:class:`SealedFolder` keeps that guarantee through crashes. Before each write it moves a copy of
the sealed files aside (``.pywrapai-rollback``, renamed into place only once complete); after
the write it records the new files and drops the copy. A writer killed between the two leaves
the copy behind, and the next open puts it back (after checking it against the record) and
removes what the write had added: the folder is then exactly as the last seal left it. A
folder that differs from its record *without* such a copy was changed by someone else, and is
refused as before. One :class:`SealedFolder` holds a folder at a time (a ``flock`` released by
:meth:`SealedFolder.close` or by the holder's death), so recovery never races a live writer.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from pywrapai_graph.adapters.vectorstores._local_files import file_sha256
from pywrapai_graph.adapters.vectorstores._no_follow import copy_file, open_file
from pywrapai_graph.errors import ArgumentTypeError, StoreBusyError, VectorStoreError

__all__ = ["RECORD_NAME", "SealedFolder", "verify_folder", "write_record"]

RECORD_NAME = "pywrapai-integrity.json"
_FORMAT = "pywrapai-folder-integrity/1"
_ROLLBACK = ".pywrapai-rollback"  # the sealed files, kept aside while a write runs
_SNAPSHOT = ".pywrapai-rollback.tmp"  # a copy being made (the write has not begun)
_LOCK = ".pywrapai.lock"
# qdrant's lock file (never read for content), ours, and our own record are not covered.
_IGNORED = frozenset({RECORD_NAME, ".lock", _LOCK})
_OURS = frozenset({_ROLLBACK, _SNAPSHOT})  # top-level folders the client never reads
_TEMP_PREFIX = ".integrity-"  # our own temp file, left behind only by a crash


def _digests(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root`` by relative POSIX path; no links allowed."""
    return {relative: file_sha256(full) for relative, full in _covered(root)}


def _covered(root: Path) -> Iterator[tuple[str, Path]]:
    """Every file the record covers, by relative POSIX path; no links allowed."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath, name)
            if full.is_symlink():
                raise VectorStoreError(
                    f"the storage folder {str(root)!r} contains a symbolic link "
                    f"({full.relative_to(root).as_posix()!r}); refusing to open it"
                )
        if Path(dirpath) == root:  # our rollback copies are checked when they are used
            dirnames[:] = [d for d in dirnames if d not in _OURS]
        for name in filenames:
            full = Path(dirpath, name)
            relative = full.relative_to(root).as_posix()
            if relative in _IGNORED or relative.startswith(_TEMP_PREFIX):
                continue
            if not full.is_file():
                raise VectorStoreError(f"{relative!r} in {str(root)!r} is not a regular file")
            yield relative, full


def write_record(root: Path) -> None:
    """Record the current files of ``root`` (atomically: temp file + ``os.replace``)."""
    text = json.dumps({"format": _FORMAT, "files": _digests(root)}, sort_keys=True, indent=1)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=_TEMP_PREFIX, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, root / RECORD_NAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _recorded(root: Path) -> dict[str, str]:
    path = root / RECORD_NAME
    if path.is_symlink() or not path.is_file():
        raise VectorStoreError(
            f"the storage folder {str(root)!r} was not written by pywrapai-graph (it has no "
            f"{RECORD_NAME}); refusing to open it, because the Qdrant client unpickles the "
            "points it reads and a planted file could run code. Use a new folder, or re-ingest."
        )
    try:
        data = json.loads(path.read_bytes()[: 64 << 20])
        files = data["files"] if data.get("format") == _FORMAT else None
        if not isinstance(files, dict):
            raise ArgumentTypeError("no file table")
        return {str(k): str(v) for k, v in files.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise VectorStoreError(
            f"the integrity record of {str(root)!r} is unreadable; refusing to open the folder"
        ) from exc


def verify_folder(root: Path) -> None:
    """Check that ``root`` holds exactly the files we recorded (a missing or empty folder is new).

    Raises:
        VectorStoreError: no record, an unreadable record, or a file added, removed or
            changed since our last write (or a symbolic link anywhere in the folder).
    """
    if root.is_symlink():
        raise VectorStoreError(f"the storage folder {str(root)!r} is a symbolic link")
    if not root.exists():
        return
    if not root.is_dir():
        raise VectorStoreError(f"the storage location {str(root)!r} is not a directory")
    present = _digests(root)
    if not present and not (root / RECORD_NAME).exists():
        return  # empty: a new store
    recorded = _recorded(root)
    changed = sorted(
        name for name in present.keys() | recorded.keys() if present.get(name) != recorded.get(name)
    )
    if changed:
        raise VectorStoreError(
            f"the storage folder {str(root)!r} changed since pywrapai-graph last wrote it "
            f"({', '.join(repr(n) for n in changed[:3])}); refusing to open it, because the "
            "Qdrant client unpickles the points it reads and a planted file could run code. "
            "(A write interrupted by a crash leaves a copy to recover from; this folder has "
            "none.) If you did not change it, re-create the store and re-ingest."
        )


class SealedFolder:
    """A folder the client gets only as one of our seals left it, even after a crash.

    Usage: :meth:`open` (take the folder, recover, verify); around every write
    :meth:`begin`, then :meth:`commit` on success or :meth:`rollback` (with the client
    closed) on failure; :meth:`close`. Errors are ``OSError`` for the caller to translate
    (a full disk) and :class:`VectorStoreError` for a folder we will not open.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd: int | None = None
        self._release: Callable[[], object] = lambda: None

    def open(self) -> None:
        """Take the folder, put back what a crashed write changed, and check it.

        Raises:
            StoreBusyError: another store (in this process or another) has the folder open.
            VectorStoreError: as :func:`verify_folder`, or a crashed write left a copy that
                does not match the record.
        """
        if self.root.is_symlink():
            raise VectorStoreError(f"the storage folder {str(self.root)!r} is a symbolic link")
        self.root.mkdir(parents=True, exist_ok=True)
        fd = open_file(self.root / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreBusyError(
                f"the Qdrant folder {str(self.root)!r} is open in another store (in this "
                "process or another), and local mode serves one client at a time: close that "
                "store first, or use a Qdrant server for concurrent access"
            ) from None
        self._fd = fd
        self._release = weakref.finalize(self, os.close, fd)  # a store dropped unclosed
        try:
            for leftover in (self.root / _SNAPSHOT, *self.root.glob(_TEMP_PREFIX + "*")):
                _remove(leftover)
            if _exists(self.root / _ROLLBACK):
                self._restore()
            verify_folder(self.root)
        except BaseException:
            self.close()
            raise

    @property
    def sealed(self) -> bool:
        """Whether a seal of ours covers the folder (false for a new one)."""
        return (self.root / RECORD_NAME).is_file()

    def stamps(self) -> dict[str, tuple[int, int, int]]:
        """Inode, size and modification time of each covered file: a cheap "did it change"."""
        out = {}
        for relative, full in _covered(self.root):
            info = full.stat()
            out[relative] = (info.st_ino, info.st_size, info.st_mtime_ns)
        return out

    def close(self) -> None:
        """Let the folder go (idempotent)."""
        self._release()
        self._fd = None

    def begin(self) -> None:
        """Before a write: put a copy of the sealed files aside (complete, or not at all)."""
        if not (self.root / RECORD_NAME).exists():
            write_record(self.root)  # a new folder: seal it empty, so a crash undoes to empty
        snapshot = self.root / _SNAPSHOT
        _remove(snapshot)
        try:
            for relative in _recorded(self.root):
                target = snapshot / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                copy_file(self.root / relative, target)
            snapshot.mkdir(exist_ok=True)
            os.replace(snapshot, self.root / _ROLLBACK)
        except BaseException:
            _remove(snapshot)
            raise
        _fsync(self.root)

    def commit(self) -> None:
        """After a write: record the folder as it is now, then drop the copy."""
        write_record(self.root)
        _remove(self.root / _ROLLBACK)

    def rollback(self) -> None:
        """After a failed write (its client closed): the folder as the last seal left it."""
        self._restore()

    def _restore(self) -> None:
        """Move the copy back, remove what the write added, check the result."""
        recorded = _recorded(self.root)
        rollback = self.root / _ROLLBACK
        present = _digests(self.root)
        if present != recorded:
            saved = _digests(rollback)
            for relative, digest in recorded.items():
                if saved.get(relative) == digest:
                    (self.root / relative).parent.mkdir(parents=True, exist_ok=True)
                    os.replace(rollback / relative, self.root / relative)
                elif present.get(relative) != digest:  # not moved back by an earlier attempt
                    raise VectorStoreError(
                        f"a write to {str(self.root)!r} was interrupted and the copy kept to "
                        f"undo it does not match the folder's record ({relative!r}); refusing "
                        "to open the folder. Re-create the store and re-ingest."
                    )
            for relative in present.keys() - recorded.keys():
                (self.root / relative).unlink()
            _remove_empty_folders(self.root)
            if _digests(self.root) != recorded:
                raise VectorStoreError(f"could not put {str(self.root)!r} back as it was sealed")
        _remove(rollback)
        _fsync(self.root)


def _exists(path: Path) -> bool:
    if path.is_symlink():
        raise VectorStoreError(f"{str(path)!r} is a symbolic link; refusing to use it")
    return path.exists()


def _remove(path: Path) -> None:
    """Delete a file or a folder tree of ours (never through a link)."""
    if not _exists(path):
        return
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _remove_empty_folders(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        here = Path(dirpath)
        if here != root and here.name not in _OURS and not any(here.iterdir()):
            here.rmdir()


def _fsync(path: Path) -> None:
    """Make a file's bytes (or a folder's renames) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
