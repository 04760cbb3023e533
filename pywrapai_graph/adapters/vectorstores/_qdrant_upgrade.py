"""Give a Qdrant collection of an earlier release the sparse vectors of lexical search (the
chunks' and the document field's, see ``_qdrant_document``).

Qdrant cannot add a vector to an existing collection (``update_collection`` only changes the
parameters of sparse vectors it already has: ``Vector pywrapai_bm25 does not exist in the
collection``), so the collection is rebuilt: every point is read (ids, payloads, dense
vectors), the collection is created again with the sparse vectors, and the points are
written back with their term weights (each document's from all its chunks). Local mode only,
at open: the store holds the folder's lock and the rebuild is one sealed write of the folder
(all or nothing, through a crash). On a server other processes may be writing, so lexical
search there names the command instead (or, for the document field alone, serves chunk
scores and says once how to re-create the collection, see ``_qdrant_document``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._qdrant_points import SPARSE, chunk_of, version_of
from pywrapai_graph.domain import Chunk

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
    vectors: Callable[[Sequence[Chunk], Sequence[str], list[list[float]]], list[Any]],
) -> int:
    """Rebuild ``collection`` through ``create`` (the new schema); returns the points moved.

    Args:
        vectors: each point's vectors from the chunks, their versions and dense vectors
            (all of them at once: a document's field is weighed from all its chunks).
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
    dense = [p.vector if isinstance(p.vector, list) else p.vector[""] for p in points]
    written = vectors(
        [chunk_of(p.payload) for p in points], [version_of(p.payload) for p in points], dense
    )
    rebuilt = [
        models.PointStruct(id=p.id, vector=v, payload=p.payload)
        for p, v in zip(points, written, strict=True)
    ]
    for start in range(0, len(rebuilt), _PAGE):
        client.upsert(collection, rebuilt[start : start + _PAGE], wait=True)
    return len(points)
