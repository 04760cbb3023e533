"""The seal of a folder of earlier releases: qdrant-client's local mode, checked before reading.

Until this release a ``location=`` folder held qdrant-client's local mode, which stores every
point as a pickle in ``storage.sqlite`` and loads them all when a client opens the folder, so
a planted or edited file runs code. Each of our writes recorded every file's SHA-256
(``pywrapai-integrity.json``); before a write, a copy of the sealed files was moved aside
(``.pywrapai-rollback``) and dropped once the new record was written. The folder is read once
more, to move it onto Qdrant Edge (see ``migrate``), and only as sealed:
:func:`restore_interrupted` puts back what a write killed before its seal changed (after
checking the copy against the record), and :func:`verify_folder` refuses a folder that
differs from its record. The record proves the folder is as we left it; it is not a
signature.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from pywrapai_graph.adapters.vectorstores.kit.local_files import file_sha256, fsync_dir
from pywrapai_graph.errors import ArgumentTypeError, VectorStoreError

__all__ = ["RECORD_NAME", "restore_interrupted", "verify_folder"]

RECORD_NAME = "pywrapai-integrity.json"
_FORMAT = "pywrapai-folder-integrity/1"
ROLLBACK = ".pywrapai-rollback"  # the sealed files, kept aside while a write ran
_SNAPSHOT = ".pywrapai-rollback.tmp"  # a copy being made (the write has not begun)
_LOCK = ".pywrapai.lock"
# qdrant's lock file (never read for content), ours, and our own record are not covered.
_IGNORED = frozenset({RECORD_NAME, ".lock", _LOCK})
_OURS = frozenset({ROLLBACK, _SNAPSHOT})  # top-level folders the client never reads
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


def restore_interrupted(root: Path) -> None:
    """Undo a write killed before its seal: move the copy back, remove what the write added.

    Raises:
        VectorStoreError: the copy does not match the record, or the result does not.
    """
    if not _exists(root / ROLLBACK):
        return
    recorded = _recorded(root)
    rollback = root / ROLLBACK
    present = _digests(root)
    if present != recorded:
        saved = _digests(rollback)
        for relative, digest in recorded.items():
            if saved.get(relative) == digest:
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                os.replace(rollback / relative, root / relative)
            elif present.get(relative) != digest:  # not moved back by an earlier attempt
                raise VectorStoreError(
                    f"a write to {str(root)!r} was interrupted and the copy kept to "
                    f"undo it does not match the folder's record ({relative!r}); refusing "
                    "to open the folder. Re-create the store and re-ingest."
                )
        for relative in present.keys() - recorded.keys():
            (root / relative).unlink()
        _remove_empty_folders(root)
        if _digests(root) != recorded:
            raise VectorStoreError(f"could not put {str(root)!r} back as it was sealed")
    _remove(rollback)
    fsync_dir(root)


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
