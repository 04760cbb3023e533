"""MilvusVectorStore: a Milvus server by URL, or milvus-lite in a local ``.db`` folder.

Documents are all-or-nothing (``kit.versioned``, records in ``<collection>__records``, reads
``Strong``). A search is one ``search`` or ``hybrid_search`` (the filter in every sub-request:
pymilvus ignores its ``filter=``). Expressions splice SHA-256 digests only, never a caller's
string: a filter is ``array_contains(tags, <digest>)`` of each item's canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from pywrapai_graph import errors
from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import address, cannot_reach
from pywrapai_graph.adapters.vectorstores.kit import versioned
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch
from pywrapai_graph.adapters.vectorstores.kit.versioned import DocRecord, StoredChunk, engine_id
from pywrapai_graph.application.text_analysis import STOP_WORDS, analyze
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_inputs import canonical_json
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["MilvusVectorStore"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")
_BATCH = 500
_TOP = 16_384  # the most hits Milvus returns for one query
_STRONG = {"consistency_level": "Strong"}
_READ = {"output_fields": ["body", "version"], **_STRONG}
#: the BM25 parameters the index fixes: StoreQuery's defaults
_BM25 = {"bm25_k1": StoreQuery("dense", 1).k1, "bm25_b": StoreQuery("dense", 1).b}
_EMBEDDER = "e:embedder"
_LITE: Counter[str] = Counter()  # how many of this process's stores use each lite folder
_LITE_LOCK = threading.Lock()
#: the standard tokenizer and our stop words over our analysed text: BM25 over our terms
_STOP = {"type": "stop", "stop_words": sorted(STOP_WORDS)}
_ANALYZER = {"tokenizer": "standard", "filter": [_STOP]}
_MAX_TERMS = 65_535  # bytes of analysed text per chunk (a VARCHAR's limit)
_MAX_TAGS = 4_096  # metadata keys per chunk (an ARRAY's capacity)
_KEY = ("VARCHAR", {"max_length": 64})
_TERMS = {"max_length": _MAX_TERMS, "enable_analyzer": True, "analyzer_params": _ANALYZER}
#: the chunks' fields: name -> (Milvus type, settings); the store gives ``dense`` its dim
_CHUNK_SCHEMA: dict[str, tuple[str, dict[str, Any]]] = {
    "pk": ("VARCHAR", {"max_length": 64, "is_primary": True}),  # of the engine id
    "key": _KEY,  # of the chunk id
    "doc": _KEY,  # of the document id
    "version": _KEY,
    "hidden": ("BOOL", {}),  # a version not (or no longer) committed: see the store
    "body": ("JSON", {}),  # the chunk (id, document, text, metadata) and its embedder
    "terms": ("VARCHAR", _TERMS),  # the analysed text
    "tags": ("ARRAY", {"max_length": 64, "max_capacity": _MAX_TAGS}),  # of metadata items
    "sparse": ("SPARSE_FLOAT_VECTOR", {}),  # BM25's, the engine's function of ``terms``
}
#: records: a string key, a vector (Milvus wants one), dynamic ``pending`` and ``body``
_RECORDS = {"dimension": 2, "primary_field_name": "pk", "id_type": "string", "max_length": 64}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _in_parts(field: str, keys: Sequence[str]) -> Iterator[str]:
    """``field in [...]`` over each batch of the keys' hex digests (safe to splice: hex only)."""
    for start in range(0, len(keys), _BATCH):
        yield f"{field} in {json.dumps([_digest(k) for k in keys[start : start + _BATCH]])}"


def _tag(key: str, value: Any) -> str:
    return _digest(canonical_json([key, value]))


def _chunk_row(
    chunk: Chunk, vector: list[float], version: str, hidden: bool, embedder: str
) -> dict[str, Any]:
    terms = " ".join(analyze(chunk.text))  # what the engine's BM25 function reads
    if len(terms.encode("utf-8", "surrogatepass")) > _MAX_TERMS or len(chunk.metadata) > _MAX_TAGS:
        raise errors.InvalidArgumentError(
            f"chunk {chunk.id!r} is too large for Milvus: at most {_MAX_TERMS} bytes of "
            f"analysed text and {_MAX_TAGS} metadata keys; split it into smaller chunks"
        )
    body = {"id": chunk.id, "doc_id": chunk.doc_id, "text": chunk.text, "embedder": embedder}
    return {
        "pk": _digest(engine_id(chunk.id, version)),
        "key": _digest(chunk.id),
        "doc": _digest(chunk.doc_id),
        "version": version,
        "hidden": hidden,
        "body": {**body, "metadata": dict(chunk.metadata)},
        "terms": terms,
        "tags": [_tag(k, v) for k, v in chunk.metadata.items()],
        "dense": vector,
    }


