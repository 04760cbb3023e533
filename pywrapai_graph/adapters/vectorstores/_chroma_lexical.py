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
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._chroma_points import pages
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
    "bm25",
    "bm25_top",
    "ids_where",
    "shortlist",
    "term_weights",
]

#: the metadata field holding a chunk's distinct analysed terms
TERMS = "pywrapai_terms"
#: fewest candidates scored exactly
SHORTLIST = 100


def ids_where(ids: Sequence[str]) -> Any:
    """The ``where`` of the chunks (any version) with these chunk ids."""
    return {ID_KEY: {"$in": list(ids)}}


def _any_term(terms: Sequence[str]) -> Any:
    clauses: list[Any] = [{TERMS: {"$contains": t}} for t in terms]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def term_weights(
    query: str, holders: Callable[[str], set[str]], count: Callable[[], int]
) -> tuple[dict[str, set[str]], dict[str, float]]:
    """The postings of the query's distinct terms that some record holds (``holders``: the
    ids holding a term), in term order, and each term's idf among ``count()`` records."""
    postings = {t: holders(t) for t in sorted(set(analyze(query)))}
    postings = {t: ids for t, ids in postings.items() if ids}
    total = count() if postings else 0
    return postings, {t: idf(len(ids), total) for t, ids in postings.items()}


def shortlist(
    postings: dict[str, set[str]], weight: dict[str, float], allowed: set[str] | None, n: int
) -> list[str]:
    """The ``n`` ids (of ``allowed``, unless None) with the highest sum of their terms' idf."""
    first: dict[str, float] = {}
    for term, ids in postings.items():
        for chunk_id in ids if allowed is None else ids & allowed:
            first[chunk_id] = first.get(chunk_id, 0.0) + weight[term]
    return sorted(first, key=lambda i: (-first[i], i))[:n]


def bm25(
    weight: dict[str, float], tf: Mapping[str, int], length: int, avgdl: float, k1: float, b: float
) -> float:
    """BM25 of a text with term frequencies ``tf`` and ``length``, over the query terms'
    idf ``weight`` (summed in term order)."""
    return sum(w * saturated(tf[t], length, avgdl, k1, b) for t, w in weight.items() if tf.get(t))


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
    postings, weight = term_weights(
        query,
        lambda t: set(collection.get(where=_any_term([t]), include=[])["ids"]),
        lambda: int(collection.count()),
    )
    if not postings:
        return []
    allowed = None
    if where is not None:
        passing = collection.get(where={"$and": [where, _any_term(list(postings))]}, include=[])
        allowed = set(passing["ids"])
    best = shortlist(postings, weight, allowed, max(SHORTLIST, 2 * n))
    if not best:
        return []
    got = collection.get(ids=best, include=["documents"])
    scored = []
    for chunk_id, text in zip(got["ids"], got.get("documents") or [], strict=True):
        counts = Counter(analyze(text or ""))
        score = bm25(weight, counts, sum(counts.values()), avgdl, k1, b)
        if score > 0.0:
            scored.append((chunk_id, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:n]


#: collection metadata: every chunk carries its terms (set once older chunks got theirs)
LEXICAL_MARK = "pywrapai_lexical"


def add_missing_terms(
    collection: Collection, weigh: Callable[[Sequence[str]], tuple[list[Counter[str]], float]]
) -> None:
    """Give chunks written before lexical search was Chroma's their terms (once)."""
    if (collection.metadata or {}).get(LEXICAL_MARK):
        return
    for got in pages(collection, ["documents"]):
        terms, _ = weigh([t or "" for t in got["documents"] or []])
        collection.update(
            ids=got["ids"], metadatas=[{TERMS: sorted(t)} if t else {} for t in terms]
        )
    collection.modify(metadata={LEXICAL_MARK: 1})
