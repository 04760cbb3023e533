"""Chroma, embedded or a server, dense only: ``store.ChromaVectorStore``."""