def _hits_of(found: Sequence[Any], mode: str, n: int) -> list[versioned.Hit]:
    """The ``n`` best of a reply, ties by chunk id; BM25 positive (lite reports it negated);
    the hits' embedder is told to the caller's identity probe."""
    hits, stamp = [], ""
    for hit in found:
        score = float(hit["distance"])
        score = min(score, 1.0) if mode == "dense" else abs(score) if mode == "lexical" else score
        body = hit["entity"]["body"]
        chunk = Chunk(body["text"], doc_id=body["doc_id"], metadata=body["metadata"], id=body["id"])
        hits.append((ScoredChunk(chunk, score), str(hit["entity"]["version"])))
        stamp = stamp or body.get("embedder", "")
    if stamp:
        report_identity(EmbedderIdentity.from_json(stamp))
    return sorted(hits, key=lambda h: (-h[0].score, h[0].chunk.id))[:n]


def _lite(folder: str, opening: bool) -> str:
    """Serve ``folder`` by milvus-lite in this process (its URL), or let it go (last store)."""
    server = require("milvus_lite.server_manager", "milvus", "milvus-lite").server_manager_instance
    with _LITE_LOCK:
        _LITE[folder] += 1 if opening else -1
        if not opening and not _LITE[folder]:
            server.release_server(folder)
        uri = server.start_and_get_uri(folder) if opening else ""
        if uri is None:
            _LITE[folder] -= 1
            raise errors.StoreBusyError(
                f"milvus-lite could not open {folder!r}: another process holds it. For several "
                "processes run a Milvus server (or `milvus-lite server --data-dir ...`) and give "
                "the store its url."
            )
        return str(uri)


