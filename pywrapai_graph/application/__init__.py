"""Application: the use cases, one per module, ports passed to the constructor.

Map::

    assemble_messages   AssembleMessages     system prompt + history + RAG context -> messages
    call_model          CallModel            one chat call: request, cache, usage record
    embed_texts         EmbedTexts           texts -> vectors in batches, one record per request
    retrieve_context    RetrieveContext      query -> context chunks for a prompt
    ingest_documents    IngestDocuments      documents -> chunks -> vectors -> store
    run_agent           Agent                the ReAct loop with tools, policies and a budget
    vector_retriever    VectorRetriever      an embedder and a store as a retriever
    chunker             Chunker              documents -> chunks
    token_tracker       TokenTracker         every call's usage and cost
    pricing             PriceTable           prices as data (``default_prices.json``)
    tools/              Tool, ToolRegistry   @tool, schemas, execution

Rules (import-linter): the standard library (no driver, no network module), numpy and
pydantic; never an adapter, an SDK or ``composition``. Provider names appear only where the
reference asks for them (``ToolRegistry.to_openai_schema`` and friends).
"""
