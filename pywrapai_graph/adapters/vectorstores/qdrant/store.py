"""QdrantVectorStore: Qdrant in process (Qdrant Edge: ``:memory:``, a folder) or a server."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import address
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix, PreparedBatch
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    DocRecord,
    Hit,
    StoredChunk,
    engine_id,
)
from pywrapai_graph.adapters.vectorstores.qdrant import points
from pywrapai_graph.adapters.vectorstores.qdrant.edge import EdgeFolder, local_location
from pywrapai_graph.adapters.vectorstores.qdrant.lexical import QdrantLexical
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from qdrant_client import QdrantClient

__all__ = ["QdrantVectorStore"]


class QdrantVectorStore(QdrantLexical):
    """Cosine, BM25 and hybrid search in a Qdrant collection, on a server or in this process:
    a retrieval is one ``query_points``; a server's async reads use an ``AsyncQdrantClient``
    per event loop (closed by :meth:`aclose` or with its loop).

    Args:
        collection: the collection name.
        location: ":memory:" (not persistent) or a folder, served by Qdrant Edge in this
            process (``edge``) to one store at a time; a damaged folder is refused.
        url: a Qdrant server or Cloud URL (instead of ``location``).
        api_key: for Qdrant Cloud; never shown in reprs or errors.
        dimension: create the collection up front; otherwise the first add decides.
        path: alias of ``location``.
        timeout: seconds a server request may take (the client's default otherwise).
        shard_number, replication_factor, write_consistency_factor, read_consistency: a
            server's cluster settings for a new collection and its reads (a number, or for
            reads ``"majority"``, ``"quorum"`` or ``"all"``); None: Qdrant's default.

    Raises:
        MissingExtraError: ``qdrant-client`` (or, in process, ``qdrant-edge-py``) is missing.
        ConfigurationError: both a location and a url; a cluster setting without a url, or
            out of range.
        VectorStoreError: a collection this store did not make.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "qdrant"

    def __init__(
        self,
        collection: str,
        location: str | os.PathLike[str] | None = None,
        url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        timeout: int | None = None,
        shard_number: int | None = None,
        replication_factor: int | None = None,
        write_consistency_factor: int | None = None,
        read_consistency: int | str | None = None,
    ) -> None:
        qc = require("qdrant_client", "qdrant", "qdrant-client")
        self._models = require("qdrant_client.models", "qdrant", "qdrant-client")
        where = local_location(collection, location, path, url)
        self._collection = collection
        self._lock = threading.RLock()
        self._cluster = _cluster(
            url,
            shard_number=shard_number,
            replication_factor=replication_factor,
            write_consistency_factor=write_consistency_factor,
            read_consistency=read_consistency,
        )
        read = self._cluster.pop("read_consistency", None)
        self._consistency = {} if read is None else {"consistency": read}
        self._mode = "server" if url else ("memory" if str(where) == ":memory:" else "local")
        self._failures: tuple[type[Exception], ...] = ()
        if url is not None:
            errors = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
            self._failures = (errors.UnexpectedResponse, errors.ResponseHandlingException)
            self._failures += sum(http_errors(), ())
            # no background version-check thread: failures surface on our own calls
            reach = {"url": url, "api_key": api_key, "timeout": timeout}
            self._client: QdrantClient = qc.QdrantClient(**reach, check_compatibility=False)
            self._aclients = PerLoop(
                lambda: qc.AsyncQdrantClient(**reach, check_compatibility=False), close_async
            )
        else:  # Qdrant Edge answers the same calls (a temporary folder for ":memory:")
            folder = None if self._mode == "memory" else Path(os.fspath(where))  # type: ignore[arg-type]
            self._client = cast("QdrantClient", EdgeFolder(folder))
        self._secrets = [api_key, url]
        self._address = address(url, default_port=6333) if url else None
        self._where = redact(url) if url else os.fspath(where)  # type: ignore[arg-type]
        self._dim = self._engine_dimension()
        with self._writing():
            if self._mode == "local" and self._pending_records():  # a writer that died
                self._recover()
            if dimension is not None:
                self._create(dimension)

    # ------------------------------------------------------------------ collection
    def _engine_dimension(self) -> int | None:
        with self._errors():
            if not self._client.collection_exists(self._collection):
                return None
            info = self._client.get_collection(self._collection)
        size = getattr(info.config.params.vectors, "size", None)
        sparse = set(info.config.params.sparse_vectors or ())
        if not isinstance(size, int) or not {points.SPARSE, points.DOCUMENT_SPARSE} <= sparse:
            raise VectorStoreError(
                f"Qdrant collection {self._collection!r} has no single unnamed vector or "
                "lacks the sparse vectors of lexical search: not a collection QdrantVectorStore "
                "made; delete it or use another collection name"
            )
        return size

    def _create(self, dim: int) -> None:
        """Create the collection of ``dim`` unless it exists (made here or elsewhere)."""
        m = self._models
        made = self._dim is None and self._create_collection(
            self._collection,
            vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE),
            sparse_vectors_config={
                name: m.SparseVectorParams(modifier=m.Modifier.IDF)
                for name in (points.SPARSE, points.DOCUMENT_SPARSE)
            },
            **self._cluster,
        )
        # what lookups by chunk id and lexical queries filter on (else: a scan)
        indexes = {"id": m.PayloadSchemaType.KEYWORD, points.TERMS: m.PayloadSchemaType.INTEGER}
        for field, schema in indexes.items() if made else ():
            self._client.create_payload_index(
                self._collection, field_name=field, field_schema=schema, wait=True
            )
        found = dim if made else self._dim or self._engine_dimension()
        if found != dim:
            raise InvalidArgumentError(
                f"collection {self._collection!r} has dimension {found}, not {dim}"
            )
        self._dim = dim

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return self._mode != "memory"

    @property
    def exact(self) -> bool:
        return self._mode != "server"  # Edge searches exhaustively (no HNSW built); servers: HNSW

    # ------------------------------------------------------------------ engine primitives
    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        return self._stored([self._models.Filter(must=[self._match("doc_id", doc_id)])])

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        pages = (list(chunk_ids[i : i + 500]) for i in range(0, len(chunk_ids), 500))
        return self._stored(self._models.Filter(must=[self._match("id", p)]) for p in pages)

    def _stored(self, selectors: Iterable[Any]) -> list[StoredChunk]:
        with self._errors():
            if self._known_dim() is None:
                return []
            payloads = [p.payload for s in selectors for p in self._scroll(self._collection, s)]
        tagged = [(p["id"], points.version_of(p), p["doc_id"]) for p in payloads]
        return [StoredChunk(engine_id(i, v), i, v, doc) for i, v, doc in tagged]

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        """Write the chunks, and their document versions' stored chunks again (``lexical``)."""
        if not batch.ids:
            return
        embedder = self._replacing[0] if self._replacing else self._recorded_embedder()
        hidden = self._replacing is not None
        stamp = {points.HIDDEN: hidden, points.EMBEDDER: embedder.to_json() if embedder else ""}
        tagged = list(zip(batch.chunks, versions, strict=True))
        with self._errors():
            if self._known_dim() is None:
                self._create(int(batch.vectors.shape[1]))
            groups = sorted({(c.doc_id, v) for c, v in tagged})
            fields = self._rewrite(groups, batch.chunks, versions)
            made = [
                self._models.PointStruct(
                    id=points.point_id(engine_id(c.id, version)),
                    vector={"": dense, **sparse},
                    payload={
                        "id": c.id,
                        "doc_id": c.doc_id,
                        "text": c.text,
                        "metadata": dict(c.metadata),
                        "version": version,
                        points.FIELDS: points.metadata_fields(c.metadata),
                        **stamp,
                        **lexical,
                    },
                )
                for (c, version), dense, (sparse, lexical) in zip(
                    tagged, batch.vectors.tolist(), fields, strict=True
                )
            ]
            self._write(made)

    def _show(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """One request (Edge: two updates, a crash between them finished at the next open)."""
        if record.pending != record.version:
            return
        m = self._models
        of_doc = self._match("doc_id", record.doc_id)
        this = self._match("version", record.version)
        flags = [
            (True, m.Filter(must=[of_doc], must_not=[this])),
            (False, m.Filter(must=[of_doc, this])),
        ]
        made = [m.SetPayload(payload={points.HIDDEN: h}, filter=f) for h, f in flags]
        operations = [m.SetPayloadOperation(set_payload=p) for p in made]
        with self._errors():
            self._client.batch_update_points(self._collection, operations, wait=True)

    def migrate(self) -> int:
        """Flag and stamp a release 0.1.0 collection's points once (``pywrapai-graph store
        migrate``), hiding versions pending records name; returns how many documents had one."""
        m = self._models
        unflagged = m.IsEmptyCondition(is_empty=m.PayloadField(key=points.HIDDEN))
        with self._writing():
            if self._known_dim() is None:
                return 0
            pending = self._pending_records()
            for record in pending:
                of_doc = self._match("doc_id", record.doc_id)
                selector = m.Filter(
                    must=[of_doc, unflagged], must_not=[self._match("version", record.version)]
                )
                self._client.set_payload(
                    self._collection, {points.HIDDEN: True}, points=selector, wait=True
                )
            embedder = self._recorded_embedder()
            stamp = {points.HIDDEN: False, points.EMBEDDER: embedder.to_json() if embedder else ""}
            rest = m.Filter(must=[unflagged])
            self._client.set_payload(self._collection, stamp, points=rest, wait=True)
        return len(pending)

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        m = self._models
        with self._errors():
            for start in range(0, len(ids), 500):
                part = [points.point_id(i) for i in ids[start : start + 500]]
                self._client.delete(self._collection, m.PointIdsList(points=part), wait=True)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._lock, self._errors():
            if self._known_dim() is None:
                return 0
            return int(self._client.count(self._collection, **self._counting(filter)).count)

    def _counting(self, filter: MetadataFilter | None) -> dict[str, Any]:
        """``count``'s arguments: every chunk without a filter (as Chroma's), else the shown."""
        return {"count_filter": self._selector(filter) if filter else None, "exact": True}

    def _selector(self, filter: MetadataFilter | None) -> Any:
        given = points.metadata_conditions(self._models, filter) or None
        return self._models.Filter(must=given, must_not=[self._match(points.HIDDEN, True)])

    def _batch(self, queries: Sequence[Matrix], n: int, selector: Any) -> dict[str, Any]:
        """``query_batch_points``' arguments: one request for all queries."""
        ask = partial(self._models.QueryRequest, limit=n, filter=selector, with_payload=True)
        asked = [ask(query=q.tolist()) for q in queries]
        return {"collection_name": self._collection, "requests": asked, **self._consistency}

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        return self._ranked(StoreQuery("dense", n, vector=query.tolist()), selector)

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        with self._errors():
            results = self._client.query_batch_points(**self._batch(queries, n, selector))
        return [points.hits_of(r.points) for r in results]

    # ------------------------------------------------------------------ async (server)
    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        with self._errors():
            results = await self._aclient().query_batch_points(**self._batch(queries, n, selector))
        return [points.hits_of(r.points) for r in results]

    async def _acount(self, filter: MetadataFilter | None = None) -> int:
        if not self._native_async:
            return await super()._acount(filter)
        if self._known_dim() is None:
            return 0
        with self._errors():
            got = await self._aclient().count(self._collection, **self._counting(filter))
        return int(got.count)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing():
            if self._docs_exist():
                self._client.delete_collection(self._docs)
            dim = self._known_dim()
            if dim is None:
                return
            self._client.delete_collection(self._collection)
            self._dim = None
            self._create(dim)

    def __len__(self) -> int:
        return self._count()

    def close(self) -> None:
        """Close the client (in process: lets the folder go; ``:memory:`` is deleted)."""
        with self._lock:
            self._client.close()

    def __repr__(self) -> str:
        return f"QdrantVectorStore(collection={self._collection!r}, location={self._where!r})"


def _cluster(url: str | None, **given: Any) -> dict[str, Any]:
    """The cluster settings given (not None), checked (``ConfigurationError``)."""
    given = {k: v for k, v in given.items() if v is not None}
    for key, value in given.items():
        if url is None:
            raise ConfigurationError(f"{key} needs a Qdrant server (url=)")
        level = key == "read_consistency" and value in ("majority", "quorum", "all")
        if not level and (type(value) is not int or value < 1):
            raise ConfigurationError(f"{key} must be a positive integer, not {value!r}")
    return given
