"""MilvusVectorStore: a Milvus server by URL, or milvus-lite in a local ``.db`` folder.

Documents are all-or-nothing as in the other server stores (``kit.versioned``): chunks are
rows tagged with their version, records (versions, manifests, the embedder) rows of a second
collection, ``<collection>__records``. Every request is read at Milvus's ``Strong``
consistency, so another process's write or delete is seen by the next request.

:meth:`retrieve` is one engine request: a ``search`` on the dense field (cosine) or on the
BM25 field, or a ``hybrid_search`` of both fused by the engine's ranker; the metadata filter
(a tenant scope is part of it) is the ``expr`` of every sub-request, because pymilvus'
``hybrid_search(filter=...)`` is ignored. Fusions: ``rrf`` is ``RRFRanker(rrf_k)`` (ranks
from 1, as ``application.fusion``; equal weights scale the scores, unequal ones are not
expressible in it and are dropped); ``weighted`` and ``rescored`` are ``WeightedRanker`` with
the query's weights (Milvus normalises each side's scores itself, arctan for BM25, not min-max
over the candidates). Its record lookup (to drop chunks of uncommitted versions) reads the
embedder record in the same request.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import address, cannot_reach
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    Matrix,
    PreparedBatch,
    prepare_batch,
)
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    DocRecord,
    Hit,
    StoredChunk,
    VersionedDocuments,
)
from pywrapai_graph.adapters.vectorstores.milvus.rows import (
    ANALYZER,
    CHUNK_FIELDS,
    EMBEDDER,
    MAX_TAGS,
    MAX_TERMS,
    chunk_of,
    chunk_row,
    digest,
    hits_of,
    is_in,
    record_of,
    record_row,
    stored_of,
    tags_expr,
    terms_of,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import (
    ConfigurationError,
    InvalidArgumentError,
    PyWrapAIError,
    StoreBusyError,
    VectorStoreError,
)
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact, scrubbed

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = ["MilvusVectorStore"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")
_BATCH = 500
#: the most hits Milvus returns for one query
_TOP = 16_384
_STRONG = {"consistency_level": "Strong"}
#: the BM25 parameters the index fixes: StoreQuery's defaults
_BM25 = (StoreQuery("dense", 1).k1, StoreQuery("dense", 1).b)
#: milvus-lite servers this process started, by folder, with how many stores use each
_LITE: dict[str, int] = {}
_LITE_LOCK = threading.Lock()


def _lite_uri(folder: str) -> str:
    """The local gRPC address of milvus-lite serving ``folder`` in this process."""
    server = require("milvus_lite.server_manager", "milvus", "milvus-lite").server_manager_instance
    with _LITE_LOCK:
        uri = server.start_and_get_uri(folder)
        if uri is None:
            raise StoreBusyError(
                f"milvus-lite could not open {folder!r}: another process holds it (milvus-lite "
                "serves one folder to one process). For several processes run a Milvus server "
                "(or `milvus-lite server --data-dir ...`) and give the store its url."
            )
        _LITE[folder] = _LITE.get(folder, 0) + 1
    return str(uri)


def _let_go(folder: str) -> None:
    server = require("milvus_lite.server_manager", "milvus", "milvus-lite").server_manager_instance
    with _LITE_LOCK:
        _LITE[folder] -= 1
        if not _LITE[folder]:
            del _LITE[folder]
            server.release_server(folder)


class MilvusVectorStore(VersionedDocuments):
    """Cosine, BM25 and hybrid search in a Milvus collection.

    Args:
        collection: the collection name (letters, digits, ``_``; not starting with a digit).
        path: a milvus-lite folder ending in ``.db`` (created if missing), held by one process.
        url: a Milvus server (``http://host:19530``), instead of ``path``.
        token: the server's ``user:password`` or API key; never shown in reprs or errors.
        dimension: create the collection up front; otherwise the first add decides.

    Lexical search is Milvus's BM25 function (k1 1.2, b 0.75, fixed in the index) over the
    chunk's text analysed by the library's analyzer; the engine keeps the statistics.

    Raises:
        MissingExtraError: ``pymilvus`` (or, for a path, ``milvus-lite``) is not installed.
        ConfigurationError: both or neither of a path and a url; a bad collection name.
        StoreBusyError: another process holds the milvus-lite folder.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "milvus"

    def __init__(
        self,
        collection: str,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        token: str | None = None,
        dimension: int | None = None,
    ) -> None:
        self._pm = require("pymilvus", "milvus", "pymilvus")
        if (path is None) == (url is None):
            raise ConfigurationError("MilvusVectorStore needs a path or a url, not both")
        if not _NAME.fullmatch(collection):
            raise ConfigurationError(
                f"Milvus collection names are letters, digits and _, got {collection!r}"
            )
        self._collection, self._records_of = collection, f"{collection}__records"
        self._lock = threading.RLock()
        self._secrets = [token, url]
        self._folder = None if path is None else os.path.abspath(os.fspath(path))
        self._lite = self._folder is not None
        self._where = self._folder or redact(url or "")
        self._address = address(url, default_port=19530) if url else None
        self._dim: int | None = None
        if self._folder is not None:
            if not self._folder.endswith(".db"):
                raise ConfigurationError(f"a milvus-lite path ends in .db, got {self._folder!r}")
            Path(self._folder).parent.mkdir(parents=True, exist_ok=True)
            url = _lite_uri(self._folder)
        try:
            with self._errors():
                self._client: MilvusClient = self._pm.MilvusClient(uri=url, token=token or "")
                self._dim = self._engine_dimension()
                if self._lite and self._pending_records():  # a writer died
                    with self._writing():
                        self._recover()
        except BaseException:
            self._release()
            raise
        if self._dim is None and dimension is not None:
            with self._writing():
                self._create(dimension)
        elif dimension is not None and self._dim != dimension:
            raise InvalidArgumentError(
                f"collection {collection!r} has dimension {self._dim}, not {dimension}"
            )

    # ------------------------------------------------------------------ collections
    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._lock, self._errors():
            yield

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except PyWrapAIError:
            raise
        except self._pm.MilvusException as exc:
            code = getattr(exc, "code", None)
            if self._address is not None and code in (1, 2, 401, 403):
                message = cannot_reach("Milvus", self._address, exc)
            else:
                message = f"Milvus at {self._where!r} failed: {type(exc).__name__} (code {code})"
            raise VectorStoreError(message) from scrubbed(exc, self._secrets)

    def _engine_dimension(self) -> int | None:
        if not self._client.has_collection(self._collection):
            return None
        for name in (self._records_of, self._collection):  # a reopened folder loads none
            self._client.load_collection(name)
        fields = self._client.describe_collection(self._collection)["fields"]
        return int(next(f["params"]["dim"] for f in fields if f["name"] == "dense"))

    def _create(self, dim: int) -> None:
        pm, c = self._pm, self._client
        if not c.has_collection(self._records_of):
            self._create_records()
        chunks = c.create_schema(auto_id=False)
        for name in ("pk", "key", "doc", "version"):
            chunks.add_field(name, pm.DataType.VARCHAR, is_primary=name == "pk", max_length=64)
        chunks.add_field("body", pm.DataType.JSON)
        chunks.add_field(
            "terms",
            pm.DataType.VARCHAR,
            max_length=MAX_TERMS,
            enable_analyzer=True,
            analyzer_params=ANALYZER,
        )
        chunks.add_field(
            "tags",
            pm.DataType.ARRAY,
            element_type=pm.DataType.VARCHAR,
            max_length=64,
            max_capacity=MAX_TAGS,
        )
        chunks.add_field("dense", pm.DataType.FLOAT_VECTOR, dim=dim)
        chunks.add_field("sparse", pm.DataType.SPARSE_FLOAT_VECTOR)
        chunks.add_function(
            pm.Function(
                name="bm25",
                function_type=pm.FunctionType.BM25,
                input_field_names=["terms"],
                output_field_names=["sparse"],
            )
        )
        index, bm25 = c.prepare_index_params(), {"bm25_k1": _BM25[0], "bm25_b": _BM25[1]}
        index.add_index(
            "dense", index_type="FLAT" if self._lite else "AUTOINDEX", metric_type="COSINE"
        )
        index.add_index(
            "sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            # flat for a server, and as pymilvus 2 sent them (all milvus-lite 3.2 reads)
            params={**bm25, "params": bm25},
        )
        c.create_collection(self._collection, schema=chunks, index_params=index, **_STRONG)
        found = self._engine_dimension()
        if found != dim:  # another process created it first
            raise InvalidArgumentError(
                f"collection {self._collection!r} has dimension {found}, not {dim}"
            )
        self._dim = dim

    def _create_records(self) -> None:
        pm, c = self._pm, self._client
        records = c.create_schema(auto_id=False)
        records.add_field("pk", pm.DataType.VARCHAR, is_primary=True, max_length=64)
        records.add_field("pending", pm.DataType.VARCHAR, max_length=64)
        records.add_field("body", pm.DataType.JSON)
        records.add_field("v", pm.DataType.FLOAT_VECTOR, dim=2)  # Milvus wants a vector
        index = c.prepare_index_params()
        index.add_index("v", index_type="FLAT", metric_type="COSINE")
        c.create_collection(self._records_of, schema=records, index_params=index, **_STRONG)

    def _rows(self, collection: str, expr: str, fields: list[str]) -> list[dict[str, Any]]:
        """Every row ``expr`` selects, page after page."""
        with self._errors():
            if not self._client.has_collection(collection):
                return []
            pages = self._client.query_iterator(
                collection, batch_size=1000, filter=expr, output_fields=fields, **_STRONG
            )
            rows: list[dict[str, Any]] = []
            try:
                while page := pages.next():
                    rows += page
            finally:
                pages.close()
            return rows

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return True

    @property
    def exact(self) -> bool:
        return self._lite  # milvus-lite: FLAT; a server: its AUTOINDEX

    @property
    def lexical(self) -> bool:
        return True

    @property
    def dimension(self) -> int | None:
        return self._dim

    def _add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._known_dim())
        if batch.ids:
            with self._writing():
                self._add_versioned(batch)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._lock:
            if not filter:
                return len(self)
            rows = self._rows(self._collection, tags_expr(filter), CHUNK_FIELDS)
            return len(self._committed([(chunk_of(r["body"]), r["version"]) for r in rows]))

    def __len__(self) -> int:
        with self._lock, self._errors():
            if self._known_dim() is None:
                return 0
            got = self._client.query(self._collection, output_fields=["count(*)"], **_STRONG)
            return int(got[0]["count(*)"])

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing():
            dim = self._known_dim()
            for name in (self._records_of, self._collection):
                if self._client.has_collection(name):
                    self._client.drop_collection(name)
            if dim is not None:
                self._create(dim)

    def close(self) -> None:
        """Close the client; a milvus-lite folder is let go when its last store closes."""
        with self._lock:
            self._client.close()
            self._release()

    def _release(self) -> None:
        if self._folder is not None:
            folder, self._folder = self._folder, None
            _let_go(folder)

    def __repr__(self) -> str:
        return f"MilvusVectorStore(collection={self._collection!r}, location={self._where!r})"

    # ------------------------------------------------------------------ records
    def _record_rows(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        if not keys:
            return []
        with self._errors():
            if not self._client.has_collection(self._records_of):
                return []
            return list(
                self._client.get(
                    self._records_of,
                    ids=[digest(k) for k in keys],
                    output_fields=["body"],
                    **_STRONG,
                )
            )

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        rows = self._record_rows(["d:" + d for d in doc_ids])
        return {r.doc_id: r for r in (record_of(row["body"]) for row in rows)}

    def _search_records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """The records of a search's hits and the embedder record, in one request; the
        identity is told to the caller's probe."""
        bodies = [
            row["body"] for row in self._record_rows([EMBEDDER, *("d:" + d for d in doc_ids)])
        ]
        embedder = [b["embedder"] for b in bodies if "embedder" in b]
        report_identity(EmbedderIdentity.from_json(embedder[0]) if embedder else None)
        return {r.doc_id: r for r in (record_of(b) for b in bodies if "embedder" not in b)}

    def _pending_records(self) -> list[DocRecord]:
        return [
            record_of(r["body"]) for r in self._rows(self._records_of, 'pending != ""', ["body"])
        ]

    def _upsert_records(self, rows: list[dict[str, Any]]) -> None:
        with self._errors():
            if not self._client.has_collection(self._records_of):
                self._create_records()
            self._client.upsert(self._records_of, rows)

    def _put_record(self, record: DocRecord) -> None:
        body = {
            "doc_id": record.doc_id,
            "version": record.version,
            "manifest": record.manifest,
            "pending": record.pending,
        }
        self._upsert_records([record_row("d:" + record.doc_id, body, record.pending)])

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        with self._errors():
            if self._client.has_collection(self._records_of):
                keys = [digest("d:" + d) for d in doc_ids]
                self._client.delete(self._records_of, filter=is_in("pk", keys))

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        rows = self._record_rows([EMBEDDER])
        return EmbedderIdentity.from_json(rows[0]["body"]["embedder"]) if rows else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._upsert_records([record_row(EMBEDDER, {"embedder": identity.to_json()})])

    # ------------------------------------------------------------------ chunks
    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        return stored_of(self._rows(self._collection, is_in("doc", [digest(doc_id)]), CHUNK_FIELDS))

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        found: list[StoredChunk] = []
        for start in range(0, len(chunk_ids), _BATCH):
            keys = [digest(i) for i in chunk_ids[start : start + _BATCH]]
            found += stored_of(self._rows(self._collection, is_in("key", keys), CHUNK_FIELDS))
        return found

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        if not batch.ids:
            return
        rows = [
            chunk_row(c, v, version)
            for c, v, version in zip(batch.chunks, batch.vectors.tolist(), versions, strict=True)
        ]
        with self._errors():
            if self._known_dim() is None:
                self._create(int(batch.vectors.shape[1]))
            for start in range(0, len(rows), _BATCH):
                self._client.upsert(self._collection, rows[start : start + _BATCH])

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        with self._errors():
            for start in range(0, len(ids), _BATCH):
                keys = [digest(i) for i in ids[start : start + _BATCH]]
                self._client.delete(self._collection, filter=is_in("pk", keys))

    # ------------------------------------------------------------------ search
    def _selector(self, filter: MetadataFilter | None) -> str:
        return tags_expr(filter)

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        return self._query_many([query], n, selector)[0]

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """One ``search`` for every query."""
        return self._search_side([q.tolist() for q in queries], "dense", n, selector, -1.0)

    def _search_side(
        self, data: list[Any], mode: str, n: int, expr: str, min_score: float
    ) -> list[list[Hit]]:
        field, params = (
            ("sparse", {"metric_type": "BM25"})
            if mode == "lexical"
            else ("dense", {"metric_type": "COSINE", **_radius(min_score)})
        )
        with self._errors():
            got = self._client.search(
                self._collection,
                data,
                anns_field=field,
                limit=min(2 * n, _TOP),
                filter=expr,
                search_params=params,
                output_fields=CHUNK_FIELDS,
                **_STRONG,
            )
        return [hits_of(found, mode, n) for found in got]

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        return self._retrieve(StoreQuery("lexical", k, text=query, filter=filter, k1=k1, b=b))

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """One engine request (asked again, deeper, only while chunks of uncommitted
        versions took places), and the record lookup that drops them."""
        if query.mode != "dense" and (query.k1, query.b) != _BM25:
            raise InvalidArgumentError(
                f"Milvus fixes BM25 in its index at k1={_BM25[0]}, b={_BM25[1]}; got "
                f"k1={query.k1}, b={query.b}. Use the defaults with this store."
            )
        with self._lock:
            terms = terms_of(query.text or "")
            if self._known_dim() is None or (query.mode == "lexical" and not terms):
                return []
            expr = tags_expr(query.filter)
            return self._search_visible(
                lambda n: self._ranked(query, terms, n, expr), query.k, None
            )

    def _ranked(self, query: StoreQuery, terms: str, n: int, expr: str) -> list[Hit]:
        vector = [list(query.vector or [])]
        if query.mode != "hybrid":
            data = vector if query.mode == "dense" else [terms]
            return self._search_side(data, query.mode, n, expr, query.min_score)[0]
        pm, depth = self._pm, min(max(query.depth, n), _TOP)
        sides = [
            pm.AnnSearchRequest(
                vector,
                "dense",
                {"metric_type": "COSINE", **_radius(query.min_score)},
                depth,
                expr=expr,
            )
        ]
        if terms:
            sides.append(
                pm.AnnSearchRequest([terms], "sparse", {"metric_type": "BM25"}, depth, expr=expr)
            )
        weights = query.weights[: len(sides)]
        if query.fusion == "rrf":
            ranker, scale = pm.RRFRanker(query.rrf_k), weights[0] if len(set(weights)) == 1 else 1.0
        else:
            ranker, scale = pm.WeightedRanker(*weights, norm_score=True), 1.0
        with self._errors():
            got = self._client.hybrid_search(
                self._collection, sides, ranker, limit=min(2 * n, _TOP), output_fields=CHUNK_FIELDS, **_STRONG
            )
        hits = hits_of(got[0], "hybrid", n)
        return [(ScoredChunk(h.chunk, h.score * scale), v) for h, v in hits]


def _radius(min_score: float) -> Mapping[str, Any]:
    """A cosine range search keeping hits of at least ``min_score`` (none at -1)."""
    return {"params": {"radius": min_score, "range_filter": 1.0}} if min_score > -1.0 else {}
