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


def overlap_of(chunker: Chunker, prev: str) -> str:
    """The longest tail of ``prev`` of at most the overlap that starts at a word.

    The overlap leaves room for 10 new characters and the joining space, hence the cap.
    """
    limit = max(0, min(chunker.overlap, chunker.chunk_size - 1 - MIN_CHUNK_CHARS))
    starts = [
        i
        for i in range(max(0, len(prev) - limit), len(prev))
        if not prev[i].isspace() and (i == 0 or prev[i - 1].isspace())
    ]
    return prev[starts[0] :] if starts and limit else ""


def bodies(chunker: Chunker, texts: list[str]) -> list[str]:
    """Chunk texts with the overlap prefix removed."""
    out = [texts[0]]
    for prev, cur in itertools.pairwise(texts):
        prefix = overlap_of(chunker, prev)
        assert len(prefix) <= chunker.overlap
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
        # the tail of the previous chunk, at most 20 characters, starting at a word
        head = overlap_of(chunker, prev.text)
        assert 0 < len(head) <= 20 and head[0] != " " and prev.text[-len(head) - 1] == " "
        assert cur.text.startswith(head + " ")
        assert len(cur.text) <= 120


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
    # size bound (chunk_size is a maximum, overlap included) and carried metadata
    for c in chunks:
        assert MIN_CHUNK_CHARS <= len(c.text) <= size
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


@pytest.mark.parametrize(
    "text",
    [
        "x" * 5_000,  # no whitespace at all
        "word " * 2_000,  # one huge line, no sentence end
        ("A sentence here. " * 300 + "\n") * 3,  # huge paragraphs of sentences
        "ab" + " " * 700 + "cd efgh" + "\t" * 600 + "tail end here",  # long runs of spaces
        "short\n\n" * 400,  # many tiny paragraphs
        "line one\r\n\r\nline two\r\n \r\n" * 100,  # CRLF and spaced blank lines
    ],
)
def test_any_text_shape_is_covered_within_the_maximum(text: str) -> None:
    chunker = Chunker(chunk_size=120, overlap=30)
    chunks = chunker.split(Document(text))
    assert all(MIN_CHUNK_CHARS <= len(c.text) <= 120 for c in chunks)
    assert squash("".join(bodies(chunker, [c.text for c in chunks]))) == squash(text)


def test_paragraph_that_fits_is_never_split_and_breaks_win_over_sentences() -> None:
    first = "First paragraph. It has two sentences."
    second = "Second one. " * 20
    chunks = Chunker(chunk_size=100, overlap=0).split(Document(f"{first}\n\n{second}"))
    assert chunks[0].text == first


def test_iter_split_streams_with_memory_bounded_by_a_few_chunks() -> None:
    import tracemalloc

    text = "Some words in a sentence that never ends " * 50_000  # 2 MB, one paragraph
    chunker = Chunker(chunk_size=500, overlap=50)
    chunks = chunker.iter_split(Document(text))
    assert next(chunks).text.startswith("Some words")  # a generator: the first chunk comes first
    tracemalloc.start()
    count = 1 + sum(1 for _ in chunks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count > 4_000
    assert peak < 20 * 500 * 4  # a few chunks' worth of bytes, not the text (2 MB) or a list
    assert [c.id for c in chunker.split(Document(text, id="d"))][:3] == [
        c.id for c in itertools.islice(chunker.iter_split(Document(text, id="d")), 3)
    ]
