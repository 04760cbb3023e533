"""The chunker gives exactly what the one-window-at-a-time reference gave.

Same chunk texts, ids, doc ids and metadata, on random texts full of edge characters,
on long mixed texts, on real text (this repository's own sources and docs, the Debian
corpus when installed) and on edge shapes; ids equal ``uuid.uuid5``.
"""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import Chunker, Document
from pywrapai_graph.application import chunker as chunker_module
from pywrapai_graph.application.chunker import _chunk_ids, chunk_id
from tests.unit.chunker_reference import reference_chunk_id, reference_split

ROOT = Path(__file__).resolve().parents[2]

# Every kind of character the cutting rules look at: the three marks, ASCII and Unicode
# whitespace (the rare ones too), CRLF, letters, Latin-1, UCS-2 and astral characters.
PIECES = [
    "word",
    "x",
    "é",
    "日本",
    "😀",
    ".",
    "!",
    "?",
    "a.b",
    " ",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\n \n",
    "\r\n",
    "\r\n\r\n",
    "\t",
    "\t\n",
    " \n",
    "\x0b",
    "\x1c",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "\n\xa0\n",
    "\n\u3000\n",
]


def assert_same(chunker: Chunker, doc: Document) -> None:
    fast = chunker.split(doc)
    assert fast == reference_split(chunker, doc)
    assert list(chunker.iter_split(doc)) == fast


def random_text(rng: random.Random, length: int, pieces: list[str] = PIECES) -> str:
    out: list[str] = []
    size = 0
    while size < length:
        piece = rng.choice(pieces)
        out.append(piece)
        size += len(piece)
    return "".join(out)


@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=400),
    size=st.integers(min_value=11, max_value=200),
    overlap_ratio=st.floats(min_value=0, max_value=0.95),
)
def test_equals_the_reference_on_random_texts(
    pieces: list[str], size: int, overlap_ratio: float
) -> None:
    overlap = min(int(size * overlap_ratio), size - 1)
    assert_same(Chunker(size, overlap), Document("".join(pieces), metadata={"k": [1]}, id="d"))


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_reference_on_long_mixed_texts(seed: int) -> None:
    rng = random.Random(seed)
    # Mostly ASCII prose, a rare wide character.
    pieces = ["word", "words", "the", " ", " ", " ", ". ", "\n", "\n\n"] * 20 + PIECES
    text = random_text(rng, 100_000 + rng.randrange(30_000), pieces)
    for size, overlap in [(500, 50), (120, 30), (2_000, 0), (20_000, 300)]:
        assert_same(Chunker(size, overlap), Document(text, id=f"doc-{seed}"))
        assert_same(Chunker(size, overlap), Document(text.encode("ascii", "ignore").decode()))


def repository_text() -> str:
    """This repository's own docs and sources: real prose, code and reStructuredText-ish."""
    files = sorted(ROOT.glob("*.md")) + sorted((ROOT / "pywrapai_graph").rglob("*.py"))
    spec = ROOT.parent / "shared" / "spec" / "pywrapai-graph-reference.txt"
    files += [spec] if spec.is_file() else []
    return "\n\n".join(p.read_text(encoding="utf-8") for p in files)


def test_equals_the_reference_on_real_text() -> None:
    text = repository_text()
    assert len(text) > 500_000
    for size, overlap in [(500, 50), (1_000, 100), (200, 0)]:
        assert_same(Chunker(size, overlap), Document(text, id="repo"))
    # The same text made wider than ASCII, and with CRLF.
    assert_same(Chunker(500, 50), Document("😀" + text))
    assert_same(Chunker(500, 50), Document(text.replace("\n", "\r\n")))


def test_equals_the_reference_on_the_debian_corpus() -> None:
    from benchmarks._corpus import ROOTS

    files = [p for root in ROOTS if root.is_dir() for p in sorted(root.rglob("*.rst.txt"))]
    if not files:
        pytest.skip("the Debian corpus is not installed (python3.11-doc, linux-doc-6.1)")
    text = "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files[:600])
    assert_same(Chunker(500, 50), Document(text, id="debian"))


@pytest.mark.parametrize(
    "text",
    [
        "x" * 100_000,  # no separator at all
        "😀" * 70_000,  # no separator, astral: several slices
        "word " * 30_000,  # one huge line
        ("Sentence one. Sentence two! Three? " * 2_000 + "\n") * 3,
        "a.b.c.d.e.f.g.h.i.j.k " * 5_000,  # many dots inside words
        "line one\r\n\r\nline two\r\n \r\n" * 3_000,  # CRLF, spaced blank lines
        "para\n\u3000\npara\n\xa0\npara\n\x85\n" * 5_000 + "é",  # Unicode-spaced breaks
        "para é\n\xa0\npara\n\x85\nmore words " * 3_000,  # the same, Latin-1 blocks
        "para é\n\xa0\npara\n\x85\nmore words " * 50,  # one Latin-1 block
        " " * 50_000 + "tail words here" + "\n" * 50_000,  # long whitespace runs
        "é" * 40_000 + "\n\n" + "x " * 30_000,  # Latin-1 block then ASCII
    ],
)
def test_equals_the_reference_on_edge_shapes(text: str) -> None:
    for size, overlap in [(500, 50), (40, 10), (11, 0)]:
        assert_same(Chunker(size, overlap), Document(text, id="edge"))


def test_chunk_ids_equal_uuid5() -> None:
    for doc_id in ["doc", "ünïcode 😀", ""]:
        ids = list(itertools.islice(_chunk_ids(doc_id), 1_000))
        assert ids == [reference_chunk_id(doc_id, i) for i in range(1_000)]
        assert (
            chunk_id(doc_id, 777)
            == ids[777]
            == str(uuid.uuid5(chunker_module._CHUNK_NAMESPACE, f"{doc_id}\x00777"))
        )
