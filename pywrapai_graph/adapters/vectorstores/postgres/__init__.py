"""PostgreSQL + pgvector: ``store.PGVectorStore``. A hybrid search reads ``store`` (the
retrieval), ``bm25`` (its one statement and its rows back into hits), ``connection`` and
``pool`` (the fair pool, the call's deadline)."""
