"""FAISS: ``store.FAISSVectorStore`` over its crash-safe ``files`` and ``segment_log``."""