class MilvusVectorStore(versioned.VersionedDocuments):
    """Cosine, BM25 (Milvus's function over our analysed text; k1 1.2, b 0.75 fixed in the
    index) and hybrid search in a Milvus collection; async calls offload their sync twin.

    Args:
        collection: the collection name (letters, digits, ``_``; not starting with a digit).
        path: a milvus-lite folder ending in ``.db`` (made if missing), held by one process.
        url: a Milvus server (``http://host:19530``), instead of ``path``.
        token: the server's ``user:password`` or API key; never shown in reprs or errors.
        dimension: create the collection up front; otherwise the first add decides.

    Raises:
        MissingExtraError: ``pymilvus`` (or, for a path, ``milvus-lite``) is not installed.
        ConfigurationError: both or neither of a path and a url; a bad collection name.
        StoreBusyError: another process holds the milvus-lite folder.
    """

    db_system = "milvus"
    persistent = lexical = True

    def __init__(
        self,
        collection: str,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        token: str | None = None,
        dimension: int | None = None,
    ) -> None:
        self._pm: Any = require("pymilvus", "milvus", "pymilvus")
        folder = None if path is None else os.path.abspath(os.fspath(path))
        if (folder is None) == (url is None) or not (
            _NAME.fullmatch(collection) and (folder or ".db").endswith(".db")
        ):
            raise errors.ConfigurationError(
                "MilvusVectorStore takes a path ending in .db or a url, and a collection name of "
                f"letters, digits and _ (got {collection!r}, {folder!r})"
            )
        self._collection, self._records_of = collection, f"{collection}__records"
        self._lock = threading.RLock()
        self._secrets, self._folder, self._lite = [token, url], folder, folder is not None
        self._where = folder or redact(url or "")
        self._address = address(url, default_port=19530) if url else None
        if folder is not None:  # milvus-lite makes the folder and its parents
            url = _lite(folder, opening=True)
        try:
            with self._writing():
                self._client: Any = self._pm.MilvusClient(uri=url, token=token or "")
                self._dim = self._engine_dimension()
                if self._lite and self._pending_records():  # a writer died: this one holds it
                    self._recover()
                if dimension is not None:
                    self._create(dimension)
        except BaseException:
            self._release()
            raise

    # ------------------------------------------------------------------ collections
    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._pm.MilvusException as exc:
            code = getattr(exc, "code", None)
            if self._address is not None and code in (1, 2, 401, 403):
                message = cannot_reach("Milvus", self._address, exc)
            else:
                message = f"Milvus at {self._where!r} failed: {type(exc).__name__} (code {code})"
            raise errors.VectorStoreError(message) from scrubbed(exc, self._secrets)

    def _engine_dimension(self) -> int | None:
        if not self._client.has_collection(self._collection):
            return None
        for name in (self._records_of, self._collection):  # a reopened folder loads none
            self._client.load_collection(name)  # records: made first, dropped last
        fields = self._client.describe_collection(self._collection)["fields"]
        return int(next(f["params"]["dim"] for f in fields if f["name"] == "dense"))

    def _ensure_records(self) -> None:
        if not self._client.has_collection(self._records_of):
            self._client.create_collection(self._records_of, **_RECORDS, **_STRONG)

    def _create(self, dim: int) -> None:
        """Make the collections for ``dim`` unless they exist (maybe made elsewhere); check it."""
        if self._dim is None:
            self._ensure_records()  # made first (and dropped last): see _engine_dimension
            pm, fields = self._pm, {**_CHUNK_SCHEMA, "dense": ("FLOAT_VECTOR", {"dim": dim})}
            schema, index = self._client.create_schema(), self._client.prepare_index_params()
            for field, (kind, settings) in fields.items():
                element = {"element_type": pm.DataType.VARCHAR} if kind == "ARRAY" else {}
                schema.add_field(field, getattr(pm.DataType, kind), **settings, **element)
            schema.add_function(pm.Function("bm25", pm.FunctionType.BM25, "terms", "sparse"))
            dense = "FLAT" if self._lite else "AUTOINDEX"
            index.add_index("dense", index_type=dense, metric_type="COSINE")
            # flat for a server, and in "params" as pymilvus 2 sent them (all milvus-lite reads)
            bm25 = {**_BM25, "params": _BM25}
            index.add_index(
                "sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=bm25
            )
            made = {"schema": schema, "index_params": index, **_STRONG}
            self._client.create_collection(self._collection, **made)
            self._dim = self._engine_dimension()
        if self._dim != dim:
            raise errors.InvalidArgumentError(
                f"collection {self._collection!r} has dimension {self._dim}, not {dim}"
            )

    def _rows(self, collection: str, expr: str, fields: list[str]) -> list[dict[str, Any]]:
        """Every row ``expr`` selects (no limit)."""
        with self._errors():
            found = self._client.has_collection(collection)
            ask = {"filter": expr, "output_fields": fields, **_STRONG}
            return list(self._client.query(collection, **ask)) if found else []

    # ------------------------------------------------------------------ port
    @property
    def exact(self) -> bool:
        return self._lite  # milvus-lite: FLAT; a server: its AUTOINDEX

    def _count(self, filter: MetadataFilter | None = None) -> int:
        found = self._rows(self._collection, self._selector(filter), ["count(*)"])
        return int(found[0]["count(*)"]) if found else 0

    def __len__(self) -> int:
        return self._count()

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing():
            dim = self._known_dim()
            for name in (self._collection, self._records_of):  # chunks first: see _create
                self._client.drop_collection(name)  # (a missing one: a no-op)
            self._dim = None
            if dim is not None:
                self._create(dim)

    def close(self) -> None:
        """Close the client; a milvus-lite folder is let go when its last store closes."""
        with self._lock:
            self._client.close()
            self._release()

    def _release(self) -> None:
        if self._folder is not None:
            _lite(self._folder, opening=False)
            self._folder = None

    def __repr__(self) -> str:
        return f"MilvusVectorStore(collection={self._collection!r}, location={self._where!r})"

    # ------------------------------------------------------------------ records
    def _record_bodies(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        parts = _in_parts("pk", keys)
        return [r["body"] for e in parts for r in self._rows(self._records_of, e, ["body"])]

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        found = self._record_bodies(["d:" + d for d in doc_ids])
        return {b["doc_id"]: DocRecord(**b) for b in found}

    def _pending_records(self) -> list[DocRecord]:
        found = self._rows(self._records_of, 'pending != ""', ["body"])
        return [DocRecord(**r["body"]) for r in found]

    def _put_row(self, key: str, body: dict[str, Any], pending: str = "") -> None:
        self._ensure_records()  # writes run under _writing: its errors are the store's
        row = {"pk": _digest(key), "pending": pending, "body": body, "vector": [1.0, 0.0]}
        self._client.upsert(self._records_of, [row])

    def _put_record(self, record: DocRecord) -> None:
        self._put_row("d:" + record.doc_id, asdict(record), record.pending)

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        self._delete_engine_ids(["d:" + d for d in doc_ids], self._records_of)

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        found = self._record_bodies([_EMBEDDER])
        return EmbedderIdentity.from_json(found[0]["embedder"]) if found else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._put_row(_EMBEDDER, {"embedder": identity.to_json()})

    # ------------------------------------------------------------------ chunks
    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        return self._copies([doc_id], field="doc")

    def _copies(self, ids: Sequence[str], field: str = "key") -> list[StoredChunk]:
        """Every stored copy of these chunk ids (or every chunk of these documents)."""
        parts = _in_parts(field, ids)
        found = [r for e in parts for r in self._rows(self._collection, e, ["body", "version"])]
        bodies = [(row["body"], str(row["version"])) for row in found]
        return [StoredChunk(engine_id(b["id"], v), b["id"], v, b["doc_id"]) for b, v in bodies]

    def _show(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """One partial ``upsert`` (recovered whole or not at all)."""
        shown = record.version
        if record.pending == shown and stored:
            flags = [{"pk": _digest(c.engine_id), "hidden": c.version != shown} for c in stored]
            self._client.upsert(self._collection, flags, partial_update=True)

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        embedder = self._replacing[0] if self._replacing else self._recorded_embedder()
        stamp, hide = embedder.to_json() if embedder else "", self._replacing is not None
        made = zip(batch.chunks, batch.vectors.tolist(), versions, strict=True)
        found = [_chunk_row(c, v, version, hide, stamp) for c, v, version in made]
        if found and self._known_dim() is None:
            self._create(int(batch.vectors.shape[1]))
        for start in range(0, len(found), _BATCH):
            self._client.upsert(self._collection, found[start : start + _BATCH])

    def _delete_engine_ids(self, ids: Sequence[str], collection: str = "") -> None:
        for expr in _in_parts("pk", ids):
            self._client.delete(collection or self._collection, filter=expr)

    # ------------------------------------------------------------------ search
    def _selector(self, filter: MetadataFilter | None) -> str:
        tags = [f'array_contains(tags, "{_tag(k, v)}")' for k, v in (filter or {}).items()]
        return " and ".join(["hidden == false", *tags])

    def _query_many(
        self, queries: Sequence[Any], n: int, expr: str, mode: str = "dense", low: float = -1.0
    ) -> list[list[versioned.Hit]]:
        """One ``search`` of the queries (vectors, or texts for BM25): the ``n`` best of 2n."""
        field, params = _params(mode, low)
        side = {"anns_field": field, "search_params": params, "limit": min(2 * n, _TOP)}
        data = [list(map(float, q)) if mode == "dense" else q for q in queries]
        with self._errors():
            got = self._client.search(self._collection, data, filter=expr, **side, **_READ)
        return [_hits_of(found, mode, n) for found in got]

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """One engine request (``rescored`` is ``RRFRanker``: better on Cranfield)."""
        if query.mode != "dense" and (query.k1, query.b) != tuple(_BM25.values()):
            got = f"k1={query.k1}, b={query.b}"
            raise errors.InvalidArgumentError(f"Milvus fixes BM25 at {_BM25} in its index: {got}")
        pm, k, expr, low = self._pm, query.k, self._selector(query.filter), query.min_score
        terms, vector = " ".join(analyze(query.text or "")), [list(query.vector or [])]
        sides: list[tuple[list[Any], str]] = [(vector, "dense")] * (query.mode != "lexical")
        sides += [([terms], "lexical")] * (query.mode != "dense" and bool(terms))
        with self._lock, self._errors():
            if self._known_dim() is None or not sides:
                return []
            if query.mode != "hybrid":
                data, mode = sides[0]
                return [h for h, _ in self._query_many(data, k, expr, mode, low)[0]]
            depth = min(max(query.depth, k), _TOP)
            asked = [pm.AnnSearchRequest(d, *_params(m, low), depth, expr=expr) for d, m in sides]
            weights = query.weights[: len(asked)]
            if query.fusion == "weighted":
                ranker, scale = pm.WeightedRanker(*weights, norm_score=True), 1.0
            else:  # rrf (equal weights scale every score; RRFRanker has no others), and rescored
                same = query.fusion == "rrf" and len(set(weights)) == 1
                ranker, scale = pm.RRFRanker(query.rrf_k), weights[0] if same else 1.0
            top = {"limit": min(2 * k, _TOP)}
            got = self._client.hybrid_search(self._collection, asked, ranker, **top, **_READ)
        return [ScoredChunk(h.chunk, h.score * scale) for h, _ in _hits_of(got[0], "hybrid", k)]


def _params(mode: str, min_score: float) -> tuple[str, dict[str, Any]]:
    """The field one side searches, and its search parameters."""
    if mode == "lexical":
        return "sparse", {"metric_type": "BM25"}
    params: dict[str, Any] = {"metric_type": "COSINE"}
    if min_score > -1.0:  # a range search: cosines of at least min_score
        params["params"] = {"radius": min_score, "range_filter": 1.0}
    return "dense", params
