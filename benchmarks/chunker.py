"""Chunker: speed against LangChain and the blank-line-split floor, sizes, overlaps, memory.

Run: .venv/bin/python -m benchmarks.chunker  (needs the ``bench`` extra; the real-text row
reads the Debian python3.11-doc / linux-doc reStructuredText sources when installed)

1. 20 MB of prose and 20 MB of real text at (500, 50), best of 3 each in one run (wall and
   CPU seconds; the heap collected before each call), two like-for-like pairs against
   LangChain's ``RecursiveCharacterTextSplitter``: the chunk texts alone (``split_text`` vs
   our cutting loop) and chunk objects with the document's metadata (``create_documents``
   vs our ``Chunker.split`` with every chunk's id read); then the one-window-at-a-time loop
   of 884b7e1 (``tests/unit/chunker_reference.py``) and the floor of making just the
   ``Chunk`` objects and their ids from finished texts. Chunks over ``chunk_size`` and
   overlaps that start mid-word, for both.
2. MB/s on 1, 10 and 100 MB single-paragraph texts, a 10 MB text without any whitespace,
   and 20 MB of real multi-paragraph text, each next to the floor of splitting the same text
   at blank lines (one regex pass); the peak memory of streaming the 100 MB case.
"""

from __future__ import annotations

import gc
import itertools
import random
import re
import time
import tracemalloc
from collections.abc import Callable, Iterator
from functools import partial
from typing import TypeVar

from benchmarks._corpus import real_text
from pywrapai_graph import Chunk, Chunker, Document
from pywrapai_graph.application import chunker as chunker_module
from pywrapai_graph.application.chunker import _chunk_ids

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "that",
    "for",
    "it",
    "with",
    "as",
    "his",
    "on",
    "be",
    "at",
    "by",
    "had",
    "are",
    "but",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "all",
    "her",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
]


