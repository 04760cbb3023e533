"""VectorRetriever: embeds documents into a vector store and retrieves by query."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, get_args

from pywrapai_graph.application.fusion import DEFAULT_RRF_K, fuse, fusion_problem, fusion_weights
from pywrapai_graph.application.ingest_options import (
    DEFAULT_EMBED_CONCURRENCY,
    OutcomeCallback,
    ProgressCallback,
    check_embed_concurrency,
    embedder_name,
)
from pywrapai_graph.application.observability.operations import observe_retrieval, observe_store
from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.scoped_retriever import ScopedRetriever
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.domain.ingest_report import IngestReport
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import (
    ArgumentTypeError,
    ConfigurationError,
    InvalidArgumentError,
)
from pywrapai_graph.ports import (
    BaseRetriever,
    BaseVectorStore,
    EmbeddingModel,
    MetadataFilter,
    TextSplitter,
)
from pywrapai_graph.ports.call_clock import call_clock
from pywrapai_graph.ports.embedder import aembed_one
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.identity_probe import identity_probe
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.reranker import Reranker
from pywrapai_graph.ports.store_inputs import lexical_refusal
from pywrapai_graph.ports.store_query import Fusion, RetrievalMode, StoreQuery
from pywrapai_graph.ports.sync_async import Core, adrive, drive
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["Fusion", "ProgressCallback", "RetrievalMode", "VectorRetriever"]


class _Step:
    """One step of a retrieval that waits: ``kind`` names it, ``args`` are its inputs."""

    __slots__ = ("args", "kind")

    def __init__(self, kind: str, *args: Any) -> None:
        self.kind = kind
        self.args = args


class VectorRetriever(BaseRetriever):
    """Connects an embedder to a vector store; retrieves densely, lexically or both.

    Modes: ``"dense"`` ranks chunks by cosine similarity of embeddings (scores are cosines);
    ``"lexical"`` by BM25 over their text (scores are BM25 scores); ``"hybrid"`` takes the top
    ``candidates`` of each and fuses them: by default (``fusion="rescored"``) every candidate
    of either list gets both of its scores, each side min-max scaled over the candidates and
    summed with ``weights`` (default 0.6 dense, 0.4 lexical, chosen on Cranfield); ``"rrf"``
    is reciprocal-rank fusion (``Σ w/(rrf_k + rank)``, weights default 1, 1) and
    ``"weighted"`` sums each list's own min-max scaled scores (a chunk a list missed gets 0
    from it). Metadata filters apply to both sides; ``min_score`` applies to cosine
    similarities (dense hits, also before fusion), never to BM25 or fused scores.

    Each retrieval is one :class:`StoreQuery` the store answers in one engine request
    (``store.retrieve``). A store without ``native_retrieval`` answers hybrid's sides apart
    (``search``, ``lexical_search``), fused here from each side's own hits (``rescored``
    then scales each list's own scores, as ``weighted`` does, with its weights).

    Every dense and hybrid query checks that the store holds vectors of this embedder, with
    the identity the request itself read (so another process that cleared the store and
    ingested with another model, of the same dimension, is noticed at the next query, with
    no extra round trip on the built-in stores) and raises ``EmbedderMismatchError``.
    Lexical mode does not embed and is not checked: BM25 over the text does not depend on
    the embedder.

    :meth:`aretrieve` embeds with the embedder's native async client when it has one and
    asks the store's ``aretrieve``, so retrieval never blocks the event loop;
    ``aadd_documents`` runs the (per-document atomic) ingest in the bounded offload pool.

    Args:
        embedder: turns texts into vectors (``Embedder``, ``FeatureHashingEmbedder``, ...).
        store: any :class:`BaseVectorStore`.
        k: default number of chunks to retrieve.
        min_score: minimum cosine similarity a dense hit needs (0.0 keeps every
            non-negative hit).
        hooks: observability hooks told about every retrieval.
        mode: "dense" (default), "lexical" or "hybrid".
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation (0 none, 1 full).
        fusion: "rescored" (default), "rrf" or "weighted" (hybrid mode).
        rrf_k: the reciprocal-rank-fusion constant.
        weights: (dense, lexical) weights of the fusion (None: the fusion's default).
        candidates: how many hits each side contributes to the fusion (at least ``k``).
        embed_concurrency: embedding requests at once while ingesting, for an embedder that
            sends them to a server (OpenAI, Gemini, Ollama); a local one embeds the next
            batch while the previous is written. 0: embed and write in turn, no thread.
        reranker: a second stage (``RerankModel`` or any :class:`Reranker`): each retrieval
            takes ``rerank_candidates`` hits in this ``mode``, the reranker re-orders them
            and the top ``k`` are returned, scored by the reranker. None (default): no rerank.
        rerank_candidates: how many hits the reranker sees (at least ``k``).

    Raises:
        ValueError: k < 1, min_score outside [-1, 1], or a bad BM25/fusion setting.
        TypeError: ``reranker`` has no ``rerank``/``arerank`` methods.
        UnsupportedOperationError: a lexical or hybrid mode on a store without lexical search.
        EmbedderMismatchError: (at retrieval) the store holds another embedder's vectors.
    """

    def __init__(
        self,
        embedder: EmbeddingModel,
        store: BaseVectorStore,
        k: int = 4,
        min_score: float = 0.0,
        *,
        batch_size: int = 256,
        hooks: Sequence[Hooks] | None = None,
        mode: RetrievalMode = "dense",
        k1: float = 1.2,
        b: float = 0.75,
        fusion: Fusion = "rescored",
        rrf_k: int = DEFAULT_RRF_K,
        weights: tuple[float, float] | None = None,
        candidates: int = 100,
        embed_concurrency: int = DEFAULT_EMBED_CONCURRENCY,
        reranker: Reranker | None = None,
        rerank_candidates: int = 50,
    ) -> None:
        if not is_positive_int(k):
            raise InvalidArgumentError(f"k must be a positive int, got {k!r}")
        if not -1.0 <= min_score <= 1.0:
            raise InvalidArgumentError(
                f"min_score is a cosine similarity in [-1, 1], got {min_score}"
            )
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        self.embedder = embedder
        self.store = store
        self.k = k
        self.min_score = min_score
        self.batch_size = batch_size
        self.embed_concurrency = check_embed_concurrency(embed_concurrency)
        self.hooks = check_hooks(hooks)
        self._check_lexical(mode, k1, b, fusion, rrf_k, weights, candidates, store)
        self.mode: RetrievalMode = mode
        self.k1 = k1
        self.b = b
        self.fusion: Fusion = fusion
        self.rrf_k = rrf_k
        self.weights = fusion_weights(fusion) if weights is None else weights
        self.candidates = candidates
        self.reranker, self.rerank_candidates = _check_reranker(reranker, rerank_candidates)

    def add_documents(
        self,
        docs: Sequence[Document],
        chunker: TextSplitter | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> int:
        """Chunk, embed (batched calls) and store ``docs``, each replacing its previous version.

        With ``chunker=None`` each non-blank document becomes exactly one chunk. After it
        returns the store holds exactly the new chunks of each document (a re-added document
        with fewer chunks loses its extra ones). On the built-in stores each document is
        written all-or-nothing; documents stored before a failure stay stored.

        Returns:
            The number of chunks added.

        Raises:
            EmbedderMismatchError: the store was filled by another embedder.
        """
        report = self.ingest(docs, chunker, skip_unchanged=False, progress=progress)
        return report.chunks_written

    def ingest(
        self,
        docs: Iterable[Document],
        chunker: TextSplitter | None = None,
        *,
        skip_unchanged: bool = True,
        progress: ProgressCallback | None = None,
        on_document: OutcomeCallback | None = None,
    ) -> IngestReport:
        """Like :meth:`add_documents`, with a typed report; unchanged documents are skipped."""
        # here: a program that only searches never loads the pipeline (threads, hashing)
        from pywrapai_graph.application.ingest_documents import IngestDocuments

        use_case = IngestDocuments(
            self.embedder,
            self.store,
            chunker,
            batch_size=self.batch_size,
            embed_concurrency=self.embed_concurrency,
        )
        return use_case(
            docs, skip_unchanged=skip_unchanged, progress=progress, on_document=on_document
        )

    @staticmethod
    def _check_lexical(
        mode: str,
        k1: float,
        b: float,
        fusion: str,
        rrf_k: int,
        weights: tuple[float, float] | None,
        candidates: int,
        store: BaseVectorStore,
    ) -> None:
        if mode not in get_args(RetrievalMode):
            raise ConfigurationError(f"mode must be dense, lexical or hybrid, got {mode!r}")
        if fusion not in get_args(Fusion):
            raise ConfigurationError(f"fusion must be rescored, rrf or weighted, got {fusion!r}")
        if not (k1 >= 0.0 and 0.0 <= b <= 1.0):
            raise ConfigurationError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        problem = fusion_problem(weights, 2, rrf_k)
        if problem or not is_positive_int(candidates):
            raise ConfigurationError(
                "rrf_k must be a finite number >= 0, candidates an int >= 1 and weights two "
                f"finite non-negative numbers; got rrf_k={rrf_k!r}, candidates={candidates!r}, "
                f"weights={weights!r}"
            )
        if mode != "dense" and not store.lexical:
            raise lexical_refusal(type(store).__name__, f"mode={mode!r}")

    def retrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Up to ``k`` (default: the constructor's) chunks, best first, in this ``mode``
        (then reranked, with a ``reranker``)."""
        wanted = self.k if k is None else k
        return drive(self._retrieval(query, wanted, filter), self._do)

    async def aretrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`retrieve` (the same steps): async embedding, the store's
        ``aretrieve``, the reranker's ``arerank``."""
        wanted = self.k if k is None else k
        return await adrive(self._retrieval(query, wanted, filter), self._ado)

    # --------------------------------------------------------- the algorithm, once
    def _retrieval(
        self, query: str, wanted: int, filter: MetadataFilter | None
    ) -> Core[_Step, list[ScoredChunk]]:
        """:meth:`retrieve` and :meth:`aretrieve`: yields each step that waits on the
        embedder, the store or the reranker (see :mod:`.sync_async`)."""
        with observe_retrieval(self.store.db_system, query, wanted, hooks=self.hooks) as observed:
            depth = wanted if self.reranker is None else max(wanted, self.rerank_candidates)
            hits = yield from self._candidates(query, depth, filter)
            if self.reranker is not None:
                hits = yield _Step("rerank", query, hits, wanted)
            observed.result = hits
        return hits

    def _candidates(
        self, query: str, wanted: int, filter: MetadataFilter | None
    ) -> Core[_Step, list[ScoredChunk]]:
        """The whole retrieval as one :class:`StoreQuery`, one engine request. A store
        without ``native_retrieval`` answers hybrid's two sides apart (``search`` and
        ``lexical_search``, once each), fused here from their own hits: ``rescored`` has no
        other scores to re-score with, so it scales each list's own (``weighted``)."""
        vector: list[float] | None = None
        if self.mode != "lexical":
            vector = yield _Step("embed", query)
        asked = StoreQuery(
            self.mode,
            wanted,
            vector,
            None if self.mode == "dense" else query,
            filter,
            *(self.candidates, self.fusion, self.weights, self.rrf_k),
            *(self.k1, self.b, self.min_score),
        )
        if self.mode != "hybrid" or self.store.native_retrieval:
            found: list[ScoredChunk] = yield from self._request(asked)
            return found
        sides = [replace(asked, mode=mode, k=asked.depth) for mode in ("dense", "lexical")]
        dense = yield from self._request(replace(sides[0], text=None))
        lexical = yield from self._request(replace(sides[1], vector=None))
        fusion = "weighted" if self.fusion == "rescored" else self.fusion
        weights, rrf_k = self.weights, self.rrf_k
        return fuse(fusion, dense, lexical, {}, {}, weights=weights, rrf_k=rrf_k, k=wanted)

    def _request(self, asked: StoreQuery) -> Core[_Step, list[ScoredChunk]]:
        """One ``retrieve`` in its span; the store reports the embedder identity it read in
        that request (:func:`identity_probe`)."""
        with observe_store(self.store.db_system, "retrieve", k=asked.k) as observed:
            with identity_probe() as probe:
                hits: list[ScoredChunk] = yield _Step("retrieve", asked)
            if hits and asked.vector is not None:
                seen = probe.identity if probe.seen else (yield _Step("embedder_identity"))
                self._check_recorded(seen, len(asked.vector))
            observed.result = len(hits)
        return hits

    def _do(self, step: _Step) -> Any:
        """A step, done blocking."""
        steps: dict[str, Callable[..., Any]] = {
            "embed": self.embedder.embed_one,
            "embedder_identity": self.store.embedder_identity,
            "retrieve": self.store.retrieve,
        }
        if self.reranker is not None:
            steps["rerank"] = self.reranker.rerank
        return steps[step.kind](*step.args)

    async def _ado(self, step: _Step) -> Any:
        """A step, awaited: the embedder's, the store's and the reranker's async calls, the
        rest (``embedder_identity``) in a worker thread."""
        steps: dict[str, Callable[..., Awaitable[Any]]] = {
            "embed": lambda query: aembed_one(self.embedder, query),
            "retrieve": self.store.aretrieve,
        }
        if self.reranker is not None:
            steps["rerank"] = self.reranker.arerank
        run = steps.get(step.kind)
        if run is not None:
            return await run(*step.args)
        with call_clock():  # a store call: its deadline counts from here, queue included
            return await offload(self._do, step)

    # ------------------------------------------------ the embedder check, every query
    def _check_recorded(self, recorded: EmbedderIdentity | None, dimension: int) -> None:
        """Compare this retriever's embedder with the identity the search itself read.

        The built-in stores report it from the search (:mod:`..ports.identity_probe`): at
        every query, fresh across processes, at no extra round trip. A store that reports
        none is asked (``embedder_identity()``). A search without hits is not checked: it
        returned nothing another model's vectors ranked.

        Raises:
            EmbedderMismatchError: another embedder filled the store (another process may
                have cleared it and ingested with another model of the same dimension).
        """
        provider, model = embedder_name(self.embedder)
        check_embedder(recorded, EmbedderIdentity(provider, model, dimension))

    def scoped(self, metadata: Mapping[str, Any]) -> ScopedRetriever:
        """A view whose reads always filter by ``metadata`` and whose writes stamp it.

        Example:
            >>> acme = retriever.scoped({"tenant": "acme"})  # doctest: +SKIP
            >>> acme.add_documents(docs)  # chunks carry tenant=acme  # doctest: +SKIP
            >>> acme.retrieve("refund policy")  # only tenant=acme chunks  # doctest: +SKIP
        """
        return ScopedRetriever(self, metadata)

    def __repr__(self) -> str:
        rerank = f", reranker={self.reranker!r}" if self.reranker is not None else ""
        return (
            f"VectorRetriever(store={self.store!r}, k={self.k}, min_score={self.min_score}, "
            f"mode={self.mode!r}{rerank})"
        )


def _check_reranker(reranker: object, candidates: object) -> tuple[Reranker | None, int]:
    if reranker is not None and not isinstance(reranker, Reranker):
        raise ArgumentTypeError(
            f"reranker must have rerank() and arerank() (a RerankModel), got "
            f"{type(reranker).__name__}"
        )
    if not isinstance(candidates, int) or not is_positive_int(candidates):
        raise ConfigurationError(f"rerank_candidates must be an int >= 1, got {candidates!r}")
    return reranker, candidates
