"""The base of :class:`QdrantVectorStore`: its client's errors translated, and the records
collection ``<collection>.docs`` (document versions and manifests, the embedder, the BM25
length totals) as points with a one-value vector."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._unreachable import cannot_reach
from pywrapai_graph.adapters.vectorstores.kit.versioned import DocRecord
from pywrapai_graph.adapters.vectorstores.qdrant.points import point_id
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import PyWrapAIError, VectorStoreError
from pywrapai_graph.redaction import scrubbed

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient, QdrantClient

__all__ = ["QdrantRecords"]

_EMBEDDER = "e:embedder"


def _record(payload: Any) -> DocRecord:
    return DocRecord(*(str(payload[k]) for k in ("doc_id", "version", "manifest", "pending")))


class QdrantRecords:
    """The records, the client and its errors; the store sets the attributes below."""

    _client: QdrantClient
    _aclients: PerLoop[AsyncQdrantClient] | None
    _models: Any
    _collection: str
    #: the records collection was seen to exist (a record lookup is then one request)
    _docs_seen = False
    _cluster: dict[str, Any]
    _consistency: dict[str, Any]
    #: the client's failure types (the first: an HTTP reply); the address None for a folder
    _failures: tuple[type[Exception], ...]
    _address: str | None
    _where: str
    _secrets: list[str | None]

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The client's failures as ours (Edge raises ours already)."""
        try:
            yield
        except PyWrapAIError:
            raise
        except ValueError as exc:  # JSONDecodeError, pydantic: a reply the client cannot read
            raise VectorStoreError(
                f"Qdrant at {self._where!r} sent a reply the client cannot read "
                f"({type(exc).__name__}); is that address a Qdrant server?"
            ) from scrubbed(exc, self._secrets)
        except self._failures as exc:
            status = getattr(exc, "status_code", None)
            if self._address is not None and (
                not isinstance(exc, self._failures[0]) or status in (401, 403)
            ):
                message = cannot_reach("Qdrant", self._address, exc)
            else:
                message = f"Qdrant at {self._where!r} failed: {type(exc).__name__}"
                message += f" (HTTP {status})" if status else ""
            raise VectorStoreError(message) from scrubbed(exc, self._secrets)

    def _create_collection(self, name: str, **config: Any) -> bool:
        """Create ``name``; False when another process created it first."""
        try:
            self._client.create_collection(name, **config)
        except Exception as exc:
            if "already exists" not in f"{exc} {getattr(exc, 'content', b'')!r}":
                raise
            return False
        return True

    def _aclient(self) -> AsyncQdrantClient:
        """This loop's client (callers check :attr:`_native_async`: a server store)."""
        return cast("PerLoop[AsyncQdrantClient]", self._aclients).get()

    @property
    def _docs(self) -> str:
        return f"{self._collection}.docs"

    def _docs_exist(self) -> bool:
        self._docs_seen = bool(self._client.collection_exists(self._docs))
        return self._docs_seen

    def _match(self, key: str, value: Any) -> Any:
        """The condition that ``key`` is ``value``, or one of ``value`` (a list)."""
        m = self._models
        match = m.MatchAny(any=value) if isinstance(value, list) else m.MatchValue(value=value)
        return m.FieldCondition(key=key, match=match)

    def _scroll(self, collection: str, selector: Any, vectors: bool = False) -> list[Any]:
        """Every point of ``collection`` matching ``selector``, with payloads (and vectors)."""
        points: list[Any] = []
        offset = None
        while True:
            page, offset = self._client.scroll(
                collection,
                scroll_filter=selector,
                limit=1000,
                offset=offset,
                with_payload=True,
                with_vectors=vectors,
                **self._consistency,
            )
            points += page
            if offset is None:
                return points

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        points = self._record_points(["d:" + d for d in doc_ids])
        return {r.doc_id: r for r in (_record(p.payload) for p in points)}

    def _record_points(self, keys: Sequence[str]) -> list[Any]:
        """One ``retrieve`` while the records collection is taken to exist; if it fails (another
        process's ``clear`` drops it), existence is asked and the retrieve repeated."""
        ids = [point_id(key) for key in keys]
        with self._errors():
            if self._docs_seen:
                with suppress(Exception):
                    return list(self._client.retrieve(self._docs, ids, **self._consistency))
            if not self._docs_exist():
                return []
            return list(self._client.retrieve(self._docs, ids, **self._consistency))

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
            if not self._docs_exist():
                self._create_collection(
                    self._docs,
                    vectors_config=m.VectorParams(size=1, distance=m.Distance.COSINE),
                    **{k: v for k, v in self._cluster.items() if k != "shard_number"},
                )
            point = m.PointStruct(id=point_id(key), vector=[1.0], payload=payload)
            self._client.upsert(self._docs, [point], wait=True)

    def _put_record(self, record: DocRecord) -> None:
        self._put_point("d:" + record.doc_id, {"kind": "doc", **asdict(record)})

    def _put_record_if(self, record: DocRecord, expected: DocRecord) -> bool:
        """One ``set_payload`` on the record point only while its versions are ``expected``'s
        (serialised with the collection's other writes), read back to learn if it applied."""
        m = self._models
        condition = m.Filter(
            must=[
                m.HasIdCondition(has_id=[point_id("d:" + expected.doc_id)]),
                self._match("pending", expected.pending),
                self._match("version", expected.version),
            ]
        )
        payload = {"kind": "doc", **asdict(record)}
        with self._errors():
            self._client.set_payload(self._docs, payload, points=condition, wait=True)
        return self._records([record.doc_id]).get(record.doc_id) == record

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        m = self._models
        with self._errors():
            if self._docs_exist():
                ids = [point_id("d:" + d) for d in doc_ids]
                self._client.delete(self._docs, m.PointIdsList(points=ids), wait=True)

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        got = self._record_points([_EMBEDDER])
        return EmbedderIdentity.from_json((got[0].payload or {})["embedder"]) if got else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._put_point(_EMBEDDER, {"kind": "embedder", "embedder": identity.to_json()})

    def _add_lengths(self, lengths: list[int], documents: bool = False) -> float:
        """``avgdl`` (of chunks, or documents) once ``lengths`` join the recorded totals."""
        key = "e:document-lengths" if documents else "e:lengths"
        got = self._record_points([key])
        payload = (got[0].payload or {}) if got else {}
        tokens = int(payload.get("tokens", 0)) + sum(lengths)
        chunks = int(payload.get("chunks", 0)) + len(lengths)
        if lengths:
            self._put_point(key, {"kind": "lengths", "tokens": tokens, "chunks": chunks})
        return tokens / chunks if tokens and chunks else 1.0
