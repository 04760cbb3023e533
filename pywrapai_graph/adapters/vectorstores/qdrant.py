"""QdrantVectorStore: Qdrant in-process (``:memory:`` or a local path) or a server/Cloud."""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import address, cannot_reach, refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores._engine_lexical import EngineLexicalSearch
from pywrapai_graph.adapters.vectorstores._exact_index import Matrix, PreparedBatch, prepare_batch
from pywrapai_graph.adapters.vectorstores._folder_integrity import SealedFolder
from pywrapai_graph.adapters.vectorstores._local_files import os_failure, sqlite_failure
from pywrapai_graph.adapters.vectorstores._qdrant_ids import ids_filter
from pywrapai_graph.adapters.vectorstores._qdrant_upgrade import rebuild_with_sparse
from pywrapai_graph.adapters.vectorstores._sparse_terms import (
    LengthTotals,
    check_fixed_bm25,
    query_indices,
    weights,
)
from pywrapai_graph.adapters.vectorstores._versioned import (
    DocRecord,
    Hit,
    StoredChunk,
    engine_id,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidStateError,
    PyWrapAIError,
    VectorStoreError,
)
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.store_inputs import canonical_json
from pywrapai_graph.ports.vector_store import check_ids
from pywrapai_graph.redaction import redact, scrubbed

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from qdrant_client import AsyncQdrantClient, QdrantClient

__all__ = ["QdrantVectorStore"]

# Non-UUID chunk ids map to stable UUIDv5 point ids; the original id stays in the payload.
_ID_NAMESPACE = uuid.UUID("2b9d0c7e-61c4-4a53-8e0f-5f0c3f7b1a44")
_UPSERT_BATCH = 512
_EMBEDDER = "e:embedder"
_LENGTHS = "e:lengths"
#: the named sparse vector of each chunk's BM25 term weights (the engine applies the idf)
_SPARSE = "pywrapai_bm25"


# Metadata again under hex-encoded keys: Qdrant's key paths split on '.' and refuse quotes,
# so a filter on any key string ("a.b", 'q"k') goes through these names. Scalars go under
# ``k<hex>``; lists and None under ``j<hex>`` as canonical JSON text, because Qdrant matches
# an array when *any* element matches and cannot match null, whereas a filter asks for an
# equal value.
_FIELDS = "pywrapai_fields"


def _field(key: str, value: Any) -> str:
    kind = "k" if isinstance(value, str | int | float | bool) else "j"
    return f"{_FIELDS}.{kind}{key.encode('utf-8').hex()}"


