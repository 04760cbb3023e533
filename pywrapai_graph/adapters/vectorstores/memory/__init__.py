"""In process: ``store.InMemoryVectorStore``."""
