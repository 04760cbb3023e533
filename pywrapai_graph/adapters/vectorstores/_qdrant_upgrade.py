"""Give a Qdrant collection of an earlier release the sparse vector of lexical search.

Qdrant cannot add a vector to an existing collection (``update_collection`` only changes the
parameters of sparse vectors it already has: ``Vector pywrapai_bm25 does not exist in the
collection``), so the collection is rebuilt: every point is read (ids, payloads, dense
vectors), the collection is created again with the sparse vector, and the points are written
back with their term weights. Local mode only, at open: the store holds the folder's lock
and the rebuild is one sealed write of the folder (all or nothing, through a crash). On a
server other processes may be writing, so lexical search there names the command instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._qdrant_points import SPARSE

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["UPGRADE_NEEDED", "rebuild_with_sparse"]

_PAGE = 1000
#: what a server collection of an earlier release says when asked for lexical search
UPGRADE_NEEDED = (
    "Qdrant collection {name!r} was created before lexical search was served by Qdrant "
    "(it has no sparse vector {sparse!r}, and a server cannot add one while others may "
    "write); re-create it: `pywrapai-graph store clear --yes`, then ingest again (or keep "
    "mode='dense'). A local-mode folder is upgraded when a store opens it."
).replace("{sparse!r}", repr(SPARSE))


def rebuild_with_sparse(
    client: QdrantClient,
    models: Any,
    collection: str,
    create: Callable[[], None],
    vectors: Callable[[list[str], list[list[float]]], list[Any]],
) -> int:
    """Rebuild ``collection`` through ``create`` (the new schema); returns the points moved.

    Args:
        vectors: each point's vectors from its text and dense vector.
    """
    points: list[Any] = []
    offset = None
    while True:
        page, offset = client.scroll(
            collection, limit=_PAGE, offset=offset, with_payload=True, with_vectors=True
        )
        points += page
        if offset is None:
            break
    client.delete_collection(collection)
    create()
    for start in range(0, len(points), _PAGE):
        part = points[start : start + _PAGE]
        texts = [str((p.payload or {}).get("text", "")) for p in part]
        dense = [p.vector if isinstance(p.vector, list) else p.vector[""] for p in part]
        client.upsert(
            collection,
            [
                models.PointStruct(id=p.id, vector=v, payload=p.payload)
                for p, v in zip(part, vectors(texts, dense), strict=True)
            ],
            wait=True,
        )
    return len(points)
