"""Qdrant, a folder on Qdrant Edge (``edge``) or a server: ``store.QdrantVectorStore``;
a retrieval is one ``query_points`` (``query``), the lexical index in ``document``."""
