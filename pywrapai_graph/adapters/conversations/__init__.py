"""Conversation stores: in this process, in a SQLite file, in PostgreSQL."""
