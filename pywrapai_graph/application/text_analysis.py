"""The analyzer of lexical (BM25) search: the one tokenizer every store and the eval share.

Text is case-folded, split into runs of letters and digits (``[^\\W_]+``, Unicode-aware),
English stop words (:data:`STOP_WORDS`) are dropped, and each remaining word is reduced by the
Snowball English stemmer (PyStemmer): "Flows", "flowing" and "flow" all become ``flow``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["DOCUMENT_WEIGHT", "STOP_WORDS", "analyze", "document_parts"]

_WORD = re.compile(r"[^\W_]+")

#: English function words dropped by the analyzer.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()  # noqa: SIM905 - a word list reads best as text
)


#: Weight of the document field in lexical scores of chunked documents: a chunk scores
#: ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(its document)``, the document being the
#: concatenation of its chunks without their overlaps (:func:`document_parts`), with
#: document-level statistics (number of documents, document frequency counted in documents,
#: mean document length). Chosen on ``shared/data/cranfield`` (Chunker(500, 50), nDCG@10):
#: weight 0 (chunks alone) 0.3377, 0.5 0.3594, 1 0.3623, 2 0.3681, 4 0.3698, against 0.3661
#: for BM25 over whole documents; 2 is the smallest weight that beats whole documents with a
#: margin. Counting the overlaps twice (plain concatenation) measured 0.3624 at weight 2.
DOCUMENT_WEIGHT = 2.0

_local = threading.local()


def _stemmer() -> Any:
    # a PyStemmer object must not be shared between threads: one per thread
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def analyze(text: str) -> list[str]:
    """The index terms of ``text``: case-folded words, stop words dropped, Snowball-stemmed."""
    words = [w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS]
    stems: list[str] = _stemmer().stemWords(words)
    return stems


def document_parts(texts: Sequence[str], doc_ids: Sequence[str]) -> list[str]:
    """What each chunk adds to its document: its text without the overlap it repeats from
    the chunk before it of the same document in the sequence.

    The overlap is the longest start of the chunk (short of all of it) with which the
    previous chunk of its document ends. The document field of lexical search
    (:data:`DOCUMENT_WEIGHT`) sums these parts, so text that :class:`Chunker` repeats at a
    chunk's start counts once for the document. Chunks are taken in the order given (a
    document's chunks in their order, as ingestion writes them); a chunk whose predecessor
    is not in the sequence counts whole.

    Example:
        >>> document_parts(["alpha beta gamma", "gamma delta"], ["d", "d"])
        ['alpha beta gamma', ' delta']
    """
    parts: list[str] = []
    previous: dict[str, str] = {}
    for text, doc_id in zip(texts, doc_ids, strict=True):
        before = previous.get(doc_id)
        previous[doc_id] = text
        parts.append(text[_overlap(before, text) :] if before else text)
    return parts


def _overlap(before: str, text: str) -> int:
    """The longest start of ``text`` (short of all of it) that ends ``before``, in time
    linear in their lengths: the Knuth-Morris-Pratt automaton of that start reads the tail
    of ``before``; its state after the last character is the overlap."""
    size = min(len(before), len(text) - 1)
    if size <= 0:
        return 0
    start = text[:size]
    border = [0] * size  # border[i]: longest proper border of start[: i + 1]
    matched = 0
    for i in range(1, size):
        char = start[i]
        while matched and start[matched] != char:
            matched = border[matched - 1]
        if start[matched] == char:
            matched += 1
        border[i] = matched
    matched = 0
    # the tail is ``size`` long, so a whole match can only come with its last character
    for char in before[len(before) - size :]:
        while matched and start[matched] != char:
            matched = border[matched - 1]
        if start[matched] == char:
            matched += 1
    return matched
