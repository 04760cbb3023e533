"""Observability: the cost ledger's accounting, request scopes, tracing, metrics and hooks."""
