"""IngestDocuments: chunk → embed → write, each document replaced as a whole."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeGuard

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.chunker import chunk_id
from pywrapai_graph.application.observability.operations import observe_store
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.domain.ingest_report import DocumentOutcome, IngestReport, IngestStatus
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ProviderError
from pywrapai_graph.ports import BaseVectorStore, EmbeddingModel, TextSplitter
from pywrapai_graph.ports.embedder import MatrixEmbeddingModel

Matrix = npt.NDArray[np.float32]

__all__ = [
    "IngestDocuments",
    "OutcomeCallback",
    "ProgressCallback",
    "content_hash",
    "embedder_name",
]

_log = logging.getLogger(__name__)

#: ``json.dumps(..., sort_keys=True, ensure_ascii=False, default=repr)``, built once
_METADATA_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr).encode
#: Manifests are looked up for this many documents (or this much text) at once.
_LOOKUP_DOCS = 256
_LOOKUP_CHARS = 8_000_000

#: Called after each stored document with (chunks done, chunks known so far).
ProgressCallback = Callable[[int, int], None]
#: Called with each document's outcome as soon as it is stored.
OutcomeCallback = Callable[[DocumentOutcome], None]


def embedder_name(embedder: EmbeddingModel) -> tuple[str, str]:
    """(provider, model) of an embedder, from its ``provider``/``model`` attributes."""
    provider = getattr(embedder, "provider", None)
    model = getattr(embedder, "model", None)
    return (
        provider if isinstance(provider, str) and provider else type(embedder).__name__,
        model if isinstance(model, str) else "",
    )


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


def _digests(hasher: _Hasher, docs: list[Document]) -> list[str]:
    return [hasher(doc) for doc in docs]


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


def _takes_vectors(store: BaseVectorStore) -> bool:
    """The store has its own ``replace_document_vectors`` (a bulk path for float32 arrays)."""
    return type(store).replace_document_vectors is not BaseVectorStore.replace_document_vectors


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
    so the embedder sees few, full requests.

    Args:
        embedder: turns texts into vectors.
        store: any :class:`BaseVectorStore`.
        chunker: splits documents; None makes each non-blank document one chunk.
        batch_size: texts per embedding call.

    Raises:
        ValueError: batch_size < 1.
    """

    def __init__(
        self,
        embedder: EmbeddingModel,
        store: BaseVectorStore,
        chunker: TextSplitter | None = None,
        *,
        batch_size: int = 256,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
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
        outcomes: list[DocumentOutcome] = []
        done = known = 0

        def emit(outcome: DocumentOutcome) -> None:
            outcomes.append(outcome)
            if on_document is not None:
                on_document(outcome)

        with self.store.bulk_load():  # pgvector: COPY; HNSW built after loading an empty table
            for group in self._groups(self._to_write(docs, skip_unchanged, emit)):
                known += sum(len(chunks) for _, _, chunks in group)
                vectors = self._embed([c for _, _, chunks in group for c in chunks])
                row = 0
                for doc, digest, chunks in group:
                    rows = None if vectors is None else vectors[row : row + len(chunks)]
                    row += len(chunks)
                    emit(self._write(doc, digest, chunks, rows))
                    done += len(chunks)
                    if progress is not None:
                        progress(done, known)
        _log.debug("ingested %d documents (%d chunks)", len(outcomes), done)
        return IngestReport(tuple(outcomes))

    # ------------------------------------------------------------------ steps
    def _to_write(
        self, docs: Iterable[Document], skip_unchanged: bool, emit: OutcomeCallback
    ) -> Iterator[tuple[Document, str]]:
        """The documents to write, with their digest; unchanged ones go to ``emit``.

        Documents come in windows whose manifests are looked up at once (one query on the
        stores that implement ``document_manifests``), never by a search.
        """
        hasher = _Hasher(self.chunker)
        for window in _windows(docs):
            yield from self._changed(window, _digests(hasher, window), skip_unchanged, emit)

    def _changed(
        self,
        window: list[Document],
        digests: list[str],
        skip_unchanged: bool,
        emit: OutcomeCallback,
    ) -> Iterator[tuple[Document, str]]:
        if not skip_unchanged:
            yield from zip(window, digests, strict=True)
            return
        manifests = self.store.document_manifests([doc.id for doc in window])
        name = embedder_name(self.embedder)
        for doc, digest in zip(window, digests, strict=True):
            manifest = manifests.get(doc.id)
            if (
                manifest is not None
                and manifest.content_hash == digest
                and (manifest.embedder.provider, manifest.embedder.model) == name
            ):
                emit(DocumentOutcome(doc.id, IngestStatus.UNCHANGED, 0))
            else:
                yield doc, digest

    def _groups(
        self, docs: Iterator[tuple[Document, str]]
    ) -> Iterator[list[tuple[Document, str, list[Chunk]]]]:
        """Documents to write, with their digest and chunks, grouped to fill a batch."""
        group: list[tuple[Document, str, list[Chunk]]] = []
        size = 0
        for doc, digest in docs:
            chunks = self._chunks(doc)
            group.append((doc, digest, chunks))
            size += len(chunks)
            if size >= self.batch_size:
                yield group
                group, size = [], 0
        if group:
            yield group

    def _chunks(self, doc: Document) -> list[Chunk]:
        if self.chunker is not None:
            return list(self.chunker.split(doc))
        if not doc.text.strip():
            return []
        return [Chunk(doc.text, doc_id=doc.id, metadata=dict(doc.metadata), id=chunk_id(doc.id, 0))]

    def _embed(self, chunks: Sequence[Chunk]) -> Matrix | None:
        """Embed ``chunks``: as one float32 matrix for a store with a bulk path, else into
        each ``chunk.embedding`` (then None is returned)."""
        if not _takes_vectors(self.store):
            self._embed_lists(chunks)
            return None
        out: Matrix | None = None
        for start in range(0, len(chunks), self.batch_size):
            batch = chunks[start : start + self.batch_size]
            vectors = self._embed_batch([c.text for c in batch])
            if vectors is None:  # not a matrix: the store validates the lists, as always
                self._embed_lists(chunks)
                return None
            if out is None:
                out = np.empty((len(chunks), vectors.shape[1]), dtype=np.float32)
            elif vectors.shape[1] != out.shape[1]:
                raise ProviderError("the embedder returned vectors of different sizes")
            out[start : start + len(batch)] = vectors
        return out

    def _embed_batch(self, texts: list[str]) -> Matrix | None:
        """One batch's vectors as float32 rows; None when the embedder's lists are ragged."""
        if _matrix_is_current(self.embedder):
            vectors = np.asarray(self.embedder.embed_matrix(texts), dtype=np.float32)
        else:
            try:
                with np.errstate(over="ignore"):  # beyond float32: inf, refused by the store
                    vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            except (TypeError, ValueError):
                return None
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            if vectors.ndim == 2 or vectors.shape[:1] != (len(texts),):
                raise ProviderError(
                    f"the embedder returned {vectors.shape[0]} vectors for {len(texts)} texts"
                )
            return None
        return vectors

    def _embed_lists(self, chunks: Sequence[Chunk]) -> None:
        for start in range(0, len(chunks), self.batch_size):
            batch = chunks[start : start + self.batch_size]
            vectors = self.embedder.embed([c.text for c in batch])
            if len(vectors) != len(batch):
                raise ProviderError(
                    f"the embedder returned {len(vectors)} vectors for {len(batch)} texts"
                )
            for chunk, vector in zip(batch, vectors, strict=True):
                chunk.embedding = vector

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

    def _write(
        self, doc: Document, digest: str, chunks: list[Chunk], vectors: Matrix | None
    ) -> DocumentOutcome:
        manifest = DocumentManifest(
            doc.id, digest, len({c.id for c in chunks}), self._identity(chunks, vectors)
        )
        with observe_store(self.store.db_system, "replace_document", chunks=len(chunks)):
            if vectors is None:
                before = self.store.replace_document(manifest, chunks)
            else:
                before = self.store.replace_document_vectors(manifest, chunks, vectors.data)
        status = IngestStatus.REPLACED if before else IngestStatus.ADDED
        return DocumentOutcome(doc.id, status, len(chunks))
