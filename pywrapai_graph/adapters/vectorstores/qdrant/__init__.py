"""Qdrant, a folder on Qdrant Edge (``edge``, ``folder``) or a server: ``store.QdrantVectorStore``;
a retrieval is one ``query_points`` (``query``), the document field in ``document``."""
