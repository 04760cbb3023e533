"""Ports: the typed interfaces the application needs from the outside world."""

from pywrapai_graph.ports.chat_model import ChatModel
from pywrapai_graph.ports.embedder import EmbeddingModel
from pywrapai_graph.ports.prompt_source import PromptSource
from pywrapai_graph.ports.response_cache import ResponseCache
from pywrapai_graph.ports.retriever import BaseRetriever
from pywrapai_graph.ports.text_splitter import TextSplitter
from pywrapai_graph.ports.vector_store import BaseVectorStore, MetadataFilter

__all__ = [
    "BaseRetriever",
    "BaseVectorStore",
    "ChatModel",
    "EmbeddingModel",
    "MetadataFilter",
    "PromptSource",
    "ResponseCache",
    "TextSplitter",
]
