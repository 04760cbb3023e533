"""An integrity record for a storage folder whose engine unpickles what it reads.

qdrant-client's local mode stores every point as a pickle in ``storage.sqlite`` and loads
them all when a client opens the folder, so a planted or edited file runs code. We write a
record of every file's SHA-256 after each of our writes and refuse to hand the folder to the
client unless the files match it: bytes we did not write are never unpickled.

The record proves the folder is as we left it; it is not a signature. Someone who can write to
the folder and knows this format can forge it, so keep the folder writable only by its owner.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from pywrapai_graph.errors import ArgumentTypeError, VectorStoreError

__all__ = ["RECORD_NAME", "file_sha256", "verify_folder", "write_record"]

RECORD_NAME = "pywrapai-integrity.json"
_FORMAT = "pywrapai-folder-integrity/1"
# qdrant's lock file (never read for content) and our own record are not covered.
_IGNORED = frozenset({RECORD_NAME, ".lock"})
_TEMP_PREFIX = ".integrity-"  # our own temp file, left behind only by a crash


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _digests(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root`` by relative POSIX path; no links allowed."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath, name)
            if full.is_symlink():
                raise VectorStoreError(
                    f"the storage folder {str(root)!r} contains a symbolic link "
                    f"({full.relative_to(root).as_posix()!r}); refusing to open it"
                )
        for name in filenames:
            full = Path(dirpath, name)
            relative = full.relative_to(root).as_posix()
            if relative in _IGNORED or relative.startswith(_TEMP_PREFIX):
                continue
            if not full.is_file():
                raise VectorStoreError(f"{relative!r} in {str(root)!r} is not a regular file")
            out[relative] = file_sha256(full)
    return out


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
            "If a write was interrupted, re-create the store and re-ingest."
        )