def _fields(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {
        _field(k, v).split(".", 1)[1]: v
        if isinstance(v, str | int | float | bool)
        else canonical_json(v)
        for k, v in metadata.items()
    }


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk id (the id itself when it is a UUID)."""
    try:
        return str(uuid.UUID(chunk_id))
    except ValueError:
        return str(uuid.uuid5(_ID_NAMESPACE, chunk_id))


def _chunk(payload: dict[str, Any] | None) -> Chunk:
    """The chunk a point's payload carries (every point this store writes has one)."""
    if payload is None:
        raise VectorStoreError("a Qdrant point has no payload: not a point this store wrote")
    return Chunk(
        text=payload["text"],
        doc_id=payload["doc_id"],
        metadata=dict(payload.get("metadata") or {}),
        id=payload["id"],
    )


def _version(payload: dict[str, Any] | None) -> str:
    return str((payload or {}).get("version", ""))


def _record(payload: Any) -> DocRecord:
    return DocRecord(
        str(payload["doc_id"]),
        str(payload["version"]),
        str(payload["manifest"]),
        str(payload["pending"]),
    )


def _payload(record: DocRecord) -> dict[str, Any]:
    return {
        "kind": "doc",
        "doc_id": record.doc_id,
        "version": record.version,
        "manifest": record.manifest,
        "pending": record.pending,
    }


def _records_of(points: list[Any]) -> dict[str, DocRecord]:
    return {r.doc_id: r for r in (_record(p.payload) for p in points)}


_UPGRADE = (
    "Qdrant collection {name!r} was created before lexical search was served by Qdrant "
    "(it has no sparse vector {sparse!r}, and a server cannot add one while others may "
    "write); re-create it: `pywrapai-graph store clear --yes`, then ingest again (or keep "
    "mode='dense'). A local-mode folder is upgraded when a store opens it."
).replace("{sparse!r}", repr(_SPARSE))


def _where_to_open(
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


class QdrantVectorStore(EngineLexicalSearch):
    """Cosine search in a Qdrant collection.

    Args:
        collection: the collection name.
        location: ":memory:" (in-process, not persistent) or a directory (local mode,
            persistent). Local mode holds an exclusive file lock: :meth:`close` releases it.
            Each write in local mode is all or nothing, through a failure or a crash: the
            folder is put back as the last complete write left it (see ``_folder_integrity``).
        url: a Qdrant server or Cloud URL (instead of ``location``).
        api_key: for Qdrant Cloud; never shown in reprs or errors.
        dimension: create the collection up front; otherwise the first add decides.
        path: alias of ``location`` for a local directory.
        timeout: seconds a server request may take (the client's default otherwise).

    Async: with a server, ``asearch``, ``asearch_many`` and ``acount`` (without a filter)
    go through ``AsyncQdrantClient``, one per event loop, closed by :meth:`aclose` or when
    that loop shuts down. Writes, and every async call in local mode, run their sync twin
    in the bounded thread offload: a local folder can be open in one client at a time (its
    file lock), so an async client could not share it with the sync one, and qdrant-client's
    async local mode runs the same in-process search on the event loop, which would block it.
    ``search_many`` is one ``query_batch_points`` request to a server (in local mode, one
    in-process query each, with one record lookup for the batch).

    Lexical search is Qdrant's: each chunk carries a sparse vector ``pywrapai_bm25`` of its
    terms' BM25 weights (k1 1.2, b 0.75, see ``_sparse_terms``) and the collection applies
    its IDF modifier, so document frequencies are the engine's at query time.

    Raises:
        MissingExtraError: ``qdrant-client`` is not installed.
        ConfigurationError: both or neither of a location and a url.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "qdrant"
    _ids_selector = staticmethod(ids_filter)

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
    ) -> None:
        qc = require("qdrant_client", "qdrant", "qdrant-client")
        self._models = require("qdrant_client.models", "qdrant", "qdrant-client")
        where = _where_to_open(collection, location, path, url)
        self._collection = collection
        self._lock = threading.RLock()
        #: the records collection was seen to exist (a record lookup is then one request)
        self._docs_seen = False
        #: the collection has the sparse vector of lexical search (created by this version)
        self._sparse = False
        self._mode = "server" if url else ("memory" if str(where) == ":memory:" else "local")
        self._aclients: PerLoop[AsyncQdrantClient] | None = None
        try:
            if url is not None:
                # no background version-check thread: failures surface on our own calls
                self._client: QdrantClient = qc.QdrantClient(
                    url=url, api_key=api_key, timeout=timeout, check_compatibility=False
                )
                self._aclients = PerLoop(
                    lambda: qc.AsyncQdrantClient(
                        url=url, api_key=api_key, timeout=timeout, check_compatibility=False
                    ),
                    close_async,
                )
            elif self._mode == "memory":
                self._client = qc.QdrantClient(location=":memory:")
            else:
                # the client unpickles every point it finds: only hand it files we wrote
                self._root = Path(os.fspath(where))  # type: ignore[arg-type]
                self._folder = SealedFolder(self._root)
                self._open_local()
        except RuntimeError as exc:  # local mode: another client holds the lock
            raise VectorStoreError(
                f"cannot open the Qdrant storage at {os.fspath(where)!r}: {exc}. "  # type: ignore[arg-type]
                "Close the other QdrantVectorStore first (close() releases the lock)."
            ) from exc
        self._secrets = [api_key, url]
        self._address = address(url, default_port=6333) if url else None
        self._where = redact(url) if url else os.fspath(where)  # type: ignore[arg-type]
        with self._errors():
            self._dim = self._existing_dimension()
        if self._mode == "local" and self._pending_records():  # from before sealed writes
            with self._writing():
                self._recover()
        if self._mode == "local" and self._dim is not None and not self._sparse:
            with self._writing():  # from before lexical search was Qdrant's: rebuild it
                dim = self._dim
                rebuild_with_sparse(
                    self._client, self._models, collection, lambda: self._create(dim), self._vectors
                )
        if self._dim is None and dimension is not None:
            with self._writing():
                self._create(dimension)
        elif dimension is not None and self._dim != dimension:
            raise InvalidArgumentError(
                f"collection {collection!r} has dimension {self._dim}, not {dimension}"
            )

    # ------------------------------------------------------------------ local folder
    def _open_local(self) -> None:
        """Take the folder (recovering a crashed write), then open the client on it."""
        self._writes = 0
        with self._folder_errors():
            self._folder.open()
        try:
            if self._folder.sealed:  # ours: the client reads it (no space needed on a full disk)
                self._connect()
            else:  # a new folder: the client's first files are a write
                with self._sealed(reopen=False):
                    qc = require("qdrant_client", "qdrant", "qdrant-client")
                    self._client = qc.QdrantClient(path=os.fspath(self._root))
        except BaseException:
            self._folder.close()
            raise

    def _connect(self) -> None:
        """Open the client on the sealed folder, and seal anything it rewrote while opening
        (a client version tidying older rows; our own writes never leave any)."""
        qc = require("qdrant_client", "qdrant", "qdrant-client")
        with self._folder_errors():
            before = self._folder.stamps()
            self._client = qc.QdrantClient(path=os.fspath(self._root))
            if self._folder.stamps() != before:
                self._folder.commit()

    @contextmanager
    def _folder_errors(self) -> Iterator[None]:
        """The engine's file errors as ours: a full disk says so and names the folder."""
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlite_failure(str(self._root), exc) from exc
        except OSError as exc:
            raise os_failure(str(self._root), exc) from exc

    @contextmanager
    def _sealed(self, *, reopen: bool = True) -> Iterator[None]:
        """One all-or-nothing write to the local folder (the outermost one seals)."""
        if self._writes:
            yield
            return
        self._writes += 1
        try:
            with self._folder_errors():
                self._folder.begin()
            try:
                with self._folder_errors():
                    yield
                    self._folder.commit()
            except BaseException:
                self._undo(reopen)
                raise
        finally:
            self._writes -= 1

    def _undo(self, reopen: bool) -> None:
        """After a failed write: the folder, and the client's view of it, as last sealed."""
        if reopen:
            self._client.close()
        with self._folder_errors():
            self._folder.rollback()
        if reopen:
            self._connect()
            with self._errors():
                self._dim = self._existing_dimension()

    # ------------------------------------------------------------------ collection
    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Lock and translate errors; in local mode, one sealed all-or-nothing write."""
        with self._lock:
            if self._mode != "local":
                with self._errors():
                    yield
                return
            with self._sealed(), self._errors():
                yield

    @contextmanager
    def _errors(self) -> Iterator[None]:
        exc_mod = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
        timeouts, transports = http_errors()
        failures = (
            exc_mod.UnexpectedResponse,
            exc_mod.ResponseHandlingException,
            *timeouts,
            *transports,
        )
        try:
            yield
        except PyWrapAIError:
            raise
        except ValueError as exc:  # JSONDecodeError, pydantic: a reply the client cannot read
            raise VectorStoreError(
                f"Qdrant at {self._where!r} sent a reply the client cannot read "
                f"({type(exc).__name__}); is that address a Qdrant server?"
            ) from scrubbed(exc, self._secrets)
        except failures as exc:
            status = getattr(exc, "status_code", None)
            if self._address is not None and (
                not isinstance(exc, exc_mod.UnexpectedResponse) or status in (401, 403)
            ):
                message = cannot_reach("Qdrant", self._address, exc)
            else:
                message = f"Qdrant at {self._where!r} failed: {type(exc).__name__}"
                message += f" (HTTP {status})" if status else ""
            raise VectorStoreError(message) from scrubbed(exc, self._secrets)

    def _existing_dimension(self) -> int | None:
        if not self._client.collection_exists(self._collection):
            return None
        info = self._client.get_collection(self._collection)
        self._sparse = _SPARSE in (info.config.params.sparse_vectors or {})
        size = getattr(info.config.params.vectors, "size", None)
        if not isinstance(size, int):  # named vectors: not a collection this store made
            raise VectorStoreError(
                f"Qdrant collection {self._collection!r} has no single unnamed vector; "
                "use a collection created by QdrantVectorStore"
            )
        return size

    def _create(self, dim: int) -> None:
        m = self._models
        made = self._create_collection(
            self._collection,
            vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE),
            sparse_vectors_config={_SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        found = dim if made else self._existing_dimension()
        if found != dim:
            raise InvalidArgumentError(
                f"collection {self._collection!r} was just created by another process with "
                f"dimension {found}, not {dim}"
            )
        self._dim = dim
        self._sparse = True

    def _engine_dimension(self) -> int | None:
        with self._errors():
            return self._existing_dimension()

    def _create_collection(self, name: str, **config: Any) -> bool:
        """Create ``name``; False when another process created it first (processes that
        start together both see it missing, and all but one are told it exists)."""
        try:
            self._client.create_collection(name, **config)
        except Exception as exc:
            if "already exists" not in f"{exc} {getattr(exc, 'content', b'')!r}":
                raise
            return False
        return True

    def _filter(self, filter: MetadataFilter | None, doc_id: str | None = None) -> Any:
        m = self._models
        conditions = []
        if doc_id is not None:
            conditions.append(m.FieldCondition(key="doc_id", match=m.MatchValue(value=doc_id)))
        for key, value in (filter or {}).items():
            field = _field(key, value)
            if isinstance(value, int | float) and not isinstance(value, bool):
                # a range, not a match: MatchValue(1) misses a stored 1.0 (other stores match)
                conditions.append(m.FieldCondition(key=field, range=m.Range(gte=value, lte=value)))
            else:  # a scalar, or a list/None as the canonical JSON text written next to it
                wanted = value if isinstance(value, bool | int | str) else canonical_json(value)
                conditions.append(m.FieldCondition(key=field, match=m.MatchValue(value=wanted)))
        return m.Filter(must=conditions) if conditions else None

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return self._mode != "memory"

    @property
    def exact(self) -> bool:
        return self._mode != "server"  # local mode searches exhaustively; servers use HNSW

    @property
    def dimension(self) -> int | None:
        """Vector dimension, or None before the collection exists."""
        return self._dim

    # ------------------------------------------------------------------ engine primitives
    @property
    def _docs(self) -> str:
        return f"{self._collection}.docs"

    def _docs_exist(self) -> bool:
        return bool(self._client.collection_exists(self._docs))

    def _ensure_docs(self) -> None:
        m = self._models
        if not self._docs_exist():
            self._create_collection(
                self._docs, vectors_config=m.VectorParams(size=1, distance=m.Distance.COSINE)
            )

    def _match(self, key: str, value: Any) -> Any:
        m = self._models
        return m.FieldCondition(key=key, match=m.MatchValue(value=value))

    def _scroll(self, collection: str, selector: Any) -> list[Any]:
        points: list[Any] = []
        offset = None
        while True:
            page, offset = self._client.scroll(
                collection, scroll_filter=selector, limit=1000, offset=offset, with_payload=True
            )
            points += page
            if offset is None:
                return points

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """One ``retrieve`` by point ids once the records collection was seen to exist.

        Its existence is asked while it has not been seen, and again when the retrieve
        fails (another process's ``clear`` drops the collection): then the retrieve is
        repeated, so a real failure raises its own error.
        """
        if not doc_ids:
            return {}
        ids = [point_id("d:" + d) for d in doc_ids]
        with self._errors():
            got = None
            if self._docs_seen:
                with suppress(Exception):
                    got = self._client.retrieve(self._docs, ids, with_payload=True)
            if got is None:
                self._docs_seen = self._docs_exist()
                if not self._docs_seen:
                    return {}
                got = self._client.retrieve(self._docs, ids, with_payload=True)
        return _records_of(got)

    def _pending_records(self) -> list[DocRecord]:
        m = self._models
        with self._errors():
            if not self._docs_exist():
                return []
            selector = m.Filter(
                must=[self._match("kind", "doc")], must_not=[self._match("pending", "")]
            )
            return [_record(p.payload) for p in self._scroll(self._docs, selector)]

    def _put_point(self, key: str, payload: dict[str, Any]) -> None:
        m = self._models
        with self._errors():
            self._ensure_docs()
            point = m.PointStruct(id=point_id(key), vector=[1.0], payload=payload)
            self._client.upsert(self._docs, [point], wait=True)

    def _put_record(self, record: DocRecord) -> None:
        self._put_point("d:" + record.doc_id, _payload(record))

    def _put_record_if(self, record: DocRecord, expected: DocRecord) -> bool:
        """One conditional ``set_payload``: Qdrant applies it only to the record point whose
        versions are still ``expected``'s (never inserting one), serialised with every other
        write of the collection; then read back to learn whether it applied."""
        m = self._models
        condition = m.Filter(
            must=[
                m.HasIdCondition(has_id=[point_id("d:" + expected.doc_id)]),
                self._match("pending", expected.pending),
                self._match("version", expected.version),
            ]
        )
        with self._errors():
            self._client.set_payload(self._docs, _payload(record), points=condition, wait=True)
        return self._records([record.doc_id]).get(record.doc_id) == record

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        m = self._models
        with self._errors():
            if self._docs_exist():
                ids = [point_id("d:" + d) for d in doc_ids]
                self._client.delete(self._docs, m.PointIdsList(points=ids), wait=True)

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        with self._errors():
            if not self._docs_exist():
                return None
            got = self._client.retrieve(self._docs, [point_id(_EMBEDDER)], with_payload=True)
        return EmbedderIdentity.from_json((got[0].payload or {})["embedder"]) if got else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._put_point(_EMBEDDER, {"kind": "embedder", "embedder": identity.to_json()})

    def _length_totals(self) -> LengthTotals:
        with self._errors():
            if not self._docs_exist():
                return LengthTotals()
            got = self._client.retrieve(self._docs, [point_id(_LENGTHS)], with_payload=True)
        payload = (got[0].payload or {}) if got else {}
        return LengthTotals(int(payload.get("tokens", 0)), int(payload.get("chunks", 0)))

    def _put_length_totals(self, totals: LengthTotals) -> None:
        self._put_point(
            _LENGTHS, {"kind": "lengths", "tokens": totals.tokens, "chunks": totals.chunks}
        )

    def _vectors(self, texts: list[str], dense: list[list[float]]) -> list[Any]:
        """Each point's vectors: the dense one, and the BM25 sparse one when it has terms."""
        if not self._sparse:  # a server collection from before lexical search was Qdrant's
            return dense
        m = self._models
        terms, avgdl = self._weigh(texts)
        out: list[Any] = []
        for vector, counts in zip(dense, terms, strict=True):
            indices, values = weights(counts, avgdl)
            sparse = {_SPARSE: m.SparseVector(indices=indices, values=values)} if indices else {}
            out.append({"": vector, **sparse})
        return out

    @staticmethod
    def _stored(points: list[Any]) -> list[StoredChunk]:
        out = []
        for p in points:
            version = str(p.payload.get("version", ""))
            chunk = str(p.payload["id"])
            out.append(StoredChunk(engine_id(chunk, version), chunk, version, p.payload["doc_id"]))
        return out

    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        with self._errors():
            if self._known_dim() is None:
                return []
            return self._stored(self._scroll(self._collection, self._filter(None, doc_id)))

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        with self._errors():
            if self._known_dim() is None:
                return []
            found: list[StoredChunk] = []
            for start in range(0, len(chunk_ids), 500):
                selector = ids_filter(chunk_ids[start : start + 500])
                found += self._stored(self._scroll(self._collection, selector))
            return found

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        m = self._models
        if not batch.ids:
            return
        with self._errors():
            if self._known_dim() is None:
                self._create(int(batch.vectors.shape[1]))
            points = [
                m.PointStruct(
                    id=point_id(engine_id(c.id, version)),
                    vector=v,
                    payload={
                        "id": c.id,
                        "doc_id": c.doc_id,
                        "text": c.text,
                        "metadata": dict(c.metadata),
                        "version": version,
                        _FIELDS: _fields(c.metadata),
                    },
                )
                for c, v, version in zip(
                    batch.chunks,
                    self._vectors([c.text for c in batch.chunks], batch.vectors.tolist()),
                    versions,
                    strict=True,
                )
            ]
            for start in range(0, len(points), _UPSERT_BATCH):
                self._client.upsert(
                    self._collection, points[start : start + _UPSERT_BATCH], wait=True
                )

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        m = self._models
        with self._errors():
            for start in range(0, len(ids), 500):
                part = [point_id(i) for i in ids[start : start + 500]]
                self._client.delete(self._collection, m.PointIdsList(points=part), wait=True)

    def count(self, filter: MetadataFilter | None = None) -> int:
        with self._lock, self._errors():
            if not filter:
                return self._count()
            if self._known_dim() is None:
                return 0
            points = self._scroll(self._collection, self._filter(filter))
            return len(self._committed([(_chunk(p.payload), _version(p.payload)) for p in points]))

    # ------------------------------------------------------------------ port
    def add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._known_dim())
        if not batch.ids:
            return
        with self._writing():
            self._add_versioned(batch)

    def _selector(self, filter: MetadataFilter | None) -> Any:
        return self._filter(filter)

    @staticmethod
    def _hits(points: Sequence[Any], cosine: bool = True) -> list[Hit]:
        return [
            (
                ScoredChunk(_chunk(p.payload), min(float(p.score), 1.0) if cosine else p.score),
                _version(p.payload),
            )
            for p in points
        ]

    def _check_lexical(self, k1: float, b: float) -> None:
        check_fixed_bm25(k1, b, "Qdrant")

    def _lexical_query(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        m = self._models
        indices = query_indices(query)
        if not indices:
            return []
        with self._errors():
            if not self._sparse:
                self._dim = self._existing_dimension()  # another process may have re-created it
            if not self._sparse:
                raise InvalidStateError(_UPGRADE.format(name=self._collection))
            result = self._client.query_points(
                self._collection,
                query=m.SparseVector(indices=indices, values=[1.0] * len(indices)),
                using=_SPARSE,
                limit=n,
                query_filter=selector,
                with_payload=True,
            )
        return self._hits(result.points, cosine=False)

    def _requests(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[Any]:
        m = self._models
        return [
            m.QueryRequest(query=q.tolist(), limit=n, filter=selector, with_payload=True)
            for q in queries
        ]

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        with self._errors():
            result = self._client.query_points(
                self._collection,
                query=query.tolist(),
                limit=n,
                query_filter=selector,
                with_payload=True,
            )
        return self._hits(result.points)

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """A server: one ``query_batch_points`` request for every query. Local mode: one
        ``query_points`` each (the local batch call costs more than the queries it holds)."""
        if self._mode != "server":
            return [self._query(q, n, selector) for q in queries]
        return self._query_batch(queries, n, selector)

    def _query_batch(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        with self._errors():
            results = self._client.query_batch_points(
                self._collection, self._requests(queries, n, selector)
            )
        return [self._hits(r.points) for r in results]

    # ------------------------------------------------------------------ native async (server)
    @property
    def _native_async(self) -> bool:
        return self._aclients is not None

    def _aclient(self) -> AsyncQdrantClient:
        if self._aclients is None:  # pragma: no cover - callers check _native_async
            raise InvalidStateError("a local-mode QdrantVectorStore has no async client")
        return self._aclients.get()

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        with self._errors():
            results = await self._aclient().query_batch_points(
                self._collection, self._requests(queries, n, selector)
            )
        return [self._hits(r.points) for r in results]

    async def _arecords(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """:meth:`_records` on the async client."""
        if not doc_ids:
            return {}
        client = self._aclient()
        ids = [point_id("d:" + d) for d in doc_ids]
        with self._errors():
            got = None
            if self._docs_seen:
                with suppress(Exception):
                    got = await client.retrieve(self._docs, ids, with_payload=True)
            if got is None:
                self._docs_seen = bool(await client.collection_exists(self._docs))
                if not self._docs_seen:
                    return {}
                got = await client.retrieve(self._docs, ids, with_payload=True)
        return _records_of(got)

    async def acount(self, filter: MetadataFilter | None = None) -> int:
        """Async :meth:`count`: native without a filter (a filtered count is offloaded)."""
        if filter or not self._native_async:
            return await super().acount(filter)
        if self._known_dim() is None:
            return 0
        with self._errors():
            got = await self._aclient().count(self._collection, exact=True)
        return int(got.count)

    async def aclose(self) -> None:
        """Close this loop's async client, then the store (as :meth:`close`)."""
        if self._aclients is not None:
            await self._aclients.aclose()
        await super().aclose()

    def _count(self, selector_filter: Any = None) -> int:
        if self._known_dim() is None:
            return 0
        return int(
            self._client.count(self._collection, count_filter=selector_filter, exact=True).count
        )

    def delete(self, ids: Sequence[str]) -> int:
        wanted = check_ids(ids)
        if not wanted:
            return 0
        with self._writing():
            return self._delete_chunks(wanted)

    def delete_by_doc(self, doc_id: str) -> int:
        with self._writing():
            return self._delete_document(doc_id)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing():
            if self._docs_exist():
                self._client.delete_collection(self._docs)
            self._docs_seen = False
            dim = self._known_dim()
            if dim is None:
                return
            self._client.delete_collection(self._collection)
            self._create(dim)

    def __len__(self) -> int:
        with self._lock, self._errors():
            return self._count()

    def close(self) -> None:
        """Close the client (releases the local-mode file lock)."""
        with self._lock:
            self._client.close()
            if self._mode == "local":
                self._folder.close()

    def __repr__(self) -> str:
        return f"QdrantVectorStore(collection={self._collection!r}, location={self._where!r})"
