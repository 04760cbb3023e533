"""State every process shares, held by PostgreSQL: client-side limits and responses."""
