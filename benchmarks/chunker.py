"""Chunker throughput on ~20 MB of prose vs LangChain's RecursiveCharacterTextSplitter(500, 50).

Run: .venv/bin/python -m benchmarks.chunker  (needs the ``bench`` extra)
"""

from __future__ import annotations

import random
import time

from benchmarks._table import print_table
from pywrapai_graph import Chunker, Document

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


def prose(megabytes: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        sentences = []
        for _ in range(rng.randint(2, 9)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(5, 30))]
            sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", ".", "!", "?"]))
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def main() -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    text = prose(20)
    mb = len(text) / 1_000_000
    ours = Chunker(chunk_size=500, overlap=50)
    theirs = RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=50)
    doc = Document(text)

    start = time.perf_counter()
    lc_chunks = theirs.split_text(text)
    t_lc = time.perf_counter() - start
    start = time.perf_counter()
    our_chunks = ours.split(doc)
    t_ours = time.perf_counter() - start
    print_table(
        f"Chunking {mb:.1f} MB of prose at (500, 50): seconds, ratio to LangChain",
        [
            (f"LangChain RecursiveCharacterTextSplitter ({len(lc_chunks):,} chunks)", t_lc, 1.0),
            (f"pywrapai_graph Chunker ({len(our_chunks):,} chunks)", t_ours, t_ours / t_lc),
        ],
        unit="s",
    )
    print(
        f"throughput: ours {mb / t_ours:.1f} MB/s, LangChain {mb / t_lc:.1f} MB/s, "
        f"speed-up {t_lc / t_ours:.1f}x"
    )


if __name__ == "__main__":
    main()
