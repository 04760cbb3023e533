"""``pywrapai_graph.rag`` — the reference's module path for the RAG names."""

from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.retrieval_tool import retrieval_tool
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, Document, ScoredChunk
from pywrapai_graph.ports import BaseRetriever, BaseVectorStore

__all__ = [
    "BaseRetriever",
    "BaseVectorStore",
    "Chunk",
    "Chunker",
    "Document",
    "ScoredChunk",
    "VectorRetriever",
    "retrieval_tool",
]
