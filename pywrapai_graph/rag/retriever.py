"""``pywrapai_graph.rag.retriever`` — where the reference places the retriever names."""

from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.ports import BaseRetriever

__all__ = ["BaseRetriever", "VectorRetriever"]
