"""Vector stores behind ``BaseVectorStore``; ``_exact_index`` is their shared validation and
exact-search kit."""