def prose(megabytes: float, seed: int = 0, paragraphs: bool = True) -> str:
    """Random English-like sentences; blank lines between paragraphs unless ``paragraphs=False``."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        sentences = []
        for _ in range(rng.randint(2, 9)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(5, 30))]
            sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", ".", "!", "?"]))
        paragraph = " ".join(sentences)
        out.append(paragraph)
        size += len(paragraph) + 2
    return ("\n\n" if paragraphs else " ").join(out)


def single_paragraph(megabytes: int) -> str:
    """``megabytes`` MB of sentences without a blank line (1 MB of prose, repeated)."""
    return " ".join([prose(1, paragraphs=False)] * megabytes)


T = TypeVar("T")

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _mid_word_overlaps(chunks: list[str], overlap: int) -> int:
    """Chunks whose shared prefix with the previous chunk starts inside a word."""
    bad = 0
    for prev, cur in itertools.pairwise(chunks):
        for k in range(min(overlap, len(prev), len(cur)), 0, -1):
            if cur.startswith(prev[-k:]) and cur[k : k + 1].isspace():
                start = len(prev) - k
                if start > 0 and not prev[start - 1].isspace():
                    bad += 1
                break
    return bad


def _make_chunks(texts: list[str], doc_id: str, meta: dict[str, object]) -> Iterator[Chunk]:
    """The chunks of finished texts, made the way ``Chunker`` makes them."""
    copies = map(dict.copy, itertools.repeat(meta))
    return map(Chunk, texts, itertools.repeat(doc_id), copies, _chunk_ids(doc_id))


def _best_of_3(fn: Callable[[], object]) -> tuple[float, float]:
    """Best wall and best CPU seconds of 3 calls, each from a collected heap, result dropped."""
    walls, cpus = [], []
    for _ in range(3):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        del result
    return min(walls), min(cpus)


def against_langchain(text: str, title: str) -> None:
    """Before (884b7e1's loop), ours and LangChain on one text, best of 3 each.

    Two pairs that do the same work: the chunk texts alone (LangChain's ``split_text`` vs
    our cutting loop), and chunk objects carrying the document's metadata (LangChain's
    ``create_documents`` vs ``Chunker.split``, which also gives each chunk its uuid5 id).
    """
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from tests.unit.chunker_reference import reference_split

    mb = len(text) / 1_000_000
    meta: dict[str, object] = {"source": "corpus.rst.txt"}
    doc = Document(text, meta, "corpus.rst.txt")
    theirs = RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50)
    ours = Chunker(chunk_size=500, overlap=50)
    lc_texts = theirs.split_text(text)
    mine = ours.split(doc)
    assert mine == reference_split(ours, doc), "the chunker must equal the reference"
    our_texts = [c.text for c in mine]
    n = len(mine)
    del mine
    limit = ours._overlap_limit
    pairs: list[tuple[str, Callable[[], object], str, Callable[[], object]]] = [
        (
            f"LangChain split_text ({len(lc_texts):,} texts)",
            partial(theirs.split_text, text),
            f"ours: the chunk texts ({n:,})",
            lambda: list(chunker_module._chunk_texts(text, 500, limit)),
        ),
        (
            "LangChain create_documents (Document + metadata)",
            partial(theirs.create_documents, [text], [meta]),
            "ours: Chunker.split (Chunk + metadata + id read)",
            lambda: [c.id for c in ours.split(doc)],
        ),
    ]
    print(f"\n1. Chunking {mb:.1f} MB of {title} at (500, 50), best of 3 in this run")
    print(f"{'case':<52} {'wall s':>7} {'MB/s':>7} {'CPU s':>7} {'LC/ours CPU':>12}")
    for lc_label, lc_fn, our_label, our_fn in pairs:
        lc_wall, lc_cpu = _best_of_3(lc_fn)
        wall, cpu = _best_of_3(our_fn)
        print(f"{lc_label:<52} {lc_wall:>7.3f} {mb / lc_wall:>7.1f} {lc_cpu:>7.3f}")
        print(f"{our_label:<52} {wall:>7.3f} {mb / wall:>7.1f} {cpu:>7.3f} {lc_cpu / cpu:>11.2f}x")
    extra = [
        (
            "before: the one-window loop of 884b7e1 (its ids)",
            lambda: [c.id for c in reference_split(ours, doc)],
        ),
        (
            "floor: the Chunk objects and their ids alone, no cutting",
            lambda: [c.id for c in list(_make_chunks(our_texts, doc.id, meta))],
        ),
    ]
    for label, fn in extra:
        wall, cpu = _best_of_3(fn)
        print(f"{label:<52} {wall:>7.3f} {mb / wall:>7.1f} {cpu:>7.3f}")
    print("(LC/ours CPU: LangChain's CPU time over ours, above 1 = faster than LangChain)")
    for name, texts in (("LangChain", lc_texts), ("ours", our_texts)):
        over = sum(len(t) > 500 for t in texts)
        print(
            f"{name:>9}: {over} of {len(texts):,} chunks over 500 (max {max(map(len, texts))}, "
            f"mean {sum(map(len, texts)) / len(texts):.0f}), "
            f"{_mid_word_overlaps(texts, 50)} overlaps start mid-word"
        )


def throughput(real: str, source: str) -> None:
    chunker = Chunker(chunk_size=500, overlap=50)
    cases = [(f"{n} MB, one paragraph", single_paragraph(n)) for n in (1, 10, 100)]
    cases.append(("10 MB, no whitespace at all", "x" * 10_000_000))
    cases.append((f"{len(real) / 1e6:.0f} MB real text ({source})", real))
    print("\n2. Chunker(500, 50) throughput, MB/s, next to splitting at blank lines (the floor)")
    print(f"{'case':<52} {'chunks':>9} {'ours':>8} {'floor':>8} {'ratio':>7}")
    for label, text in cases:
        mb = len(text) / 1_000_000
        doc = Document(text)
        t_floor, _ = _timed(partial(_BLANK_LINES.split, text))
        t_ours, n = _timed(lambda: sum(1 for _ in chunker.iter_split(doc)))  # noqa: B023
        print(
            f"{label:<52} {n:>9,} {mb / t_ours:>8.1f} {mb / t_floor:>8.1f} "
            f"{t_ours / t_floor:>6.1f}x"
        )
    text = cases[2][1]
    tracemalloc.start()
    for _ in chunker.iter_split(Document(text)):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"peak memory streaming the 100 MB text (text excluded): {peak / 1e3:.0f} kB "
        f"({peak / len(text):.5f} of the text)"
    )


def main() -> None:
    real, source = real_text(20)
    against_langchain(prose(20), "prose")
    against_langchain(real, f"real text ({source})")
    throughput(real, source)


if __name__ == "__main__":
    main()
