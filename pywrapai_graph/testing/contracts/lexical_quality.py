"""The lexical quality part of the vector-store contract: chunked documents.

BM25 over short chunks alone ranks a chunk that merely mentions the query's words above the
chunks of a document that is about the query. The document field (a chunk also scores the
BM25 of its whole document, see ``reference_bm25``) fixes that, and every lexical backend
must show it on this fixed corpus: three documents each about one query, and three
off-topic documents each with one short chunk that matches the query better than any
on-topic chunk does on its own. For each query the two best hits must belong to the
document about it (chunks alone put the off-topic mention first; the case checks that too,
so it proves something).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT
from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.lexical_search import LexicalSearchContract, reference_bm25

__all__ = ["CHUNKED_DOCUMENTS", "LexicalQualityContract", "chunked_corpus"]

#: document id -> its chunks' texts
CHUNKED_DOCUMENTS = {
    "slab": (
        "Heat conduction through a composite slab of two layers.",
        "The temperature in the slab is found for steady conduction of heat.",
        "Each layer of the composite slab has its own conductivity.",
        "Transient heat conduction in the slab is solved by transforms.",
    ),
    "cone": (
        "Shock waves on a cone at supersonic speed.",
        "The shock angle on the cone grows with the Mach number.",
        "Supersonic flow past the cone is conical behind the shock.",
        "Cone pressure behind the attached shock wave is measured.",
    ),
    "shell": (
        "Buckling of thin cylindrical shells under axial load.",
        "The buckling load of the shell falls with imperfections.",
        "Cylindrical shells under external pressure buckle in many waves.",
        "Shell buckling tests on cylinders agree with the theory.",
    ),
    "bench": (
        "Composite slab heat conduction.",
        "Wind tunnel balance calibration and drift.",
        "Strain gauge wiring for the model sting.",
        "Schlieren mirrors were realigned after transport.",
    ),
    "gear": (
        "Supersonic cone shock waves.",
        "Landing gear fatigue tests at room temperature.",
        "Rivet spacing in lap joints of fuselage panels.",
        "Hydraulic actuator seals wear under vibration.",
    ),
    "fuel": (
        "Cylindrical shell buckling.",
        "Fuel tank sloshing in a climbing turn.",
        "Engine mount vibration isolators were replaced.",
        "Cabin noise from the propeller tips.",
    ),
}
#: query -> (the document about it, the off-topic document that mentions it in one chunk)
ABOUT = {
    "heat conduction in composite slabs": ("slab", "bench"),
    "shock waves on a supersonic cone": ("cone", "gear"),
    "buckling of cylindrical shells": ("shell", "fuel"),
}


def chunked_corpus(dim: int = 16, seed: int = 11) -> list[Chunk]:
    """:data:`CHUNKED_DOCUMENTS` as chunks (ids ``<doc>-<n>``) with random unit embeddings."""
    texts = [
        (doc, n, text) for doc, chunks in CHUNKED_DOCUMENTS.items() for n, text in enumerate(chunks)
    ]
    vectors = np.random.default_rng(seed).standard_normal((len(texts), dim))
    return [
        Chunk(text, doc_id=doc, metadata={"doc": doc}, id=f"{doc}-{n}", embedding=v.tolist())
        for (doc, n, text), v in zip(texts, vectors, strict=True)
    ]


class LexicalQualityContract(LexicalSearchContract):
    """Mixed into :class:`VectorStoreContract`; uses the lexical contract's fixtures."""

    dim: ClassVar[int] = 16

    def test_lexical_ranks_the_document_about_the_query_first(
        self, lexical_store: BaseVectorStore
    ) -> None:
        corpus = chunked_corpus(self.dim)
        lexical_store.add(corpus)
        if self.lexical_document_field:
            self._check_about_first(lexical_store, corpus)
            return
        try:  # a strict expected failure: passing means the declaration is out of date
            self._check_about_first(lexical_store, corpus)
        except AssertionError:
            pytest.xfail(f"{type(self).__name__}: lexical_document_field = False")
        pytest.fail("the document field works: drop lexical_document_field = False")

    def _check_about_first(self, store: BaseVectorStore, corpus: list[Chunk]) -> None:
        for query, (about, mention) in ABOUT.items():
            alone = reference_bm25(corpus, query, 1, document_weight=0.0)
            assert alone[0][0].startswith(mention)  # chunks alone: the mention wins
            hits = store.lexical_search(query, k=4)
            assert [h.chunk.doc_id for h in hits[:2]] == [about, about], (query, hits)
            scores = {h.chunk.id: h.score for h in store.lexical_search(query, k=24)}
            assert scores[f"{about}-0"] > scores[f"{mention}-0"], (query, scores)
            want = reference_bm25(corpus, query, 4, document_weight=DOCUMENT_WEIGHT)
            self._check([(h.chunk.id, h.score) for h in hits], want)
