"""Document sources: where the text to ingest comes from."""
