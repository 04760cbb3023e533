"""The analyzer of lexical (BM25) search: the one tokenizer every store and the eval share.

Text is case-folded, split into runs of letters and digits (``[^\\W_]+``, Unicode-aware),
English stop words (:data:`STOP_WORDS`) are dropped, and each remaining word is reduced by the
Snowball English stemmer (PyStemmer): "Flows", "flowing" and "flow" all become ``flow``.
"""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["DOCUMENT_WEIGHT", "STOP_WORDS", "analyze"]

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
#: concatenation of its chunks, with document-level statistics (number of documents,
#: document frequency counted in documents, mean document length). Chosen on
#: ``shared/data/cranfield`` (Chunker(500, 50), nDCG@10): weight 0 (chunks alone) 0.3377,
#: 0.5 0.3594, 1 0.3623, 2 0.3681, 4 0.3698, against 0.3661 for BM25 over whole documents;
#: 2 is the smallest weight that beats whole documents with a margin.
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
