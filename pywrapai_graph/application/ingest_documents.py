"""IngestDocuments: chunk → embed → write, each document replaced as a whole."""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import TypeGuard, TypeVar

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.chunker import chunk_id
from pywrapai_graph.application.ingest_options import (
    DEFAULT_EMBED_CONCURRENCY,
    OutcomeCallback,
    ProgressCallback,
    check_embed_concurrency,
    embedder_name,
)
from pywrapai_graph.application.observability.operations import observe_store
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.domain.ingest_report import DocumentOutcome, IngestReport, IngestStatus
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ProviderError
from pywrapai_graph.ports import BaseVectorStore, EmbeddingModel, TextSplitter
from pywrapai_graph.ports.embedder import (
    MatrixEmbeddingModel,
    concurrent_requests,
    pure_python,
)
from pywrapai_graph.ports.text_splitter import StreamingTextSplitter

Matrix = npt.NDArray[np.float32]

__all__ = [
    "DEFAULT_EMBED_CONCURRENCY",
    "IngestDocuments",
    "OutcomeCallback",
    "ProgressCallback",
    "check_embed_concurrency",
    "content_hash",
    "embedder_name",
]

_log = logging.getLogger(__name__)

#: ``json.dumps(..., sort_keys=True, ensure_ascii=False, default=repr)``, built once
_METADATA_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr).encode
#: Manifests are looked up for this many documents (or this much text) at once.
_LOOKUP_DOCS = 256
_LOOKUP_CHARS = 8_000_000

#: Records a document's outcome under its position in the input.
_Emit = Callable[[int, DocumentOutcome], None]

T = TypeVar("T")
R = TypeVar("R")


class _Hasher:
    """:func:`content_hash` for many documents of one chunker (its repr is hashed once)."""

    def __init__(self, chunker: TextSplitter | None) -> None:
        self._base = hashlib.sha256(repr(chunker).encode("utf-8", "surrogatepass") + b"\x00")

    def __call__(self, doc: Document) -> str:
        try:
            metadata = _METADATA_JSON(doc.metadata)
        except ValueError:  # NaN and the like: repr is stable enough for a digest
            metadata = repr(sorted(doc.metadata.items(), key=lambda kv: str(kv[0])))
        digest = self._base.copy()
        digest.update(metadata.encode("utf-8", "surrogatepass") + b"\x00")
        digest.update(doc.text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
        return digest.hexdigest()


def _windows(docs: Iterable[Document]) -> Iterator[list[Document]]:
    """``docs`` (checked to be documents) in lists of at most ``_LOOKUP_DOCS`` documents
    or about ``_LOOKUP_CHARS`` characters."""
    window: list[Document] = []
    chars = 0
    for doc in docs:
        if not isinstance(doc, Document):
            raise ArgumentTypeError(f"ingest takes Document objects, got {type(doc).__name__}")
        window.append(doc)
        chars += len(doc.text)
        if len(window) >= _LOOKUP_DOCS or chars >= _LOOKUP_CHARS:
            yield window
            window, chars = [], 0
    if window:
        yield window


def content_hash(doc: Document, chunker: TextSplitter | None) -> str:
    """A digest of what decides a document's chunks: its text, metadata and the chunker."""
    return _Hasher(chunker)(doc)


@dataclass(slots=True)
class _Pending:
    """A document to write: its position in the input, digest and (once split) chunks."""

    index: int
    doc: Document
    digest: str
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(slots=True)
class _Batch:
    """Chunks for one embedding call, and the documents whose last chunk is among them."""

    chunks: list[Chunk]
    finished: list[_Pending]


class _Rows:
    """The vectors of embedded batches not yet written, taken one document at a time."""

    def __init__(self) -> None:
        self._queued: deque[tuple[Matrix | None, int]] = deque()

    def add(self, vectors: Matrix | None, count: int) -> None:
        if count:
            self._queued.append((vectors, count))

    def take(self, count: int) -> list[tuple[Matrix | None, int]]:
        """The next ``count`` rows as (vectors or None, rows) pieces, in order."""
        pieces: list[tuple[Matrix | None, int]] = []
        while count:
            vectors, rows = self._queued[0]
            n = min(count, rows)
            pieces.append((None if vectors is None else vectors[:n], n))
            if n == rows:
                self._queued.popleft()
            else:
                self._queued[0] = (None if vectors is None else vectors[n:], rows - n)
            count -= n
        return pieces


def _set_lists(chunks: Sequence[Chunk], vectors: Sequence[list[float]]) -> None:
    if len(vectors) != len(chunks):
        raise ProviderError(f"the embedder returned {len(vectors)} vectors for {len(chunks)} texts")
    for chunk, vector in zip(chunks, vectors, strict=True):
        chunk.embedding = vector


def _assemble(chunks: list[Chunk], pieces: list[tuple[Matrix | None, int]]) -> Matrix | None:
    """A document's vectors as one matrix; None (each ``chunk.embedding`` set) when some
    batch came back as lists, or for a document without chunks."""
    matrices = [m for m, _ in pieces if m is not None]
    if len(matrices) == len(pieces) and matrices:
        if len({m.shape[1] for m in matrices}) != 1:
            raise ProviderError("the embedder returned vectors of different sizes")
        return matrices[0] if len(matrices) == 1 else np.concatenate(matrices)
    row = 0
    for vectors, count in pieces:
        if vectors is not None:
            for chunk, vector in zip(chunks[row : row + count], vectors.tolist(), strict=True):
                chunk.embedding = vector
        row += count
    return None


def _ahead(
    fn: Callable[[T], R], items: Iterator[T], workers: int
) -> Generator[tuple[T, R], None, None]:
    """``(item, fn(item))`` in order, ``fn`` running in ``workers`` threads while the caller
    consumes earlier results and ``items`` produces later ones (at most ``workers + 1``
    submitted and not yet consumed). ``workers=0``: in turn, on the caller's thread.

    Closing the generator cancels what has not started and waits for what has.
    """
    if workers < 1:
        for item in items:
            yield item, fn(item)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="pywrapai-ingest") as pool:
        pending: deque[tuple[T, Future[R]]] = deque()
        try:
            for item in items:
                # each call sees the caller's context (the current span, for one)
                pending.append((item, pool.submit(contextvars.copy_context().run, fn, item)))
                if len(pending) > workers:
                    first, future = pending.popleft()
                    yield first, future.result()
            while pending:
                first, future = pending.popleft()
                yield first, future.result()
        finally:
            for _, future in pending:
                future.cancel()


