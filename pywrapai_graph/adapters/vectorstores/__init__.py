"""Vector stores behind ``BaseVectorStore``: one package per engine (``postgres``,
``sqlite``, ``qdrant``, ``chroma``, ``faiss``, ``memory``), each importing only the shared
``kit`` below them (see docs/writing-a-store.md): ``vector_batches`` (vectors validated and
normalised), ``metadata_json``, ``exact_search`` (ExactIndex), ``matrix_bulk_store``,
``versioned``, ``lexical_index`` and ``local_files``."""
