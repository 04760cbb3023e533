"""Ports: the typed interfaces the use cases need from the outside world.

Map (one port per module)::

    chat_model          ChatModel            a provider's chat API (LLM adapters); CountsMediaTokens
    embedding_provider  EmbeddingProvider    a provider's embedding API, one request at a time
    embedder            EmbeddingModel       texts -> vectors, as use cases see it (Embedder)
    vector_store        BaseVectorStore      the reference's ABC; add/search/clear/len required,
                                             delete, count, dimension, documents optional
    retriever           BaseRetriever        query -> scored chunks
    reranker            Reranker             query + hits -> the hits re-ordered by relevance
    rerank_provider     RerankProvider       a provider's rerank API or a local model
    prompt_source       PromptSource         versioned system prompts
    response_cache      ResponseCache        cached chat responses
    text_splitter       TextSplitter         document -> chunks
    conversation        Conversation         what the agent needs from GraphLLM (chat, achat)
    conversation_store  ConversationStore    conversations' turns by id and scope
    hooks               Hooks                observability callbacks
    offload             offload()            the bounded thread pool behind default async twins
    call_clock          call_clock()         when a store call was made: its deadline's start

Ports import ``domain`` (and ``errors``) only, and the standard library.
"""

from pywrapai_graph.ports.chat_model import ChatModel, CountsMediaTokens
from pywrapai_graph.ports.embedder import EmbeddingModel
from pywrapai_graph.ports.prompt_source import PromptSource
from pywrapai_graph.ports.reranker import Reranker
from pywrapai_graph.ports.response_cache import ResponseCache
from pywrapai_graph.ports.retriever import BaseRetriever
from pywrapai_graph.ports.text_splitter import TextSplitter
from pywrapai_graph.ports.vector_store import BaseVectorStore, MetadataFilter

__all__ = [
    "BaseRetriever",
    "BaseVectorStore",
    "ChatModel",
    "CountsMediaTokens",
    "EmbeddingModel",
    "MetadataFilter",
    "PromptSource",
    "Reranker",
    "ResponseCache",
    "TextSplitter",
]
