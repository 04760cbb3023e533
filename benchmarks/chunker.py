"""Chunker: speed against LangChain and the blank-line-split floor, sizes, overlaps, memory.

Run: .venv/bin/python -m benchmarks.chunker  (needs the ``bench`` extra; the real-text row
reads the Debian python3.11-doc / linux-doc reStructuredText sources when installed)

1. 20 MB of prose and 20 MB of real text at (500, 50), best of 3 each in one run (wall and
   CPU seconds; the heap collected before each call): LangChain's
   ``RecursiveCharacterTextSplitter.split_text``; before: the one-window-at-a-time loop of
   884b7e1 (``tests/unit/chunker_reference.py``); after: our ``Chunker.split`` with every
   chunk's id read, on the compiled loops (``_chunker_ext``) when built, and on their
   pure-Python twins; the floor of making just the list of ``Chunk`` objects and their ids
   from finished texts (as the chunker makes them). Chunks over ``chunk_size`` and overlaps
   that start mid-word, for both.
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
    """The chunks of finished texts, made the way ``Chunker`` makes them (in C when built)."""
    if chunker_module._NATIVE_CHUNKS is not None:
        return chunker_module._NATIVE_CHUNKS(Chunk, iter(texts), doc_id, meta, _chunk_ids(doc_id))
    copies = map(dict.copy, itertools.repeat(meta))
    return map(Chunk, texts, itertools.repeat(doc_id), copies, _chunk_ids(doc_id))


def _python_loops(fn: Callable[[], T]) -> T:
    """``fn()`` with the chunker on its pure-Python loops (the compiled ones set aside)."""
    saved = chunker_module._NATIVE_CUTTER, chunker_module._NATIVE_IDS, chunker_module._NATIVE_CHUNKS
    chunker_module._NATIVE_CUTTER = chunker_module._NATIVE_IDS = None
    chunker_module._NATIVE_CHUNKS = None
    try:
        return fn()
    finally:
        (
            chunker_module._NATIVE_CUTTER,
            chunker_module._NATIVE_IDS,
            chunker_module._NATIVE_CHUNKS,
        ) = saved


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
    """Before (884b7e1's loop), after (ours) and LangChain on one text, best of 3 each."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from tests.unit.chunker_reference import reference_split

    mb = len(text) / 1_000_000
    doc = Document(text)
    theirs = RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50)
    ours = Chunker(chunk_size=500, overlap=50)
    lc_texts = theirs.split_text(text)
    mine = ours.split(doc)
    assert mine == reference_split(ours, doc), "the fast path must equal the reference"
    assert _python_loops(partial(ours.split, doc)) == mine, "compiled and Python must agree"
    path = "compiled" if chunker_module._NATIVE_CUTTER is not None else "Python"
    our_texts = [c.text for c in mine]
    n = len(mine)
    meta: dict[str, object] = {}
    del mine
    # Every id is read on our side: ids and Chunk objects are in our time.
    rows: list[tuple[str, Callable[[], object]]] = [
        (
            f"LangChain RecursiveCharacterTextSplitter ({len(lc_texts):,} chunks)",
            partial(theirs.split_text, text),
        ),
        (
            "before: the one-window loop of 884b7e1 (its ids)",
            lambda: [c.id for c in reference_split(ours, doc)],
        ),
        (
            f"after: Chunker.split, ids read ({n:,} chunks) [{path}]",
            lambda: [c.id for c in ours.split(doc)],
        ),
        (
            "after, pure-Python loops [Python]",
            partial(_python_loops, lambda: [c.id for c in ours.split(doc)]),
        ),
        (
            "floor: the list of Chunk objects and their ids alone, no cutting",
            lambda: [c.id for c in list(_make_chunks(our_texts, doc.id, meta))],
        ),
    ]
    if path == "Python":  # the compiled loops are not built: the row above says it all
        del rows[3]
    times = [(label, *_best_of_3(fn)) for label, fn in rows]
    _, lc_wall, lc_cpu = times[0]
    print(f"\n1. Chunking {mb:.1f} MB of {title} at (500, 50), best of 3 in this run")
    print(f"{'case':<58} {'wall s':>7} {'MB/s':>7} {'vs LC':>7} {'CPU s':>7} {'vs LC':>7}")
    for label, wall, cpu in times:
        print(
            f"{label:<58} {wall:>7.3f} {mb / wall:>7.1f} {lc_wall / wall:>6.2f}x "
            f"{cpu:>7.3f} {lc_cpu / cpu:>6.2f}x"
        )
    print("(vs LC: LangChain's time over ours, above 1 = faster than LangChain)")
    print(
        f"Chunker.split ran on the {path} loops: {times[2][2] / times[0][2]:.2f}x LangChain's "
        f"CPU time ({times[0][2] / times[2][2]:.2f}x as fast)"
    )
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
    path = "compiled" if chunker_module._NATIVE_CUTTER is not None else "Python"
    print(
        f"\n2. Chunker(500, 50) throughput ({path} loops), MB/s, next to splitting at blank "
        "lines (the floor)"
    )
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
