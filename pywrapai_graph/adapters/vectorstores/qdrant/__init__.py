"""Qdrant, a folder on Qdrant Edge (``edge``) or a server: ``store.QdrantVectorStore``;
a retrieval is one ``query_points``, the lexical index in ``lexical``."""
