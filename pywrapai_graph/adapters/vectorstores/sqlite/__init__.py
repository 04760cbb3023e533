"""SQLite: ``store.SQLiteVectorStore``; lexical search on FTS5 tables (``text``)."""
