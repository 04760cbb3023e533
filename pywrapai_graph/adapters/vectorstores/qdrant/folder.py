"""A Qdrant store's ``location=``: checked, opened on Qdrant Edge; a folder of an earlier
release is refused until ``pywrapai-graph store migrate`` moves it (:func:`migrate_folder`).

Earlier releases kept a folder in qdrant-client's local mode, sealed (see ``seal``).
The migration, holding the folder's lock: undoes a write killed before its
seal, checks the seal, copies the sealed files into ``.edge-migrating/old`` and checks the
copy (the client reads only bytes just checked, and the originals are never changed), reads
every collection of the copy with qdrant-client and writes it into new shards beside
(``.edge-migrating/edge``), then renames those into place (``edge``): the switch, one
rename. A crash before it leaves the old folder as it was, and the next migration starts
again; after it, the folder opens, and the next migration removes the old files (the seal's
record last). Points
move with their ids, payloads and vectors (dense and sparse) as they were, so every search
answers as before.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores.kit.local_files import fsync_dir
from pywrapai_graph.adapters.vectorstores.qdrant.edge import SHARDS, EdgeFolder
from pywrapai_graph.adapters.vectorstores.qdrant.seal import (
    RECORD_NAME,
    ROLLBACK,
    restore_interrupted,
    verify_folder,
)
from pywrapai_graph.errors import ConfigurationError, InvalidStateError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["local_location", "migrate_folder", "open_folder"]

_STAGING = ".edge-migrating"
#: what qdrant-client's local mode and the seal kept at the top of a folder
_OLD = ("collection", "meta.json", ".lock", ROLLBACK, f"{ROLLBACK}.tmp")
_PAGE = 1000


def local_location(
    collection: object,
    location: str | os.PathLike[str] | None,
    path: str | os.PathLike[str] | None,
    url: str | None,
) -> str | os.PathLike[str] | None:
    """The local location (``":memory:"`` by default; None with a url), the arguments checked.

    Raises:
        ConfigurationError: both location= and path=, a location and a url, a url with an
            unencoded userinfo, or no collection name.
    """
    if path is not None and location is not None:
        raise ConfigurationError("pass either location= or path=, not both")
    where = location if location is not None else path
    if url is not None and where is not None:
        raise ConfigurationError("pass either a location (':memory:' or a path) or url=")
    if url is not None:
        refuse_unencoded_userinfo(url, "Qdrant url")
    if not collection or not isinstance(collection, str):
        raise ConfigurationError("collection must be a non-empty string")
    return ":memory:" if url is None and where is None else where


def open_folder(root: Path) -> EdgeFolder:
    """The folder's shards, held by this store.

    Raises:
        StoreBusyError: another store holds the folder.
        InvalidStateError: a folder of an earlier release (nothing of it is read).
        VectorStoreError: a symbolic link in it.
    """
    folder = EdgeFolder(root)
    if not (root / SHARDS).exists() and _is_old(root):
        folder.close()
        raise InvalidStateError(
            f"{root} is a Qdrant folder of an earlier release (qdrant-client's local mode); "
            "move it onto Qdrant Edge once with `pywrapai-graph store migrate` (it checks the "
            "folder's seal and keeps every point)"
        )
    return folder


def migrate_folder(root: Path) -> bool:
    """Move a folder of an earlier release onto Qdrant Edge (see the module docstring);
    False when there is nothing to move.

    Raises:
        StoreBusyError: a store holds the folder.
        VectorStoreError: a symbolic link in it; the folder is not as its seal says
            (nothing of it is read).
    """
    if not _is_old(root):
        return False
    folder = EdgeFolder(root)
    try:
        if not (root / SHARDS).exists():
            _migrate(folder)
        _remove_old(root)
    finally:
        folder.close()
    return True


def _is_old(root: Path) -> bool:
    return any((root / name).exists() for name in (*_OLD, RECORD_NAME))


def _migrate(folder: EdgeFolder) -> None:
    root, staging = folder.root, folder.root / _STAGING
    shutil.rmtree(staging, ignore_errors=True)  # what a crash mid-migration left
    restore_interrupted(root)
    verify_folder(root)
    old = staging / "old"
    shutil.copytree(root / "collection", old / "collection")
    for name in ("meta.json", RECORD_NAME):
        shutil.copy2(root / name, old / name)
    verify_folder(old)
    client = require("qdrant_client", "qdrant", "qdrant-client").QdrantClient(path=str(old))
    target = EdgeFolder(staging, hold=False)
    try:
        for collection in client.get_collections().collections:
            _copy(client, target, collection.name)
    finally:
        client.close()
        target.close()
    os.replace(staging / SHARDS, root / SHARDS)  # the switch
    fsync_dir(root)


def _copy(client: QdrantClient, target: EdgeFolder, name: str) -> None:
    """One collection, point by point as stored (ids, payloads, every vector)."""
    params = client.get_collection(name).config.params
    target.create_collection(name, params.vectors, params.sparse_vectors)
    offset = None
    while True:
        page, offset = client.scroll(
            name, limit=_PAGE, offset=offset, with_payload=True, with_vectors=True
        )
        if page:
            target.upsert(name, page)
        if offset is None:
            return


def _remove_old(root: Path) -> None:
    """The earlier release's files, once the shards are in place (the record last)."""
    for path in (
        root / _STAGING,
        *(root / name for name in _OLD),
        *root.glob(".integrity-*"),
        root / RECORD_NAME,
    ):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    fsync_dir(root)
