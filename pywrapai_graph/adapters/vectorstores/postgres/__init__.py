"""PostgreSQL + pgvector: ``store.PGVectorStore``. A hybrid search reads ``store`` (the
retrieval), ``bm25`` (its one statement and its rows back into hits) and ``connection`` (the
fair ``pool``, the call ``deadline``)."""
