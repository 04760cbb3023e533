from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import Chunker, Document
from pywrapai_graph.application.chunker import MIN_CHUNK_CHARS


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def bodies(chunker: Chunker, texts: list[str]) -> list[str]:
    """Chunk texts with the overlap prefix removed."""
    out = [texts[0]]
    for prev, cur in itertools.pairwise(texts):
        prefix = prev[-chunker.overlap :] if chunker.overlap else ""
        assert cur.startswith(prefix)
        out.append(cur[len(prefix) :])
    return out


@pytest.mark.parametrize(
    ("size", "overlap"), [(0, 0), (-5, 0), (10, 0), (100, -1), (100, 100), (100, 150)]
)
def test_invalid_sizes_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        Chunker(chunk_size=size, overlap=overlap)


def test_short_documents_become_one_chunk_with_metadata() -> None:
    doc = Document("Paris is the capital of France.", metadata={"source": "geo.txt"})
    [chunk] = Chunker(500, 50).split(doc)
    assert (
        chunk.text == doc.text
        and chunk.doc_id == doc.id
        and chunk.metadata == {"source": "geo.txt"}
    )
    assert chunk.metadata is not doc.metadata


def test_tiny_document_is_dropped() -> None:
    assert Chunker().split(Document("Hi there")) == []


def test_paragraphs_first_then_packed() -> None:
    paras = [f"Paragraph number {i} has some words in it." for i in range(6)]
    chunks = Chunker(chunk_size=100, overlap=0).split(Document("\n\n".join(paras)))
    assert [c.text for c in chunks] == [
        "\n\n".join(paras[0:2]),
        "\n\n".join(paras[2:4]),
        "\n\n".join(paras[4:6]),
    ]


def test_sentences_split_when_paragraph_too_large() -> None:
    sentences = [f"Sentence {i} is here!" for i in range(10)]
    chunks = Chunker(chunk_size=50, overlap=0).split(Document(" ".join(sentences)))
    for c in chunks:
        assert len(c.text) <= 50
        assert c.text.endswith("!")


def test_hard_cut_for_long_sentences_prefers_whitespace() -> None:
    text = "word " * 100
    chunks = Chunker(chunk_size=40, overlap=0).split(Document(text))
    assert all(c.text.split() == ["word"] * len(c.text.split()) for c in chunks)
    unbroken = "x" * 95
    assert [len(c.text) for c in Chunker(chunk_size=40, overlap=0).split(Document(unbroken))] == [
        40,
        40,
        15,
    ]


def test_overlap_copies_tail_of_previous_chunk() -> None:
    text = " ".join(f"Sentence number {i} ends here." for i in range(30))
    chunker = Chunker(chunk_size=120, overlap=20)
    chunks = chunker.split(Document(text))
    assert len(chunks) > 3
    for prev, cur in itertools.pairwise(chunks):
        assert cur.text.startswith(prev.text[-20:])
        assert len(cur.text) <= 140


def test_chunk_ids_are_stable_per_document_position() -> None:
    doc = Document("A first sentence here. " * 50)
    a, b = Chunker(100, 10).split(doc), Chunker(100, 10).split(doc)
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a)


def test_tiny_middle_paragraph_is_not_lost() -> None:
    text = "a" * 95 + "\n\nok\n\n" + "b" * 95
    chunks = Chunker(chunk_size=100, overlap=0).split(Document(text))
    assert squash("".join(c.text for c in chunks)) == squash(text)


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
separators = st.sampled_from([" ", " ", " ", ". ", "! ", "? ", "\n", "\n\n", "\n \n", "  "])
documents = st.lists(st.tuples(words, separators), min_size=0, max_size=300).map(
    lambda pairs: "".join(w + s for w, s in pairs)
)


@given(
    text=documents,
    size=st.integers(min_value=11, max_value=300),
    overlap_ratio=st.floats(min_value=0, max_value=0.9),
)
def test_property_chunker_invariants(text: str, size: int, overlap_ratio: float) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    chunker = Chunker(chunk_size=size, overlap=overlap)
    doc = Document(text, metadata={"k": 1})
    chunks = chunker.split(doc)
    texts = [c.text for c in chunks]
    # size bound and carried metadata
    for c in chunks:
        assert MIN_CHUNK_CHARS <= len(c.text) <= size + overlap
        assert c.doc_id == doc.id
        assert c.metadata == {"k": 1}
    if not chunks:
        assert len(text.strip()) < MIN_CHUNK_CHARS or len(squash(text)) < MIN_CHUNK_CHARS
        return
    # overlap: each chunk starts with the previous chunk's tail; bodies rebuild the text
    rebuilt = squash("".join(bodies(chunker, texts)))
    source = squash(text)
    # only a final piece under 10 characters may be lost
    assert source.startswith(rebuilt)
    assert len(source) - len(rebuilt) < MIN_CHUNK_CHARS


def test_chunk_ids_are_rfc4122_uuid5() -> None:
    import uuid

    from pywrapai_graph.application.chunker import _CHUNK_NAMESPACE, chunk_id

    for doc_id, index in [("doc", 0), ("ünïcode", 7), ("", 123)]:
        assert chunk_id(doc_id, index) == str(uuid.uuid5(_CHUNK_NAMESPACE, f"{doc_id}\x00{index}"))
