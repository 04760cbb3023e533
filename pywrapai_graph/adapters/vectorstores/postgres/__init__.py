"""PostgreSQL + pgvector: ``store.PGVectorStore``. A hybrid search reads ``store`` (the
retrieval), ``bm25`` (its one statement), ``connection`` (the fair ``pool``, the call
``deadline``) and ``search_hits`` (rows back into hits)."""
