"""BM25 over a Chroma collection, answered from what the collection holds at query time.

chromadb 1.5.9 has no sparse-vector index outside Chroma Cloud: a collection whose schema
asks for one is refused in both embedded and server (``chroma run``) mode with
``Failed to reconcile schema: Invalid schema input: Sparse vector indexing is not enabled
in local``, and its ``search()`` API answers ``Search is not implemented for Local Chroma``
(embedded) and ``Search operation is not implemented for local executor`` (server). So each
chunk carries its distinct analysed terms as a metadata list (``pywrapai_terms``), and a
query is:

1. per query term, the ids of the chunks holding it (``$contains`` on the list; Chroma's
   cost grows with the ids returned): these are the postings, and their sizes the exact
   document frequencies; ``N`` is the collection's count;
2. with a metadata filter, the ids among them that pass it (one more request);
3. a shortlist: the candidates with the highest sum of their matched terms' idf, at least
   :data:`SHORTLIST` of them (on Cranfield, 50 already gives the exact top 10);
4. the shortlist's texts, analysed again and scored by BM25 (term frequencies and lengths
   from the text itself; ``avgdl`` from the store's running totals) with the query's k1, b.

No state is kept between queries, so every process sees every other's writes at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._sparse_terms import idf, saturated
from pywrapai_graph.adapters.vectorstores._version_records import ID_KEY
from pywrapai_graph.application.text_analysis import analyze

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

__all__ = [
    "LEXICAL_MARK",
    "SHORTLIST",
    "TERMS",
    "add_missing_terms",
    "bm25_top",
    "ids_where",
    "terms_metadata",
]

#: the metadata field holding a chunk's distinct analysed terms
TERMS = "pywrapai_terms"
#: fewest candidates scored exactly
SHORTLIST = 100


def terms_metadata(text: str) -> dict[str, Any]:
    """The metadata field of a chunk's terms (absent when it has none: Chroma refuses [])."""
    terms = sorted(set(analyze(text)))
    return {TERMS: terms} if terms else {}


def ids_where(ids: Sequence[str]) -> Any:
    """The ``where`` of the chunks (any version) with these chunk ids."""
    return {ID_KEY: {"$in": list(ids)}}


def _any_term(terms: Sequence[str]) -> Any:
    clauses: list[Any] = [{TERMS: {"$contains": t}} for t in terms]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _shortlist(
    postings: dict[str, set[str]], weight: dict[str, float], allowed: set[str] | None, n: int
) -> list[str]:
    first: dict[str, float] = {}
    for term, ids in postings.items():
        for chunk_id in ids if allowed is None else ids & allowed:
            first[chunk_id] = first.get(chunk_id, 0.0) + weight[term]
    ranked = sorted(first, key=lambda i: (-first[i], i))
    return ranked[: max(SHORTLIST, 2 * n)]


def bm25_top(
    collection: Collection,
    query: str,
    n: int,
    where: Any,
    avgdl: float,
    k1: float,
    b: float,
) -> list[tuple[str, float]]:
    """The engine ids of the ``n`` best chunks by BM25 (any version), with their scores."""
    terms = sorted(set(analyze(query)))
    if not terms:
        return []
    postings = {t: set(collection.get(where=_any_term([t]), include=[])["ids"]) for t in terms}
    present = [t for t in terms if postings[t]]
    if not present:
        return []
    total = int(collection.count())
    weight = {t: idf(len(postings[t]), total) for t in present}
    allowed = None
    if where is not None:
        passing = collection.get(where={"$and": [where, _any_term(present)]}, include=[])
        allowed = set(passing["ids"])
    shortlist = _shortlist({t: postings[t] for t in present}, weight, allowed, n)
    if not shortlist:
        return []
    got = collection.get(ids=shortlist, include=["documents"])
    scored = []
    for chunk_id, text in zip(got["ids"], got.get("documents") or [], strict=True):
        counts = Counter(analyze(text or ""))
        length = sum(counts.values())
        score = sum(
            weight[t] * saturated(counts[t], length, avgdl, k1, b) for t in present if counts[t]
        )
        if score > 0.0:
            scored.append((chunk_id, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:n]


#: collection metadata: every chunk carries its terms (set once older chunks got theirs)
LEXICAL_MARK = "pywrapai_lexical"
_BACKFILL_PAGE = 5000  # chunks per request


def add_missing_terms(
    collection: Collection, weigh: Callable[[Sequence[str]], tuple[list[Counter[str]], float]]
) -> None:
    """Give chunks written before lexical search was Chroma's their terms (once)."""
    if (collection.metadata or {}).get(LEXICAL_MARK):
        return
    offset = 0
    while True:
        got = collection.get(include=["documents"], limit=_BACKFILL_PAGE, offset=offset)
        if not got["ids"]:
            break
        texts = [t or "" for t in got.get("documents") or []]
        terms, _ = weigh(texts)
        collection.update(
            ids=got["ids"], metadatas=[{TERMS: sorted(t)} if t else {} for t in terms]
        )
        offset += len(got["ids"])
    collection.modify(metadata={LEXICAL_MARK: 1})