def _takes_vectors(store: BaseVectorStore) -> bool:
    """The store has its own ``replace_document_vectors`` (a bulk path for float32 arrays)."""
    return type(store)._replace_document_vectors is not BaseVectorStore._replace_document_vectors


def _matrix_is_current(embedder: EmbeddingModel) -> TypeGuard[MatrixEmbeddingModel]:
    """``embed_matrix`` exists and is no older than ``embed``: a subclass that overrides
    ``embed`` alone (to count or change calls) is served through its ``embed``."""
    if not isinstance(embedder, MatrixEmbeddingModel):
        return False
    mro = type(embedder).__mro__
    owner = {
        name: next(i for i, c in enumerate(mro) if name in vars(c))
        for name in ("embed", "embed_matrix")
    }
    return owner["embed_matrix"] <= owner["embed"]


class IngestDocuments:
    """Chunks, embeds and stores documents so each one is replaced as a whole.

    After a call returns, the store holds exactly the new chunks of every document it was
    given, none of an older version. On stores with ``atomic_documents`` each document is
    written all-or-nothing with its :class:`DocumentManifest`; a crash leaves every document
    complete in its old or its new version, and the next ingest repairs the rest.

    Chunks are embedded in batches of ``batch_size`` that may span several small documents,
    so the embedder sees few, full requests. The work overlaps: while the caller's thread
    reads, chunks and writes, worker threads embed the following batches — up to
    ``embed_concurrency`` requests at once for an embedder that sends them to a server
    (:func:`~pywrapai_graph.ports.embedder.concurrent_requests`), one batch ahead for a
    local one. Writes stay on the caller's thread, in input order, one document at a time;
    a failed request raises once the documents before its batch are written, and cancels
    what has not started. The report lists documents in input order.

    Args:
        embedder: turns texts into vectors.
        store: any :class:`BaseVectorStore`.
        chunker: splits documents; None makes each non-blank document one chunk.
        batch_size: texts per embedding call.
        embed_concurrency: embedding requests at once for a server-side embedder (default
            4); 0 embeds and writes in turn on the caller's thread.

    Raises:
        ValueError: batch_size < 1 or embed_concurrency < 0.
        TypeError: embed_concurrency is not an int.
    """

    def __init__(
        self,
        embedder: EmbeddingModel,
        store: BaseVectorStore,
        chunker: TextSplitter | None = None,
        *,
        batch_size: int = 256,
        embed_concurrency: int = DEFAULT_EMBED_CONCURRENCY,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        self.embed_concurrency = check_embed_concurrency(embed_concurrency)
        self.embedder = embedder
        self.store = store
        self.chunker = chunker
        self.batch_size = batch_size

    def __call__(
        self,
        docs: Iterable[Document],
        *,
        skip_unchanged: bool = True,
        progress: ProgressCallback | None = None,
        on_document: OutcomeCallback | None = None,
    ) -> IngestReport:
        """Ingest ``docs``; with ``skip_unchanged`` a completely stored identical one is skipped.

        Raises:
            ArgumentTypeError: an item is not a :class:`Document`.
            EmbedderMismatchError: the store was filled by another embedder.
            ProviderError: the embedder failed or returned the wrong number of vectors.
            VectorStoreError: the store failed (documents stored before stay stored).
        """
        outcomes: list[tuple[int, DocumentOutcome]] = []
        done = known = 0

        def emit(index: int, outcome: DocumentOutcome) -> None:
            outcomes.append((index, outcome))
            if on_document is not None:
                on_document(outcome)

        rows = _Rows()
        batches = self._batches(self._to_write(docs, skip_unchanged, emit))
        # pgvector: COPY, HNSW built after loading an empty table
        with (
            self.store.bulk_load(),
            closing(_ahead(self._embed_batch, batches, self._workers())) as embedded,
        ):
            for batch, vectors in embedded:
                known += len(batch.chunks)
                rows.add(vectors, len(batch.chunks))
                for item in batch.finished:
                    emit(item.index, self._write(item, rows.take(len(item.chunks))))
                    done += len(item.chunks)
                    if progress is not None:
                        progress(done, known)
        _log.debug("ingested %d documents (%d chunks)", len(outcomes), done)
        outcomes.sort(key=lambda pair: pair[0])
        return IngestReport(tuple(outcome for _, outcome in outcomes))

    def _workers(self) -> int:
        """Worker threads for embedding: ``embed_concurrency`` for an embedder that sends
        requests to a server; none for a pure-Python one (the hashing embedder holds the
        GIL: measured, a worker made ingest no faster); else one, a batch ahead."""
        if concurrent_requests(self.embedder):
            return self.embed_concurrency
        if pure_python(self.embedder):
            return 0
        return min(self.embed_concurrency, 1)

    # ------------------------------------------------------------------ steps
    def _to_write(
        self, docs: Iterable[Document], skip_unchanged: bool, emit: _Emit
    ) -> Iterator[_Pending]:
        """The documents to write, with their digest; unchanged ones go to ``emit``.

        Documents come in windows whose manifests are looked up at once (one query on the
        stores that implement ``document_manifests``), never by a search.
        """
        hasher = _Hasher(self.chunker)
        name = embedder_name(self.embedder)
        index = 0
        for window in _windows(docs):
            ids = [doc.id for doc in window]
            manifests = self.store.document_manifests(ids) if skip_unchanged else {}
            for doc in window:
                digest = hasher(doc)
                manifest = manifests.get(doc.id)
                if (
                    manifest is not None
                    and manifest.content_hash == digest
                    and (manifest.embedder.provider, manifest.embedder.model) == name
                ):
                    emit(index, DocumentOutcome(doc.id, IngestStatus.UNCHANGED, 0))
                else:
                    yield _Pending(index, doc, digest)
                index += 1

    def _batches(self, pending: Iterator[_Pending]) -> Iterator[_Batch]:
        """The chunks of ``pending`` documents in batches of ``batch_size`` (a batch may
        span documents); each batch names the documents whose last chunk it holds."""
        size = self.batch_size
        buffer: list[Chunk] = []
        start = 0  # buffer[:start] went out in earlier batches
        sent = total = 0  # chunks sent in batches, chunks seen
        waiting: deque[tuple[int, _Pending]] = deque()  # (end offset, document)

        def cut(n: int) -> _Batch:
            nonlocal start, sent
            chunks = buffer[start : start + n]
            start += n
            sent += n
            finished = []
            while waiting and waiting[0][0] <= sent:
                finished.append(waiting.popleft()[1])
            return _Batch(chunks, finished)

        for item in pending:
            for chunk in self._chunks(item.doc):  # streamed: a long document's first
                item.chunks.append(chunk)  # batches are embedded while the rest is split
                buffer.append(chunk)
                if len(buffer) - start >= size:
                    yield cut(size)
                    if start > size:  # drop what went out
                        del buffer[:start]
                        start = 0
            total += len(item.chunks)
            waiting.append((total, item))
        if waiting:
            yield cut(len(buffer) - start)

    def _chunks(self, doc: Document) -> Iterable[Chunk]:
        if isinstance(self.chunker, StreamingTextSplitter):
            return self.chunker.iter_split(doc)
        if self.chunker is not None:
            return self.chunker.split(doc)
        if not doc.text.strip():
            return []
        return [Chunk(doc.text, doc_id=doc.id, metadata=dict(doc.metadata), id=chunk_id(doc.id, 0))]

    def _embed_batch(self, batch: _Batch) -> Matrix | None:
        """One batch's vectors as float32 rows; or (for a store without a bulk path, or
        vectors that are not one matrix) None, each ``chunk.embedding`` then set."""
        chunks = batch.chunks
        if not chunks:
            return None
        texts = [c.text for c in chunks]
        if not _takes_vectors(self.store):
            _set_lists(chunks, self.embedder.embed(texts))
            return None
        lists: list[list[float]] | None = None
        if _matrix_is_current(self.embedder):
            vectors = np.asarray(self.embedder.embed_matrix(texts), dtype=np.float32)
        else:
            lists = self.embedder.embed(texts)
            try:
                with np.errstate(over="ignore"):  # beyond float32: inf, refused by the store
                    vectors = np.asarray(lists, dtype=np.float32)
            except (TypeError, ValueError):  # ragged: the store validates the lists, as always
                _set_lists(chunks, lists)
                return None
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            if vectors.ndim == 2 or vectors.shape[:1] != (len(texts),):
                raise ProviderError(
                    f"the embedder returned {vectors.shape[0]} vectors for {len(texts)} texts"
                )
            _set_lists(chunks, self.embedder.embed(texts) if lists is None else lists)
            return None
        return vectors

    def _identity(self, chunks: Sequence[Chunk], vectors: Matrix | None) -> EmbedderIdentity:
        provider, model = embedder_name(self.embedder)
        if vectors is not None and len(vectors):
            dimension = int(vectors.shape[1])
        elif chunks and chunks[0].embedding is not None:
            dimension = len(chunks[0].embedding)
        else:  # an empty document: keep the store's record, or leave the dimension open
            recorded = self.store.embedder_identity()
            same = recorded is not None and (recorded.provider, recorded.model) == (provider, model)
            dimension = recorded.dimension if recorded is not None and same else 0
        return EmbedderIdentity(provider, model, dimension)

    def _write(self, item: _Pending, pieces: list[tuple[Matrix | None, int]]) -> DocumentOutcome:
        chunks = item.chunks
        vectors = _assemble(chunks, pieces)
        manifest = DocumentManifest(
            item.doc.id, item.digest, len({c.id for c in chunks}), self._identity(chunks, vectors)
        )
        with observe_store(self.store.db_system, "replace_document", chunks=len(chunks)):
            if vectors is None:
                before = self.store.replace_document(manifest, chunks)
            else:
                before = self.store.replace_document_vectors(manifest, chunks, vectors.data)
        status = IngestStatus.REPLACED if before else IngestStatus.ADDED
        return DocumentOutcome(item.doc.id, status, len(chunks))
