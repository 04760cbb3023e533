"""FAISS: ``store.FAISSVectorStore`` over its crash-safe SQLite file (``files``)."""
