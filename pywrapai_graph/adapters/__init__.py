"""Adapters: the only code that talks to SDKs, databases and files. Loaded by composition.

Packages, independent of one another (import-linter)::

    llm/           chat models: openai, anthropic, gemini, ollama (SDKChatModel in _base)
    embedders/     openai, gemini, ollama, local (ONNX), hashing (offline, lexical)
    vectorstores/  in_memory, sqlite, faiss, chroma, pgvector, qdrant; their kits beside them
    prompts/       the filesystem prompt registry
    cache/         the LRU response cache
    sources/       text files to ingest

Shared private kits below them: ``_optional`` (optional imports), ``_transport`` (HTTP-stack
errors), ``_per_loop`` (one async client per event loop); for providers only
``_provider_errors``, ``_provider_payload`` and ``_gemini`` (stores may not import these).
Only ``composition`` imports this package. To add one, see docs/extending.md.
"""
