"""Vector stores behind ``BaseVectorStore``; their shared kits sit beside them (see
docs/writing-a-store.md): ``_vector_batches`` (vectors validated and normalised),
``_metadata_json``, ``_exact_search`` (ExactIndex), ``_matrix_bulk_store``, ``_versioned``,
``_lexical_index``/``_engine_lexical`` and ``_local_files``."""
