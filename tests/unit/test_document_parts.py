"""document_parts: what each chunk adds to its document (the document field of BM25)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.text_analysis import analyze, document_parts

SUBSET = Path(__file__).resolve().parents[1] / "fixtures" / "cranfield_subset"


def test_a_repeated_start_counts_once() -> None:
    assert document_parts(["alpha beta gamma", "gamma delta"], ["d", "d"]) == [
        "alpha beta gamma",
        " delta",
    ]


def test_chunks_of_other_documents_do_not_overlap() -> None:
    texts = ["alpha beta gamma", "gamma delta", "gamma epsilon"]
    assert document_parts(texts, ["d", "e", "d"]) == ["alpha beta gamma", "gamma delta", " epsilon"]


def test_a_chunk_is_never_all_overlap() -> None:
    # "aaaa" ends the first chunk, but a chunk keeps at least its last character
    assert document_parts(["xaaaa", "aaaa"], ["d", "d"]) == ["xaaaa", "a"]


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError):
        document_parts(["a", "b"], ["d"])


def test_parts_of_chunker_output_hold_the_document_terms_once() -> None:
    data = load_beir(SUBSET)
    chunker = Chunker(500, 50)
    overlapping = 0
    for doc in data.corpus:
        chunks = chunker.split(doc)
        parts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
        whole = Counter(term for part in parts for term in analyze(part))
        assert whole == Counter(analyze(doc.text)), doc.id
        overlapping += sum(len(c.text) - len(p) for c, p in zip(chunks, parts, strict=True)) > 0
    assert overlapping > 20  # the overlaps were there to take away
