"""Run stores: agent run states in memory, in a SQLite file, in PostgreSQL."""
