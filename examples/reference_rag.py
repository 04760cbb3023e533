"""The reference's "Full RAG Example", verbatim.

Needs a provider: OPENAI_API_KEY (and OPENAI_BASE_URL for a local or compatible server).
"""

from pywrapai import LLM, Embedder
from pywrapai_graph import (
    Chunker,
    Document,
    GraphLLM,
    InMemoryVectorStore,
    VectorRetriever,
)

# 1. Build the knowledge base
embedder = Embedder(provider="openai", model="text-embedding-3-small")
store = InMemoryVectorStore()
retriever = VectorRetriever(embedder=embedder, store=store, k=4)

docs = [
    Document("Paris is the capital of France, founded in 987 AD."),
    Document("The Louvre museum houses over 380,000 works of art."),
    Document("France uses the Euro as its currency since 2002."),
]
retriever.add_documents(docs, chunker=Chunker(chunk_size=500))

# 2. Build the graph with RAG
llm = LLM(provider="openai")
graph = GraphLLM(llm=llm, retriever=retriever, rag_k=3)

# 3. Chat — RAG context is injected automatically
response = graph.chat("What is the capital of France?")
print(response.content)  # "The capital of France is Paris, founded in 987 AD."

# 4. Skip RAG for a specific call
response = graph.chat("Thank you!", rag=False)  # no retrieval, plain chat

# 5. Check embedding cost separately
print(embedder.tokens.total_cost)  # USD cost of all embed() calls
print(llm.tokens.total_cost)  # USD cost of all chat() calls
