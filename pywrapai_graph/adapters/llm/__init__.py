"""llm adapters."""
